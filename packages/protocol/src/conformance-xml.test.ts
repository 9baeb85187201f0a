import { describe, it } from 'vitest';
import { defineProtocolConformance } from './testing/index.js';
import { createXmlProtocol, xmlProtocol } from './xml-protocol.js';

defineProtocolConformance({ describe, it }, { name: xmlProtocol.name, protocol: xmlProtocol });

// A custom pick policy opts out of the default-order checks, keeping the rest of the suite.
defineProtocolConformance(
  { describe, it },
  {
    name: 'xml with a newest-first policy',
    protocol: createXmlProtocol({ pickNext: ({ pending }) => pending.at(-1) }),
    defaultPriority: false,
    numRuns: 100,
  },
);
