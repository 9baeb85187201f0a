import type { TeamLog, TranscriptStore } from '@teamwire/core';
import { defineTeamLogConformance, defineTranscriptStoreConformance } from '@teamwire/core/testing';
import { describe, it } from 'vitest';
import type { Durability } from './append-writer.js';
import type { JsonlTeamStore } from './team-store.js';
import { openJsonlTeamStore } from './team-store.js';
import { tempDir } from './test-support.js';

const TEAM = '01JTEAMCONFORMANCE00000000';

async function subject(durability: Durability, maxOpenTranscripts?: number) {
  const dir = await tempDir();
  const stores: JsonlTeamStore[] = [];
  const open = async () => {
    const store = await openJsonlTeamStore({
      teamId: TEAM,
      dir: dir.path,
      durability,
      maxOpenTranscripts,
    });
    stores.push(store);
    return store;
  };
  const first = await open();
  const reopenStore = async () => {
    for (const store of stores) await store.close();
    return open();
  };
  return {
    first,
    reopenStore,
    cleanup: async () => {
      for (const store of stores) await store.close().catch(() => undefined);
      await dir.remove();
    },
  };
}

for (const durability of ['fsync', 'buffered'] as const) {
  describe(`JSONL team log (${durability})`, () => {
    defineTeamLogConformance(
      { describe, it },
      {
        create: async () => {
          const s = await subject(durability);
          return {
            log: s.first.log,
            reopen: async (): Promise<TeamLog> => (await s.reopenStore()).log,
            cleanup: s.cleanup,
          };
        },
      },
    );
  });

  describe(`JSONL transcript store (${durability})`, () => {
    defineTranscriptStoreConformance(
      { describe, it },
      {
        create: async () => {
          const s = await subject(durability);
          return {
            store: s.first.transcripts,
            reopen: async (): Promise<TranscriptStore> => (await s.reopenStore()).transcripts,
            cleanup: s.cleanup,
          };
        },
      },
    );
  });
}

// The same contract while the store can keep only one member file open, closing and reopening
// files between appends of different members.
describe('JSONL transcript store (fsync, one open file at a time)', () => {
  defineTranscriptStoreConformance(
    { describe, it },
    {
      create: async () => {
        const s = await subject('fsync', 1);
        return {
          store: s.first.transcripts,
          reopen: async (): Promise<TranscriptStore> => (await s.reopenStore()).transcripts,
          cleanup: s.cleanup,
        };
      },
    },
  );
});
