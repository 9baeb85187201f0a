import type { AgentEvent, Member, MemberStatus, Task } from '@teamwire/core';
import { contentText } from '@teamwire/core';
import { createLogUpdate } from 'log-update';

/** One compaction of a member's context, as its `context.compacted` event told it. */
export interface CompactionStat {
  /** The member whose context was compacted. */
  member: string;
  /** `budget`: the next request would have passed the budget; `overflow`: the provider refused one. */
  reason: 'budget' | 'overflow';
  /** The request's prompt tokens before and after. */
  tokensBefore: number;
  tokensAfter: number;
  /** True when the counts were estimated from bytes only (no usage known yet). */
  estimated: boolean;
  /** Messages the summary replaced. */
  replacedMessages: number;
  /** How long the summary took (ms). */
  durationMs: number;
  /** Who wrote the summary: `model` or `deterministic`. */
  policy: string;
}

/** What the board knows, folded from the agent events the hub delivers. */
export class BoardModel {
  readonly members = new Map<string, Member>();
  readonly status = new Map<string, MemberStatus>();
  readonly tasks = new Map<string, Task>();
  readonly feed: string[] = [];
  /** Every compaction so far, in order. */
  readonly compactions: CompactionStat[] = [];
  /** Members compacting their context now, with the tokens they had when it started. */
  readonly compacting = new Map<string, number>();
  turns = 0;
  messages = 0;
  toolCalls = 0;
  inputTokens = 0;
  outputTokens = 0;
  /**
   * The status shown for an active member this process has no status of: `inactive` when every
   * member runs here; the main process of `--workers` sets `in a worker` (status events stay in
   * the process that runs a member).
   */
  unknownStatus = 'inactive';
  private readonly feedSize: number;

  constructor(options: { feedSize?: number } = {}) {
    this.feedSize = options.feedSize ?? 12;
  }

  /** Applies one event; returns the feed line it produced, if any. */
  apply(agent: string, event: AgentEvent): string | undefined {
    switch (event.type) {
      case 'record': {
        const record = event.record;
        if (record.type === 'member') {
          this.members.set(record.member.id, record.member);
          if (record.member.phase === 'provisioning')
            return this.push(`${record.member.name} joins the team`);
          if (record.member.phase === 'failed') {
            return this.push(
              `${record.member.name} failed: ${record.member.error ?? 'unknown error'}`,
            );
          }
          if (record.member.phase === 'retired') return this.push(`${record.member.name} retired`);
          return undefined;
        }
        if (record.type === 'task') {
          const before = this.tasks.get(record.task.id);
          this.tasks.set(record.task.id, record.task);
          if (!before)
            return this.push(`${agent} created ${record.task.id} "${record.task.subject}"`);
          if (before.status !== record.task.status) {
            const owner = record.task.ownerId ? this.nameOf(record.task.ownerId) : 'nobody';
            return this.push(
              `${record.task.id} ${before.status} -> ${record.task.status} (${owner})`,
            );
          }
          return undefined;
        }
        if (record.type === 'message.queued') {
          this.messages++;
          const m = record.message;
          const text = m.summary ?? contentText(m.content).split('\n')[0] ?? '';
          const kind = m.kind === 'message' ? '' : ` [${m.kind}]`;
          return this.push(
            `${m.senderName} -> ${this.nameOf(m.targetId)}${kind}: ${clip(text, 70)}`,
          );
        }
        return undefined;
      }
      case 'status':
        this.status.set(agent, event.status);
        return undefined;
      case 'turn.start':
        this.turns++;
        return undefined;
      case 'turn.end':
        // a compaction that failed ends the turn without its `context.compacted`
        this.compacting.delete(agent);
        return undefined;
      case 'context.compacting':
        this.compacting.set(agent, event.tokensBefore);
        return undefined;
      case 'context.compacted':
        return this.noteCompaction({
          member: agent,
          reason: event.reason,
          tokensBefore: event.tokensBefore,
          tokensAfter: event.tokensAfter,
          estimated: event.estimated,
          replacedMessages: event.replacedMessages,
          durationMs: event.durationMs,
          policy: event.policy,
        });
      case 'tool.call': {
        this.toolCalls++;
        return this.push(
          `${agent} ${event.toolCall.name}(${clip(JSON.stringify(event.toolCall.input), 60)})`,
        );
      }
      case 'tool.result':
        return event.isError
          ? this.push(`${agent} ${event.toolName} error: ${clip(event.text, 70)}`)
          : undefined;
      case 'model.step':
        this.inputTokens += event.usage.inputTokens;
        this.outputTokens += event.usage.outputTokens;
        return undefined;
      case 'error':
        return this.push(`${agent} error ${event.code}: ${clip(event.message, 70)}`);
      default:
        return undefined;
    }
  }

