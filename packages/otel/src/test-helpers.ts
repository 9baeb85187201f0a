import type { ReadableSpan } from '@opentelemetry/sdk-trace-base';
import type { AgentScript } from '@teamwire/core/testing';

/** The lead spawns alice, waits, and thanks her for every later message. */
export const leadScript: AgentScript = ({ call }) =>
  call === 1
    ? {
        toolCalls: [
          {
            name: 'spawn_teammate',
            input: {
              name: 'alice',
              description: 'counts files',
              prompt: 'Count the files and tell me.',
              agentType: 'worker',
            },
          },
        ],
        usage: { inputTokens: 100, outputTokens: 10 },
      }
    : { text: `lead ${call}`, usage: { inputTokens: 120, outputTokens: 5 } };

/** Alice answers the lead with a message, then ends her turn. */
export const aliceScript: AgentScript = ({ call }) =>
  call === 1
    ? {
        toolCalls: [
          { name: 'send_message', input: { to: 'lead', message: 'There are 42 files.' } },
        ],
        usage: { inputTokens: 50, outputTokens: 7 },
      }
    : { text: `alice ${call}`, usage: { inputTokens: 60, outputTokens: 3 } };

/** The one span named `name` (and matching `where`); fails the test when there is not exactly one. */
export function only(
  spans: readonly ReadableSpan[],
  name: string,
  where: (span: ReadableSpan) => boolean = () => true,
): ReadableSpan {
  const found = spans.filter((span) => span.name === name && where(span));
  if (found.length !== 1) {
    throw new Error(
      `expected one span "${name}", found ${found.length} among ${spans.map((s) => s.name).join(', ')}`,
    );
  }
  return found[0] as ReadableSpan;
}

/** The span's parent span id, if it has a parent. */
export function parentOf(span: ReadableSpan): string | undefined {
  return span.parentSpanContext?.spanId;
}

/** The spans whose parent is `parent`, by name, sorted. */
export function childNames(spans: readonly ReadableSpan[], parent: ReadableSpan): string[] {
  return spans
    .filter((span) => parentOf(span) === parent.spanContext().spanId)
    .map((span) => span.name)
    .sort();
}
