import { basename, join, resolve } from 'node:path';
import type { StoredText, TeamRecord, TranscriptEntry } from '@teamwire/core';
import {
  parseTranscriptEntry,
  repairTranscript,
  SNAPSHOT_PARTS_APART,
  TeamError,
  TeamState,
} from '@teamwire/core';
import type { StorageFileHandle, StorageFs } from './fs-seam.js';
import { errnoCode, ioError, nodeFs } from './fs-seam.js';
import { decodeLine, iterateLines, lineError, scanJsonl } from './jsonl-lines.js';
import { checkLogLine } from './jsonl-team-log.js';
import { checkSafeId } from './jsonl-transcript-store.js';
import type { LockOwner } from './lock.js';
import { readLockOwner } from './lock.js';
import type { SegmentFile } from './log-layout.js';
import { LOG_FILE, listSegments } from './log-layout.js';
import {
  listSnapshotSeqs,
  readSnapshotHeader,
  readSnapshotState,
  SNAPSHOTS_DIR,
  snapshotFileName,
} from './snapshot-files.js';
import { DEFAULT_TEAMS_ROOT, TRANSCRIPTS_DIR } from './team-store.js';
import { lostPrefix, readJournalRun } from './transcript-journal.js';

/** A team folder found under a root. */
export interface TeamListing {
  /** The folder's name, which is the team id the store opens it under. */
  teamId: string;
  /** The team folder, as an absolute path. */
  dir: string;
  /** Size of the log's segments on disk, in bytes. */
  logBytes: number;
  /** The owner named by the folder's lock file, if one is present (it may be stale). */
  owner?: LockOwner;
}

/**
 * Lists the team folders under `root` (default `.teamwire/teams`): every sub-folder holding a
 * `log.jsonl`, sorted by team id. A missing root is an empty list. Nothing is locked or changed.
 */
export async function listTeams(
  root: string = DEFAULT_TEAMS_ROOT,
  options: { fs?: StorageFs } = {},
): Promise<TeamListing[]> {
  const fs = options.fs ?? nodeFs;
  const absolute = resolve(root);
  let names: string[];
  try {
    names = await fs.readdir(absolute);
  } catch (error) {
    const code = errnoCode(error);
    if (code === 'ENOENT' || code === 'ENOTDIR') return [];
    throw ioError('listing', absolute, error);
  }
  const teams: TeamListing[] = [];
  for (const name of [...names].sort()) {
    if (name.startsWith('.')) continue;
    const dir = join(absolute, name);
    let logBytes = 0;
    let segments: SegmentFile[];
    try {
      segments = await listSegments(fs, dir);
    } catch (error) {
      if (TeamError.hasCode(error, 'STORAGE_IO') && error.details?.errno === 'ENOTDIR') continue;
      throw error;
    }
    if (segments.length === 0) continue;
    for (const segment of segments) {
      try {
        logBytes += (await fs.stat(segment.path)).size;
      } catch (error) {
        if (errnoCode(error) !== 'ENOENT') throw ioError('reading', segment.path, error);
      }
    }
    const owner = await readLockOwner(fs, dir);
    teams.push({ teamId: name, dir, logBytes, ...(owner ? { owner } : {}) });
  }
  return teams;
}

/** A read-only look at a team log. */
export interface TeamLogSnapshot {
  /** From the records; the folder name when the log is empty. */
  teamId: string;
  /** The absolute path of the log's first segment, `log.jsonl` (gone once retention removed it). */
  path: string;
  /** The segment files read, oldest first. */
  segments: SegmentFile[];
  /** The seq of the first record on disk (1 unless retention removed segments). */
  firstSeq: number;
  /** Every whole record on disk, validated, in seq order. */
  records: TeamRecord[];
  /** Bytes of a torn final line that the owner's next open will cut away (left in place here). */
  tornBytes: number;
}

/**
 * Reads and validates a team's log (every segment on disk) without taking the lock or repairing
 * anything, for inspection tools; safe while the owner is running (a half-written final line
 * shows up as `tornBytes`). Fails like opening does: `CORRUPT_LOG` or `UNSUPPORTED_SCHEMA_VERSION`
 * naming the file and line, `TEAM_NOT_FOUND` when there is no log.
 */
