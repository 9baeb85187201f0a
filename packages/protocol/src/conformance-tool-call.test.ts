import { describe, it } from 'vitest';
import { defineFormatConformance } from './testing/index.js';
import { toolCallFormat } from './tool-call-format.js';

defineFormatConformance({ describe, it }, { name: toolCallFormat.name, format: toolCallFormat });
