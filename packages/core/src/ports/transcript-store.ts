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
  /** Flushes and releases the store; later appends fail with `STORE_CLOSED`. Idempotent. */
  close(): Promise<void>;
}
