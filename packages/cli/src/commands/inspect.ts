import { contentText, type TeamState } from '@teamwire/core';
import { readState } from '../read-state.js';
import { SOURCE_HELP, SOURCE_OPTIONS, teamSource } from '../team-source.js';
import type { CliCommand } from './command.js';

const HELP = `teamwire inspect — print a team's members, tasks, pending mail and dead letters

Usage:
  teamwire inspect --dir <state folder> --team <id> [--json]
  teamwire inspect --store postgres://… --team <id> [--json]

Reads the team without changing it: a JSONL folder without taking its lock (safe while the team
runs), a team in PostgreSQL as a process that runs no member.

Options:
${SOURCE_HELP}
  --json                one JSON object on stdout instead of text
  -h, --help            this text
`;

/** Characters of a message preview in the text output. */
const PREVIEW_CHARS = 100;

/** What `teamwire inspect --json` prints. */
export function inspection(teamId: string, state: TeamState) {
  const names = new Map(state.members().map((m) => [m.id, m.name]));
  const nameOf = (id: string | undefined) => (id === undefined ? undefined : (names.get(id) ?? id));
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

function formatText(view: ReturnType<typeof inspection>): string {
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
  summary: "print a team's members, tasks, pending mail and dead letters",
  help: HELP,
  options: { ...SOURCE_OPTIONS, json: { type: 'boolean' } },
  async run(values, io) {
    const source = await teamSource(values, io.cwd);
    const view = inspection(source.teamId, await readState(source));
    io.stdout.write(values.json === true ? `${JSON.stringify(view, null, 2)}\n` : formatText(view));
    return 0;
  },
};
