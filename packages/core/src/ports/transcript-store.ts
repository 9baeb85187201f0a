import type { TranscriptEntry } from '../chat.js';

/** Per-member conversations. One store serves every member of a team. */
export interface TranscriptStore {
  /** The version of this port the store implements; checked when a team opens. */
  readonly specificationVersion: 'v1';
  /** Appends entries in order; resolves once they are durable under the store's policy. */
  append(options: { memberId: string; entries: readonly TranscriptEntry[] }): Promise<void>;
  /**
   * Loads a member's whole conversation (empty when it has none). A tool call left without a
   * result is answered with a synthetic `TERMINATED_TOOL_RESULT`; orphan results are dropped.
   */
  load(options: { memberId: string }): Promise<TranscriptEntry[]>;
  /**
   * Optional: what a member's context folds to, read without the history before its last
   * compaction: the entries from the last compaction entry on, preceded by the first entries the
   * compaction kept (its `head`). Folding it (`transcriptContext`) gives exactly what folding
   * {@link load}'s result gives, and the ids of team messages it holds cover every message the
   * member could still find pending. Repaired like `load`. Without it, the runtime calls `load`.
   */
  loadContext?(options: { memberId: string }): Promise<TranscriptEntry[]>;
  /** Flushes and releases the store; later appends fail with `STORE_CLOSED`. Idempotent. */
  close(): Promise<void>;
}
