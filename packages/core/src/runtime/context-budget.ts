import type { ChatMessage, CompactionSource, Usage } from '../chat.js';
import type { Clock, IdSource } from '../clock.js';
import { clipText, contentText, textContent } from '../content.js';
import { TeamError } from '../errors.js';
import { utf8Length } from '../limits.js';
import type { EventSink } from '../ports/events.js';
import type { ModelAdapter, SystemBlock, ToolDefinition } from '../ports/model.js';
import { type CompactionMessage, isCompaction } from '../transcript-context.js';
import type { Conversation } from './conversation.js';

/** What a compaction policy summarises. */
export interface CompactionInput {
  /** The member whose context is compacted. */
  agentName: string;
  /** The member's own model. */
  model: ModelAdapter;
  /** The member's system prompt, as its turns send it. */
  system: readonly SystemBlock[];
  /**
   * The context from its start up to the cut, in order: the `head` messages kept untouched, then
   * the ones the summary replaces (an earlier summary among them).
   */
  messages: readonly ChatMessage[];
  /** How many of `messages` are the untouched head (context the summary need not repeat). */
  head: number;
  /** Why the context is compacted. */
  reason: 'budget' | 'overflow';
  /** The summary should stay under this many tokens; a longer one is cut. */
  maxTokens: number;
  /** Aborted when the turn is interrupted or the service disposed. */
  signal: AbortSignal;
}

/**
 * Writes the summary that replaces the older part of a member's context. The host may swap it:
 * {@link modelSummary} (the default) asks the member's own model; {@link deterministicSummary}
 * needs no model (tests, offline runs). Throwing fails the compaction, and with it the turn, as a
 * failed model call would.
 */
export interface CompactionPolicy {
  /** Stored with each compaction, for audit. */
  readonly name: string;
  /** The summary's text (not empty). */
  summarize(input: CompactionInput): Promise<string>;
}

/**
 * A member's context budget. Before every model call the runner estimates the request's prompt
 * tokens; past `windowTokens × targetShare` it compacts: the older part of the conversation is
 * replaced by a summary, in one durable transcript entry.
 */
export interface ContextBudget {
  /** The model's context window, in tokens. */
  windowTokens: number;
  /** The share of the window a request may fill before the context is compacted (default 0.75). */
  targetShare?: number;
  /** The share of the budget kept verbatim as the most recent messages (default 0.3). */
  recentShare?: number;
  /** The share of the budget a summary may take (default 0.1); a longer one is cut. */
  summaryShare?: number;
  /**
   * Messages at the start of the conversation kept untouched (default 1: a teammate's first
   * prompt, its brief). With the system prompt and the tools they are the stable prefix a
   * provider's prompt cache keeps serving across compactions.
   */
  keepFirst?: number;
  /** UTF-8 bytes per token, for estimates before any usage is known (default 4). */
  bytesPerToken?: number;
  /** Who writes the summary (default {@link modelSummary}). */
  policy?: CompactionPolicy;
}

/** A budget with every default filled in, checked. */
export interface ResolvedContextBudget {
  /** See {@link ContextBudget.windowTokens}. */
  windowTokens: number;
  /** See {@link ContextBudget.targetShare}. */
  targetShare: number;
  /** See {@link ContextBudget.recentShare}. */
  recentShare: number;
  /** See {@link ContextBudget.summaryShare}. */
  summaryShare: number;
  /** See {@link ContextBudget.keepFirst}. */
  keepFirst: number;
  /** See {@link ContextBudget.bytesPerToken}. */
  bytesPerToken: number;
  /** See {@link ContextBudget.policy}. */
  policy: CompactionPolicy;
}

/** The smallest context window a budget may state. */
export const CONTEXT_WINDOW_MIN = 256;
/** The largest context window a budget may state. */
export const CONTEXT_WINDOW_MAX = 100_000_000;
/** The most messages a budget may keep untouched at the start. */
export const KEEP_FIRST_MAX = 1000;
/** A summary is at most this many characters, whatever the policy returns. */
export const SUMMARY_CHARS_MAX = 200_000;

/** Room for the line that introduces a summary ("Summary of the earlier conversation ..."). */
const SUMMARY_HEADER_BYTES = 120;

