import type { ChatMessage, TranscriptEntry } from '../chat.js';
import type { Clock } from '../clock.js';
import { contentText } from '../content.js';
import type { TranscriptStore } from '../ports/transcript-store.js';
import { SCHEMA_VERSION } from '../records.js';

/**
 * One member's conversation: the in-memory copy the model is sent, kept equal to its durable
 * transcript. A message enters memory only after the store made it durable, and the ids of every
 * team message the transcript holds are indexed, so a message is never recorded twice.
 */
export class Conversation {
  readonly messages: ChatMessage[] = [];
  private readonly deliveredIds = new Set<string>();

  constructor(
    readonly memberId: string,
    private readonly store: TranscriptStore,
    private readonly clock: Clock,
    /** Called before every write; throws to refuse it (the service is disposed or broken). */
    private readonly guard: () => void,
    entries: readonly TranscriptEntry[] = [],
  ) {
    for (const entry of entries) this.remember(entry.message);
  }

  /** True when the transcript already holds the team message `messageId`. */
  holds(messageId: string): boolean {
    return this.deliveredIds.has(messageId);
  }

  /** Appends durably, then to memory. */
  async append(messages: readonly ChatMessage[]): Promise<void> {
    if (messages.length === 0) return;
    this.guard();
    const at = this.clock.now();
    const entries: TranscriptEntry[] = messages.map((message) => ({
      schemaVersion: SCHEMA_VERSION,
      at,
      message,
    }));
    await this.store.append({ memberId: this.memberId, entries });
    for (const message of messages) this.remember(message);
  }

  /** The text of the last assistant message ('' when there is none). */
  lastAssistantText(): string {
    for (let i = this.messages.length - 1; i >= 0; i--) {
      const message = this.messages[i];
      if (message?.role === 'assistant') {
        return contentText(message.content);
      }
    }
    return '';
  }

  private remember(message: ChatMessage): void {
    this.messages.push(message);
    if (message.source?.kind === 'team-message') this.deliveredIds.add(message.source.messageId);
  }
}

/** The messages of stored transcript entries, in order. */
export function conversationMessages(entries: readonly TranscriptEntry[]): ChatMessage[] {
  return entries.map((entry) => entry.message);
}

/**
 * The lead's conversation as a forked teammate starts from: its consistent prefix (a trailing
 * assistant message whose tool calls are not all answered, such as the `spawn_teammate` call
 * running now, is cut with its results) without team-message sources, which name the lead's mail.
 */
export function forkSeed(messages: readonly ChatMessage[]): ChatMessage[] {
  let end = messages.length;
  for (let i = messages.length - 1; i >= 0; i--) {
    const message = messages[i] as ChatMessage;
    if (message.role !== 'assistant') continue;
    const answered = new Set(
      messages
        .slice(i + 1)
        .filter((m) => m.role === 'tool')
        .map((m) => (m.role === 'tool' ? m.toolCallId : '')),
    );
    if (!message.toolCalls.every((call) => answered.has(call.id))) end = i;
    break;
  }
  return messages.slice(0, end).map((message) => {
    if (message.source?.kind !== 'team-message') return message;
    const { source: _source, ...rest } = message;
    return rest as ChatMessage;
  });
}
