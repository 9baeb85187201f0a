import type { ChatMessage } from '../chat.js';
import { contentText } from '../content.js';
import { TeamError } from '../errors.js';
import type { MemberStatus } from '../ports/events.js';
import type { Member, MessageKind, QueuedMessage, TeamRecord } from '../records.js';
import { MessageKind as MessageKindSchema } from '../records.js';
import type { AgentRegistry } from './agents.js';
import {
  deliveredRecords,
  idleNoticeRecord,
  orderByPolicy,
  renderMessage,
} from './mail-delivery.js';
import { retireMember } from './retirement.js';
import type { RunnerHost } from './runner-host.js';
import type { AckInboxResult, InboxMessage, InboxPage, ReadInboxInput } from './service-types.js';

/** Messages one inbox read returns at most (`limit`). */
export const INBOX_PAGE_MAX = 50;
/** Messages one inbox read returns when it gives no `limit`. */
export const INBOX_PAGE_DEFAULT = 10;
/** UTF-8 bytes of rendered text one inbox page holds at most (one message always fits). */
const INBOX_PAGE_BYTES = 1 << 20;
/** Characters an inbox cursor may have: a full page of ids, with room to spare. */
export const INBOX_CURSOR_MAX = 8192;
const CURSOR_VERSION = 1;
const MESSAGE_ID_MAX = 128;

/** Timeouts of external members' presence (see {@link OpenTeamOptions.externalMembers}). */
export interface ExternalPresenceOptions {
  /** Silence after which a connected member shows as `idle` (default 60 s). */
  idleAfterMs: number;
  /**
   * Silence after which it shows as gone (`inactive`), and its `in_progress` tasks go back to the
   * board as a failed member's do (default 10 min). A wait in progress is not silence.
   */
  goneAfterMs: number;
}

interface Presence {
  status: 'running' | 'idle' | 'inactive';
  waits: number;
  cancelTimers(): void;
}

/** What the external members need from the runner pool. */
export interface ExternalHost extends RunnerHost {
  runsHere(memberId: string): boolean;
}

/**
 * The members whose turns happen outside: an MCP client, say. teamwire runs nothing for them; it
 * serves their inbox with a cursor, counts a message delivered when the client acknowledges it,
 * tracks their presence from their calls, and tells watchers when mail arrives.
 *
 * Delivery: a read returns pending mail in the order a runner would take it (shutdown requests
 * first, then the team policy's picks), rendered in the team's wire format, with a cursor naming
 * exactly those messages. Acknowledging the cursor (explicitly, or by passing it to the next
 * read) appends their `message.delivered` records and answers once those are durable. Until then
 * they come again on every read, across restarts; after, never. Acknowledging a shutdown request
 * retires the member (its tasks go back to the board), as a model-run teammate retires at it.
 */
export class ExternalMembers {
  private readonly presence = new Map<string, Presence>();
  private readonly watchers = new Map<string, Set<() => void>>();
  private closed = false;

  constructor(
    private readonly host: ExternalHost,
    private readonly agents: AgentRegistry,
    private readonly options: ExternalPresenceOptions,
  ) {}

  /** Whether `member` is run by a client (its agent type is external). */
  isExternal(member: Member): boolean {
    return this.agents.isExternal(member.agentType);
  }

  /** The derived status of an active external member, from its presence. */
  statusOf(memberId: string): MemberStatus {
    return this.presence.get(memberId)?.status ?? 'inactive';
  }

  /** Whether the member has called in lately (running or idle, not gone). */
  isPresent(memberId: string): boolean {
    return this.statusOf(memberId) !== 'inactive';
  }

  /**
   * This process serves `memberId` (opened, spawned or acquired here). Nothing is known of its
   * client yet: it shows as gone, and if it owns tasks and never calls in, they go back to the
   * board after `goneAfterMs`.
   */
  serve(member: Member): void {
    if (this.closed || this.presence.has(member.id)) return;
    const owns = this.host.state
      .listTasks({ status: 'in_progress' })
      .some((task) => task.ownerId === member.id);
    if (!owns) return;
    const entry: Presence = { status: 'inactive', waits: 0, cancelTimers: () => {} };
    this.presence.set(member.id, entry);
    entry.cancelTimers = this.host.clock.setTimer(this.options.goneAfterMs, () => {
      void this.gone(member.id, entry);
    });
  }

