import { dirname, join, resolve } from 'node:path';
import type { Clock, SnapshotPolicy } from '@teamwire/core';
import { systemClock, TeamError } from '@teamwire/core';
import type { Durability } from './append-writer.js';
import type { StorageFs } from './fs-seam.js';
import { errnoCode, exists, ioError, nodeFs, syncDirectory } from './fs-seam.js';
import type { JsonlTeamLog } from './jsonl-team-log.js';
import { openJsonlTeamLog } from './jsonl-team-log.js';
import type { SegmentRetention } from './log-layout.js';
import { LOG_FILE, listSegments, resolveLayout } from './log-layout.js';

export { LOG_FILE } from './log-layout.js';

import type { JsonlTranscriptStore } from './jsonl-transcript-store.js';
import {
  checkSafeId,
  DEFAULT_MAX_OPEN_TRANSCRIPTS,
  openJsonlTranscriptStore,
} from './jsonl-transcript-store.js';
import type { LockOwner, ProcessProbe } from './lock.js';
import { acquireOwnerLock, currentProcess } from './lock.js';
import type { JournalReplay } from './transcript-journal.js';

/** The folder under which teams live by default, relative to the working directory. */
export const DEFAULT_TEAMS_ROOT = join('.teamwire', 'teams');
/** The folder of per-member transcripts inside a team folder. */
export const TRANSCRIPTS_DIR = 'transcripts';

/** How to open a team folder. */
export interface OpenJsonlTeamStoreOptions {
  /** The team's id; every record of the log must carry it. */
  teamId: string;
  /** The team folder. Default: `.teamwire/teams/<teamId>` under the working directory. */
  dir?: string | undefined;
  /** Default `fsync`. See the package README for what each mode guarantees. */
  durability?: Durability | undefined;
  /** Create the team folder when it holds no log yet. Default `true`; `false` gives `TEAM_NOT_FOUND`. */
  create?: boolean | undefined;
  /** The file system; substitute it to inject faults or count syncs. Default: `node:fs/promises`. */
  fs?: StorageFs | undefined;
  /** This process's identity and the liveness check used for stale locks. */
  process?: ProcessProbe | undefined;
  /**
   * How long to wait for another process that is taking over the same stale lock at this moment,
   * before giving up with `TEAM_LOCKED`. Default 2000 ms.
   */
  lockWaitMs?: number | undefined;
  /** Stamps the lock file. Default: the system clock. */
  clock?: Clock | undefined;
  /**
   * At most this many transcript files stay open; the least recently used idle one is closed to
   * make room. Default 128.
   */
  maxOpenTranscripts?: number | undefined;
  /**
   * The active log segment moves on to a new file (`segments/<first seq>.jsonl`) once it would
   * pass this many bytes. Default 64 MiB; at least 4096.
   */
  segmentBytes?: number | undefined;
  /**
   * When snapshots of the folded team state are written (the team service writes them as the
   * log grows; see `SnapshotPolicy`), or `false` for none: every open then validates and folds the
   * whole log. Default `{ everyRecords: 4096, everyBytes: 4 MiB, keep: 2 }`.
   */
  snapshots?: Partial<SnapshotPolicy> | false | undefined;
  /**
   * What happens to segments wholly covered by the oldest kept snapshot: `'keep'` (default),
   * `'delete'`, or `{ archiveDir }` to move them there. Needs snapshots.
   */
  retention?: SegmentRetention | undefined;
}

/** What opening a team folder found and repaired. */
export interface RecoveryReport {
  /** The log did not exist and was created empty. */
  created: boolean;
  /**
   * Records validated on open: those after the newest snapshot whose envelope checked out, or the
   * whole log without one.
   */
  records: number;
  /** The last seq in the log after recovery (0 when empty). */
  lastSeq: number;
  /** The seq of the snapshot validation started after (0: none, the whole log was validated). */
  snapshotSeq: number;
  /** Snapshot files skipped because they were torn, altered, newer or not this log's. */
  snapshotsSkipped: number;
  /** The oldest seq still on disk (above 1 once retention removed segments). */
  firstSeq: number;
  /** Bytes of a torn final line cut from the log (0 when the log ended cleanly). */
  tornBytes: number;
  /** The owner of a stale lock (a dead process on this host) that was taken over, if any. */
  staleLock?: LockOwner;
  /**
   * What replaying the transcript journal did: the appends it held since its last checkpoint, the
   * members whose file end was rewritten from it, and a torn final line cut away.
   */
  transcriptJournal: JournalReplay;
}

/** An open team folder: its log, its transcripts and the owner lock held on it. */
export interface JsonlTeamStore {
  /** The team id every record of `log` carries. */
  readonly teamId: string;
  /** The team folder, resolved to an absolute path. */
  readonly dir: string;
  /** Whether an append resolves after an fsync (`fsync`) or once handed to the OS (`buffered`). */
  readonly durability: Durability;
  /** The team's durable `TeamLog`, recovered from `log.jsonl`. */
  readonly log: JsonlTeamLog;
  /** The members' transcripts under `transcripts/`, each repaired when first opened. */
  readonly transcripts: JsonlTranscriptStore;
  /** What opening found and repaired: the log's length and any torn tail or stale lock. */
  readonly recovered: RecoveryReport;
  /**
   * Finishes queued appends, closes both stores and releases the lock. Closing `log` and
   * `transcripts` separately releases the lock too, once both are closed. Idempotent.
   */
  close(): Promise<void>;
}

