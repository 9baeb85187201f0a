import type { TeamRecord } from '../records.js';
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
  /** Reads records with `seq >= fromSeq` (default 1), in order, validated. */
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
}