export async function readTeamLog(
  dir: string,
  options: { fs?: StorageFs } = {},
): Promise<TeamLogSnapshot> {
  const fs = options.fs ?? nodeFs;
  const folder = resolve(dir);
  const records: TeamRecord[] = [];
  let teamId: string | undefined;
  const scan = await scanSegments(fs, folder, (record) => {
    teamId ??= record.teamId;
    records.push(record);
  });
  return {
    teamId: teamId ?? basename(folder),
    path: join(folder, LOG_FILE),
    segments: scan.segments,
    firstSeq: scan.firstSeq,
    records,
    tornBytes: scan.tornBytes,
  };
}

/**
 * Streams every record of every segment of `folder` to `visit`, validated (schema, seq order
 * across segments, one team); a torn final line of the last segment is reported, not read.
 */
async function scanSegments(
  fs: StorageFs,
  folder: string,
  visit: (record: TeamRecord, line: Buffer | undefined) => void,
): Promise<{ segments: SegmentFile[]; firstSeq: number; tornBytes: number; lastSeq: number }> {
  const segments = await listSegments(fs, folder);
  if (segments.length === 0) {
    const path = join(folder, LOG_FILE);
    throw new TeamError('TEAM_NOT_FOUND', `no team log at ${path}`, { details: { path } });
  }
  const firstSeq = (segments[0] as SegmentFile).first;
  let seq = firstSeq;
  let teamId: string | undefined;
  let tornBytes = 0;
  for (const [i, segment] of segments.entries()) {
    if (segment.first !== seq) {
      throw new TeamError(
        'CORRUPT_LOG',
        `${segment.path} starts at seq ${segment.first}, but the segment before it ends at seq ${seq - 1}`,
        { details: { file: segment.path } },
      );
    }
    let handle: StorageFileHandle;
    try {
      handle = await fs.open(segment.path, 'r');
    } catch (error) {
      throw ioError('opening', segment.path, error);
    }
    try {
      const base = seq;
      const outcome = await scanJsonl(handle, segment.path, (value, line, _offset) => {
        const record = checkLogLine(value, base + line - 1, teamId);
        teamId ??= record.teamId;
        visit(record, undefined);
      });
      seq += outcome.lines;
      if (outcome.tornBytes > 0 && i < segments.length - 1) {
        throw new TeamError(
          'CORRUPT_LOG',
          `${segment.path} is a closed segment but its last line is torn`,
          {
            details: { file: segment.path },
          },
        );
      }
      tornBytes = outcome.tornBytes;
    } finally {
      await handle.close().catch(() => undefined);
    }
  }
  return { segments, firstSeq, tornBytes, lastSeq: seq - 1 };
}

/**
 * A member's transcript in a team folder, read without taking the folder's lock, for inspection
 * tools and read-only pages: every complete line validated, repaired as the store's `load` does;
 * safe while the owner is running (a half-written final line is left out). The transcript
 * journal's appends for the member are read too (after an OS crash the file can lack them until
 * the next open replays them). An empty list for a member without a transcript. Fails like `load`: `CORRUPT_LOG` or
 * `UNSUPPORTED_SCHEMA_VERSION` naming the file and line.
 */
export async function readTranscript(
  dir: string,
  memberId: string,
  options: { fs?: StorageFs } = {},
): Promise<TranscriptEntry[]> {
  checkSafeId('member', memberId);
  const fs = options.fs ?? nodeFs;
  const team = resolve(dir);
  const path = join(team, TRANSCRIPTS_DIR, `${memberId}.jsonl`);
  // The journal first: what the member's file holds before the journal's first append for it is
  // flushed and stays, whatever the owner appends or checkpoints meanwhile.
  const run = await readJournalRun(fs, team, memberId);
  let handle: StorageFileHandle;
  try {
    handle = await fs.open(path, 'r');
  } catch (error) {
    if (errnoCode(error) !== 'ENOENT') throw ioError('opening', path, error);
    if (run === undefined) return [];
    if (run.base > 0) throw lostPrefix(path, run, 0);
    return repairTranscript(run.entries);
  }
  const entries: TranscriptEntry[] = [];
  try {
    if (run === undefined) {
      await scanJsonl(handle, path, (value) => {
        entries.push(parseTranscriptEntry(value));
      });
    } else {
      let size: number;
      try {
        size = (await handle.stat()).size;
      } catch (error) {
        throw ioError('reading', path, error);
      }
      if (size < run.base) throw lostPrefix(path, run, size);
      let line = 0;
      for await (const raw of iterateLines(handle, path, 0, run.base)) {
        line++;
        try {
          if (!raw.terminated) throw new Error('the journal continues the file inside this line');
          entries.push(parseTranscriptEntry(JSON.parse(decodeLine(raw))));
        } catch (error) {
          throw lineError(path, line, error);
        }
      }
      for (const entry of run.entries) entries.push(entry);
    }
  } finally {
    await handle.close().catch(() => undefined);
  }
  return repairTranscript(entries);
}

