import type { TeamRecord } from '../records.js';
import type { TeamStateSnapshot } from '../state/snapshot.js';
import type { SnapshotPolicy } from '../state/snapshot-policy.js';
import type { MemberPlacement } from './placement.js';

/** Options of {@link TeamLog.append}. */
export interface TeamLogAppendOptions {
  /** The records, in order, with `seq` contiguous from `lastSeq() + 1`. */
  records: readonly TeamRecord[];
  /**
   * The member on whose behalf they are written: its runner, or the caller of a service method.
   * A shared log refuses the append with `FENCED` when this process no longer runs that member,
   * checked in the same transaction as the write. A single-process log ignores it.
   */
  actorId?: string | undefined;
  /**
   * Only for a shared log with a {@link TeamSequencer}: `records` split into consecutive parts,
   * each written for its own member, and each under its own proposal id or on behalf of another
   * process's proposal. `actorId` is then ignored. The log checks every part's fence in the same
   * statement as the write and writes all parts or none: a part that fails its fence rejects the
   * append with `FENCED` and `details.part` (its index), and a part whose proposal id the log
   * already holds rejects it with `SEQ_CONFLICT` and `details.proposalIds` (those it holds).
   */
  parts?: readonly AppendPart[] | undefined;
}

/** One part of an append (see {@link TeamLogAppendOptions.parts}). */
export interface AppendPart {
  /** How many of the append's records, following those of the parts before it. */
  readonly count: number;
  /** The member the part is written for (fenced as `actorId` is); none for system writes. */
  readonly actorId?: string | undefined;
  /**
   * The id of the proposal whose records these are, if they were ever proposed: the log holds a
   * proposal id at most once, so a proposal is never written twice, by its sequencer and its
   * proposer alike. Consecutive parts of one append may share an id (the commands of one
   * proposal, appended by their proposer): the id is then held once, for all of them.
   */
  readonly proposalId?: string | undefined;
  /**
   * A proposal of another process ({@link IncomingProposal}): the log fences the part with the
   * proposer's own claim on `actorId`, and writes `proposal.id` as its proposal id.
   */
  readonly proposal?: IncomingProposal | undefined;
}

/**
 * The durable, totally ordered log of one team. Records are appended whole, with `seq`
 * already assigned by the caller (contiguous from 1); the log refuses a gap or a repeat.
 */
export interface TeamLog {
  /** The version of this port the store implements; checked when a team opens. */
  readonly specificationVersion: 'v1';
  /** The team whose records this log holds; every record carries it. */
  readonly teamId: string;
  /**
   * Appends `records` in order and resolves once they are durable under the store's policy.
   * Concurrent calls are written in call order. A rejected append leaves the log foldable; the
   * log may then refuse further appends (`STORE_CLOSED`) until it is reopened.
   */
  append(options: TeamLogAppendOptions): Promise<void>;
  /**
   * Reads records with `seq >= fromSeq` (default 1), in order, validated. A log whose oldest
   * records were removed under a retention policy rejects a read that starts before them with
   * `HISTORY_UNAVAILABLE`.
   */
  read(options?: { fromSeq?: number; signal?: AbortSignal }): AsyncIterable<TeamRecord>;
  /** Calls `listener` for every record once it is durable, in order. Returns an unsubscribe. */
  subscribe(options: { listener: (record: TeamRecord) => void }): () => void;
  /** The seq of the last durable record (0 for an empty log). */
  lastSeq(): number;
  /** Flushes and releases the log; later appends fail with `STORE_CLOSED`. Idempotent. */
  close(): Promise<void>;
  /**
   * Present when other processes append to the same log (e.g. `@teamwire/postgres`). The team
   * service then treats a `SEQ_CONFLICT` rejection as a lost race (it reads the records it missed,
   * applies them, decides the command again and retries), follows `shared.onAppended`
   * for records written elsewhere, and places members with `shared.placement`.
   */
  readonly shared?: SharedTeamLog | undefined;
  /**
   * Present when the store keeps snapshots of the folded state: `openTeam` then restores the
   * newest one it can validate and folds only the records after it, and writes new ones in the
   * background as the log grows.
   */
  readonly snapshots?: TeamLogSnapshots | undefined;
}

