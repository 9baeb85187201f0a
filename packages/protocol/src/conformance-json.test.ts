import { describe, it } from 'vitest';
import { jsonFormat } from './json-format.js';
import { defineFormatConformance } from './testing/index.js';

defineFormatConformance({ describe, it }, { name: jsonFormat.name, format: jsonFormat });