/** The folded state of a team folder, as {@link readTeamState} read it. */
export interface TeamStateReading {
  /** The state after the last whole record on disk. */
  state: TeamState;
  /** The seq of the snapshot it started from (0: a full fold of the log). */
  snapshotSeq: number;
  /** Records read from the log (all of them; those after the snapshot were applied). */
  records: number;
  /** Bytes of a torn final line left in place (the owner may be writing it). */
  tornBytes: number;
}

/**
 * The team state of a folder without the lock, for inspection tools: a full strict fold when the
 * log starts at seq 1, else the newest snapshot that validates with the records after it applied
 * (`HISTORY_UNAVAILABLE` when none does). Every line on disk is validated either way.
 */
export async function readTeamState(
  dir: string,
  options: { fs?: StorageFs; teamId?: string } = {},
): Promise<TeamStateReading> {
  const fs = options.fs ?? nodeFs;
  const folder = resolve(dir);
  const teamId = options.teamId ?? basename(folder);
  const segments = await listSegments(fs, folder);
  const firstSeq = segments[0]?.first ?? 1;
  let state: TeamState | undefined;
  if (firstSeq > 1) {
    const snapshotDir = join(folder, SNAPSHOTS_DIR);
    for (const seq of await listSnapshotSeqs(fs, snapshotDir)) {
      if (seq < firstSeq - 1) break;
      try {
        const file = await readSnapshotHeader(
          fs,
          join(snapshotDir, snapshotFileName(seq)),
          teamId,
          seq,
        );
        state = TeamState.fromSnapshot(await readSnapshotState(fs, file), { teamId });
        break;
      } catch (error) {
        if (!TeamError.isInstance(error)) throw error;
      }
    }
    if (state === undefined) {
      throw new TeamError(
        'HISTORY_UNAVAILABLE',
        `the log of ${folder} starts at seq ${firstSeq} and no valid snapshot covers the records before it`,
        { details: { dir: folder, firstSeq } },
      );
    }
  }
  const folded = state ?? new TeamState({ teamId });
  const snapshotSeq = state?.lastSeq ?? 0;
  const scan = await scanSegments(fs, folder, (record) => {
    if (record.seq > folded.lastSeq) folded.apply(record);
  });
  return {
    state: folded,
    snapshotSeq,
    records: scan.lastSeq - firstSeq + 1,
    tornBytes: scan.tornBytes,
  };
}

/** What {@link verifyTeam} found about one snapshot file. */
export interface SnapshotVerification {
  /** The seq it was written at. */
  seq: number;
  /** The snapshot file. */
  path: string;
  /**
   * `matches`: its state, and its state brought up to date with the records after it, equal the
   * full fold at the same seqs; `differs`: they do not (`problem` says where); `invalid`: it would
   * be skipped on open (torn, altered, not this log's, failed validation).
   */
  status: 'matches' | 'differs' | 'invalid';
  /** What is wrong, for `differs` and `invalid`. */
  problem?: string;
}

/** What {@link verifyTeam} found. */
export interface TeamVerification {
  /** The team the log and the snapshots were checked for. */
  teamId: string;
  /** Records folded (all of them, from seq 1). */
  records: number;
  /** The seq of the last whole record. */
  lastSeq: number;
  /** Bytes of a torn final line (an owner is writing, or the next open cuts it). */
  tornBytes: number;
  /** Every snapshot file, newest first. */
  snapshots: SnapshotVerification[];
  /** Every snapshot matches (an invalid one is skipped on open, so it does not count against). */
  ok: boolean;
}

/**
 * Verifies a team folder without the lock: folds the whole log strictly (which needs every
 * segment from seq 1: `HISTORY_UNAVAILABLE` after retention removed some) and checks every
 * snapshot file against it: at its seq, the snapshot's state must equal the full fold's, and
 * after the records that follow, so must the snapshot brought up to date. This is what opening
 * from a snapshot relies on; opening itself checks only a snapshot's envelope and consistency.
 */