/**
 * Opens (creating when allowed) a team folder for this process alone: takes the owner lock,
 * validates every line of `log.jsonl`, repairs a torn final line, and returns the durable
 * `TeamLog` and `TranscriptStore` of the team. A kill at any moment leaves a folder this function
 * can open again: appends are whole lines written at the end of the file, and a torn last line
 * is repaired here.
 */
export async function openJsonlTeamStore(
  options: OpenJsonlTeamStoreOptions,
): Promise<JsonlTeamStore> {
  const { teamId } = options;
  if (options.dir === undefined) checkSafeId('teamId', teamId);
  else if (typeof teamId !== 'string' || teamId.length === 0) {
    throw new TeamError('INVALID_ARGUMENT', 'teamId must be a non-empty string');
  }
  const durability = options.durability ?? 'fsync';
  if (durability !== 'fsync' && durability !== 'buffered') {
    throw new TeamError(
      'INVALID_ARGUMENT',
      `durability must be 'fsync' or 'buffered', got ${JSON.stringify(durability)}`,
    );
  }
  const maxOpenFiles = options.maxOpenTranscripts ?? DEFAULT_MAX_OPEN_TRANSCRIPTS;
  if (!Number.isSafeInteger(maxOpenFiles) || maxOpenFiles < 1) {
    throw new TeamError('INVALID_ARGUMENT', 'maxOpenTranscripts must be an integer >= 1', {
      details: { maxOpenTranscripts: options.maxOpenTranscripts },
    });
  }
  const { lockWaitMs } = options;
  if (lockWaitMs !== undefined && !(Number.isFinite(lockWaitMs) && lockWaitMs >= 0)) {
    throw new TeamError('INVALID_ARGUMENT', 'lockWaitMs must be a finite number >= 0', {
      details: { lockWaitMs },
    });
  }
  const layout = resolveLayout(options);
  const fs = options.fs ?? nodeFs;
  const sync = durability === 'fsync';
  const dir = resolve(options.dir ?? join(DEFAULT_TEAMS_ROOT, teamId));
  const logPath = join(dir, LOG_FILE);

  const logExists = (await listSegments(fs, dir)).length > 0;
  if (!logExists) {
    if (options.create === false) {
      throw new TeamError(
        'TEAM_NOT_FOUND',
        `no team at ${dir} (it has no ${LOG_FILE}); check the folder and team id, or open with create: true`,
        { details: { dir, teamId } },
      );
    }
    await makeDirectory(fs, dir, sync);
  }

  const lock = await acquireOwnerLock({
    fs,
    dir,
    probe: options.process ?? currentProcess,
    clock: options.clock ?? systemClock,
    sync,
    waitMs: lockWaitMs,
  });
  try {
    if ((await listSegments(fs, dir)).length === 0) {
      try {
        await (await fs.open(logPath, 'a')).close();
      } catch (error) {
        throw ioError('creating', logPath, error);
      }
      if (sync) await syncDirectory(fs, dir);
    }
    let open = 2;
    let released: Promise<void> | undefined;
    const partClosed = () => {
      open--;
      if (open === 0) released ??= lock.release();
    };
    // The journal is replayed first: the member files are whole before anything reads them.
    const { store: transcripts, replay } = await openJsonlTranscriptStore({
      fs,
      teamDir: dir,
      dir: join(dir, TRANSCRIPTS_DIR),
      durability,
      onClosed: partClosed,
      maxOpenFiles,
    });
    let opened: Awaited<ReturnType<typeof openJsonlTeamLog>>;
    try {
      opened = await openJsonlTeamLog({
        fs,
        dir,
        teamId,
        durability,
        onClosed: partClosed,
        ...layout,
      });
    } catch (error) {
      await transcripts.close().catch(() => undefined);
      throw error;
    }
    // Defence in depth: nothing is appended unless the lock on disk is still this open's.
    try {
      await lock.verify();
    } catch (error) {
      await Promise.allSettled([opened.log.close(), transcripts.close()]);
      throw error;
    }
    const recovered: RecoveryReport = {
      created: !logExists,
      records: opened.records,
      lastSeq: opened.lastSeq,
      tornBytes: opened.tornBytes,
      snapshotSeq: opened.snapshotSeq,
      snapshotsSkipped: opened.snapshotsSkipped,
      firstSeq: opened.log.firstSeq(),
      transcriptJournal: replay,
      ...(lock.takenOverFrom ? { staleLock: lock.takenOverFrom } : {}),
    };
    return {
      teamId,
      dir,
      durability,
      log: opened.log,
      transcripts,
      recovered,
      async close() {
        const results = await Promise.allSettled([opened.log.close(), transcripts.close()]);
        await released;
        for (const result of results) if (result.status === 'rejected') throw result.reason;
      },
    };
  } catch (error) {
    await lock.release().catch(() => undefined);
    throw error;
  }
}

/** `mkdir -p`, syncing every directory whose entry it created when durability asks for it. */
async function makeDirectory(fs: StorageFs, dir: string, sync: boolean): Promise<void> {
  const missing: string[] = [];
  for (let current = dir; ; current = dirname(current)) {
    if (await exists(fs, current)) break;
    missing.push(current);
    if (dirname(current) === current) break;
  }
  try {
    await fs.mkdir(dir, { recursive: true });
  } catch (error) {
    if (errnoCode(error) !== 'EEXIST') throw ioError('creating folder', dir, error);
  }
  if (!sync) return;
  for (const created of missing) await syncDirectory(fs, dirname(created));
}