/** A snapshot as a store holds it: the folded state after `seq`. */
export interface StoredSnapshot {
  /** The seq of the last record folded into `state`. */
  readonly seq: number;
  /** The stored state, not yet validated: `TeamState.fromSnapshot` checks it. */
  readonly state: unknown;
  /** Bytes the stored state takes, for the snapshot policy (see `isSnapshotDue`). */
  readonly bytes: number;
  /** Where it is stored (a file, a row), for messages. */
  readonly source: string;
  /**
   * True when the store itself tied this snapshot to the record the log now holds at `seq` (its
   * own envelope names that record). Only needed for a snapshot of format version 1, which carries
   * no record digest: such a snapshot is used only when the store vouches for it this way.
   */
  readonly anchored?: boolean | undefined;
}

/**
 * Where a team log keeps snapshots of its folded state (see {@link TeamStateSnapshot}). The store
 * keeps the bytes (an envelope that detects a torn or altered copy, the team, the seq) and how
 * much log it wrote or read; core owns every rule: when a snapshot is due (the store's
 * {@link SnapshotPolicy}, decided by `isSnapshotDue`), whether a snapshot belongs to the log
 * (the digest of the record at its seq, checked by `loadTeamState` against `read`), and when to
 * prune. The team service snapshots only a settled state, one write at a time, and validates
 * what it reads.
 */
export interface TeamLogSnapshots {
  /** The policy the store was configured with (`resolveSnapshotPolicy`). */
  readonly policy: SnapshotPolicy;
  /**
   * The stored snapshots whose envelope checks out and whose seq the log holds, newest first,
   * each read only when the iteration reaches it. A torn or corrupt one is skipped (and counted
   * in the store's recovery report), never yielded.
   */
  list(): AsyncIterable<StoredSnapshot>;
  /**
   * Bytes of record text this store appended or read since it opened, counted once per record:
   * a counter that only grows, which the team service reads to know how far the log grew past a
   * snapshot.
   */
  logBytes(): number;
  /**
   * Stores `snapshot` (the state after `snapshot.seq`, a durable record). Resolves once it is
   * durable under the store's policy, with the bytes its state takes; a failure, or a kill at any
   * moment, leaves the older snapshots as they were.
   */
  write(snapshot: TeamStateSnapshot): Promise<{
    /** Bytes the stored state takes (what the policy weighs the log's growth against). */
    bytes: number;
  }>;
  /**
   * Removes every snapshot but the newest `keep` (and whatever the store's retention frees with
   * them). Called after each write.
   */
  prune(options: { keep: number }): Promise<void>;
  /** A snapshot `list` yielded failed validation: the store reports it and stops offering it. */
  rejected(snapshot: StoredSnapshot, error: Error): void;
}

/**
 * What a log that many processes append to adds. Its `append` rejects with `SEQ_CONFLICT`
 * (nothing written) when the first seq was taken meanwhile, and with `FENCED` (nothing written)
 * when `actorId` is a member this process no longer runs; a transient fault (a lost connection)
 * is retried inside the store, which settles an append it cannot tell the fate of by reading it
 * back, so every append resolves or rejects with a definite answer.
 */
export interface SharedTeamLog {
  /**
   * Calls `listener` whenever records may have been appended by another process: a doorbell that
   * may ring spuriously or late (notifications are lost with a connection); the log itself is the
   * truth, read from the last seq the reader holds. Returns an unsubscribe.
   */
  onAppended(listener: () => void): () => void;
  /** Which members this process runs; `openTeam` uses it unless given its own. */
  readonly placement?: MemberPlacement | undefined;
  /**
   * Carries live events (streamed output, turns, tools, status) between the processes of the
   * team, which the log does not hold. `openTeam` relays through it when present; see
   * {@link LiveChannel}.
   */
  readonly live?: LiveChannel | undefined;
  /**
   * Present when the store can funnel the team's appends through one process, its sequencer, so
   * that many processes writing at once commit together instead of racing for each seq. The
   * commit pipeline proposes records whose kinds core can rebase (`isRebasable`) when another
   * process sequences, and serves proposals when this one does; see {@link TeamSequencer}.
   */
  readonly sequencer?: TeamSequencer | undefined;
}

/**
 * The transport between a team's processes and its sequencer. Which process sequences is the
 * store's choice and may change at any moment (a sequencer that dies is replaced): safety never
 * depends on it, since the log refuses a seq or a proposal id twice. Core decides what may be
 * proposed and how the sequencer checks it (`rebaseRecords`), so the records it commits are
 * exactly those one process deciding the same command would have written.
 */
