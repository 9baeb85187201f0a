import {
  A2A_CLIENT_AGENT,
  A2A_PATH,
  type A2AServer,
  type A2ATaskStore,
  AGENT_CARD_PATH,
  createA2AServer,
  openJsonlA2ATaskStore,
} from '@teamwire/a2a';
import {
  createAgentRegistry,
  createEventHub,
  loadTeamState,
  openTeam,
  TeamError,
  type TeamService,
} from '@teamwire/core';
import { OPERATOR_AGENT } from '@teamwire/dashboard';
import { startTeamEdge } from '@teamwire/edge';
import { clientConfig, createTokenIssuer, generateSecret } from '@teamwire/mcp';
import { agentsAndFormat, teamAgents } from '../agents.js';
import { stringOption, usageError } from '../args.js';
import { localPlacement } from '../local-placement.js';
import { openStore } from '../stores.js';
import { SOURCE_HELP, SOURCE_OPTIONS, teamSource } from '../team-source.js';
import { startCommandTelemetry } from '../telemetry.js';
import type { CliCommand } from './command.js';

const HELP = `teamwire serve — a team's HTTP edge: the dashboard, its events and MCP on one port

Usage:
  teamwire serve --dir <state folder> --team <id> [--port <n>] [--agents <module>]
  teamwire serve --store postgres://… --team <id> [--port <n>]
  teamwire serve --dir <state folder> --team <id> --a2a

Serves, on one port of 127.0.0.1 (or --host), the team's dashboard (a person watches and steers
the team as the member "operator"), its event stream, and MCP's Streamable HTTP for every active
external member of the team (a coding agent connects with the token printed for it). Runs until
Ctrl-C.

A JSONL team is opened with its lock: no other process may have it open. This process runs the
external members and the members of the agent types --agents defines; the others keep their mail
until your program runs them. A team in PostgreSQL is joined as one more process that serves its
external members, while your other processes run the rest.

Options:
${SOURCE_HELP}
  --host <name>         the address to listen on (default 127.0.0.1)
  --port <n>            the port (default: any free port)
  --format <name>       the team's wire format: xml (default), json, tool-call
  --a2a                 also serve the team as an A2A agent: its Agent Card at
                        /.well-known/agent-card.json (no token) and A2A JSON-RPC at /a2a (the
                        dashboard's token as a bearer token); A2A clients write to the lead as
                        the member "a2a", their tasks kept in the folder's a2a-tasks.jsonl
                        (JSONL only)
  --agents <module>     an ES module whose default export is defineAgents({ agents, format?,
                        policy? }) (JSONL only: run those members here too)
  -h, --help            this text

Environment:
  TEAMWIRE_EDGE_TOKEN   the dashboard's token (default: a new one, printed with the URL)
  TEAMWIRE_MCP_SECRET   the secret members' MCP tokens are derived from (default: a new one;
                        keep it to keep the tokens valid across restarts)
`;

/** A port from `--port`: an integer from 0 (any free port) to 65535. */
function portOption(text: string | undefined): number {
  if (text === undefined) return 0;
  const port = /^\d{1,5}$/.test(text) ? Number(text) : Number.NaN;
  if (!(port >= 0 && port <= 65_535)) throw usageError(`--port takes 0 to 65535, got ${text}`);
  return port;
}

