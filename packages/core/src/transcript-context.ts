import type { ChatMessage, CompactionSource, TranscriptEntry, UserMessage } from './chat.js';
import { TeamError } from './errors.js';
import { utf8Length } from './limits.js';

/** A user message that carries a compaction (its content is the summary). */
export type CompactionMessage = UserMessage & {
  /** The compaction's bookkeeping (see `CompactionSource`). */
  source: CompactionSource;
};

/** True when `message` is a compaction summary. */
export function isCompaction(message: ChatMessage): message is CompactionMessage {
  return message.role === 'user' && message.source?.kind === 'compaction';
}

/**
 * What a member's model is sent, rebuilt from its stored transcript: the messages in order, each
 * compaction applied where it stands. The result is exactly the context the member had when it
 * wrote the last entry, so a revived member goes on from it without summarising again.
 *
 * A compaction that does not fit the context it follows (another length, a range that splits a
 * tool call from its result, a retained message that is not a prompt) means the transcript is not
 * one this code wrote: `INVALID_RECORD`, naming the entry.
 */
export function transcriptContext(entries: readonly TranscriptEntry[]): ChatMessage[] {
  let context: ChatMessage[] = [];
  entries.forEach((entry, index) => {
    const message = entry.message;
    if (message.source?.kind === 'compaction') {
      if (!isCompaction(message)) {
        throw new TeamError(
          'INVALID_RECORD',
          `transcript entry ${index} is a compaction that is not a user message`,
          {
            details: { entry: index },
          },
        );
      }
      context = applyCompaction(context, message, index);
    } else {
      context.push(message);
    }
  });
  return context;
}

/**
 * The context after `compaction`: `context[0, head) + [summary] + retained + context[head +
 * replaced, end)`. Checks the compaction against the context first (see
 * {@link transcriptContext}); `entry` names it in errors.
 */
export function applyCompaction(
  context: readonly ChatMessage[],
  compaction: CompactionMessage,
  entry?: number,
): ChatMessage[] {
  const source = compaction.source;
  const fail = (why: string): never => {
    throw new TeamError(
      'INVALID_RECORD',
      `compaction ${source.compactionId}${entry === undefined ? '' : ` (transcript entry ${entry})`} ${why}`,
      { details: { compactionId: source.compactionId, ...(entry === undefined ? {} : { entry }) } },
    );
  };
  if (source.contextLength !== context.length) {
    fail(`follows a context of ${context.length} messages, not ${source.contextLength}`);
  }
  const end = source.head + source.replaced;
  if (end > context.length) fail(`replaces messages past the end of the context`);
  if (context[source.head]?.role === 'tool') fail('starts at a tool result');
  if (context[end]?.role === 'tool') fail('separates a tool call from its result');
  let previous = -1;
  const retained: ChatMessage[] = [];
  for (const offset of source.retained) {
    if (offset <= previous || offset >= source.replaced)
      fail('names a retained message twice, out of order or outside its range');
    previous = offset;
    const message = context[source.head + offset] as ChatMessage;
    if (message.role !== 'user' || message.source?.kind === 'compaction') {
      fail('retains a message that is not a prompt');
    }
    retained.push(message);
  }
  return [...context.slice(0, source.head), compaction, ...retained, ...context.slice(end)];
}

/**
 * The size a message adds to a request, in UTF-8 bytes of what a provider is sent (its content,
 * tool calls and tool result; never the runtime's bookkeeping such as `source` or `usage`).
 */
export function messageBytes(message: ChatMessage): number {
  let bytes = utf8Length(JSON.stringify(message.content));
  if (message.role === 'assistant' && message.toolCalls.length > 0) {
    bytes += utf8Length(JSON.stringify(message.toolCalls));
  }
  if (message.role === 'tool') bytes += utf8Length(message.toolCallId + message.toolName);
  return bytes;
}