  /**
   * Counts a compaction and returns its feed line: from the member's event, or from a worker
   * process's line (`feed: false`, that line is shown already).
   */
  noteCompaction(stat: CompactionStat, options: { feed?: boolean } = {}): string {
    this.compacting.delete(stat.member);
    this.compactions.push(stat);
    const line = formatCompaction(stat);
    return options.feed === false ? line : this.push(line);
  }

  /** The compactions of `member` so far, in order. */
  compactionsOf(member: string): CompactionStat[] {
    return this.compactions.filter((c) => c.member === member);
  }

  /** Adds a line from elsewhere (a worker process) to the feed. */
  note(line: string): void {
    this.push(line);
  }

  nameOf(memberId: string): string {
    return this.members.get(memberId)?.name ?? memberId;
  }

  statusOf(member: Member): string {
    if (member.phase === 'failed' || member.phase === 'retired') return member.phase;
    return (
      this.status.get(member.name) ??
      (member.phase === 'provisioning' ? 'provisioning' : this.unknownStatus)
    );
  }

  progress(): { done: number; total: number } {
    let done = 0;
    let total = 0;
    for (const task of this.tasks.values()) {
      if (task.status === 'deleted') continue;
      total++;
      if (task.status === 'completed') done++;
    }
    return { done, total };
  }

  private push(line: string): string {
    this.feed.push(line);
    if (this.feed.length > this.feedSize) this.feed.splice(0, this.feed.length - this.feedSize);
    return line;
  }
}

/** A token count as people read it: `950`, `11.2k`, `1.3M`. */
export function formatTokens(n: number): string {
  if (n < 1000) return String(n);
  if (n < 1_000_000) return `${(n / 1000).toFixed(1)}k`;
  return `${(n / 1_000_000).toFixed(1)}M`;
}

/** The feed line of a compaction. */
export function formatCompaction(stat: CompactionStat): string {
  const why =
    stat.reason === 'overflow' ? ', after the provider refused a request as too long' : '';
  const estimate = stat.estimated ? '~' : '';
  return `${stat.member} compacted its context: ${estimate}${formatTokens(stat.tokensBefore)} -> ${estimate}${formatTokens(stat.tokensAfter)} tokens (${stat.replacedMessages} messages summarised by the ${stat.policy} policy in ${stat.durationMs} ms${why})`;
}

/**
 * What the board shows of a member's context: `compacted 2× · 11.2k→3.1k tok` (the count and the
 * last one), and `compacting…` while one is in flight; '' before its first.
 */
export function compactionBadge(model: BoardModel, member: string): string {
  const done = model.compactionsOf(member);
  const parts: string[] = [];
  const lastOne = done.at(-1);
  if (lastOne) {
    parts.push(
      `compacted ${done.length}× · ${formatTokens(lastOne.tokensBefore)}→${formatTokens(lastOne.tokensAfter)} tok`,
    );
  }
  if (model.compacting.has(member)) parts.push('compacting…');
  return parts.join(' · ');
}

/** Cuts a line to `max` columns, keeping its layout. */
function fit(text: string, max: number): string {
  return text.length > max ? `${text.slice(0, max - 1)}…` : text;
}

