import { type Approval, contentText, GateName, type TeamState } from '@teamwire/core';
import { readState } from '../read-state.js';
import { SOURCE_HELP, SOURCE_OPTIONS, teamSource } from '../team-source.js';
import type { CliCommand } from './command.js';

const HELP = `teamwire inspect — print a team's members, tasks, approvals, pending mail and dead letters

Usage:
  teamwire inspect --dir <state folder> --team <id> [--json]
  teamwire inspect --store postgres://… --team <id> [--json]

Reads the team without changing it: a JSONL folder without taking its lock (safe while the team
runs), a team in PostgreSQL as a process that runs no member. Approvals are listed pending first,
each with its requester, the tool call or plan, its age and expiry, and how and by whom it was
decided; gate refusals are counted in a row, per task or member.

Options:
${SOURCE_HELP}
  --json                one JSON object on stdout instead of text
  -h, --help            this text
`;

/** Characters of a message preview in the text output. */
const PREVIEW_CHARS = 100;

const iso = (at: number | undefined) => (at === undefined ? undefined : new Date(at).toISOString());

/** Pending approvals first (oldest first), then the decided ones, most recently decided first. */
function approvalOrder(state: TeamState): Approval[] {
  const all = state.approvals();
  const pending = all.filter((a) => a.status === 'pending');
  const done = all
    .filter((a) => a.status !== 'pending')
    .sort((a, b) => (b.decidedAt ?? b.requestedAt) - (a.decidedAt ?? a.requestedAt));
  return [...pending, ...done];
}

/** What `teamwire inspect --json` prints. */
export function inspection(teamId: string, state: TeamState) {
  const names = new Map(state.members().map((m) => [m.id, m.name]));
  const nameOf = (id: string | undefined) => (id === undefined ? undefined : (names.get(id) ?? id));
  const gateIds = {
    task_completed: state.allTasks().map((t) => t.id),
    teammate_idle: state.members().map((m) => m.id),
  } satisfies Record<GateName, string[]>;
  const mail = (m: ReturnType<TeamState['pendingMail']>[number]) => ({
    id: m.id,
    from: m.senderName,
    to: nameOf(m.targetId),
    kind: m.kind,
    ...(m.summary === undefined ? {} : { summary: m.summary }),
    text: contentText(m.content),
  });
  return {
    teamId,
    lastSeq: state.lastSeq,
    members: state.members().map((m) => ({
      id: m.id,
      name: m.name,
      agentType: m.agentType,
      provider: m.provider,
      phase: m.phase,
      lead: m.id === state.leadId,
      ...(m.error === undefined ? {} : { error: m.error }),
    })),
    tasks: state.allTasks().map((t) => ({
      id: t.id,
      subject: t.subject,
      status: t.status,
      revision: t.revision,
      ...(t.ownerId === undefined ? {} : { owner: nameOf(t.ownerId) }),
      blockedBy: t.blockedBy,
    })),
    approvals: approvalOrder(state).map((a) => {
      const decided = a.status === 'approved' || a.status === 'rejected';
      const fields = {
        id: a.id,
        kind: a.kind,
        status: a.status,
        requester: nameOf(a.requesterId),
        // no approver member: the host decides
        approver: nameOf(a.approverId) ?? 'host',
        toolName: a.toolName,
        input: a.input,
        plan: a.plan,
        requestedAt: iso(a.requestedAt),
        expiresAt: iso(a.expiresAt),
        decidedAt: iso(a.decidedAt),
        // a decision without a member was the host's; an expiry or a cancel has no decider
        decider: nameOf(a.deciderId) ?? (decided ? 'host' : undefined),
        reason: a.reason,
        started: a.started,
      };
      return Object.fromEntries(Object.entries(fields).filter(([, v]) => v !== undefined)) as {
        [K in keyof typeof fields]: Exclude<(typeof fields)[K], undefined> | undefined;
      };
    }),
    gateRefusals: GateName.options.flatMap((gate) =>
      gateIds[gate].flatMap((id) => {
        const inARow = state.gateCount(gate, id);
        if (inARow === 0) return [];
        const on = gate === 'task_completed' ? { task: id } : { member: nameOf(id) };
        return [{ gate, ...on, inARow }];
      }),
    ),
    pendingMail: state.pendingMail().map(mail),
    deadLetters: state.deadLetters().map((d) => ({
      ...mail(d.message),
      reason: d.reason,
      ...(d.detail === undefined ? {} : { detail: d.detail }),
    })),
  };
}

