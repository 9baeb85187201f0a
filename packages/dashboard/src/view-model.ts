import type {
  AgentEvent,
  HubItem,
  MemberStatus,
  MessageKind,
  TaskStatus,
  TeamRecord,
} from '@teamwire/core';

/*
 * The dashboard's view model: hub items and team-log records in, what the page shows out. Pure
 * and synchronous, shared by the browser page and the tests (which need no browser). Records are
 * applied once each, by their log seq, so a snapshot followed by a stream that repeats some of
 * its records gives the same view as either alone.
 */

/** Characters of streamed output kept per member. */
export const OUTPUT_KEEP = 4000;
/** Mail items kept in the timeline (the oldest go first). */
export const MAIL_KEEP = 1000;
/** Characters of a message body shown in the timeline. */
export const MAIL_TEXT_KEEP = 500;

/** One member as the page shows it. */
export interface MemberView {
  /** The member id (a ulid; the team id for the lead). */
  id: string;
  /** Its name. */
  name: string;
  /** Its agent type. */
  agentType: string;
  /** Its model provider, or `external`. */
  provider: string;
  /** What it is for. */
  description: string;
  /** Its lifecycle phase, from its member records. */
  phase: 'provisioning' | 'active' | 'failed' | 'retired';
  /** The derived status, from the snapshot and then `status` events. */
  status: MemberStatus;
  /** Whether its runner is running now, from the hub's presence. */
  active: boolean;
  /** The tool it is running now, if any. */
  currentTool?: string | undefined;
  /** The streamed text of its current (or last) turn, the last {@link OUTPUT_KEEP} characters. */
  output: string;
  /** Turns started, as seen by this page. */
  turns: number;
  /** Input tokens of its model calls, as seen by this page (the hub's history and live). */
  inputTokens: number;
  /** Output tokens of its model calls, as seen by this page. */
  outputTokens: number;
  /** Compactions of its context, as seen by this page. */
  compactions: number;
  /** True while its context is being compacted. */
  compacting: boolean;
  /** Its last compaction: prompt tokens before and after, and how long the summary took. */
  lastCompaction?:
    | {
        /** Prompt tokens before. */
        tokensBefore: number;
        /** Prompt tokens after. */
        tokensAfter: number;
        /** How long it took (ms). */
        durationMs: number;
      }
    | undefined;
  /** Its last runner error. */
  lastError?:
    | {
        /** The error's `TeamError` code. */
        code: string;
        /** What failed. */
        message: string;
      }
    | undefined;
  /** Its display color. */
  color?: string | undefined;
  /** Run by a client (an MCP member, or the dashboard's own operator). */
  external: boolean;
}

/** One task as the page shows it. */
export interface TaskView {
  /** The task id (`task-<n>`). */
  id: string;
  /** Its title. */
  subject: string;
  /** Where it stands. */
  status: TaskStatus;
  /** The owner's name. */
  owner?: string | undefined;
  /** The tasks it waits for. */
  blockedBy: string[];
  /** Its compare-and-set revision. */
  revision: number;
  /** Pending with every blocker completed. */
  ready: boolean;
}

/** One message of the timeline. */
export interface MailView {
  /** The message id. */
  id: string;
  /** The seq of its `message.queued` record. */
  seq: number;
  /** When it was queued (ms since the Unix epoch). */
  at: number;
  /** The sender's name. */
  from: string;
  /** The target's name. */
  to: string;
  /** What the message is (set by the runtime). */
  kind: MessageKind;
  /** The sender's one-line preview. */
  summary?: string | undefined;
  /** The body's text, cut to {@link MAIL_TEXT_KEEP} characters. */
  text: string;
  /** Whether its `message.delivered` record was seen. */
  delivered: boolean;
}

/** What the server answers on `GET /api/snapshot`; see the package README. */
export interface DashboardSnapshot {
  /** Format version of this object. */
  version: 1;
  /** The team. */
  teamId: string;
  /** The team log (the newest records when it is long; `truncated` says how many are left out). */
  records: TeamRecord[];
  /** Records left out before `records[0]`. */
  truncated: number;
  /** Derived statuses by member name, when the server runs the team (absent when read-only). */
  statuses?: Record<string, MemberStatus>;
  /** The hub's epoch, when there is a live stream. */
  epoch?: string;
  /** True when the page can only watch. */
  readOnly: boolean;
  /** The name the person at the page sends as, when it can act. */
  operator?: string;
}

