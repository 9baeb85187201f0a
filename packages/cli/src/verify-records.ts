import {
  recordDigest,
  TeamError,
  type TeamErrorCode,
  type TeamLog,
  TeamState,
  type TranscriptStore,
} from '@teamwire/core';
import { readTeamState, readTranscript, verifyTeam } from '@teamwire/storage';

/** What `teamwire verify` found. */
export interface Verification {
  teamId: string;
  /** Records folded strictly from seq 1. */
  records: number;
  /** Each snapshot: its seq and whether it is the state the log folds to there. */
  snapshots: { seq: number; status: 'matches' | 'differs' | 'invalid'; problem?: string }[];
  /** Members whose transcript was read whole. */
  transcripts: number;
  /** Everything wrong, one line each with its code (empty: the team's records are sound). */
  problems: { code: TeamErrorCode; message: string }[];
}

/**
 * A JSONL team folder, without its lock: storage's `verifyTeam` folds the whole log strictly and
 * holds every snapshot file against the fold; then storage's `readTranscript` reads every member's
 * transcript (a torn last line, what a crash leaves, is allowed).
 */
export async function verifyJsonl(teamDir: string, teamId: string): Promise<Verification> {
  const verified = await verifyTeam(teamDir, { teamId });
  const problems: Verification['problems'] = [];
  for (const s of verified.snapshots) {
    // an invalid snapshot is listed, not held against the team: opening skips it
    if (s.status === 'differs') {
      problems.push({
        code: 'SNAPSHOT_INVALID',
        message: `snapshot at seq ${s.seq} ${s.status}: ${s.problem}`,
      });
    }
  }
  const { state } = await readTeamState(teamDir, { teamId });
  let transcripts = 0;
  for (const member of state.members()) {
    try {
      await readTranscript(teamDir, member.id);
      transcripts++;
    } catch (error) {
      if (!TeamError.isInstance(error)) throw error;
      // a line that is not a transcript entry: named by its number, as the log's problems are
      const line = (error.details as { line?: number } | undefined)?.line;
      problems.push({
        code: 'INVALID_RECORD',
        message: `transcript of ${member.name}: ${line === undefined ? '' : `line ${line}: `}${error.message}`,
      });
    }
  }
  return {
    teamId,
    records: verified.records,
    snapshots: verified.snapshots.map((s) => ({
      seq: s.seq,
      status: s.status,
      ...(s.problem === undefined ? {} : { problem: s.problem }),
    })),
    transcripts,
    problems,
  };
}

/**
 * The state as a string two equal states give: the snapshot with delivered ids and tombstones
 * sorted (a snapshot keeps its tombstones in any order).
 */
function canonical(state: TeamState): string {
  const snapshot = state.snapshot();
  const lines = (part: unknown) =>
    part === undefined || part === '' ? [] : String(part).split('\n').sort();
  return JSON.stringify({
    ...snapshot,
    delivered: lines(snapshot.delivered),
    tombstones: lines(snapshot.tombstones),
  });
}

/**
 * A team log behind core's ports (PostgreSQL): folds it strictly from seq 1 with core's
 * `TeamState`; every stored snapshot must validate, name the record the log holds at its seq
 * (core's `recordDigest`) and equal the fold there; every member's transcript must load.
 */
export async function verifyPorts(
  teamId: string,
  log: TeamLog,
  transcripts: TranscriptStore,
): Promise<Verification> {
  const problems: Verification['problems'] = [];
  const snapshots: Verification['snapshots'] = [];
  const pending = new Map<
    number,
    { entry: Verification['snapshots'][number]; state: TeamState; digest: unknown }
  >();
  if (log.snapshots !== undefined) {
    for await (const stored of log.snapshots.list()) {
      const entry: Verification['snapshots'][number] = { seq: stored.seq, status: 'invalid' };
      snapshots.push(entry);
      try {
        const state = TeamState.fromSnapshot(stored.state, { teamId });
        // Its tombstones are checked when first read: here, now.
        state.allTasks();
        if (state.lastSeq !== stored.seq) {
          entry.problem = `${stored.source} is stored as seq ${stored.seq} but holds seq ${state.lastSeq}`;
          continue;
        }
        pending.set(stored.seq, {
          entry,
          state,
          digest: (stored.state as { record?: unknown }).record,
        });
      } catch (error) {
        if (!TeamError.isInstance(error)) throw error;
        entry.problem = `${stored.source}: ${error.message}`;
      }
    }
  }
  const full = new TeamState({ teamId });
  for await (const record of log.read({ fromSeq: 1 })) {
    full.apply(record);
    const at = pending.get(record.seq);
    if (at === undefined) continue;
    if (typeof at.digest === 'string' && at.digest !== recordDigest(record)) {
      at.entry.status = 'differs';
      at.entry.problem = `it was taken after another record at seq ${record.seq} than the log holds`;
    } else if (canonical(at.state) !== canonical(full)) {
      at.entry.status = 'differs';
      at.entry.problem = `its state differs from the full fold at seq ${record.seq}`;
    } else {
      at.entry.status = 'matches';
    }
  }
  for (const [seq, at] of pending) {
    if (seq > full.lastSeq)
      at.entry.problem = `its seq ${seq} is past the end of the log (${full.lastSeq})`;
  }
  for (const s of snapshots) {
    // an invalid snapshot is listed, not held against the team: opening skips it
    if (s.status === 'differs') {
      problems.push({
        code: 'SNAPSHOT_INVALID',
        message: `snapshot at seq ${s.seq} ${s.status}: ${s.problem}`,
      });
    }
  }
  let loaded = 0;
  for (const member of full.members()) {
    try {
      await transcripts.load({ memberId: member.id });
      loaded++;
    } catch (error) {
      problems.push({
        code: TeamError.isInstance(error) ? error.code : 'STORAGE_IO',
        message: `transcript of ${member.name}: ${error instanceof Error ? error.message : String(error)}`,
      });
    }
  }
  return { teamId, records: full.lastSeq, snapshots, transcripts: loaded, problems };
}