/** Checks a budget and fills in its defaults; `INVALID_ARGUMENT` names the bad field. */
export function resolveContextBudget(budget: ContextBudget, where: string): ResolvedContextBudget {
  const bad = (field: string, rule: string): never => {
    throw new TeamError('INVALID_ARGUMENT', `${where}: context.${field} must be ${rule}`, {
      details: { field: `context.${field}` },
    });
  };
  if (typeof budget !== 'object' || budget === null) bad('windowTokens', 'given');
  const { windowTokens } = budget;
  if (
    !Number.isInteger(windowTokens) ||
    windowTokens < CONTEXT_WINDOW_MIN ||
    windowTokens > CONTEXT_WINDOW_MAX
  ) {
    bad('windowTokens', `an integer from ${CONTEXT_WINDOW_MIN} to ${CONTEXT_WINDOW_MAX}`);
  }
  const share = (field: keyof ContextBudget, value: unknown, fallback: number, max: number) => {
    if (value === undefined) return fallback;
    if (typeof value !== 'number' || !(value > 0) || value > max) {
      bad(field, `a number above 0 and at most ${max}`);
    }
    return value as number;
  };
  const targetShare = share('targetShare', budget.targetShare, 0.75, 1);
  const recentShare = share('recentShare', budget.recentShare, 0.3, 0.9);
  const summaryShare = share('summaryShare', budget.summaryShare, 0.1, 0.5);
  if (recentShare + summaryShare >= 1) {
    bad('recentShare', 'less than 1 - summaryShare, so a compaction leaves room');
  }
  const keepFirst = budget.keepFirst ?? 1;
  if (!Number.isInteger(keepFirst) || keepFirst < 0 || keepFirst > KEEP_FIRST_MAX) {
    bad('keepFirst', `an integer from 0 to ${KEEP_FIRST_MAX}`);
  }
  const bytesPerToken = share('bytesPerToken', budget.bytesPerToken, 4, 64);
  const policy = budget.policy ?? modelSummary();
  if (
    typeof policy?.summarize !== 'function' ||
    typeof policy.name !== 'string' ||
    policy.name === ''
  ) {
    bad('policy', 'a compaction policy (a name and a summarize function)');
  }
  return { windowTokens, targetShare, recentShare, summaryShare, keepFirst, bytesPerToken, policy };
}

/** The prompt {@link modelSummary} asks with, unless told another. */
export const DEFAULT_COMPACTION_PROMPT = [
  'Your conversation is about to be compacted: everything above, except your first prompt and the',
  'most recent messages, will be replaced by a summary you write now. Write that summary for',
  'yourself. Keep: what you were asked to do and by whom, the decisions made and why, the state of',
  'each task you worked on (ids, what is done, what is left), facts you found (file paths,',
  'commands, errors), promises you made to teammates, and open questions. Drop chit-chat and',
  'anything already finished that later work does not need. Plain prose or bullets; no tool calls.',
].join(' ');

/**
 * The default policy: the member's own model writes the summary, prompted with `prompt` after the
 * context it replaces (same system prompt, so a provider's cache still serves the prefix). An
 * answer without text is a `MODEL_PROTOCOL` error, never an empty summary.
 */
export function modelSummary(options: { prompt?: string } = {}): CompactionPolicy {
  const prompt = options.prompt ?? DEFAULT_COMPACTION_PROMPT;
  return {
    name: 'model',
    async summarize(input) {
      let text = '';
      let finished = false;
      try {
        const stream = input.model.stream({
          system: input.system,
          messages: [...input.messages, { role: 'user', content: textContent(prompt) }],
          tools: [],
          signal: input.signal,
          agentName: input.agentName,
          maxOutputTokens: input.maxTokens,
        });
        for await (const event of stream) {
          if (event.type === 'finish') {
            text = contentText(event.message.content).trim();
            finished = true;
          }
        }
      } catch (error) {
        // Even the summary request is too long for the model (a much smaller window than
        // configured): a digest that needs no model keeps the member going.
        if (!TeamError.hasCode(error, 'MODEL_CONTEXT_OVERFLOW')) throw error;
        const digest = await deterministicSummary({ maxChars: 4000 }).summarize(input);
        return `(The model could not read this much to summarise it; a digest of the replaced messages follows.)\n${digest}`;
      }
      if (!finished || text === '') {
        throw new TeamError(
          'MODEL_PROTOCOL',
          `the model of ${input.agentName} answered the compaction prompt without a summary`,
          { details: { agent: input.agentName } },
        );
      }
      return text;
    },
  };
}

