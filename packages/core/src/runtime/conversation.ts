import { type ChatMessage, COMPACTION_DELIVERED_MAX, type TranscriptEntry } from '../chat.js';
import type { Clock } from '../clock.js';
import { contentText } from '../content.js';
import { TeamError } from '../errors.js';
import type { TranscriptStore } from '../ports/transcript-store.js';
import { TRANSCRIPT_SCHEMA_VERSION } from '../records.js';
import {
  applyCompaction,
  type CompactionMessage,
  messageBytes,
  transcriptContext,
} from '../transcript-context.js';
import { type TurnEndReply, turnEndReply } from './idle-notice.js';

/**
 * Reads what a member's conversation is rebuilt from: `loadContext` when the store has it (the
 * context the last compaction applied to, the compaction and the entries after it: not the
 * history before), `load` otherwise. Both fold (`transcriptContext`) to the same context.
 */
export function loadTranscript(
  store: TranscriptStore,
  memberId: string,
): Promise<TranscriptEntry[]> {
  return typeof store.loadContext === 'function'
    ? store.loadContext({ memberId })
    : store.load({ memberId });
}

/** Options of a {@link Conversation}. */
export interface ConversationOptions {
  /**
   * The ids of the member's team messages still pending in the team log. A compaction lists,
   * besides the team messages it replaces, those the transcript holds that are still pending, so
   * a revival that reads the transcript from the last compaction on still recognises them.
   */
  pendingIds?: () => Iterable<string>;
  /**
   * Reads the durable transcript again, as the conversation was first built from, when memory
   * can no longer be trusted to match it (see {@link Conversation.append}). Default:
   * `loadTranscript` of the store.
   */
  reload?: () => Promise<readonly TranscriptEntry[]>;
}

/**
 * One member's conversation: the in-memory context the model is sent, kept equal to what its
 * durable transcript folds to (see `transcriptContext`: compactions applied). A message enters
 * memory only after the store made it durable, and the ids of the team messages the loaded
 * entries hold are indexed, those their compactions replaced included, so a message is never
 * recorded twice: a whole transcript (`load`) gives every id it ever held; a `loadContext` result
 * (the context the last compaction applied to, that compaction, the entries after it) gives every
 * id that can still be pending, since each compaction also lists the held messages still pending
 * when it was written.
 */
export class Conversation {
  private context: ChatMessage[];
  /** `messageBytes` of each context message, and their sum. */
  private sizes: number[];
  private total = 0;
  private readonly deliveredIds = new Set<string>();
  /** The reply the durable transcript ends with, when it ends with one (see `turnEndReply`). */
  private endReply: TurnEndReply | undefined;
  /** The `at` of the last entry written or loaded. */
  private lastAt = Number.NEGATIVE_INFINITY;
  /**
   * Set when a write failed: the store may have made it durable all the same (a lost answer), so
   * memory is rebuilt from the store before the next write.
   */
  private unsure = false;

  constructor(
    readonly memberId: string,
    private readonly store: TranscriptStore,
    private readonly clock: Clock,
    /** Called before every write; throws to refuse it (the service is disposed or broken). */
    private readonly guard: () => void,
    entries: readonly TranscriptEntry[] = [],
    private readonly options: ConversationOptions = {},
  ) {
    this.context = [];
    this.sizes = [];
    this.rebuild(entries);
  }

  private rebuild(entries: readonly TranscriptEntry[]): void {
    this.deliveredIds.clear();
    for (const entry of entries) this.index(entry.message);
    this.endReply = turnEndReply(entries);
    this.lastAt = Math.max(this.lastAt, entries.at(-1)?.at ?? Number.NEGATIVE_INFINITY);
    this.setContext(transcriptContext(entries));
  }

  private setContext(context: ChatMessage[]): void {
    this.context = context;
    this.sizes = context.map(messageBytes);
    this.total = 0;
    for (const size of this.sizes) this.total += size;
  }

  /**
   * Rebuilds memory from the durable transcript when a write failed since it was last built (see
   * {@link append}); otherwise does nothing.
   */
  async settle(): Promise<void> {
    if (!this.unsure) return;
    const { reload } = this.options;
    const entries = await (reload === undefined
      ? loadTranscript(this.store, this.memberId)
      : reload());
    this.rebuild(entries);
    this.unsure = false;
  }

  /** The context, oldest first. */
  get messages(): readonly ChatMessage[] {
    return this.context;
  }

  /** The UTF-8 bytes of the context as a provider is sent it (see `messageBytes`). */
  get bytes(): number {
    return this.total;
  }

  /** The bytes of the context message at `index`. */
  sizeAt(index: number): number {
    return this.sizes[index] ?? 0;
  }

  /** True when the transcript already holds the team message `messageId`. */
  holds(messageId: string): boolean {
    return this.deliveredIds.has(messageId);
  }

  /**
   * Appends durably, then to memory. Team-message entries of a message the transcript already
   * holds are left out. A write that failed may have become durable all the same (its answer
   * lost); a store may then refuse the message as held (`MESSAGE_STATE`). Either way memory is
   * rebuilt from the durable transcript first, so a message is neither written twice nor refused
   * forever, and the context stays what the transcript folds to.
   */
  async append(messages: readonly ChatMessage[]): Promise<void> {
    await this.settle();
    let fresh = this.unheld(messages);
    for (;;) {
      if (fresh.length === 0) return;
      try {
        await this.write(fresh);
        break;
      } catch (error) {
        if (!TeamError.hasCode(error, 'MESSAGE_STATE')) throw error;
        await this.settle();
        // The store's word stands even where the transcript read back does not show the message:
        // another process may have delivered it into entries a compaction has replaced since,
        // while this process's view of the log still has it pending. Each refusal takes one
        // message out, so this ends.
        const held = heldMessageOf(error);
        if (held !== undefined) this.deliveredIds.add(held);
        const rest = this.unheld(fresh);
        if (rest.length === fresh.length) throw error;
        fresh = rest;
      }
    }
    for (const message of fresh) {
      this.index(message);
      this.push(message);
    }
  }

