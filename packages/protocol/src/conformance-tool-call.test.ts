import { describe, it } from 'vitest';
import { defineProtocolConformance } from './testing/index.js';
import { toolCallProtocol } from './tool-call-protocol.js';

defineProtocolConformance(
  { describe, it },
  { name: toolCallProtocol.name, protocol: toolCallProtocol },
);