  /** This process no longer serves `memberId`: its timers stop and its watchers hear no more. */
  lost(memberId: string): void {
    this.presence.get(memberId)?.cancelTimers();
    this.presence.delete(memberId);
  }

  /**
   * The member called in: it shows as running now, idle after `idleAfterMs`, gone after
   * `goneAfterMs` (unless it calls again, or is waiting).
   */
  touch(member: Member): void {
    if (this.closed) return;
    const entry = this.entry(member);
    entry.cancelTimers();
    this.setStatus(member, entry, entry.waits > 0 ? 'idle' : 'running');
    if (entry.waits > 0) return;
    const { clock } = this.host;
    const cancelIdle = clock.setTimer(this.options.idleAfterMs, () => {
      this.setStatus(member, entry, 'idle');
    });
    const cancelGone = clock.setTimer(this.options.goneAfterMs, () => {
      void this.gone(member.id, entry);
    });
    entry.cancelTimers = () => {
      cancelIdle();
      cancelGone();
    };
  }

  /** Runs `wait` with the member shown idle and never gone meanwhile; touches it after. */
  async waiting<T>(member: Member, wait: () => Promise<T>): Promise<T> {
    const entry = this.entry(member);
    entry.waits++;
    this.touch(member);
    try {
      return await wait();
    } finally {
      entry.waits--;
      this.touch(member);
    }
  }

  /** Calls `listener` whenever mail for `memberId` is queued (durably), until unsubscribed. */
  watch(memberId: string, listener: () => void): () => void {
    let set = this.watchers.get(memberId);
    if (set === undefined) {
      set = new Set();
      this.watchers.set(memberId, set);
    }
    const entry = set;
    const call = () => listener();
    entry.add(call);
    return () => {
      entry.delete(call);
      if (entry.size === 0) this.watchers.delete(memberId);
    };
  }

  /** Mail for `memberId` is durable: its watchers hear of it. */
  notify(memberId: string): void {
    const set = this.watchers.get(memberId);
    if (set === undefined) return;
    for (const listener of [...set]) {
      try {
        listener();
      } catch {
        // a watcher's bug must not fail the sender, whose message is durable
      }
    }
  }

  /** Acknowledges the page `input.after` names (if any), then reads the next page. */
  async read(member: Member, input: ReadInboxInput = {}): Promise<InboxPage> {
    this.requireServed(member);
    const limit = input.limit ?? INBOX_PAGE_DEFAULT;
    if (!Number.isInteger(limit) || limit < 1 || limit > INBOX_PAGE_MAX) {
      throw new TeamError(
        'INVALID_ARGUMENT',
        `limit must be an integer from 1 to ${INBOX_PAGE_MAX}`,
        { details: { limit } },
      );
    }
    const kinds = input.kinds === undefined ? undefined : parseKinds(input.kinds);
    // Parse before anything is written: a bad cursor changes nothing.
    const ids = input.after === undefined ? undefined : parseCursor(input.after, member.id);
    this.touch(member);
    let retired = false;
    if (ids !== undefined) retired = (await this.acknowledge(member, ids)).retired;
    if (retired) return { messages: [], remaining: 0, retired: true };
    const all = this.ordered(member.id);
    const ordered = kinds === undefined ? all : all.filter((m) => kinds.has(m.kind));
    const messages: InboxMessage[] = [];
    let bytes = 0;
    for (const message of ordered) {
      if (messages.length >= limit) break;
      const shown = this.show(message);
      bytes += Buffer.byteLength(shown.text);
      if (messages.length > 0 && bytes > INBOX_PAGE_BYTES) break;
      messages.push(shown);
    }
    const remaining = ordered.length - messages.length;
    if (messages.length === 0) return { messages, remaining, retired: false };
    return {
      messages,
      cursor: formatCursor(
        member.id,
        messages.map((m) => m.id),
      ),
      remaining,
      retired: false,
    };
  }