/**
 * A policy that needs no model: one line per replaced message (who said what, which tools ran),
 * an earlier summary carried over, the whole kept to its last `maxChars` characters. The same
 * input gives the same summary: for tests and offline runs.
 */
export function deterministicSummary(options: { maxChars?: number } = {}): CompactionPolicy {
  const maxChars = options.maxChars ?? 1200;
  if (!Number.isInteger(maxChars) || maxChars < 1 || maxChars > SUMMARY_CHARS_MAX) {
    throw new TeamError(
      'INVALID_ARGUMENT',
      `deterministicSummary: maxChars must be an integer from 1 to ${SUMMARY_CHARS_MAX}`,
      { details: { field: 'maxChars' } },
    );
  }
  return {
    name: 'deterministic',
    async summarize(input) {
      const lines: string[] = [];
      for (const message of input.messages.slice(input.head)) lines.push(summaryLine(message));
      const text = lines.join('\n');
      return text.length <= maxChars ? text : text.slice(text.length - maxChars);
    },
  };
}

function summaryLine(message: ChatMessage): string {
  const clip = (text: string) => {
    return clipText(text.replace(/\s+/g, ' ').trim(), 120);
  };
  if (isCompaction(message)) return `(earlier) ${clip(contentText(message.content))}`;
  if (message.role === 'assistant') {
    const calls = message.toolCalls.map((call) => call.name);
    const said = clip(contentText(message.content));
    return `me: ${said}${calls.length > 0 ? ` [called ${calls.join(', ')}]` : ''}`;
  }
  if (message.role === 'tool')
    return `${message.toolName} -> ${clip(contentText(message.content))}`;
  const source = message.source;
  const from =
    source?.kind === 'team-message'
      ? `${source.senderName}`
      : source?.kind === 'task-claim'
        ? `task ${source.taskId}`
        : 'host';
  return `${from}: ${clip(contentText(message.content))}`;
}

/** What the runner tells a turn about its context: see `runTurn`'s `budget`. */
export interface TurnBudget {
  /** Compacts when the next request would pass the budget. */
  fit(signal: AbortSignal): Promise<void>;
  /** The bytes of the request as it would be sent now (for {@link observe}). */
  requestBytes(): number;
  /** Records the usage the adapter reported for a request of `bytes` bytes. */
  observe(bytes: number, usage: Usage | undefined): void;
  /** The provider refused a request of `bytes` bytes as too long: compact once. */
  overflowed(bytes: number, signal: AbortSignal): Promise<boolean>;
}

/**
 * Keeps one member's context within its budget. It tracks prompt tokens from the usage adapters
 * report (tokens per byte of the last request), estimating from bytes only until a usage is known,
 * and compacts the conversation when the next request would pass `windowTokens × targetShare`.
 */
export class ContextKeeper implements TurnBudget {
  /** Tokens per byte, from the last request whose usage was reported. */
  private tokensPerByte: number | undefined;
  /**
   * The bytes of the smallest request the provider refused as too long: the window is smaller
   * than `windowTokens` says (or the provider counts tokens more densely), so requests from now
   * on stay under `targetShare` of it as well.
   */
  private refusedAtBytes: number | undefined;
  private readonly fixedBytes: number;

  constructor(
    private readonly options: {
      agentName: string;
      budget: ResolvedContextBudget;
      model: ModelAdapter;
      system: readonly SystemBlock[];
      tools: readonly ToolDefinition[];
      conversation: Conversation;
      events: EventSink;
      clock: Clock;
      ids: IdSource;
      /** True for a message past the cut that must stay verbatim (a current task's prompt). */
      retain: (message: ChatMessage) => boolean;
    },
  ) {
    this.fixedBytes =
      utf8Length(JSON.stringify(options.system.map((block) => block.text))) +
      utf8Length(JSON.stringify(options.tools));
  }

  /** The budget in tokens: `windowTokens × targetShare`. */
  get limit(): number {
    const { budget } = this.options;
    return Math.floor(budget.windowTokens * budget.targetShare);
  }

