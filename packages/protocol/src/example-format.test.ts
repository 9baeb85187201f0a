import { describe, it } from 'vitest';
import { prefixedJsonProtocol } from './example-format.js';
import { defineProtocolConformance } from './testing/index.js';

// The README's fourth-format example passes the suite (fewer runs: it documents, it does not ship).
defineProtocolConformance(
  { describe, it },
  { name: 'README example (prefixed-json)', protocol: prefixedJsonProtocol, numRuns: 250 },
);
