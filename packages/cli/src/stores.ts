import type { TeamLog, TranscriptStore } from '@teamwire/core';
import type { PlacementRuns } from '@teamwire/postgres';
import { openJsonlTeamStore } from '@teamwire/storage';
import { openPostgresTeam, processIdFor, type TeamSource } from './team-source.js';

/** A team's store, opened for one command. */
export interface OpenStore {
  log: TeamLog;
  transcripts: TranscriptStore;
  /** True for PostgreSQL: other processes share the log and place its members. */
  shared: boolean;
  close(): Promise<void>;
}

/**
 * Opens the team's store: a JSONL folder with its lock (`TEAM_LOCKED` while another process has
 * it; an existing team only), or PostgreSQL as one more process running what `runs` says.
 */
export async function openStore(
  source: TeamSource,
  options: { runs: PlacementRuns; role: string; processId?: string | undefined },
): Promise<OpenStore> {
  if (source.kind === 'jsonl') {
    const store = await openJsonlTeamStore({
      teamId: source.teamId,
      dir: source.teamDir,
      create: false,
    });
    return {
      log: store.log,
      transcripts: store.transcripts,
      shared: false,
      close: () => store.close(),
    };
  }
  const store = await openPostgresTeam(source, {
    runs: options.runs,
    processId: options.processId ?? processIdFor(options.role),
  });
  return {
    log: store.log,
    transcripts: store.transcripts,
    shared: true,
    close: () => store.close(),
  };
}
