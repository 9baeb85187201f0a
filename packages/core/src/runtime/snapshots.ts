import { TeamError } from '../errors.js';
import type { EventSink } from '../ports/events.js';
import type { StoredSnapshot, TeamLog, TeamLogSnapshots } from '../ports/team-log.js';
import { recordDigest } from '../record-digest.js';
import type { TeamRecord } from '../records.js';
import type { TeamStateOptions, TeamStateSnapshot } from '../state/index.js';
import { isSnapshotDue, TeamState } from '../state/index.js';

/** Why a stored snapshot is passed over (anything else a read throws fails the open). */
const SNAPSHOT_REFUSALS: ReadonlySet<string> = new Set([
  'SNAPSHOT_INVALID',
  'UNSUPPORTED_SCHEMA_VERSION',
]);

/** What opening a team read: where its state came from. */
export interface LoadedState {
  /** The team's state after the last record of the log. */
  state: TeamState;
  /** The seq of the snapshot it was restored from (0: a full fold). */
  snapshotSeq: number;
  /** The bytes that snapshot's state took (0: a full fold). */
  snapshotBytes: number;
  /** Snapshots the store offered that failed validation or belong to another history, newest first. */
  rejected: number;
}

/**
 * The state of a team from its log: the newest snapshot the store offers that validates and
 * belongs to this log, then the records after it, folded strictly; without such a snapshot, the
 * whole log. Records are applied as they are read, never gathered first.
 *
 * A snapshot belongs to the log when the log's record at the snapshot's seq has the digest the
 * snapshot carries (`record`). When the log no longer holds that record (its segment was removed
 * under a retention policy), the snapshot is the only state left of that history and is used. A
 * snapshot of format version 1 carries no digest: it is used only when the store vouches for it
 * (`StoredSnapshot.anchored`).
 */
export async function loadTeamState(log: TeamLog, options: TeamStateOptions): Promise<LoadedState> {
  let rejected = 0;
  const snapshots = log.snapshots;
  if (snapshots !== undefined) {
    for await (const stored of snapshots.list()) {
      let state: TeamState;
      let records: AsyncIterator<TeamRecord>;
      try {
        state = TeamState.fromSnapshot(stored.state, options);
        if (state.lastSeq !== stored.seq) {
          throw new TeamError(
            'SNAPSHOT_INVALID',
            `${stored.source} is stored as seq ${stored.seq} but holds the state at seq ${state.lastSeq}`,
            { details: { seq: stored.seq } },
          );
        }
        records = await recordsAfter(log, stored);
      } catch (error) {
        // A snapshot that is not valid, or not of this log, is passed over; a log that cannot be
        // read fails the open.
        if (!TeamError.isInstance(error) || !SNAPSHOT_REFUSALS.has(error.code)) throw error;
        rejected++;
        snapshots.rejected(stored, error);
        continue;
      }
      try {
        await applyAll(state, records);
      } catch (error) {
        // Tombstones a store kept apart are checked when a record first needs one: if they do
        // not check out, this snapshot is passed over as if it had failed validation above.
        if (!TeamError.hasCode(error, 'SNAPSHOT_INVALID')) throw error;
        void records.return?.();
        rejected++;
        snapshots.rejected(stored, error);
        continue;
      }
      return { state, snapshotSeq: stored.seq, snapshotBytes: stored.bytes, rejected };
    }
  }
  const state = new TeamState(options);
  for await (const record of log.read({ fromSeq: 1 })) state.apply(record);
  return { state, snapshotSeq: 0, snapshotBytes: 0, rejected };
}

/**
 * The log's records after `stored`, once its record at `stored.seq` proved the snapshot is of this
 * log: `SNAPSHOT_INVALID` when that record differs (another history: the log was cut back and
 * written again after the snapshot was taken).
 */
