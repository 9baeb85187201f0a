import { TeamError } from '../errors.js';
import type { EventSink } from '../ports/events.js';
import type { SharedTeamLog, TeamLog } from '../ports/team-log.js';
import type { QueuedMessage, TeamRecord } from '../records.js';
import type { TeamState } from '../state/index.js';

/** What the pipeline writes to. */
export interface CommitPipelineOptions {
  log: TeamLog;
  state: TeamState;
  events: EventSink;
}

/**
 * What follows the pipeline (see {@link CommitPipeline.follow}). Followers are told in the order
 * they were added.
 */
export interface CommitFollower {
  /**
   * The one feed of the runtime: called once for every durable record, this process's and other
   * processes' alike, in seq order, after the state applied it and the hub published it. Routing
   * mail, waking runners, waiters and snapshots all follow it.
   */
  durable?(records: readonly TeamRecord[]): void;
  /** The shared log refused a write for `memberId`: another process runs it now. */
  fenced?(memberId: string): void;
  /** Once, when the log refused an append and the service turned itself off. */
  broken?(error: TeamError): void;
}

/** Options of {@link CommitPipeline.commit}. */
export interface CommitOptions {
  /** The member the records are written for (a shared log fences it); none for system writes. */
  actorId?: string | undefined;
}

/** A command decided against the state and waiting to be durable (shared logs). */
interface PendingCommit {
  readonly actorName: string;
  readonly actorId: string | undefined;
  readonly decide: () => readonly TeamRecord[];
  records: readonly TeamRecord[];
  resolve(records: readonly TeamRecord[]): void;
  reject(error: unknown): void;
}

/** Records another process appended are published in chunks of at most this many. */
const REMOTE_CHUNK = 256;

/**
 * The one way records reach the team log. A caller passes a `decide` function that runs a
 * command against the state (applying its records, synchronously, so concurrent calls serialize
 * on the event loop) and returns the records; the pipeline makes them durable and resolves with
 * them. Each record is published as a `record` event only once it is durable. It is also the
 * service's write gate: once disposed (`close`) or broken (a refused append, after which the
 * state may be ahead of the log) every `guard` throws.
 *
 * A `decide` that throws leaves the state as it was: records it applied before throwing are
 * reverted. On a single-process log appends pipeline in call order. On a shared log (many
 * processes) a batch at a time is in flight: when another process took the next seq first
 * (`SEQ_CONFLICT`), every record not yet durable is reverted, the records written elsewhere are
 * applied and published, and each waiting command is decided again against the new state (it may
 * now fail, with the error it would get in one process) and retried.
 */
export class CommitPipeline {
  private readonly inflight = new Set<Promise<void>>();
  /** Ids of messages whose `message.queued` append has not resolved yet. */
  private readonly unconfirmed = new Set<string>();
  private brokenError: TeamError | undefined;
  private disposing = false;
  private readonly shared: SharedTeamLog | undefined;
  /** Shared log: commands decided and not yet durable, in decision order (in flight first). */
  private pending: PendingCommit[] = [];
  private catchUpWanted = false;
  private looping: Promise<void> | undefined;
  private unsubscribe: (() => void) | undefined;

  private readonly followers: CommitFollower[] = [];

  constructor(private readonly options: CommitPipelineOptions) {
    this.shared = options.log.shared;
    options.state.startJournal();
    if (this.shared !== undefined) {
      this.unsubscribe = this.shared.onAppended(() => this.requestCatchUp());
    }
  }

  /**
   * Adds a follower of the durable records (and of fencing and breakdown); followers are told in
   * the order they were added. The team's parts follow it: waiters, the runner pool, snapshots.
   */
  follow(follower: CommitFollower): void {
    this.followers.push(follower);
  }

  private tell(each: (follower: CommitFollower) => void): void {
    for (const follower of this.followers) each(follower);
  }

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

  /** True while an append is in flight or a command waits for one. */
  get busy(): boolean {
    return this.inflight.size > 0 || this.pending.length > 0;
  }

  /** Refuses further writes with `DISPOSED` (in-flight appends still finish). */
  close(): void {
    this.disposing = true;
    this.unsubscribe?.();
    this.unsubscribe = undefined;
  }

  /** Throws `STORE_CLOSED` / `DISPOSED` once the service can no longer write. */
  guard(): void {
    if (this.brokenError !== undefined) throw this.brokenError;
    if (this.disposing) {
      throw new TeamError('DISPOSED', 'the team service was disposed; open the team again');
    }
  }