export async function verifyTeam(
  dir: string,
  options: { fs?: StorageFs; teamId?: string } = {},
): Promise<TeamVerification> {
  const fs = options.fs ?? nodeFs;
  const folder = resolve(dir);
  const segments = await listSegments(fs, folder);
  const first = segments[0];
  if (first !== undefined && first.first !== 1) {
    throw new TeamError(
      'HISTORY_UNAVAILABLE',
      `a full fold of ${folder} needs the log from seq 1, but it starts at seq ${first.first}: older segments were removed under the retention policy`,
      { details: { dir: folder, firstSeq: first.first } },
    );
  }
  const teamId = options.teamId ?? basename(folder);
  const snapshotDir = join(folder, SNAPSHOTS_DIR);
  const results: SnapshotVerification[] = [];
  const pending = new Map<number, { result: SnapshotVerification; state: TeamState }>();
  for (const seq of await listSnapshotSeqs(fs, snapshotDir)) {
    const path = join(snapshotDir, snapshotFileName(seq));
    const result: SnapshotVerification = { seq, path, status: 'invalid' };
    results.push(result);
    try {
      const file = await readSnapshotHeader(fs, path, teamId, seq);
      const state = TeamState.fromSnapshot(partsRead(await readSnapshotState(fs, file)), {
        teamId,
      });
      // Its tombstones are checked when first read: here, now.
      state.allTasks();
      pending.set(seq, { result, state });
    } catch (error) {
      if (!TeamError.isInstance(error)) throw error;
      result.problem = error.message;
    }
  }
  const full = new TeamState({ teamId });
  const live: { result: SnapshotVerification; state: TeamState }[] = [];
  const compareAt = (entry: { result: SnapshotVerification; state: TeamState }) => {
    if (entry.result.status === 'differs') return;
    if (canonicalState(entry.state) !== canonicalState(full)) {
      entry.result.status = 'differs';
      entry.result.problem = `its state differs from the full fold at seq ${full.lastSeq}`;
    } else {
      entry.result.status = 'matches';
    }
  };
  const atStart = pending.get(0);
  if (atStart) {
    compareAt(atStart);
    live.push(atStart);
  }
  const scan = await scanSegments(fs, folder, (record) => {
    full.apply(record);
    for (const entry of live) {
      if (entry.result.status === 'differs') continue;
      try {
        entry.state.apply(record);
      } catch (error) {
        entry.result.status = 'differs';
        entry.result.problem = `the record at seq ${record.seq} does not apply to it: ${(error as Error).message}`;
      }
    }
    const entry = pending.get(record.seq);
    if (entry) {
      compareAt(entry);
      live.push(entry);
    }
  });
  for (const entry of live) {
    if (entry.result.status === 'matches') compareAt(entry);
  }
  for (const [seq, entry] of pending) {
    if (seq > scan.lastSeq) {
      entry.result.status = 'invalid';
      entry.result.problem = `its seq ${seq} is past the end of the log (${scan.lastSeq})`;
    }
  }
  return {
    teamId,
    records: scan.lastSeq,
    lastSeq: scan.lastSeq,
    tornBytes: scan.tornBytes,
    snapshots: results,
    ok: results.every((result) => result.status !== 'differs'),
  };
}

/**
 * A stored state with the parts kept apart read now (`SNAPSHOT_INVALID` if their checksum fails),
 * as text core checks when it restores it, instead of when they are first needed.
 */
function partsRead(value: unknown): unknown {
  if (typeof value !== 'object' || value === null) return value;
  const out: Record<string, unknown> = { ...value };
  for (const name of SNAPSHOT_PARTS_APART) {
    const part = out[name] as { text?: unknown } | undefined;
    if (typeof part?.text === 'function') out[name] = (part as StoredText).text();
  }
  return out;
}

/** The state as a string that two equal states give: the snapshot with delivered ids sorted. */
function canonicalState(state: TeamState): string {
  const snapshot = state.snapshot();
  const text = String(snapshot.delivered);
  const delivered = text === '' ? [] : text.split('\n').sort();
  // Tombstones are kept in any order: the state is the same set of them.
  const tombstones = String(snapshot.tombstones ?? '')
    .split('\n')
    .sort();
  return JSON.stringify({ ...snapshot, delivered, tombstones });
}
