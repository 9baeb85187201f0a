import type { TranscriptEntry } from '../chat.js';

/** Per-member conversations. One store serves every member of a team. */
export interface TranscriptStore {
  /** The version of this port the store implements; checked when a team opens. */
  readonly specificationVersion: 'v1';
  /**
   * Appends entries in order; resolves once they are durable under the store's policy. A store
   * may refuse a team message its transcript already holds (`MESSAGE_STATE`, nothing written):
   * the error then names it in `details.messageId`, and the runtime takes it as held.
   */
  append(options: { memberId: string; entries: readonly TranscriptEntry[] }): Promise<void>;
  /**
   * Loads a member's whole conversation (empty when it has none). A tool call left without a
   * result is answered with a synthetic `TERMINATED_TOOL_RESULT`; orphan results are dropped.
   */
  load(options: { memberId: string }): Promise<TranscriptEntry[]>;
  /**
   * Optional: what a member's context folds to, read without the history its compactions replaced:
   * the context the last compaction applied to, entry by entry (an older summary among the
   * messages it replaces is given without its `source`), then that compaction and every entry
   * after it; without a compaction, what `load` returns. Folding it (`transcriptContext`) gives
   * exactly what folding {@link load}'s result gives. The team-message ids it holds (its messages'
   * and the last compaction's `deliveredIds`) cover every message the member could still find
   * pending, given compactions that list held mail still pending (the runtime's do). Repaired
   * like `load`. Without it, the runtime calls `load`.
   */
  loadContext?(options: { memberId: string }): Promise<TranscriptEntry[]>;
  /** Flushes and releases the store; later appends fail with `STORE_CLOSED`. Idempotent. */
  close(): Promise<void>;
}