  requestBytes(): number {
    return this.fixedBytes + this.options.conversation.bytes;
  }

  /** The prompt tokens of the next request, and whether that is an estimate from bytes only. */
  estimate(bytes = this.requestBytes()): { tokens: number; estimated: boolean } {
    if (this.tokensPerByte === undefined) {
      return { tokens: Math.ceil(bytes / this.options.budget.bytesPerToken), estimated: true };
    }
    return { tokens: Math.ceil(bytes * this.tokensPerByte), estimated: false };
  }

  observe(bytes: number, usage: Usage | undefined): void {
    // A provider that reports no prompt tokens (0) tells nothing: keep the estimate.
    if (usage === undefined || usage.inputTokens <= 0 || bytes <= 0) return;
    this.tokensPerByte = usage.inputTokens / bytes;
  }

  async fit(signal: AbortSignal): Promise<void> {
    const over =
      this.estimate().tokens > this.limit ||
      (this.refusedAtBytes !== undefined && this.requestBytes() > this.limitBytes());
    if (over) await this.compact('budget', signal);
  }

  async overflowed(bytes: number, signal: AbortSignal): Promise<boolean> {
    this.refusedAtBytes = Math.min(this.refusedAtBytes ?? Number.POSITIVE_INFINITY, bytes);
    return this.compact('overflow', signal);
  }

  /**
   * The bytes mail may still add at a step boundary before the next request passes the budget:
   * mail recorded there follows the latest assistant message, which no compaction replaces, so
   * what does not fit now waits for a later boundary (or the member's next turn).
   */
  room(): number {
    return Math.max(0, Math.floor(this.limitBytes()) - this.requestBytes());
  }

  /**
   * The largest message that can ever fit: the budget less what every request carries (system,
   * tools, the messages kept first) and a summary's share. A message larger than this fits no
   * context this member can have, however much is compacted.
   */
  largestMessage(): number {
    const { budget, conversation } = this.options;
    let head = 0;
    const kept = Math.min(budget.keepFirst, conversation.messages.length);
    for (let i = 0; i < kept; i++) head += conversation.sizeAt(i);
    const limit = this.limitBytes();
    return Math.max(0, Math.floor(limit * (1 - budget.summaryShare)) - this.fixedBytes - head);
  }

  /** The budget in request bytes: from the window, and under a refused request's size. */
  private limitBytes(): number {
    const fromWindow = this.limit * this.bytesPerTokenNow();
    if (this.refusedAtBytes === undefined) return fromWindow;
    return Math.min(fromWindow, this.refusedAtBytes * this.options.budget.targetShare);
  }

