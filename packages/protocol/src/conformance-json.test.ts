import { describe, it } from 'vitest';
import { jsonProtocol } from './json-protocol.js';
import { defineProtocolConformance } from './testing/index.js';

defineProtocolConformance({ describe, it }, { name: jsonProtocol.name, protocol: jsonProtocol });