/** The whole view. Mutated in place by the functions below; `version` counts the changes. */
export interface DashboardState {
  /** The team. */
  teamId: string;
  /** Grows with every change: a page re-renders when it moves. */
  version: number;
  /** True when the page can only watch. */
  readOnly: boolean;
  /** The member name the person at the page acts as. */
  operator?: string | undefined;
  /** The hub's epoch the snapshot was taken under. */
  epoch?: string | undefined;
  /** The last log seq applied. */
  lastRecordSeq: number;
  /** Members by id, in spawn order. */
  members: Map<string, MemberView>;
  /** Member ids by name. */
  byName: Map<string, string>;
  /** Tasks by id, in creation order. */
  tasks: Map<string, TaskView>;
  /** The timeline, oldest first. */
  mail: MailView[];
  /** Items the hub could not deliver (a slow page, an old cursor). */
  missed: number;
}

/** An empty view of team `teamId`. */
export function emptyState(teamId: string): DashboardState {
  return {
    teamId,
    version: 0,
    readOnly: true,
    lastRecordSeq: 0,
    members: new Map(),
    byName: new Map(),
    tasks: new Map(),
    mail: [],
    missed: 0,
  };
}

/** A view built from a snapshot (the page's first load, and every reload after a reset). */
export function fromSnapshot(snapshot: DashboardSnapshot): DashboardState {
  const state = emptyState(snapshot.teamId);
  state.readOnly = snapshot.readOnly;
  state.operator = snapshot.operator;
  state.epoch = snapshot.epoch;
  for (const record of snapshot.records) applyRecord(state, record);
  for (const [name, status] of Object.entries(snapshot.statuses ?? {})) {
    const member = memberNamed(state, name);
    if (member !== undefined) member.status = status;
  }
  state.version++;
  return state;
}

function memberNamed(state: DashboardState, name: string): MemberView | undefined {
  const id = state.byName.get(name);
  return id === undefined ? undefined : state.members.get(id);
}

function nameOf(state: DashboardState, id: string | undefined): string | undefined {
  if (id === undefined) return undefined;
  return state.members.get(id)?.name ?? id;
}

function statusOfPhase(phase: MemberView['phase']): MemberStatus {
  return phase === 'active' ? 'inactive' : phase;
}

function refreshReady(state: DashboardState): void {
  for (const task of state.tasks.values()) {
    task.ready =
      task.status === 'pending' &&
      task.blockedBy.every((id) => state.tasks.get(id)?.status === 'completed');
  }
}

function bodyText(content: readonly { type: string; text?: unknown }[]): string {
  const text = content
    .map((block) => (block.type === 'text' && typeof block.text === 'string' ? block.text : ''))
    .join('');
  return text.length > MAIL_TEXT_KEEP ? `${text.slice(0, MAIL_TEXT_KEEP - 1)}…` : text;
}

/** Applies one team-log record; a record at or below the last applied seq is skipped. */
export function applyRecord(state: DashboardState, record: TeamRecord): boolean {
  if (record.seq <= state.lastRecordSeq) return false;
  state.lastRecordSeq = record.seq;
  switch (record.type) {
    case 'member': {
      const m = record.member;
      const known = state.members.get(m.id);
      const phaseChanged = known?.phase !== m.phase;
      const view: MemberView = {
        output: '',
        turns: 0,
        inputTokens: 0,
        outputTokens: 0,
        compactions: 0,
        compacting: false,
        active: false,
        ...known,
        id: m.id,
        name: m.name,
        agentType: m.agentType,
        provider: m.provider,
        description: m.description,
        phase: m.phase,
        status: known !== undefined && !phaseChanged ? known.status : statusOfPhase(m.phase),
        color: m.color,
        external: m.provider === 'external',
      };
      state.members.set(m.id, view);
      state.byName.set(m.name, m.id);
      break;
    }
    case 'task': {
      const t = record.task;
      state.tasks.set(t.id, {
        id: t.id,
        subject: t.subject,
        status: t.status,
        owner: nameOf(state, t.ownerId),
        blockedBy: [...t.blockedBy],
        revision: t.revision,
        ready: false,
      });
      refreshReady(state);
      break;
    }
    case 'message.queued': {
      const m = record.message;
      state.mail.push({
        id: m.id,
        seq: record.seq,
        at: record.at,
        from: m.senderName,
        to: nameOf(state, m.targetId) ?? m.targetId,
        kind: m.kind,
        summary: m.summary,
        text: bodyText(m.content as { type: string; text?: unknown }[]),
        delivered: false,
      });
      if (state.mail.length > MAIL_KEEP) state.mail.splice(0, state.mail.length - MAIL_KEEP);
      break;
    }
    case 'message.delivered': {
      for (let i = state.mail.length - 1; i >= 0; i--) {
        const item = state.mail[i] as MailView;
        if (item.id === record.messageId) {
          item.delivered = true;
          break;
        }
      }
      break;
    }
  }
  state.version++;
  return true;
}

