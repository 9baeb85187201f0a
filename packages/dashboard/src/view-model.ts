import {
  type AgentEvent,
  type HubItem,
  isTaskReady,
  type MemberStatus,
  type MessageKind,
} from '@teamwire/core';
import {
  APPROVAL_TEXT_KEEP,
  cutText,
  MAIL_TEXT_KEEP,
  messageText,
  type SnapshotRecord,
} from './snapshot-record.js';
import {
  APPROVALS_DECIDED_KEEP,
  type ApprovalItem,
  type DashboardSnapshot,
  type DashboardState,
  GATE_REFUSALS_KEEP,
  MAIL_KEEP,
  type MailView,
  type MemberView,
  OUTPUT_KEEP,
} from './view-types.js';

export type {
  ApprovalItem,
  DashboardSnapshot,
  DashboardState,
  DeadLetterView,
  GateRefusalView,
  MailView,
  MemberView,
  TaskView,
} from './view-types.js';
export {
  APPROVALS_DECIDED_KEEP,
  GATE_REFUSALS_KEEP,
  MAIL_KEEP,
  OUTPUT_KEEP,
} from './view-types.js';

/*
 * The dashboard's view model: hub items and team-log records in, what the page shows out. Pure
 * and synchronous, shared by the browser page and the tests (which need no browser). Team rules
 * (when a task is ready) are core's own functions, which the page bundles from core's source. Records are
 * applied once each, by their log seq, so a snapshot followed by a stream that repeats some of
 * its records gives the same view as either alone.
 */

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
    approvals: new Map(),
    gateRefusals: [],
    missed: 0,
    usageThrough: new Map(),
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
  for (const [name, usage] of Object.entries(snapshot.usage ?? {})) {
    const member = memberNamed(state, name);
    if (member === undefined) continue;
    member.turns = usage.turns;
    member.inputTokens = usage.inputTokens;
    member.outputTokens = usage.outputTokens;
    state.usageThrough.set(name, usage.through);
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

/** Marks the tasks claimable now by core's rule; a blocker the page has not seen is not done. */
function refreshReady(state: DashboardState): void {
  const statusOf = (id: string) => state.tasks.get(id)?.status;
  for (const task of state.tasks.values()) task.ready = isTaskReady(task, statusOf);
}

/** A text as the page keeps it, and how much of it is left out (`length`: what a snapshot cut). */
function kept(
  text: string,
  length = text.length,
  keep = MAIL_TEXT_KEEP,
): { text: string; more: number } {
  const shown = cutText(text, keep);
  return { text: shown, more: Math.max(0, length - shown.length) };
}

/** Drops the oldest decided approvals past {@link APPROVALS_DECIDED_KEEP}; pending ones stay. */
function trimDecided(state: DashboardState): void {
  let decided = 0;
  for (const approval of state.approvals.values()) if (approval.status !== 'pending') decided++;
  for (const [id, approval] of state.approvals) {
    if (decided <= APPROVALS_DECIDED_KEEP) return;
    if (approval.status === 'pending') continue;
    state.approvals.delete(id);
    decided--;
  }
}

/** The message of the timeline with this id, looked for from the newest. */
function mailWithId(state: DashboardState, id: string): MailView | undefined {
  for (let i = state.mail.length - 1; i >= 0; i--) {
    const item = state.mail[i] as MailView;
    if (item.id === id) return item;
  }
  return undefined;
}

/**
 * Applies one team-log record, whole or as a snapshot cut it; a record at or below the last
 * applied seq is skipped.
 */
export function applyRecord(state: DashboardState, record: SnapshotRecord): boolean {
  if (record.seq <= state.lastRecordSeq) return false;
  state.lastRecordSeq = record.seq;
  switch (record.type) {
    case 'member': {
      const m = record.member;
      const known = state.members.get(m.id);
      const phaseChanged = known?.phase !== m.phase;
      const description = kept(m.description, record.cut?.['member.description']);
      const view: MemberView = {
        output: '',
        turns: 0,
        inputTokens: 0,
        outputTokens: 0,
        compactions: 0,
        compacting: false,
        active: false,
        deadLetters: 0,
        ...known,
        id: m.id,
        name: m.name,
        agentType: m.agentType,
        provider: m.provider,
        description: description.text,
        descriptionMore: description.more,
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
        ownerId: t.ownerId,
        blockedBy: [...t.blockedBy],
        revision: t.revision,
        ready: false,
      });
      refreshReady(state);
      break;
    }
    case 'message.queued': {
      const m = record.message;
      const body = messageText(m.content as { type: string; text?: unknown }[], MAIL_TEXT_KEEP);
      const summary =
        m.summary === undefined ? undefined : kept(m.summary, record.cut?.['message.summary']);
      state.mail.push({
        id: m.id,
        seq: record.seq,
        at: record.at,
        from: m.senderName,
        to: nameOf(state, m.targetId) ?? m.targetId,
        kind: m.kind,
        summary: summary?.text,
        summaryMore: summary?.more ?? 0,
        text: body.text,
        more: Math.max(0, (record.cut?.['message.content'] ?? body.length) - body.text.length),
        delivered: false,
      });
      if (state.mail.length > MAIL_KEEP) state.mail.splice(0, state.mail.length - MAIL_KEEP);
      break;
    }
    case 'message.delivered': {
      const item = mailWithId(state, record.messageId);
      if (item !== undefined) item.delivered = true;
      break;
    }
    case 'message.dead_lettered': {
      const detail =
        record.detail === undefined
          ? undefined
          : kept(record.detail, record.cut?.['deadLetter.detail']);
      const item = mailWithId(state, record.messageId);
      if (item !== undefined) {
        item.deadLetter = {
          reason: record.reason,
          detail: detail?.text,
          detailMore: detail?.more ?? 0,
          at: record.at,
        };
      }
      const target = state.members.get(record.targetId);
      if (target !== undefined) target.deadLetters++;
      break;
    }
    case 'approval.requested': {
      const a = record.approval;
      const input =
        a.input === undefined
          ? undefined
          : kept(a.input, record.cut?.['approval.input'], APPROVAL_TEXT_KEEP);
      const plan =
        a.plan === undefined
          ? undefined
          : kept(a.plan, record.cut?.['approval.plan'], APPROVAL_TEXT_KEEP);
      state.approvals.set(a.id, {
        id: a.id,
        seq: record.seq,
        kind: a.kind,
        requester: nameOf(state, a.requesterId) as string,
        approver: nameOf(state, a.approverId),
        toolName: a.toolName,
        input: input?.text,
        inputMore: input?.more ?? 0,
        plan: plan?.text,
        planMore: plan?.more ?? 0,
        taskId: a.taskId,
        status: 'pending',
        requestedAt: record.at,
        expiresAt: a.expiresAt,
        reasonMore: 0,
        started: false,
      });
      break;
    }
    case 'approval.decided': {
      // a snapshot may have left out the request: nothing to show it on
      const item: ApprovalItem | undefined = state.approvals.get(record.approvalId);
      if (item === undefined) break;
      const reason =
        record.reason === undefined
          ? undefined
          : kept(record.reason, record.cut?.['approval.reason']);
      item.status = record.decision;
      item.decidedAt = record.at;
      item.reason = reason?.text;
      item.reasonMore = reason?.more ?? 0;
      // without a member, an approval or a rejection is the host's; an expiry or a cancel, no one's
      item.decider =
        record.deciderId !== undefined
          ? nameOf(state, record.deciderId)
          : record.decision === 'approved' || record.decision === 'rejected'
            ? 'host'
            : undefined;
      trimDecided(state);
      break;
    }
    case 'approval.started': {
      const item = state.approvals.get(record.approvalId);
      if (item !== undefined) item.started = true;
      break;
    }
    case 'gate.refused': {
      const feedback = kept(record.feedback, record.cut?.['gate.feedback']);
      state.gateRefusals.push({
        seq: record.seq,
        at: record.at,
        gate: record.gate,
        member: nameOf(state, record.memberId) as string,
        taskId: record.taskId,
        feedback: feedback.text,
        feedbackMore: feedback.more,
        attempt: record.attempt,
      });
      if (state.gateRefusals.length > GATE_REFUSALS_KEEP) {
        state.gateRefusals.splice(0, state.gateRefusals.length - GATE_REFUSALS_KEEP);
      }
      break;
    }
  }
  state.version++;
  return true;
}

