import {
  type EventSink,
  loadTeamState,
  openTeam,
  TeamError,
  type TeamService,
} from '@teamwire/core';
import { formatOption, loadAgentsModule, teamAgents } from '../agents.js';
import { stringOption, usageError } from '../args.js';
import { openStore } from '../stores.js';
import { processIdFor, SOURCE_HELP, SOURCE_OPTIONS, teamSource } from '../team-source.js';
import { startCommandTelemetry } from '../telemetry.js';
import type { CliCommand } from './command.js';

const HELP = `teamwire worker — join a team kept in PostgreSQL and run some of its members

Usage:
  teamwire worker --store postgres://… --team <id> --agents <module> [--agent-types a,b] [--lead]

The store places members on the processes willing to run them (and moves them to another
worker when one dies); this process offers the model-run agent types of the --agents module
(or the ones --agent-types names). It prints a line per turn (errors on stderr) and runs until
SIGTERM or Ctrl-C, when it hands its members back to the other processes.

A worker cannot guess your agents: --agents is an ES module of yours whose default export is
defineAgents({ agents: [...], format?, policy? }) from @teamwire/cli, with the same agent types
(prompts, models, tools) as the program that runs the team. A JSONL team has a single process:
run your program (or teamwire mcp) against it instead.

Options:
${SOURCE_HELP}
  --agents <module>     the module that defines the agent types (required)
  --agent-types <list>  comma-separated: run only members of these types
  --lead                also offer to run the team's lead (its type must be in the module)
  --format <name>       the team's wire format if the module names none: xml (default), json,
                        tool-call
  -h, --help            this text
`;

/** How often the worker checks that its team service still works, besides on every signal. */
const HEALTH_CHECK_MS = 1000;

export const workerCommand: CliCommand = {
  name: 'worker',
  summary: 'join a team kept in PostgreSQL as a worker process running its members',
  help: HELP,
  options: {
    ...SOURCE_OPTIONS,
    agents: { type: 'string' },
    'agent-types': { type: 'string' },
    lead: { type: 'boolean' },
    format: { type: 'string' },
  },
  async run(values, io) {
    const source = values.dir === undefined ? await teamSource(values, io.cwd) : undefined;
    if (source?.kind !== 'postgres') {
      throw usageError(
        'a worker joins a team kept in PostgreSQL (--store): a JSONL folder is opened by one process only',
      );
    }
    const agentsFile = stringOption(values, 'agents');
    if (agentsFile === undefined || agentsFile === '') {
      throw usageError('--agents <module> is required: the worker runs the agent types it defines');
    }
    const formatName = stringOption(values, 'format');
    const module = await loadAgentsModule(agentsFile, io.cwd);
    const format =
      formatName === undefined && module.format !== undefined
        ? module.format
        : formatOption(formatName);
    const modelTypes = module.agents.filter((a) => a.external !== true).map((a) => a.type);
    const listed = stringOption(values, 'agent-types');
    const agentTypes =
      listed === undefined
        ? modelTypes
        : listed
            .split(',')
            .map((t) => t.trim())
            .filter((t) => t !== '');
    for (const type of agentTypes) {
      if (!modelTypes.includes(type)) {
        throw usageError(
          `--agent-types: ${type} is not a model-run agent type of the module (it has: ${modelTypes.join(', ') || 'none'})`,
        );
      }
    }
    const lead = values.lead === true;
    if (agentTypes.length === 0 && !lead) {
      throw usageError('nothing to run: the module defines no model-run agent type');
    }
    if (io.signal.aborted) return 0;
    const processId = processIdFor('worker');
    const store = await openStore(source, {
      runs: { lead, agentTypes },
      role: 'worker',
      processId,
    });
    const telemetry = await startCommandTelemetry(io, 'worker');
    let team: TeamService | undefined;
    try {
      const { state } = await loadTeamState(store.log, { teamId: source.teamId });
      const roster = state.members();
      const leadMember = roster.find((m) => m.id === state.leadId);
      if (leadMember === undefined) {
        throw new TeamError('INVALID_RECORD', `team ${source.teamId} has no lead in its log`);
      }
      if (lead && !modelTypes.includes(leadMember.agentType)) {
        throw usageError(
          `--lead: the lead's agent type ${leadMember.agentType} is not a model-run type of the module`,
        );
      }
      const agents = teamAgents(roster, module);
      team = await openTeam({
        teamId: source.teamId,
        log: store.log,
        transcripts: store.transcripts,
        format,
        ...(module.policy === undefined ? {} : { policy: module.policy }),
        agents: agents.registry,
        lead: { agentType: leadMember.agentType },
        cwd: io.cwd,
        events: telemetry.events(turnLines(io)),
        ...telemetry.teamOptions,
      });
      telemetry.attach(team);
      io.stderr.write(
        `teamwire: worker ${processId} joined team ${source.teamId}, running ${[...(lead ? ['the lead'] : []), ...agentTypes].join(', ')}\n`,
      );
      const opened = team;
      await new Promise<void>((resolve, reject) => {
        const done = (error?: unknown) => {
          clearInterval(timer);
          io.signal.removeEventListener('abort', stop);
          if (error === undefined) resolve();
          else reject(error);
        };
        const stop = () => done();
        const timer = setInterval(() => {
          try {
            opened.membership(opened.lead); // throws once the service broke (its store failed)
          } catch (error) {
            done(error);
          }
        }, HEALTH_CHECK_MS);
        io.signal.addEventListener('abort', stop, { once: true });
        if (io.signal.aborted) done();
      });
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

/** A line per turn of the members this process runs; runner errors go to stderr. */
function turnLines(io: {
  stdout: NodeJS.WritableStream;
  stderr: NodeJS.WritableStream;
}): EventSink {
  return {
    publish(agentName, event) {
      if (event.type === 'turn.end') {
        const text = event.text.replace(/\s+/g, ' ').trim().slice(0, 120);
        io.stdout.write(
          `${agentName}: turn ended (${event.stopReason}, ${event.steps} steps)${text ? `: ${text}` : ''}\n`,
        );
      } else if (event.type === 'error') {
        io.stderr.write(`${agentName}: ${event.code}: ${event.message.split('\n')[0]}\n`);
      }
    },
  };
}
