import { describe, it } from 'vitest';
import { defineFormatConformance } from './testing/index.js';
import { xmlFormat } from './xml-format.js';

defineFormatConformance({ describe, it }, { name: xmlFormat.name, format: xmlFormat });
