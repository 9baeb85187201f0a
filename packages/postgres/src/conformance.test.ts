import type { TeamLog, TranscriptStore } from '@teamwire/core';
import { defineTeamLogConformance, defineTranscriptStoreConformance } from '@teamwire/core/testing';
import { describe, it } from 'vitest';
import type { PostgresTeamStore } from './store.js';
import { describePg, Scratch } from './test-support.js';

const TEAM = '01JTEAMCONFORMANCE00000000';

/** A store in a fresh schema, and how to reopen it (closing the previous one, as a restart would). */
async function subject() {
  const scratch = new Scratch();
  let current: PostgresTeamStore = await scratch.open(TEAM);
  const first = current;
  const reopenStore = async () => {
    await current.close();
    current = await scratch.open(TEAM);
    return current;
  };
  return { first, reopenStore, cleanup: () => scratch.cleanup() };
}

describePg('PostgreSQL team log', () => {
  defineTeamLogConformance(
    { describe, it },
    {
      create: async () => {
        const s = await subject();
        return {
          log: s.first.log,
          reopen: async (): Promise<TeamLog> => (await s.reopenStore()).log,
          cleanup: s.cleanup,
        };
      },
    },
  );
});

describePg('PostgreSQL transcript store', () => {
  defineTranscriptStoreConformance(
    { describe, it },
    {
      create: async () => {
        const s = await subject();
        return {
          store: s.first.transcripts,
          reopen: async (): Promise<TranscriptStore> => (await s.reopenStore()).transcripts,
          cleanup: s.cleanup,
        };
      },
    },
  );
});