  /** Acknowledges the page `cursor` names; see {@link ExternalMembers}. */
  async ack(member: Member, cursor: string): Promise<AckInboxResult> {
    this.requireServed(member);
    const ids = parseCursor(cursor, member.id);
    this.touch(member);
    return this.acknowledge(member, ids);
  }

  /** Stops every timer (dispose). */
  close(): void {
    this.closed = true;
    for (const entry of this.presence.values()) entry.cancelTimers();
    this.presence.clear();
    this.watchers.clear();
  }

  // ------------------------------------------------------------ internals

  private async acknowledge(member: Member, ids: readonly string[]): Promise<AckInboxResult> {
    const { host } = this;
    const mine = new Map(host.state.pending(member.id).map((m) => [m.id, m]));
    const acked: QueuedMessage[] = [];
    for (const id of ids) {
      const message = mine.get(id);
      if (message !== undefined) {
        acked.push(message);
      } else if (host.state.isPending(id)) {
        throw new TeamError('INVALID_CURSOR', `the cursor names mail of another member (${id})`, {
          details: { messageId: id },
        });
      } else if (!host.state.wasQueued(id)) {
        throw new TeamError('INVALID_CURSOR', `the cursor names no message of this team (${id})`, {
          details: { messageId: id },
        });
      }
      // Delivered before: a repeated ack, nothing to do. The state keeps no target of delivered
      // mail, so a cursor naming another member's delivered mail also ends here; a transport
      // that must refuse it authenticates the cursors it hands out (as @teamwire/mcp does).
    }
    if (acked.length === 0) return { acknowledged: 0, retired: false };
    const shutdown = acked.find((m) => m.kind === 'shutdown_request');
    const rest = acked.filter((m) => m !== shutdown);
    let acknowledged = 0;
    if (rest.length > 0) {
      const records = await host.commit(member, () => deliveredRecords(host, rest));
      acknowledged += records.length;
    }
    if (shutdown === undefined || !host.state.isPending(shutdown.id)) {
      return { acknowledged, retired: false };
    }
    await retireMember(host, host.state.member(member.id) ?? member, [shutdown]);
    this.lost(member.id);
    host.events.publish(member.name, { type: 'status', status: 'retired' });
    return { acknowledged: acknowledged + 1, retired: true };
  }

  /** Pending durable mail in the order a runner takes it: shutdown requests, then the policy's. */
  private ordered(memberId: string): QueuedMessage[] {
    const { host } = this;
    const pending = host.deliverable(memberId);
    const shutdowns = pending.filter((m) => m.kind === 'shutdown_request');
    const rest = pending.filter((m) => m.kind !== 'shutdown_request');
    return [...shutdowns, ...orderByPolicy(host.policy, rest, host.state.leadId as string)];
  }

  private show(message: QueuedMessage): InboxMessage {
    const entries = renderMessage(this.host, message);
    return {
      id: message.id,
      from: message.senderName,
      kind: message.kind,
      ...(message.summary === undefined ? {} : { summary: message.summary }),
      ...(message.taskId === undefined ? {} : { taskId: message.taskId }),
      entries,
      text: entriesText(entries),
    };
  }

  /** `NOT_EXTERNAL` unless `member` is external, `NOT_PLACED_HERE` unless it is served here. */
  requireServed(member: Member): void {
    if (!this.isExternal(member)) {
      throw new TeamError(
        'NOT_EXTERNAL',
        `${member.name} is run by teamwire: its runner reads its mail, not a client`,
        { details: { memberId: member.id } },
      );
    }
    if (!this.host.runsHere(member.id)) {
      throw new TeamError('NOT_PLACED_HERE', `${member.name} is served by another process`, {
        details: { memberId: member.id },
      });
    }
  }

  private entry(member: Member): Presence {
    let entry = this.presence.get(member.id);
    if (entry === undefined) {
      entry = { status: 'inactive', waits: 0, cancelTimers: () => {} };
      this.presence.set(member.id, entry);
    }
    return entry;
  }

  private setStatus(member: Member, entry: Presence, status: Presence['status']): void {
    if (entry.status === status || this.presence.get(member.id) !== entry) return;
    entry.status = status;
    this.host.events.publish(member.name, { type: 'status', status });
    this.host.runnerChanged();
  }