export const serveCommand: CliCommand = {
  name: 'serve',
  summary: "serve a team's dashboard, events and MCP on one HTTP port",
  help: HELP,
  options: {
    ...SOURCE_OPTIONS,
    host: { type: 'string' },
    port: { type: 'string' },
    format: { type: 'string' },
    agents: { type: 'string' },
    a2a: { type: 'boolean' },
  },
  async run(values, io) {
    const source = await teamSource(values, io.cwd);
    const port = portOption(stringOption(values, 'port'));
    const host = stringOption(values, 'host');
    if (host === '') throw usageError('--host needs an address');
    const a2a = values.a2a === true;
    if (a2a && source.kind !== 'jsonl') {
      throw usageError('--a2a serves a team in a JSONL folder (--dir) only');
    }
    const { module, format } = await agentsAndFormat(values, source, io.cwd);
    const store = await openStore(source, { runs: { lead: false, agentTypes: [] }, role: 'serve' });
    const telemetry = await startCommandTelemetry(io, 'serve');
    const hub = createEventHub({ teamId: source.teamId, log: store.log });
    let team: TeamService | undefined;
    let tasks: A2ATaskStore | undefined;
    let a2aServer: A2AServer | undefined;
    try {
      const { state } = await loadTeamState(store.log, { teamId: source.teamId });
      const roster = state.members();
      const lead = roster.find((m) => m.id === state.leadId);
      if (lead === undefined) {
        throw new TeamError('INVALID_RECORD', `team ${source.teamId} has no lead in its log`);
      }
      const external = roster.filter((m) => m.provider === 'external' && m.phase === 'active');
      const agents = teamAgents(roster, module);
      const definitions = agents.registry.types().map((type) => agents.registry.get(type));
      const extra = [OPERATOR_AGENT, ...(a2a ? [A2A_CLIENT_AGENT] : [])].filter(
        (d) => !agents.registry.types().includes(d.type),
      );
      const registry =
        extra.length === 0 ? agents.registry : createAgentRegistry([...definitions, ...extra]);
      team = await openTeam({
        teamId: source.teamId,
        log: store.log,
        transcripts: store.transcripts,
        format,
        ...(module?.policy === undefined ? {} : { policy: module.policy }),
        agents: registry,
        lead: { agentType: lead.agentType },
        cwd: io.cwd,
        events: telemetry.events(hub),
        // members running in other processes of a shared team: their live output and presence
        // reach the page too (telemetry counts only this process's own work)
        live: { sink: hub },
        ...telemetry.teamOptions,
        // every external member's client connects here: the MCP members and the person at the
        // dashboard, spawned as the operator on the page's first action
        externalMembers: { serve: true },
        ...(store.shared
          ? {}
          : {
              placement: localPlacement(
                (c) => c.pinned === true || agents.runnable.has(c.agentType),
              ),
            }),
      });
      telemetry.attach(team);
      const secret = io.env.TEAMWIRE_MCP_SECRET ?? generateSecret();
      const tokens = createTokenIssuer({ secret, teamId: source.teamId });
      const token = io.env.TEAMWIRE_EDGE_TOKEN;
      if (a2a && source.kind === 'jsonl') {
        tasks = await openJsonlA2ATaskStore(source.teamDir);
        a2aServer = createA2AServer({ team, agents: registry, store: tasks, log: store.log });
        await a2aServer.start();
      }
      const served = a2aServer;
      const edge = await startTeamEdge({
        team,
        log: store.log,
        hub,
        port,
        ...(host === undefined ? {} : { host }),
        ...(token === undefined ? {} : { token }),
        dashboard: { transcripts: store.transcripts },
        mcp: { tokens },
        ...(served === undefined
          ? {}
          : {
              mounts: [
                { path: AGENT_CARD_PATH, access: 'public' as const, fetch: served.fetchCard },
                { path: A2A_PATH, jsonRpc: true, fetch: served.fetch },
              ],
            }),
      });
      io.stdout.write(`dashboard: ${edge.url}\n`);
      io.stdout.write(`MCP: ${edge.mcpUrl}\n`);
      if (served !== undefined) {
        io.stdout.write(`A2A agent card: ${edge.origin}${AGENT_CARD_PATH}\n`);
      }
      for (const member of external) {
        const config = clientConfig({
          name: `teamwire-${member.name}`,
          url: edge.mcpUrl,
          token: tokens.tokenFor(member.name),
        });
        io.stdout.write(`  ${member.name}: ${config.claudeCode}\n`);
      }
      await new Promise<void>((resolve) => {
        if (io.signal.aborted) resolve();
        else io.signal.addEventListener('abort', () => resolve(), { once: true });
      });
      await edge.close();
      return 0;
    } finally {
      try {
        a2aServer?.close();
        await team?.dispose();
        await tasks?.close();
      } finally {
        hub.close();
        await telemetry.close();
        await store.close();
      }
    }
  },
};
