export type { MessageCase } from './arbitraries.js';
export {
  arbitraryText,
  hugeText,
  MESSAGE_KINDS,
  memberName,
  messageCase,
  TRICKY_FRAGMENTS,
  taskArbitrary,
  trickyText,
} from './arbitraries.js';
export type { ConformanceOptions, ConformanceTestApi } from './conformance.js';
export { defineProtocolConformance } from './conformance.js';