  /**
   * Replaces the older part of the context by a summary. Returns false when nothing can be
   * replaced (the context is only its head and its latest exchange).
   */
  async compact(reason: 'budget' | 'overflow', signal: AbortSignal): Promise<boolean> {
    const { budget, conversation, events, agentName, clock } = this.options;
    // a compaction names the context it follows: work it out on what the transcript holds
    await conversation.settle();
    const context = conversation.messages;
    const cut = this.findCut(context);
    if (cut === undefined) return false;
    const { head, end } = cut;
    const before = this.estimate();
    const retained: number[] = [];
    const lastClaim = new Map<string, number>();
    for (let i = head; i < end; i++) {
      const message = context[i] as ChatMessage;
      if (
        message.role === 'user' &&
        message.source?.kind === 'task-claim' &&
        this.options.retain(message)
      ) {
        lastClaim.set(message.source.taskId, i - head);
      }
    }
    retained.push(...[...lastClaim.values()].sort((a, b) => a - b));
    const maxTokens = Math.max(
      1,
      Math.floor((this.limitBytes() * budget.summaryShare) / this.bytesPerTokenNow()),
    );
    const maxChars = Math.min(SUMMARY_CHARS_MAX, Math.ceil(maxTokens * this.bytesPerTokenNow()));
    // A summary may take up to maxChars: replacing less than that could grow the context.
    let replacedBytes = 0;
    const keptOffsets = new Set(retained);
    for (let i = head; i < end; i++) {
      if (!keptOffsets.has(i - head)) replacedBytes += conversation.sizeAt(i);
    }
    if (replacedBytes <= maxChars + SUMMARY_HEADER_BYTES) return false;
    events.publish(agentName, {
      type: 'context.compacting',
      reason,
      tokensBefore: before.tokens,
      estimated: before.estimated,
    });
    const started = clock.now();
    let text = await budget.policy.summarize({
      agentName,
      model: this.options.model,
      system: this.options.system,
      messages: context.slice(0, end),
      head,
      reason,
      maxTokens,
      signal,
    });
    if (signal.aborted)
      throw signal.reason ?? new TeamError('ABORTED', `${agentName} was interrupted`);
    if (typeof text !== 'string' || text.trim() === '') {
      throw new TeamError(
        'INVALID_ARGUMENT',
        `compaction policy ${budget.policy.name} returned no summary`,
        {
          details: { policy: budget.policy.name },
        },
      );
    }
    text = clipText(text, maxChars);
    const durationMs = Math.max(0, clock.now() - started);
    const deliveredIds: string[] = [];
    const kept = new Set(retained.map((offset) => head + offset));
    for (let i = head; i < end; i++) {
      const source = (context[i] as ChatMessage).source;
      if (!kept.has(i) && source?.kind === 'team-message') deliveredIds.push(source.messageId);
    }
    const replaced = end - head;
    const body = `Summary of the earlier conversation (it replaces ${replaced} earlier messages):\n\n${text}`;
    const source: CompactionSource = {
      kind: 'compaction',
      compactionId: this.options.ids.next(),
      contextLength: context.length,
      head,
      replaced,
      retained,
      deliveredIds,
      reason,
      policy: budget.policy.name,
      tokensBefore: before.tokens,
      tokensAfter: 0,
      estimated: before.estimated,
      durationMs,
    };
    // tokensAfter is what the new context costs: measured with the summary in place.
    const summaryBytes = utf8Length(JSON.stringify(textContent(body)));
    let bytesAfter = this.fixedBytes + summaryBytes;
    for (let i = 0; i < context.length; i++) {
      if (i < head || i >= end || kept.has(i)) bytesAfter += conversation.sizeAt(i);
    }
    source.tokensAfter = this.estimate(bytesAfter).tokens;
    const message: CompactionMessage = { role: 'user', content: textContent(body), source };
    await conversation.compact(message);
    events.publish(agentName, {
      type: 'context.compacted',
      compactionId: source.compactionId,
      reason,
      tokensBefore: source.tokensBefore,
      tokensAfter: source.tokensAfter,
      estimated: source.estimated,
      replacedMessages: replaced,
      retainedMessages: retained.length,
      durationMs,
      policy: source.policy,
    });
    return true;
  }

  private bytesPerTokenNow(): number {
    return this.tokensPerByte === undefined
      ? this.options.budget.bytesPerToken
      : 1 / this.tokensPerByte;
  }

  /**
   * Where the summary goes: after the head (`keepFirst` messages, stretched over a tool call's
   * results), up to `end`, the first message kept. `end` never splits a tool call from its results,
   * keeps the latest assistant message and all that follows it (results, mail not yet answered),
   * and otherwise keeps as many recent messages as fit in `recentShare` of the budget.
   */
  private findCut(context: readonly ChatMessage[]): { head: number; end: number } | undefined {
    const { budget, conversation } = this.options;
    let head = Math.min(budget.keepFirst, context.length);
    while (head < context.length && context[head]?.role === 'tool') head++;
    let lastAssistant = -1;
    for (let i = context.length - 1; i >= head; i--) {
      if (context[i]?.role === 'assistant') {
        lastAssistant = i;
        break;
      }
    }
    if (lastAssistant <= head) return undefined;
    const recentBytes = this.limitBytes() * budget.recentShare;
    let tail = 0;
    for (let i = context.length - 1; i >= lastAssistant; i--) tail += conversation.sizeAt(i);
    let end = lastAssistant;
    for (let i = lastAssistant - 1; i > head; i--) {
      tail += conversation.sizeAt(i);
      if (tail > recentBytes) break;
      if (context[i]?.role !== 'tool') end = i;
    }
    const replaced = end - head;
    if (replaced < 1) return undefined;
    // Only an earlier summary between head and end: a new one would replace it by itself.
    if (replaced === 1 && isCompaction(context[head] as ChatMessage)) return undefined;
    return { head, end };
  }
}