async function recordsAfter(
  log: TeamLog,
  stored: StoredSnapshot,
): Promise<AsyncIterator<TeamRecord>> {
  const digest = (stored.state as { record?: unknown }).record;
  let iterator: AsyncIterator<TeamRecord>;
  let first: IteratorResult<TeamRecord>;
  try {
    iterator = log.read({ fromSeq: stored.seq })[Symbol.asyncIterator]();
    first = await iterator.next();
  } catch (error) {
    // The record was removed with its segment: nothing is left to compare, and nothing to fold.
    if (TeamError.hasCode(error, 'HISTORY_UNAVAILABLE')) {
      return log.read({ fromSeq: stored.seq + 1 })[Symbol.asyncIterator]();
    }
    throw error;
  }
  const mismatch = (why: string): TeamError => {
    void iterator.return?.();
    return new TeamError('SNAPSHOT_INVALID', `${stored.source} ${why}`, {
      details: { seq: stored.seq },
    });
  };
  if (first.done === true || first.value.seq !== stored.seq) {
    throw mismatch(`is of seq ${stored.seq}, which the log does not hold`);
  }
  if (typeof digest === 'string') {
    if (recordDigest(first.value) !== digest) {
      throw mismatch(
        `was taken after another record at seq ${stored.seq} than the log holds: the log was cut back and written again since`,
      );
    }
  } else if (stored.anchored !== true) {
    throw mismatch('carries no record digest (format version 1) and the store cannot vouch for it');
  }
  return iterator;
}

async function applyAll(state: TeamState, records: AsyncIterator<TeamRecord>): Promise<void> {
  for (;;) {
    const next = await records.next();
    if (next.done === true) return;
    state.apply(next.value);
  }
}

/** The newest snapshot the scheduler knows of, and the store's log counter when it was taken. */
interface Newest {
  seq: number;
  bytes: number;
  logBytesAt: number;
}

/**
 * Writes snapshots in the background as the log grows: after a commit, when core's policy says
 * one is due (`isSnapshotDue` over the store's {@link TeamLogSnapshots.policy} and its log
 * counter) and every applied record is settled and durable (none applied ahead of an append
 * still in flight, none that could be reverted), the state is captured (O(state) references, no
 * copies: stored values are immutable), handed to the store, and the store is told to prune past
 * `keep`. One write at a time; a failed write is reported as an `error` event and retried when
 * the next one is due, and never stops the team.
 */
export class SnapshotScheduler {
  #writing: Promise<void> | undefined;
  #closed = false;
  #newest: Newest;

  private readonly snapshots: TeamLogSnapshots | undefined;

  constructor(
    private readonly log: TeamLog,
    private readonly state: TeamState,
    private readonly events: EventSink,
    private readonly agentName: () => string,
    loaded: { snapshotSeq: number; snapshotBytes: number },
  ) {
    this.snapshots = log.snapshots;
    this.#newest = { seq: loaded.snapshotSeq, bytes: loaded.snapshotBytes, logBytesAt: 0 };
  }

  /** Called after records were applied (committed here or read from another process). */
  afterApplied(): void {
    const { snapshots, state } = this;
    if (snapshots === undefined || this.#writing !== undefined || this.#closed) return;
    const seq = state.lastSeq;
    if (seq === 0 || state.settledSeq !== seq || this.log.lastSeq() !== seq) return;
    const logBytesAt = snapshots.logBytes();
    const due = isSnapshotDue({
      seq,
      newest: this.#newest,
      bytesSince: logBytesAt - this.#newest.logBytesAt,
      policy: snapshots.policy,
    });
    if (!due) return;
    const snapshot = state.snapshot();
    this.#writing = this.#write(snapshots, snapshot, logBytesAt).finally(() => {
      this.#writing = undefined;
    });
  }

  async #write(
    snapshots: TeamLogSnapshots,
    snapshot: TeamStateSnapshot,
    logBytesAt: number,
  ): Promise<void> {
    const { seq } = snapshot;
    try {
      const { bytes } = await snapshots.write(snapshot);
      this.#newest = { seq, bytes, logBytesAt };
    } catch (error) {
      this.#report(error, `snapshot at seq ${seq} was not written`);
      return;
    }
    try {
      await snapshots.prune({ keep: snapshots.policy.keep });
    } catch (error) {
      this.#report(error, `snapshots older than seq ${seq} were not pruned`);
    }
  }

  #report(error: unknown, what: string): void {
    this.events.publish(this.agentName(), {
      type: 'error',
      code: TeamError.isInstance(error) ? error.code : 'STORAGE_IO',
      message: `${what}: ${error instanceof Error ? error.message : String(error)}`,
    });
  }

  /** Stops scheduling and waits for the write in flight, so the store closes after it. */
  async close(): Promise<void> {
    this.#closed = true;
    await this.#writing;
  }
}
