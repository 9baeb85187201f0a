import { loadTeamState, type TeamState } from '@teamwire/core';
import { readTeamState } from '@teamwire/storage';
import { openStore } from './stores.js';
import type { TeamSource } from './team-source.js';

/**
 * A team's state, read without disturbing it: a JSONL folder without its lock (safe while its
 * owner runs), PostgreSQL as a process that runs nothing.
 */
export async function readState(source: TeamSource): Promise<TeamState> {
  if (source.kind === 'jsonl') {
    return (await readTeamState(source.teamDir, { teamId: source.teamId })).state;
  }
  const store = await openStore(source, { runs: { lead: false, agentTypes: [] }, role: 'inspect' });
  try {
    return (await loadTeamState(store.log, { teamId: source.teamId })).state;
  } finally {
    await store.close();
  }
}