  /** Resolves when every append in flight now has settled. */
  async settled(): Promise<void> {
    await Promise.allSettled([...this.inflight]);
    await this.looping;
  }

  /**
   * Decides a command (`decide` applies its records to the state and returns them), appends the
   * records and publishes them under `actorName`. Resolves with the records that became durable:
   * on a shared log, those of the last decision (the command may have been decided again).
   */
  commit<R extends readonly TeamRecord[]>(
    actorName: string,
    decide: () => R,
    options: CommitOptions = {},
  ): Promise<R> {
    let records: R;
    try {
      this.guard();
      records = this.decide(decide);
    } catch (error) {
      return Promise.reject(error);
    }
    if (records.length === 0) return Promise.resolve(records);
    if (this.shared === undefined) return this.appendNow(actorName, records, options.actorId);
    return new Promise<R>((resolve, reject) => {
      this.pending.push({
        actorName,
        actorId: options.actorId,
        decide,
        records,
        resolve: resolve as (records: readonly TeamRecord[]) => void,
        reject,
      });
      this.hide(records);
      this.kick();
    });
  }

  /**
   * Reads what other processes appended and applies it (a shared log; a no-op otherwise). The
   * doorbell of the log calls it; `openTeam` calls it once the service is wired.
   */
  requestCatchUp(): void {
    if (this.shared === undefined || this.closed) return;
    this.catchUpWanted = true;
    this.kick();
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

  // ------------------------------------------------------------ single-process log

  private async appendNow<R extends readonly TeamRecord[]>(
    actorName: string,
    records: R,
    actorId: string | undefined,
  ): Promise<R> {
    this.hide(records);
    const appending = this.options.log.append({ records, actorId });
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
      this.reveal(records);
    }
    this.options.state.settle((records.at(-1) as TeamRecord).seq);
    this.publish(actorName, records);
    this.tell((f) => f.durable?.(records));
    return records;
  }

  // ------------------------------------------------------------ shared log

  /** Runs `decide`, reverting what it applied when it throws. */
  private decide<R extends readonly TeamRecord[]>(decide: () => R): R {
    const { state } = this.options;
    const mark = state.lastSeq;
    try {
      return decide();
    } catch (error) {
      state.revertTo(mark);
      throw error;
    }
  }

  private kick(): void {
    if (this.looping !== undefined) return;
    this.looping = this.loop().finally(() => {
      this.looping = undefined;
      // a command or a doorbell that came in while the loop was finishing
      if (!this.closed && (this.catchUpWanted || this.pending.length > 0)) this.kick();
    });
  }

  /** One batch at a time: catch up when asked, then append the waiting commands of one actor. */
  private async loop(): Promise<void> {
    while (this.brokenError === undefined) {
      if (this.catchUpWanted) {
        this.catchUpWanted = false;
        try {
          await this.catchUp();
        } catch (error) {
          this.failAll(this.breakDown(error));
          return;
        }
        continue;
      }
      const first = this.pending[0];
      if (first === undefined) return;
      let count = 0;
      const records: TeamRecord[] = [];
      for (const commit of this.pending) {
        if (commit.actorId !== first.actorId) break;
        for (const record of commit.records) records.push(record);
        count++;
      }
      try {
        await this.options.log.append({ records, actorId: first.actorId });
      } catch (error) {
        if (TeamError.hasCode(error, 'SEQ_CONFLICT')) {
          // another process took the seq: what it wrote must be there to read
          try {
            if ((await this.catchUp()) === 0) throw error;
          } catch (failure) {
            this.failAll(this.breakDown(failure));
            return;
          }
          continue;
        }
        if (TeamError.hasCode(error, 'FENCED') && first.actorId !== undefined) {
          this.fence(first.actorId, error);
          continue;
        }
        this.failAll(this.breakDown(error));
        return;
      }
      const done = this.pending.splice(0, count);
      this.options.state.settle((records.at(-1) as TeamRecord).seq);
      this.reveal(records);
      for (const commit of done) this.publish(commit.actorName, commit.records);
      this.tell((f) => f.durable?.(records));
      for (const commit of done) commit.resolve(commit.records);
      // Let the callers just answered decide their next commands first: they then share the next
      // append instead of trickling in behind a batch of one (group commit).
      await new Promise<void>((resolve) => setImmediate(resolve));
    }
  }

