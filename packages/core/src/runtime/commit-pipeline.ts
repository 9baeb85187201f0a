import { TeamError } from '../errors.js';
import type { EventSink } from '../ports/events.js';
import type { TeamLog } from '../ports/team-log.js';
import type { QueuedMessage, TeamRecord } from '../records.js';
import type { TeamState } from '../state/index.js';

/** What the pipeline writes to and whom it tells. */
export interface CommitPipelineOptions {
  log: TeamLog;
  state: TeamState;
  events: EventSink;
  /** Called after every durable commit, with its records, once they are published. */
  onCommitted(records: readonly TeamRecord[]): void;
  /** Called once, when the log refused an append and the service turned itself off. */
  onBroken(error: TeamError): void;
}

/**
 * The one way records reach the team log. Callers apply a command to the state first
 * (synchronously, so concurrent calls serialize on the event loop), then `commit` its records:
 * appends pipeline in call order, and each record is published as a `record` event only once it
 * is durable. It is also the service's write gate: once disposed (`close`) or broken (a refused
 * append, after which the state may be ahead of the log) every `guard` throws.
 */
export class CommitPipeline {
  private readonly inflight = new Set<Promise<void>>();
  /** Ids of messages whose `message.queued` append has not resolved yet. */
  private readonly unconfirmed = new Set<string>();
  private brokenError: TeamError | undefined;
  private disposing = false;

  constructor(private readonly options: CommitPipelineOptions) {}

  /** The `STORE_CLOSED` error once an append failed. */
  get broken(): TeamError | undefined {
    return this.brokenError;
  }

  /** True once disposed or broken: nothing more may be written. */
  get closed(): boolean {
    return this.disposing || this.brokenError !== undefined;
  }

  /** True once {@link close} ran. */
  get disposed(): boolean {
    return this.disposing;
  }

  /** True while an append is in flight. */
  get busy(): boolean {
    return this.inflight.size > 0;
  }

  /** Refuses further writes with `DISPOSED` (in-flight appends still finish). */
  close(): void {
    this.disposing = true;
  }

  /** Throws `STORE_CLOSED` / `DISPOSED` once the service can no longer write. */
  guard(): void {
    if (this.brokenError !== undefined) throw this.brokenError;
    if (this.disposing) {
      throw new TeamError('DISPOSED', 'the team service was disposed; open the team again');
    }
  }

  /** Resolves when every append in flight now has settled. */
  settled(): Promise<void> {
    return Promise.allSettled([...this.inflight]).then(() => undefined);
  }

  /** Appends records the state already applied, then publishes them under `actorName`. */
  async commit(actorName: string, records: readonly TeamRecord[]): Promise<void> {
    if (records.length === 0) return;
    const queued: string[] = [];
    for (const record of records) {
      if (record.type === 'message.queued') {
        queued.push(record.message.id);
        this.unconfirmed.add(record.message.id);
      }
    }
    const appending = this.options.log.append({ records });
    const tracked = appending.then(
      () => undefined,
      () => undefined,
    );
    this.inflight.add(tracked);
    try {
      await appending;
    } catch (error) {
      throw this.breakDown(error);
    } finally {
      this.inflight.delete(tracked);
      for (const id of queued) this.unconfirmed.delete(id);
    }
    const { events } = this.options;
    for (const record of records) events.publish(actorName, { type: 'record', record });
    this.options.onCommitted(records);
  }

  /**
   * The mail of `memberId` a runner may act on: pending messages whose `message.queued` record is
   * durable. A message still being appended stays invisible, so no transcript can hold a message
   * that a crash then erases from the log.
   */
  deliverable(memberId: string): readonly QueuedMessage[] {
    const pending = this.options.state.pending(memberId);
    if (this.unconfirmed.size === 0) return pending;
    return pending.filter((message) => !this.unconfirmed.has(message.id));
  }

  private breakDown(cause: unknown): TeamError {
    if (this.brokenError === undefined) {
      this.brokenError = new TeamError(
        'STORE_CLOSED',
        'the team log refused an append; the team must be reopened from its log',
        { cause },
      );
      this.options.onBroken(this.brokenError);
    }
    return this.brokenError;
  }
}
