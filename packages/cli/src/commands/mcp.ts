import {
  loadTeamState,
  type Member,
  noopEventSink,
  openTeam,
  TeamError,
  type TeamService,
} from '@teamwire/core';
import { serveStdio } from '@teamwire/mcp';
import { agentsAndFormat, teamAgents } from '../agents.js';
import { stringOption, usageError } from '../args.js';
import { localPlacement } from '../local-placement.js';
import { openStore } from '../stores.js';
import { SOURCE_HELP, SOURCE_OPTIONS, teamSource } from '../team-source.js';
import { startCommandTelemetry } from '../telemetry.js';
import type { CliCommand } from './command.js';

const HELP = `teamwire mcp — serve one member of an existing team over MCP stdio

Usage:
  teamwire mcp --dir <state folder> --team <id> [--member <name>]
  teamwire mcp --store postgres://… --team <id> [--member <name>]

For a client that starts the server itself (Claude Code, Cursor, ...):
  claude mcp add teamwire-alice -- npx @teamwire/cli mcp --dir /abs/.teamwire --team <id> --member alice

The member must be an active external member of the team (spawned with an agent type that has
external: true). Without --member, the team's only active external member is served.
stdout carries nothing but MCP; a line on stderr says who is served.

A JSONL team is opened with its lock: no other process may have it open. This process then runs
only the served member, and members of the agent types --agents defines; the others keep their
mail until your program runs them again. A team in PostgreSQL is joined as one more process that
serves only this member, while your other processes run the rest.

Options:
${SOURCE_HELP}
  --member <name>       the external member the client acts as
  --format <name>       the team's wire format: xml (default), json, tool-call
  --agents <module>     an ES module whose default export is defineAgents({ agents, format?,
                        policy? }) (JSONL only: run those members here too)
  -h, --help            this text
`;

/** The member a client acts as: `--member`, else the team's only active external member. */
export function pickMember(roster: readonly Member[], name: string | undefined): Member {
  const external = roster.filter((m) => m.provider === 'external' && m.phase === 'active');
  if (name !== undefined) {
    const member = roster.find((m) => m.name === name);
    if (member === undefined) {
      throw new TeamError(
        'UNKNOWN_MEMBER',
        `the team has no member ${name}${external.length ? ` (external members: ${external.map((m) => m.name).join(', ')})` : ''}`,
        { details: { member: name } },
      );
    }
    if (member.provider !== 'external') {
      throw new TeamError(
        'NOT_EXTERNAL',
        `${name} runs on a model (${member.provider}), not in an MCP client`,
        { details: { member: name } },
      );
    }
    if (member.phase !== 'active') {
      throw new TeamError('INVALID_PHASE', `${name} is ${member.phase}, not active`, {
        details: { member: name, phase: member.phase },
      });
    }
    return member;
  }
  const [only, ...more] = external;
  if (only === undefined) {
    throw new TeamError(
      'UNKNOWN_MEMBER',
      'the team has no active external member: the lead spawns one with an agent type that has external: true',
    );
  }
  if (more.length > 0) {
    throw usageError(
      `the team has ${external.length} external members (${external.map((m) => m.name).join(', ')}): choose one with --member`,
    );
  }
  return only;
}

export const mcpCommand: CliCommand = {
  name: 'mcp',
  summary: 'serve one member of a team over MCP stdio to a coding agent',
  help: HELP,
  options: {
    ...SOURCE_OPTIONS,
    member: { type: 'string' },
    format: { type: 'string' },
    agents: { type: 'string' },
  },
  async run(values, io) {
    const source = await teamSource(values, io.cwd);
    const memberName = stringOption(values, 'member');
    if (memberName === '') throw usageError('--member needs a name');
    const { module, format } = await agentsAndFormat(values, source, io.cwd);
    const store = await openStore(source, { runs: { lead: false, agentTypes: [] }, role: 'mcp' });
    const telemetry = await startCommandTelemetry(io, 'mcp');
    let team: TeamService | undefined;
    try {
      const { state } = await loadTeamState(store.log, { teamId: source.teamId });
      const roster = state.members();
      const member = pickMember(roster, memberName);
      const lead = roster.find((m) => m.id === state.leadId);
      if (lead === undefined) {
        throw new TeamError('INVALID_RECORD', `team ${source.teamId} has no lead in its log`);
      }
      const agents = teamAgents(roster, module);
      const runsHere = (agentType: string) => agents.runnable.has(agentType);
      team = await openTeam({
        teamId: source.teamId,
        log: store.log,
        transcripts: store.transcripts,
        format,
        ...(module?.policy === undefined ? {} : { policy: module.policy }),
        agents: agents.registry,
        lead: { agentType: lead.agentType },
        cwd: io.cwd,
        events: telemetry.events(noopEventSink),
        ...telemetry.teamOptions,
        externalMembers: { serve: [member.name] },
        ...(store.shared
          ? {}
          : {
              placement: localPlacement(
                (c) => c.memberId === member.id || (c.pinned !== true && runsHere(c.agentType)),
              ),
            }),
      });
      telemetry.attach(team);
      const serving = await serveStdio({
        team,
        member: member.name,
        cwd: io.cwd,
        agentTypes: agents.registry.types(),
        stdin: io.stdin as NodeJS.ReadStream,
        stdout: io.stdout as NodeJS.WriteStream,
      });
      io.stderr.write(`teamwire: serving ${member.name} of team ${source.teamId} over stdio\n`);
      const stop = () => void serving.close();
      io.signal.addEventListener('abort', stop, { once: true });
      try {
        await serving.closed;
      } finally {
        io.signal.removeEventListener('abort', stop);
      }
      return 0;
    } finally {
      try {
        await team?.dispose();
      } finally {
        await telemetry.close();
        await store.close();
      }
    }
  },
};
