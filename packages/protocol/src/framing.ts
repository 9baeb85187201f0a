import {
  type ChatMessage,
  contentText,
  type EnvelopeSender,
  type QueuedMessage,
  type WireFormat,
} from '@teamwire/core';

/** What one rendered message costs, in UTF-8 bytes. */
export interface FramingCost {
  /** Everything the model reads for the message (see {@link measureFraming}). */
  totalBytes: number;
  /** The message's own text. */
  textBytes: number;
  /** `totalBytes - textBytes`: the price of the format, paid on every message. */
  overheadBytes: number;
}

function bytes(text: string): number {
  return Buffer.byteLength(text, 'utf8');
}

function entryBytes(entry: ChatMessage): number {
  let total = bytes(contentText(entry.content));
  if (entry.role === 'assistant') {
    for (const call of entry.toolCalls) {
      total += bytes(call.id) + bytes(call.name) + bytes(JSON.stringify(call.input ?? {}));
    }
  } else if (entry.role === 'tool') {
    total += bytes(entry.toolCallId);
  }
  return total;
}

/**
 * Measures a format's framing on one message, so formats can be compared by token cost. Counts
 * the text content of every rendered entry, plus the id, name and arguments of tool calls and the
 * call id of tool results (what OpenAI-style APIs send besides roles). Role scaffolding and the
 * chat template are left out: they depend on the provider, and every format pays them per entry.
 */
export function measureFraming(
  format: WireFormat,
  options: { message: QueuedMessage; sender: EnvelopeSender },
): FramingCost {
  const entries = format.formatMessage(options);
  const totalBytes = entries.reduce((sum, entry) => sum + entryBytes(entry), 0);
  const textBytes = bytes(contentText(options.message.content));
  return { totalBytes, textBytes, overheadBytes: totalBytes - textBytes };
}
