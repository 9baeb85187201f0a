import type { AgentEvent, Member, MemberStatus, Task } from '@teamwire/core';
import { contentText } from '@teamwire/core';
import { createLogUpdate } from 'log-update';

/** What the board knows, folded from the agent events the hub delivers. */
export class BoardModel {
  readonly members = new Map<string, Member>();
  readonly status = new Map<string, MemberStatus>();
  readonly tasks = new Map<string, Task>();
  readonly feed: string[] = [];
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
    lines.push(
      `  ${member.name.padEnd(14)} ${STATUS_COLOR[status] ?? ''}${status.padEnd(12)}${RESET} ${member.agentType}`,
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
  lines.push(
    `turns ${model.turns}  messages ${model.messages}  tool calls ${model.toolCalls}  tokens ${model.inputTokens}/${model.outputTokens}`,
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
