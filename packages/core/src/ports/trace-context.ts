import type { MessageTrace } from '../records.js';

/**
 * Where a tracing layer (e.g. `@teamwire/otel`) tells core the trace context a member acts in.
 * When a team is opened with one, every message queued is stamped with its sender's current
 * context (`QueuedMessage.trace`), so the turn that receives it can link back to the turn that
 * sent it, in any process. Without one, nothing is asked and nothing is stored.
 */
export interface TraceContextSource {
  /**
   * The trace context `memberName` acts in now (its running turn or tool call), or `undefined`
   * when it has none. Called synchronously while a message is queued; a value that is not a valid
   * {@link MessageTrace}, or a call that throws, stamps nothing: tracing never fails a send.
   */
  current(memberName: string): MessageTrace | undefined;
}