  /** `messages` without the entries of team messages the transcript holds already. */
  private unheld(messages: readonly ChatMessage[]): readonly ChatMessage[] {
    return messages.filter(
      (message) =>
        message.source?.kind !== 'team-message' || !this.deliveredIds.has(message.source.messageId),
    );
  }

  /**
   * Records a compaction durably (one entry: written whole or not at all), then applies it to
   * memory exactly as loading the transcript will.
   */
  async compact(compaction: CompactionMessage): Promise<void> {
    // Memory the store may not match is rebuilt first; a compaction worked out on the old
    // context then no longer fits it and is refused below, with nothing written.
    await this.settle();
    let next = applyCompaction(this.context, compaction);
    const summary = this.withPendingIds(compaction, next);
    if (summary !== compaction) next = applyCompaction(this.context, summary);
    await this.write([summary]);
    this.index(summary);
    this.setContext(next);
  }

  /**
   * `compaction` listing also the team messages still pending that this conversation holds and
   * `next` (the context after it) no longer shows: otherwise only an entry before the compaction
   * would say they are held. At most `COMPACTION_DELIVERED_MAX` ids in all.
   */
  private withPendingIds(
    compaction: CompactionMessage,
    next: readonly ChatMessage[],
  ): CompactionMessage {
    const pending = this.options.pendingIds?.();
    if (pending === undefined) return compaction;
    const listed = new Set(compaction.source.deliveredIds);
    for (const message of next) {
      if (message.source?.kind === 'team-message') listed.add(message.source.messageId);
    }
    const carried: string[] = [];
    let room = COMPACTION_DELIVERED_MAX - compaction.source.deliveredIds.length;
    for (const id of pending) {
      if (room <= 0) break;
      if (!this.deliveredIds.has(id) || listed.has(id)) continue;
      listed.add(id);
      carried.push(id);
      room--;
    }
    if (carried.length === 0) return compaction;
    return {
      ...compaction,
      source: {
        ...compaction.source,
        deliveredIds: [...compaction.source.deliveredIds, ...carried],
      },
    };
  }

  /** The text of the last assistant message ('' when there is none). */
  lastAssistantText(): string {
    for (let i = this.context.length - 1; i >= 0; i--) {
      const message = this.context[i];
      if (message?.role === 'assistant') {
        return contentText(message.content);
      }
    }
    return '';
  }

  private async write(messages: readonly ChatMessage[]): Promise<void> {
    this.guard();
    // Each write is stamped after the one before, whatever the clock says (a clock that stands
    // still, a process whose clock is behind the one that wrote before it): a reply is named by its
    // member and its time (see `idleNoticeId`).
    const at = Math.max(this.clock.now(), this.lastAt + 1);
    this.lastAt = at;
    const entries: TranscriptEntry[] = messages.map((message) => ({
      schemaVersion: TRANSCRIPT_SCHEMA_VERSION,
      at,
      message,
    }));
    try {
      await this.store.append({ memberId: this.memberId, entries });
    } catch (error) {
      this.unsure = true;
      throw error;
    }
    if (entries.length > 0) this.endReply = turnEndReply(entries);
  }

  /**
   * The reply the durable transcript ends with, when its last entry is one (an assistant message
   * asking for no tool): what the member's idle notice reports, and what `idleNoticeId` names.
   */
  lastReply(): TurnEndReply | undefined {
    return this.endReply;
  }

  /** The `at` of the last entry loaded or written; undefined while the transcript is empty. */
  get endAt(): number | undefined {
    return Number.isFinite(this.lastAt) ? this.lastAt : undefined;
  }

  private push(message: ChatMessage): void {
    const size = messageBytes(message);
    this.context.push(message);
    this.sizes.push(size);
    this.total += size;
  }

  private index(message: ChatMessage): void {
    const source = message.source;
    if (source?.kind === 'team-message') this.deliveredIds.add(source.messageId);
    else if (source?.kind === 'compaction') {
      for (const id of source.deliveredIds) this.deliveredIds.add(id);
    }
  }
}

/** The context stored transcript entries fold to (compactions applied). */
export function conversationMessages(entries: readonly TranscriptEntry[]): ChatMessage[] {
  return transcriptContext(entries);
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
    // Team-message sources name the lead's mail; a compaction's bookkeeping describes the lead's
    // transcript. The teammate gets the text only (a summary becomes a plain prompt).
    const kind = message.source?.kind;
    if (kind !== 'team-message' && kind !== 'compaction') return message;
    const { source: _source, ...rest } = message;
    return rest as ChatMessage;
  });
}

/** The message a `MESSAGE_STATE` refusal names as already held (`details.messageId`). */
function heldMessageOf(error: TeamError): string | undefined {
  const id = (error.details as { messageId?: unknown } | undefined)?.messageId;
  return typeof id === 'string' ? id : undefined;
}