export interface TeamSequencer {
  /** True while this process is the team's sequencer: it then appends its own records directly. */
  leading(): boolean;
  /**
   * Sends `proposal` to the sequencer and resolves with its answer, or with `unanswered` after
   * `SEQUENCER_ANSWER_TIMEOUT_MS`, or at once with `unsent` when it cannot be sent (no
   * sequencer is known, it is too large, no connection). Never rejects.
   */
  propose(proposal: Proposal): Promise<ProposalAnswer>;
  /**
   * Calls `handler` with every validated proposal another process sends while this process
   * leads. The handler answers each one exactly once. Returns an unsubscribe.
   */
  serve(handler: (proposal: IncomingProposal) => void): () => void;
}

/** Records decided against the proposer's state, for the sequencer to commit. */
export interface Proposal {
  /** Unique; the log holds it at most once (see {@link AppendPart.proposalId}). */
  readonly id: string;
  /** The member the records are written for; none for system writes. */
  readonly actorId?: string | undefined;
  /** The records, seqs contiguous from the proposer's state; every one rebasable. */
  readonly records: readonly TeamRecord[];
}

/** A proposal received from another process, validated by the store. */
export interface IncomingProposal extends Proposal {
  /** Tells the proposer the outcome; only the first call counts. */
  answer(answer: ProposalAnswer): void;
}

/**
 * What became of a proposal: `committed` (the records are in the log at `first`–`last`; the
 * proposer reads them back), `refused` (they could not be committed as decided: the proposer
 * reads the log and decides again, `code` says why), `fenced` (the sequencer's append found the
 * proposer no longer runs the member), `unanswered` (no answer in time) or `unsent`. After the
 * last two the proposer appends the records itself, under the same proposal id. No answer is
 * taken on trust where trusting it could lose or stop anything: a `committed` proposal the
 * proposer does not find in the log it appends itself (the log holds the id once), and after
 * `fenced` it decides again and appends, so its own append's fence says whether the member moved.
 */
export type ProposalAnswer = ProposalCommitted | ProposalRefused | ProposalNotCommitted;

/** The proposal's records are in the log (see {@link ProposalAnswer}). */
export interface ProposalCommitted {
  /** What became of the proposal. */
  readonly outcome: 'committed';
  /** The seq of its first record in the log. */
  readonly first: number;
  /** The seq of its last record in the log. */
  readonly last: number;
}

/** The sequencer could not commit the proposal as decided (see {@link ProposalAnswer}). */
export interface ProposalRefused {
  /** What became of the proposal. */
  readonly outcome: 'refused';
  /** Why: the error code of the decision against the sequencer's state, or `SEQUENCER_BUSY`. */
  readonly code: string;
}

/** Fenced, not answered in time, or not sent (see {@link ProposalAnswer}). */
export interface ProposalNotCommitted {
  /** What became of the proposal. */
  readonly outcome: 'fenced' | 'unanswered' | 'unsent';
}

/**
 * A best-effort broadcast between the processes of one team, for events that are not durable.
 * It moves opaque text only: core's relay (`openTeam`) decides what goes, gathers and bounds the
 * batches, encodes them (a versioned format it validates on receipt, at most
 * `LIVE_BATCH_BYTES_MAX` bytes) and drops what a process sent itself. A payload may be lost (a
 * dropped connection, a full queue), never altered.
 */
export interface LiveChannel {
  /**
   * The most UTF-8 bytes one payload may hold on this channel, when its transport has room for
   * fewer than `LIVE_BATCH_BYTES_MAX` (one that wraps each payload, for example): the relay then
   * builds batches of at most this many bytes. An integer from `LIVE_EVENT_BYTES_MAX + 1024`;
   * `openTeam` refuses any other value with `INVALID_ARGUMENT`.
   */
  readonly maxPayloadBytes?: number | undefined;
  /**
   * Hands one encoded batch to every other process of the team. Returns at once and never throws:
   * false when the batch cannot be sent (no connection, too many in flight) and was dropped.
   */
  send(payload: string): boolean;
  /**
   * Calls `listener` with every payload another process sent on this team's channel, as received
   * (it may be malformed: the relay validates it). Returns an unsubscribe.
   */
  listen(listener: (payload: string) => void): () => void;
}