function applyEvent(state: DashboardState, agent: string, event: AgentEvent): void {
  if (event.type === 'record') {
    applyRecord(state, event.record);
    return;
  }
  const member = memberNamed(state, agent);
  if (member === undefined) return;
  switch (event.type) {
    case 'turn.start':
      member.turns++;
      member.output = '';
      member.currentTool = undefined;
      break;
    case 'model.text-delta': {
      const output = member.output + event.text;
      member.output = output.length > OUTPUT_KEEP ? output.slice(-OUTPUT_KEEP) : output;
      break;
    }
    case 'model.step':
      member.inputTokens += event.usage.inputTokens;
      member.outputTokens += event.usage.outputTokens;
      break;
    case 'tool.call':
      member.currentTool = event.toolCall.name;
      break;
    case 'context.compacting':
      member.compacting = true;
      break;
    case 'context.compacted':
      member.compacting = false;
      member.compactions++;
      member.lastCompaction = {
        tokensBefore: event.tokensBefore,
        tokensAfter: event.tokensAfter,
        durationMs: event.durationMs,
      };
      break;
    case 'tool.result':
      if (member.currentTool === event.toolName) member.currentTool = undefined;
      break;
    case 'turn.end':
      member.currentTool = undefined;
      member.compacting = false;
      break;
    case 'status':
      member.status = event.status;
      break;
    case 'error':
      member.lastError = { code: event.code, message: event.message };
      break;
    default:
      return;
  }
  state.version++;
}

/**
 * Applies one hub item. `reload` when the page must fetch a fresh snapshot: the hub restarted (a
 * new epoch) or could not honour the cursor; the stream that follows starts afresh.
 */
export function applyHubItem(state: DashboardState, item: HubItem): 'ok' | 'reload' {
  switch (item.type) {
    case 'event':
      applyEvent(state, item.agent, item.event);
      return 'ok';
    case 'presence': {
      const member = memberNamed(state, item.agent);
      if (member !== undefined) {
        member.active = item.state === 'started';
        if (item.status !== undefined) member.status = item.status;
        state.version++;
      }
      return 'ok';
    }
    case 'presence.snapshot': {
      const active = new Set(item.active.map((a) => a.name));
      for (const member of state.members.values()) member.active = active.has(member.name);
      state.version++;
      return 'ok';
    }
    case 'gap':
      state.missed += item.lost;
      state.version++;
      return 'ok';
    case 'reset':
      return 'reload';
  }
}

/** The timeline filtered by member (sender or target) and kind. */
export function selectMail(
  state: DashboardState,
  filter: { member?: string | undefined; kind?: MessageKind | undefined } = {},
): MailView[] {
  return state.mail.filter(
    (m) =>
      (filter.member === undefined || m.from === filter.member || m.to === filter.member) &&
      (filter.kind === undefined || m.kind === filter.kind),
  );
}

/** One member's row of {@link tokenTotals}. */
export interface TokenRow {
  /** The member's name. */
  name: string;
  /** Its input tokens. */
  inputTokens: number;
  /** Its output tokens. */
  outputTokens: number;
  /** Its context compactions. */
  compactions: number;
}

/** Token use per member and in total, for the usage table. */
export function tokenTotals(state: DashboardState): {
  /** One row per member, in spawn order. */
  rows: TokenRow[];
  /** The sum of the input tokens. */
  inputTokens: number;
  /** The sum of the output tokens. */
  outputTokens: number;
} {
  const rows = [...state.members.values()].map((m) => ({
    name: m.name,
    inputTokens: m.inputTokens,
    outputTokens: m.outputTokens,
    compactions: m.compactions,
  }));
  return {
    rows,
    inputTokens: rows.reduce((n, r) => n + r.inputTokens, 0),
    outputTokens: rows.reduce((n, r) => n + r.outputTokens, 0),
  };
}
