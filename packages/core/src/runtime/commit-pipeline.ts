import { TeamError } from '../errors.js';
import {
  SEQUENCER_BATCH_RECORDS_MAX,
  SEQUENCER_GATHER_MS,
  SEQUENCER_QUEUE_MAX,
} from '../limits.js';
import type { EventSink } from '../ports/events.js';
import type {
  AppendPart,
  IncomingProposal,
  SharedTeamLog,
  TeamLog,
  TeamSequencer,
} from '../ports/team-log.js';
import type { QueuedMessage, TeamRecord } from '../records.js';
import type { TeamState } from '../state/index.js';
import { isRebasable, rebaseRecords } from './rebase.js';

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
  /**
   * Set once the command's records were proposed to the sequencer (or, for another process's
   * proposal, its id): every later append of the command carries it, so the log writes it once.
   */
  proposalId?: string | undefined;
  /**
   * The records as proposed under `proposalId` (a decision again may give other ids): the log
   * holds these if the proposal was written, and a catch-up finds them by their message ids.
   */
  proposed?: readonly TeamRecord[] | undefined;
  /** Appended by this process from now on, never proposed (after a refusal or no answer). */
  direct?: boolean;
  /** Another process's proposal this process, its sequencer, commits. */
  remote?: IncomingProposal | undefined;
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
  private unserve: (() => void) | undefined;
  private readonly sequencer: TeamSequencer | undefined;
  /** Proposals received ahead of the state (they build on records not read yet). */
  private deferred: IncomingProposal[] = [];
  /** Sequencer: proposals of other processes the last append carried. */
  private lastRemote = 0;
  /** Sequencer: wakes a group-commit wait when a proposal comes in. */
  private gathered: (() => void) | undefined;

  private readonly followers: CommitFollower[] = [];

  constructor(private readonly options: CommitPipelineOptions) {
    this.shared = options.log.shared;
    options.state.startJournal();
    this.sequencer = this.shared?.sequencer;
    if (this.shared !== undefined) {
      this.unsubscribe = this.shared.onAppended(() => this.requestCatchUp());
    }
    if (this.sequencer !== undefined) {
      this.unserve = this.sequencer.serve((proposal) => this.receive(proposal));
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
    this.unserve?.();
    this.unserve = undefined;
    for (const proposal of this.deferred.splice(0)) proposal.answer({ outcome: 'unsent' });
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

  /** One batch at a time: catch up when asked, then append (or propose) waiting commands. */
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
      const sequencer = this.sequencer;
      if (sequencer !== undefined && !sequencer.leading() && this.proposable(first)) {
        await this.propose(sequencer, first);
        continue;
      }
      const leading = sequencer?.leading() === true;
      if (leading && this.lastRemote > 0 && this.remoteWaiting() < this.lastRemote) {
        await this.gather();
        continue;
      }
      let count = 0;
      const records: TeamRecord[] = [];
      const parts: AppendPart[] = [];
      for (const commit of this.pending) {
        // A sequencer writes every waiting command, its own and proposed ones, in one append;
        // any other process one actor's commands at a time (the fence covers one actor).
        if (leading) {
          if (count > 0 && records.length + commit.records.length > SEQUENCER_BATCH_RECORDS_MAX)
            break;
        } else if (commit.actorId !== first.actorId) break;
        for (const record of commit.records) records.push(record);
        parts.push({
          count: commit.records.length,
          actorId: commit.actorId,
          proposalId: commit.proposalId,
          proposal: commit.remote,
        });
        count++;
      }
      // Parts only when the batch needs them (several actors, a proposal, a proposal id): one
      // actor's own commands are written as without a sequencer.
      const inParts =
        sequencer !== undefined &&
        parts.some(
          (part) =>
            part.actorId !== first.actorId ||
            part.proposal !== undefined ||
            part.proposalId !== undefined,
        );
      try {
        await this.options.log.append(
          inParts ? { records, parts } : { records, actorId: first.actorId },
        );
      } catch (error) {
        if (TeamError.hasCode(error, 'SEQ_CONFLICT')) {
          // Proposals another process wrote meanwhile: the proposer of one this process was
          // to commit wrote it itself (and finds it), so it is answered and dropped here.
          const written = writtenProposals(error);
          if (written.size > 0) {
            this.redecide((c) => {
              if (c.remote === undefined || !written.has(c.remote.id)) return false;
              c.reject(error);
              return true;
            });
          }
          // another process took the seq: what it wrote must be there to read
          try {
            const read = await this.catchUp();
            // nothing new to read, and not only proposals to drop: the refusal cannot be acted on
            const stuck = this.pending.some(
              (c) => c.proposalId !== undefined && written.has(c.proposalId),
            );
            if (read === 0 && (written.size === 0 || stuck)) throw error;
          } catch (failure) {
            this.failAll(this.breakDown(failure));
            return;
          }
          continue;
        }
        if (TeamError.hasCode(error, 'FENCED')) {
          const part = inParts ? partOf(error) : 0;
          const commit = part === undefined ? undefined : this.pending[part];
          if (commit?.remote !== undefined) {
            this.redecide((c) => {
              if (c !== commit) return false;
              c.reject(error);
              return true;
            });
            continue;
          }
          if (commit?.actorId !== undefined) {
            this.fence(commit.actorId, error);
            continue;
          }
        }
        this.failAll(this.breakDown(error));
        return;
      }
      const done = this.pending.splice(0, count);
      // A proposal's id is in the log now, written by this append: commands proposed with these
      // that wait for a later append are this process's to write, without the id.
      for (const commit of this.pending) {
        const id = commit.proposalId;
        if (
          id !== undefined &&
          commit.remote === undefined &&
          done.some((d) => d.proposalId === id)
        ) {
          commit.proposalId = undefined;
        }
      }
      this.lastRemote = 0;
      if (leading) for (const commit of done) if (commit.remote !== undefined) this.lastRemote++;
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

  /** Proposals of other processes waiting in this sequencer's pipeline. */
  private remoteWaiting(): number {
    let remote = 0;
    for (const commit of this.pending) if (commit.remote !== undefined) remote++;
    return remote;
  }

  /**
   * Group commit: waits until as many proposals wait as the last append carried, or at most
   * `SEQUENCER_GATHER_MS`; the next append then carries them together. Waits once per append.
   */
  private gather(): Promise<void> {
    const want = this.lastRemote;
    this.lastRemote = 0;
    return new Promise<void>((resolve) => {
      const done = () => {
        clearTimeout(timer);
        this.gathered = undefined;
        resolve();
      };
      const timer = setTimeout(done, SEQUENCER_GATHER_MS);
      this.gathered = () => {
        if (this.remoteWaiting() >= want || this.catchUpWanted || this.closed) done();
      };
    });
  }

  /** Whether `commit` may go to the sequencer: this process's own, rebasable, never refused. */
  private proposable(commit: PendingCommit): boolean {
    return (
      commit.remote === undefined &&
      commit.direct !== true &&
      commit.proposalId === undefined &&
      isRebasable(commit.records)
    );
  }

  /**
   * Proposes the waiting commands of `first`'s actor that may be proposed to the sequencer, and
   * acts on its answer. Committed: the records come back through the next catch-up, which finds
   * them by their message ids and resolves the commands with the durable copies. Refused or
   * fenced: the log is read and the commands decided again, to be appended by this process (whose
   * append the log fences if the member moved). No answer: this process appends them, under the
   * same proposal id.
   */
  private async propose(sequencer: TeamSequencer, first: PendingCommit): Promise<void> {
    const batch: PendingCommit[] = [];
    const records: TeamRecord[] = [];
    for (const commit of this.pending) {
      if (commit.actorId !== first.actorId || !this.proposable(commit)) break;
      if (batch.length > 0 && records.length + commit.records.length > SEQUENCER_BATCH_RECORDS_MAX)
        break;
      batch.push(commit);
      for (const record of commit.records) records.push(record);
    }
    const id = globalThis.crypto.randomUUID();
    for (const commit of batch) {
      commit.proposalId = id;
      commit.proposed = commit.records;
    }
    const answer = await sequencer.propose({ id, actorId: first.actorId, records });
    switch (answer.outcome) {
      case 'committed':
        this.catchUpWanted = true;
        // not found by the catch-up (it cannot be): the next append of its id tells
        for (const commit of batch) commit.direct = true;
        return;
      // An answer is the transport's word, which a store may not be able to vouch for (anyone
      // who can reach the transport could send one): `fenced` is not taken on trust. The commands
      // are appended by this process, whose own append the log fences if the member moved.
      case 'fenced':
      case 'refused':
        this.catchUpWanted = true;
        for (const commit of batch) commit.direct = true;
        return;
      default:
        for (const commit of batch) commit.direct = true;
        return;
    }
  }

  /**
   * The sequencer's side: decides another process's proposal again against this state
   * (`rebaseRecords`) and queues it behind the commands already waiting; it is answered once it
   * is durable or refused.
   */
  private receive(proposal: IncomingProposal, caughtUp = false): void {
    if (this.closed) {
      proposal.answer({ outcome: 'unsent' });
      return;
    }
    const first = proposal.records[0];
    const remote = this.remoteWaiting();
    if (
      first === undefined ||
      !isRebasable(proposal.records) ||
      remote + this.deferred.length >= SEQUENCER_QUEUE_MAX
    ) {
      proposal.answer({ outcome: 'refused', code: 'SEQUENCER_BUSY' });
      return;
    }
    const { state } = this.options;
    if (!caughtUp && first.seq - 1 > state.settledSeq) {
      // it builds on records this process has not read yet: read them first
      this.deferred.push(proposal);
      this.requestCatchUp();
      return;
    }
    const decide = () => rebaseRecords(state, proposal.records);
    let records: readonly TeamRecord[];
    try {
      records = this.decide(decide);
    } catch (error) {
      proposal.answer({ outcome: 'refused', code: codeOf(error) });
      return;
    }
    this.pending.push({
      actorName: senderNameOf(first),
      actorId: proposal.actorId,
      decide,
      records,
      proposalId: proposal.id,
      proposed: proposal.records,
      remote: proposal,
      resolve: (durable) => {
        const last = durable.at(-1);
        if (last === undefined) proposal.answer({ outcome: 'refused', code: 'SEQ_CONFLICT' });
        else proposal.answer({ outcome: 'committed', first: durable[0]!.seq, last: last.seq });
      },
      reject: (error) =>
        proposal.answer(
          TeamError.hasCode(error, 'FENCED')
            ? { outcome: 'fenced' }
            : { outcome: 'refused', code: codeOf(error) },
        ),
    });
    this.hide(records);
    this.kick();
    this.gathered?.();
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
    // Commands whose records were proposed: found in the log by their message ids.
    const claims = new Map<string, PendingCommit>();
    for (const commit of this.pending) {
      if (commit.proposed === undefined) continue;
      for (const record of commit.proposed) {
        if (record.type === 'message.queued') claims.set(record.message.id, commit);
      }
    }
    const claimed = new Map<PendingCommit, TeamRecord[]>();
    const names = new Map<TeamRecord, string>();
    for await (const record of log.read({ fromSeq: state.settledSeq + 1 })) {
      // commands decided meanwhile (even while this read was awaited) go back first
      if (state.lastSeq > state.settledSeq) state.revertTo(state.settledSeq);
      reverted = true;
      state.apply(record);
      state.settle(record.seq);
      read++;
      const owner = record.type === 'message.queued' ? claims.get(record.message.id) : undefined;
      if (owner !== undefined) {
        const durable = claimed.get(owner) ?? [];
        durable.push(record);
        claimed.set(owner, durable);
        names.set(record, owner.actorName);
      }
      chunk.push(record);
      if (chunk.length >= REMOTE_CHUNK) {
        this.publishRemote(chunk, names);
        chunk = [];
      }
    }
    if (chunk.length > 0) this.publishRemote(chunk, names);
    if (claimed.size > 0) {
      this.pending = this.pending.filter((commit) => !claimed.has(commit));
      for (const [commit, durable] of claimed) {
        if (durable.length !== commit.proposed?.length) {
          throw new TeamError(
            'LOG_INVARIANT',
            `the log holds ${durable.length} of the ${commit.proposed?.length} records of proposal ${commit.proposalId}`,
            { details: { proposalId: commit.proposalId } },
          );
        }
      }
    }
    if (reverted) this.redecide(() => false);
    for (const [commit, durable] of claimed) commit.resolve(durable);
    for (const proposal of this.deferred.splice(0)) this.receive(proposal, true);
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
    for (const proposal of this.deferred.splice(0)) proposal.answer({ outcome: 'unsent' });
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

  /** Publishes records read from the log; `names` names the actor of this process's own ones. */
  private publishRemote(
    records: readonly TeamRecord[],
    names?: ReadonlyMap<TeamRecord, string>,
  ): void {
    const { events, state } = this.options;
    for (const record of records) {
      const actor = names?.get(record) ?? recordActorName(state, record);
      events.publish(actor, { type: 'record', record });
    }
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

/** The part of an append a `FENCED` rejection names (`details.part`), if any. */
function partOf(error: TeamError): number | undefined {
  const part = (error.details as { part?: unknown } | undefined)?.part;
  return typeof part === 'number' && Number.isInteger(part) && part >= 0 ? part : undefined;
}

/** The proposal ids a `SEQ_CONFLICT` says the log already holds (`details.proposalIds`). */
function writtenProposals(error: TeamError): ReadonlySet<string> {
  const ids = (error.details as { proposalIds?: unknown } | undefined)?.proposalIds;
  if (!Array.isArray(ids)) return new Set();
  return new Set(ids.filter((id): id is string => typeof id === 'string'));
}

/** The stable code of a refusal, for the proposer. */
function codeOf(error: unknown): string {
  return TeamError.isInstance(error) ? error.code : 'INTERNAL';
}

/** The name a proposed record is published under: its sender's. */
function senderNameOf(record: TeamRecord): string {
  return record.type === 'message.queued' ? record.message.senderName : 'team';
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