/** `output` ended by a line break, so that the next message's text starts a line of its own. */
function endLine(output: string): string {
  if (output === '' || output.endsWith('\n')) return output;
  return `${output.trimEnd()}\n`;
}

function applyEvent(state: DashboardState, agent: string, event: AgentEvent, at: number): void {
  if (event.type === 'record') {
    applyRecord(state, event.record);
    return;
  }
  const member = memberNamed(state, agent);
  if (member === undefined) return;
  // the snapshot's transcript figures already count what happened up to their time
  const counted = at <= (state.usageThrough.get(agent) ?? Number.NEGATIVE_INFINITY);
  switch (event.type) {
    case 'turn.start':
      if (!counted) member.turns++;
      member.output = '';
      member.currentTool = undefined;
      break;
    case 'model.text-delta': {
      const output = member.output + event.text;
      member.output = output.length > OUTPUT_KEEP ? output.slice(-OUTPUT_KEEP) : output;
      break;
    }
    case 'model.step':
      // one model message ends here: the next one's text starts on a new line
      member.output = endLine(member.output);
      if (counted) break;
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
      member.output = endLine(member.output);
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
      applyEvent(state, item.agent, item.event, item.at);
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

/**
 * Where a message of the timeline stands: `pending` until its record says it was delivered, or
 * that it ended without delivery (`dead-letter`).
 */
export type MailDelivery = 'pending' | 'delivered' | 'dead-letter';

/** Where `item` stands (see {@link MailDelivery}). */
export function mailDelivery(item: MailView): MailDelivery {
  if (item.delivered) return 'delivered';
  return item.deadLetter === undefined ? 'pending' : 'dead-letter';
}

/** The timeline filtered by member (sender or target), kind and where each message stands. */
export function selectMail(
  state: DashboardState,
  filter: {
    member?: string | undefined;
    kind?: MessageKind | undefined;
    delivery?: MailDelivery | undefined;
  } = {},
): MailView[] {
  return state.mail.filter(
    (m) =>
      (filter.member === undefined || m.from === filter.member || m.to === filter.member) &&
      (filter.kind === undefined || m.kind === filter.kind) &&
      (filter.delivery === undefined || mailDelivery(m) === filter.delivery),
  );
}

/** The approvals waiting for a decision, oldest first. */
export function pendingApprovals(state: DashboardState): ApprovalItem[] {
  return [...state.approvals.values()].filter((a) => a.status === 'pending');
}

/** The decided approvals the page keeps, the latest decision first. */
export function decidedApprovals(state: DashboardState): ApprovalItem[] {
  return [...state.approvals.values()]
    .filter((a) => a.status !== 'pending')
    .sort((a, b) => (b.decidedAt ?? 0) - (a.decidedAt ?? 0) || b.seq - a.seq);
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