  /**
   * Applies what other processes appended since the last durable record: reverts the records of
   * waiting commands first, then decides those commands again.
   */
  private async catchUp(): Promise<number> {
    const { state, log } = this.options;
    let reverted = false;
    let read = 0;
    let chunk: TeamRecord[] = [];
    for await (const record of log.read({ fromSeq: state.settledSeq + 1 })) {
      // commands decided meanwhile (even while this read was awaited) go back first
      if (state.lastSeq > state.settledSeq) state.revertTo(state.settledSeq);
      reverted = true;
      state.apply(record);
      state.settle(record.seq);
      read++;
      chunk.push(record);
      if (chunk.length >= REMOTE_CHUNK) {
        this.publishRemote(chunk);
        chunk = [];
      }
    }
    if (chunk.length > 0) this.publishRemote(chunk);
    if (reverted) this.redecide(() => false);
    return read;
  }

  /** The log refused a write for `memberId`: its commands fail, the others are decided again. */
  private fence(memberId: string, error: unknown): void {
    this.redecide((commit) => {
      if (commit.actorId !== memberId) return false;
      commit.reject(error);
      return true;
    });
    this.tell((f) => f.fenced?.(memberId));
  }

  /**
   * Reverts every record not yet durable, then decides every waiting command again, in order,
   * against the state that is left; `drop` picks
   * commands to leave out (it settles them itself). A command that now throws is rejected with
   * that error; one that now decides nothing resolves at once.
   */
  private redecide(drop: (commit: PendingCommit) => boolean): void {
    const { state } = this.options;
    state.revertTo(state.settledSeq);
    const kept: PendingCommit[] = [];
    for (const commit of this.pending) {
      if (drop(commit)) continue;
      try {
        commit.records = this.decide(commit.decide);
      } catch (error) {
        commit.reject(error);
        continue;
      }
      if (commit.records.length === 0) commit.resolve(commit.records);
      else kept.push(commit);
    }
    this.pending = kept;
    this.trackUnconfirmed();
  }

  private failAll(error: TeamError): void {
    for (const commit of this.pending.splice(0)) commit.reject(error);
    this.unconfirmed.clear();
  }

  /** Rebuilds the set of mail not yet durable from the waiting commands (after a redecision). */
  private trackUnconfirmed(): void {
    this.unconfirmed.clear();
    for (const commit of this.pending) this.hide(commit.records);
  }

  /** Keeps the mail `records` queue out of `deliverable` until they are durable. */
  private hide(records: readonly TeamRecord[]): void {
    for (const record of records) {
      if (record.type === 'message.queued') this.unconfirmed.add(record.message.id);
    }
  }

  /** The mail `records` queued is durable now. */
  private reveal(records: readonly TeamRecord[]): void {
    for (const record of records) {
      if (record.type === 'message.queued') this.unconfirmed.delete(record.message.id);
    }
  }

  private publish(actorName: string, records: readonly TeamRecord[]): void {
    const { events } = this.options;
    for (const record of records) events.publish(actorName, { type: 'record', record });
  }

  private publishRemote(records: readonly TeamRecord[]): void {
    const { events, state } = this.options;
    for (const record of records)
      events.publish(recordActorName(state, record), { type: 'record', record });
    this.tell((f) => f.durable?.(records));
  }

  private breakDown(cause: unknown): TeamError {
    if (this.brokenError === undefined) {
      this.brokenError = new TeamError(
        'STORE_CLOSED',
        'the team log refused an append; the team must be reopened from its log',
        { cause },
      );
      const error = this.brokenError;
      this.tell((f) => f.broken?.(error));
    }
    return this.brokenError;
  }
}

/** Whose change a record written by another process is, as observers name it. */
function recordActorName(state: TeamState, record: TeamRecord): string {
  switch (record.type) {
    case 'member':
      return record.member.name;
    case 'task':
      return state.member(record.task.ownerId ?? record.task.creatorId)?.name ?? 'team';
    case 'message.queued':
      return record.message.senderName;
    case 'message.delivered':
      return state.member(record.targetId)?.name ?? 'team';
    default:
      return 'team';
  }
}

/**
 * True for an error that says the service can no longer write (for this member), not that the
 * command was refused: a caller that handles a refused command must let these through.
 */
export function isWriteFailure(error: TeamError): boolean {
  return (
    error.code === 'STORE_CLOSED' ||
    error.code === 'DISPOSED' ||
    error.code === 'FENCED' ||
    error.code === 'STORE_UNAVAILABLE'
  );
}
