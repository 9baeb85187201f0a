import { TeamError } from '../errors.js';
import type { EventSink } from '../ports/events.js';
import type { TeamLog, TeamLogSnapshots } from '../ports/team-log.js';
import type { TeamStateOptions } from '../state/index.js';
import { TeamState } from '../state/index.js';

/** What opening a team read: where its state came from. */
export interface LoadedState {
  /** The team's state after the last record of the log. */
  state: TeamState;
  /** The seq of the snapshot it was restored from (0: a full fold). */
  snapshotSeq: number;
  /** Snapshots the store offered that failed validation, newest first. */
  rejected: number;
}

/**
 * The state of a team from its log: the newest snapshot the store offers that validates, then
 * the records after it, folded strictly; without a valid snapshot, the whole log. Records are
 * applied as they are read, never gathered first.
 */
export async function loadTeamState(log: TeamLog, options: TeamStateOptions): Promise<LoadedState> {
  let state: TeamState | undefined;
  let rejected = 0;
  const snapshots = log.snapshots;
  if (snapshots !== undefined) {
    for await (const stored of snapshots.list()) {
      try {
        const restored = TeamState.fromSnapshot(stored.state, options);
        if (restored.lastSeq !== stored.seq) {
          throw new TeamError(
            'SNAPSHOT_INVALID',
            `${stored.source} is stored as seq ${stored.seq} but holds the state at seq ${restored.lastSeq}`,
            { details: { seq: stored.seq } },
          );
        }
        state = restored;
        break;
      } catch (error) {
        if (!(error instanceof TeamError)) throw error;
        rejected++;
        snapshots.rejected(stored, error);
      }
    }
  }
  const snapshotSeq = state?.lastSeq ?? 0;
  state ??= new TeamState(options);
  for await (const record of log.read({ fromSeq: state.lastSeq + 1 })) state.apply(record);
  return { state, snapshotSeq, rejected };
}

/**
 * Writes snapshots in the background as the log grows: after a commit, when the store says one
 * is due and every applied record is settled and durable (none applied ahead of an append still
 * in flight, none that could be reverted), the state is
 * captured (O(state) references, no copies: stored values are immutable) and handed to the store.
 * One write at a time; a failed write is reported as an `error` event and retried when the next
 * one is due, and never stops the team.
 */
export class SnapshotScheduler {
  #writing: Promise<void> | undefined;
  #closed = false;

  private readonly snapshots: TeamLogSnapshots | undefined;

  constructor(
    private readonly log: TeamLog,
    private readonly state: TeamState,
    private readonly events: EventSink,
    private readonly agentName: () => string,
  ) {
    this.snapshots = log.snapshots;
  }

  /** Called after records were applied (committed here or read from another process). */
  afterApplied(): void {
    const { snapshots, state } = this;
    if (snapshots === undefined || this.#writing !== undefined || this.#closed) return;
    const seq = state.lastSeq;
    if (seq === 0 || state.settledSeq !== seq || this.log.lastSeq() !== seq) return;
    if (!snapshots.due(seq)) return;
    const snapshot = state.snapshot();
    this.#writing = snapshots
      .write(snapshot)
      .catch((error: unknown) => {
        const code = error instanceof TeamError ? error.code : 'STORAGE_IO';
        this.events.publish(this.agentName(), {
          type: 'error',
          code,
          message: `snapshot at seq ${seq} was not written: ${error instanceof Error ? error.message : String(error)}`,
        });
      })
      .finally(() => {
        this.#writing = undefined;
      });
  }

  /** Stops scheduling and waits for the write in flight, so the store closes after it. */
  async close(): Promise<void> {
    this.#closed = true;
    await this.#writing;
  }
}