  /** Silent too long: shown as gone, and its tasks go back to the board as a failed member's. */
  private async gone(memberId: string, entry: Presence): Promise<void> {
    const { host } = this;
    const member = host.state.member(memberId);
    if (member === undefined || this.presence.get(memberId) !== entry) return;
    if (entry.status !== 'inactive') {
      entry.status = 'inactive';
      host.events.publish(member.name, { type: 'status', status: 'inactive' });
    }
    if (this.closed || host.closed || member.phase !== 'active') return;
    try {
      const seconds = Math.round(this.options.goneAfterMs / 1000);
      // one commit: the tasks go back and the lead hears why, or neither
      await host.commit(member, () => {
        const released: TeamRecord[] = host.state.releaseTasksOf(memberId);
        if (released.length === 0 || memberId === host.state.leadId) return released;
        const notice = idleNoticeRecord(
          host,
          member,
          `${member.name} went silent for ${seconds} s; its ${released.length} task(s) went back to the board`,
          'failure',
        );
        return notice === undefined ? released : [...released, notice];
      });
    } catch {
      // The service broke or this process lost the member; whoever runs it now decides.
    } finally {
      host.runnerChanged();
    }
  }
}

/** Every message kind, from the record schema (the one list of them). */
const KINDS: readonly MessageKind[] = MessageKindSchema.options;

function parseKinds(kinds: unknown): Set<MessageKind> {
  if (
    !Array.isArray(kinds) ||
    kinds.length === 0 ||
    kinds.length > KINDS.length ||
    !kinds.every((k) => (KINDS as readonly unknown[]).includes(k))
  ) {
    throw new TeamError(
      'INVALID_ARGUMENT',
      `kinds must be a non-empty list of ${KINDS.join(', ')}`,
      {
        details: { kinds },
      },
    );
  }
  return new Set(kinds as MessageKind[]);
}

/** The plain text of a wire format's rendering, as a client without chat roles reads it. */
export function entriesText(entries: readonly ChatMessage[]): string {
  const parts: string[] = [];
  for (const entry of entries) {
    if (entry.role === 'assistant') {
      const text = contentText(entry.content);
      if (text !== '') parts.push(text);
      for (const call of entry.toolCalls ?? []) {
        parts.push(JSON.stringify({ tool: call.name, input: call.input }));
      }
    } else {
      parts.push(contentText(entry.content));
    }
  }
  return parts.join('\n');
}

function formatCursor(memberId: string, ids: readonly string[]): string {
  return Buffer.from(JSON.stringify({ v: CURSOR_VERSION, m: memberId, ids })).toString('base64url');
}

/** The message ids `cursor` names, checked to be a cursor issued to `memberId`. */
function parseCursor(cursor: unknown, memberId: string): string[] {
  const invalid = (why: string) =>
    new TeamError('INVALID_CURSOR', `invalid inbox cursor: ${why}`, {
      details: { reason: why },
    });
  if (typeof cursor !== 'string' || cursor === '') throw invalid('not a non-empty string');
  if (cursor.length > INBOX_CURSOR_MAX) throw invalid(`longer than ${INBOX_CURSOR_MAX} characters`);
  if (!/^[A-Za-z0-9_-]+$/.test(cursor)) throw invalid('not base64url');
  let value: unknown;
  try {
    value = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
  } catch {
    throw invalid('not a cursor this server issued');
  }
  const { v, m, ids } = (value ?? {}) as { v?: unknown; m?: unknown; ids?: unknown };
  if (v !== CURSOR_VERSION) throw invalid(`unknown cursor version ${JSON.stringify(v)}`);
  if (m !== memberId) throw invalid('issued to another member');
  if (
    !Array.isArray(ids) ||
    ids.length === 0 ||
    ids.length > INBOX_PAGE_MAX ||
    !ids.every((id) => typeof id === 'string' && id !== '' && id.length <= MESSAGE_ID_MAX)
  ) {
    throw invalid(`needs 1 to ${INBOX_PAGE_MAX} message ids`);
  }
  return ids as string[];
}