/** One line of at most `max` columns, whitespace folded (for free text from agents). */
function clip(text: string, max: number): string {
  const flat = text.replace(/\s+/g, ' ').trim();
  return flat.length > max ? `${flat.slice(0, max - 1)}…` : flat;
}

const STATUS_COLOR: Record<string, string> = {
  running: '\x1b[32m',
  idle: '\x1b[33m',
  provisioning: '\x1b[36m',
  failed: '\x1b[31m',
  retired: '\x1b[90m',
  inactive: '\x1b[90m',
};
const CONTEXT_COLOR = '\x1b[35m';
const RESET = '\x1b[0m';
const BOLD = '\x1b[1m';

/** Renders the whole board as one screen of text (ANSI colours), `width` columns wide. */
export function renderBoard(
  model: BoardModel,
  options: { title: string; width: number; elapsedMs: number },
): string {
  const width = Math.max(40, options.width);
  const lines: string[] = [];
  lines.push(`${BOLD}${options.title}${RESET}  ${(options.elapsedMs / 1000).toFixed(1)}s`);
  lines.push('');
  lines.push(`${BOLD}Team${RESET}`);
  for (const member of model.members.values()) {
    const status = model.statusOf(member);
    const badge = compactionBadge(model, member.name);
    lines.push(
      `  ${member.name.padEnd(14)} ${STATUS_COLOR[status] ?? ''}${status.padEnd(12)}${RESET} ${member.agentType.padEnd(12)}${badge ? ` ${CONTEXT_COLOR}${badge}${RESET}` : ''}`.trimEnd(),
    );
  }
  const { done, total } = model.progress();
  const barWidth = Math.min(30, width - 30);
  const filled = total === 0 ? 0 : Math.round((done / total) * barWidth);
  lines.push('');
  lines.push(
    `${BOLD}Tasks${RESET}  [${'#'.repeat(filled)}${'.'.repeat(barWidth - filled)}] ${done}/${total}`,
  );
  for (const task of model.tasks.values()) {
    if (task.status === 'deleted') continue;
    const owner = task.ownerId ? model.nameOf(task.ownerId) : '-';
    lines.push(
      clip(
        `  ${task.id.padEnd(8)} ${task.status.padEnd(12)} ${owner.padEnd(12)} ${task.subject}`,
        width,
      ),
    );
  }
  lines.push('');
  lines.push(`${BOLD}Feed${RESET}`);
  for (const line of model.feed) lines.push(`  ${fit(line, width - 2)}`);
  lines.push('');
  const compactions =
    model.compactions.length > 0 ? `  compactions ${model.compactions.length}` : '';
  lines.push(
    `turns ${model.turns}  messages ${model.messages}  tool calls ${model.toolCalls}  tokens ${model.inputTokens}/${model.outputTokens}${compactions}`,
  );
  return lines.join('\n');
}

/** What the live board needs of a terminal. */
export interface BoardTerminal {
  write(text: string): unknown;
  isTTY?: boolean;
  columns?: number;
  rows?: number;
}

/** Where successive board screens are drawn in place; `done` leaves the last one standing. */
export interface BoardScreen {
  draw(screen: string): void;
  done(): void;
}

/**
 * Draws the board in place with log-update instead of clearing the terminal and repainting it,
 * which flickered. Each screen is one write, a synchronized update where the terminal supports it
 * (shown whole, never half-drawn), that erases only the lines of the last screen and rewrites from
 * the first line that changed; an unchanged screen writes nothing. The cursor is hidden until
 * `done`.
 */
export function createBoardScreen(terminal: BoardTerminal): BoardScreen {
  // log-update only writes to the stream and reads its isTTY, columns and rows
  const update = createLogUpdate(terminal as unknown as NodeJS.WritableStream);
  return { draw: (screen) => update(screen), done: () => update.done() };
}

/** A timestamped plain line for non-TTY output. */
export function plainLine(at: number, line: string): string {
  return `${new Date(at).toISOString().slice(11, 23)} ${line}`;
}
