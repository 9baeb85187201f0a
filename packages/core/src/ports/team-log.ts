import type { TeamRecord } from '../records.js';

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
  append(options: { records: readonly TeamRecord[] }): Promise<void>;
  /** Reads records with `seq >= fromSeq` (default 1), in order, validated. */
  read(options?: { fromSeq?: number; signal?: AbortSignal }): AsyncIterable<TeamRecord>;
  /** Calls `listener` for every record once it is durable, in order. Returns an unsubscribe. */
  subscribe(options: { listener: (record: TeamRecord) => void }): () => void;
  /** The seq of the last durable record (0 for an empty log). */
  lastSeq(): number;
  /** Flushes and releases the log; later appends fail with `STORE_CLOSED`. Idempotent. */
  close(): Promise<void>;
}
