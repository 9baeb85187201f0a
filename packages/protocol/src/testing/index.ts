export type { MessageCase } from './arbitraries.js';
export {
  approvalIdArbitrary,
  arbitraryText,
  hugeText,
  MESSAGE_KINDS,
  memberName,
  messageCase,
  TRICKY_FRAGMENTS,
  taskArbitrary,
  trickyText,
} from './arbitraries.js';
export type { ConformanceTestApi, FormatConformanceOptions } from './conformance.js';
export { defineFormatConformance } from './conformance.js';