function oneLine(text: string): string {
  const flat = text.replace(/\s+/g, ' ').trim();
  return flat.length > PREVIEW_CHARS ? `${flat.slice(0, PREVIEW_CHARS - 1)}…` : flat;
}

/** `90s` as `1m`, rounded down to its largest unit. */
function duration(ms: number): string {
  const s = Math.floor(Math.abs(ms) / 1000);
  if (s < 60) return `${s}s`;
  if (s < 3600) return `${Math.floor(s / 60)}m`;
  if (s < 86_400) return `${Math.floor(s / 3600)}h`;
  return `${Math.floor(s / 86_400)}d`;
}

function approvalLine(a: ReturnType<typeof inspection>['approvals'][number], now: number): string {
  const at = (time: string) => Date.parse(time);
  const what = a.kind === 'plan' ? `plan ${oneLine(a.plan ?? '')}` : `tool ${a.toolName ?? '?'}`;
  const parts = [`asked ${duration(now - at(a.requestedAt as string))} ago`];
  if (a.status === 'pending') {
    if (a.expiresAt !== undefined) {
      const left = at(a.expiresAt) - now;
      parts.push(
        left >= 0 ? `expires in ${duration(left)}` : `past its expiry by ${duration(left)}`,
      );
    }
  } else {
    const by = a.decider === undefined ? '' : ` by ${a.decider}`;
    const when = a.decidedAt === undefined ? '' : ` ${duration(now - at(a.decidedAt))} ago`;
    parts.push(`${a.status}${by}${when}${a.reason === undefined ? '' : `: ${oneLine(a.reason)}`}`);
  }
  const input = a.kind === 'tool' && a.input !== undefined ? `  ${oneLine(a.input)}` : '';
  return `  ${a.id}  ${(a.status as string).padEnd(9)} ${a.requester} -> ${a.approver}  ${what}  ${parts.join(', ')}${input}`;
}

function formatText(view: ReturnType<typeof inspection>, now: number): string {
  const out = [
    `Team ${view.teamId} (${view.lastSeq} records)`,
    '',
    `Members (${view.members.length}):`,
  ];
  for (const m of view.members) {
    out.push(
      `  ${m.name.padEnd(16)} ${m.phase.padEnd(12)} ${m.agentType}${m.lead ? ' (lead)' : ''}${m.provider === 'external' ? ' (external)' : ''}${m.error ? `  error: ${oneLine(m.error)}` : ''}`,
    );
  }
  out.push('', `Tasks (${view.tasks.length}):`);
  for (const t of view.tasks) {
    out.push(
      `  ${t.id.padEnd(9)} ${t.status.padEnd(12)} ${(t.owner ?? '-').padEnd(16)} r${t.revision} ${oneLine(t.subject)}`,
    );
  }
  const pending = view.approvals.filter((a) => a.status === 'pending').length;
  out.push('', `Approvals (${view.approvals.length}, ${pending} pending):`);
  for (const a of view.approvals) out.push(approvalLine(a, now));
  out.push('', `Gate refusals in a row (${view.gateRefusals.length}):`);
  for (const g of view.gateRefusals) {
    out.push(`  ${g.gate.padEnd(15)} ${('task' in g ? g.task : g.member) ?? '?'}  ${g.inARow}`);
  }
  out.push('', `Pending mail (${view.pendingMail.length}):`);
  for (const m of view.pendingMail) {
    out.push(`  ${m.from} -> ${m.to} [${m.kind}] ${oneLine(m.summary ?? m.text)}`);
  }
  out.push('', `Dead letters (${view.deadLetters.length}):`);
  for (const d of view.deadLetters) {
    out.push(
      `  ${d.from} -> ${d.to} [${d.kind}] ${oneLine(d.summary ?? d.text)}  ${d.reason}${d.detail ? ` (${oneLine(d.detail)})` : ''}`,
    );
  }
  return `${out.join('\n')}\n`;
}

export const inspectCommand: CliCommand = {
  name: 'inspect',
  summary: "print a team's members, tasks, approvals, pending mail and dead letters",
  help: HELP,
  options: { ...SOURCE_OPTIONS, json: { type: 'boolean' } },
  async run(values, io) {
    const source = await teamSource(values, io.cwd);
    const view = inspection(source.teamId, await readState(source));
    io.stdout.write(
      values.json === true ? `${JSON.stringify(view, null, 2)}\n` : formatText(view, Date.now()),
    );
    return 0;
  },
};
