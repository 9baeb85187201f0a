import { describe, it } from 'vitest';
import type { TeamLog } from '../../ports/team-log.js';
import type { MemoryTeamLog, MemoryTranscriptStore } from '../memory-stores.js';
import { createMemoryTeamLog, createMemoryTranscriptStore } from '../memory-stores.js';
import { defineTeamLogConformance } from './team-log-conformance.js';
import { defineTranscriptStoreConformance } from './transcript-store-conformance.js';

describe('memory team log', () => {
  defineTeamLogConformance(
    { describe, it },
    {
      create: async () => {
        let current: MemoryTeamLog = createMemoryTeamLog({ teamId: 'team-memory' });
        return {
          log: current,
          reopen: async (): Promise<TeamLog> => {
            current = createMemoryTeamLog({ teamId: 'team-memory', records: current.records() });
            return current;
          },
        };
      },
    },
  );
});

describe('memory transcript store', () => {
  defineTranscriptStoreConformance(
    { describe, it },
    {
      create: async () => ({
        store: createMemoryTranscriptStore() satisfies MemoryTranscriptStore,
      }),
    },
  );
});
