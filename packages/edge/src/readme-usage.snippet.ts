// The README's usage example: the lines between the markers appear in it verbatim (checked by
// readme.test.ts), which also runs it.
import {
  createAgentRegistry,
  createEventHub,
  type ModelAdapter,
  openTeam,
  type TeamService,
} from '@teamwire/core';
import { OPERATOR_AGENT } from '@teamwire/dashboard';
import { createTokenIssuer, generateSecret } from '@teamwire/mcp';
import { xmlFormat } from '@teamwire/protocol';
import { openJsonlTeamStore } from '@teamwire/storage';
import { startTeamEdge } from './index.js';

export async function edgeUsage(model: ModelAdapter, dir: string, log: (line: string) => void) {
  // README:start
  const store = await openJsonlTeamStore({ teamId: 'team-1', dir });
  const hub = createEventHub({ teamId: 'team-1', log: store.log });
  const team = await openTeam({
    teamId: 'team-1',
    log: store.log,
    transcripts: store.transcripts,
    format: xmlFormat,
    agents: createAgentRegistry([
      { type: 'lead', systemPrompt: 'You lead a small engineering team.', model },
      { type: 'coding-agent', description: 'Claude Code, Cursor, ...', external: true },
      OPERATOR_AGENT, // the person at the dashboard, as a member
    ]),
    lead: { agentType: 'lead' },
    events: hub, // the dashboard streams the hub
  });
  await team.spawnTeammate(team.lead, {
    name: 'alice',
    description: 'Writes the parser',
    prompt: 'Write the parser, then tell me.',
    agentType: 'coding-agent',
  });
  const secret = process.env.TEAMWIRE_MCP_SECRET ?? generateSecret(); // keep it to keep tokens
  const tokens = createTokenIssuer({ secret, teamId: 'team-1' });
  const edge = await startTeamEdge({ team, log: store.log, hub, mcp: { tokens } });
  log(`dashboard: ${edge.url}`); // http://127.0.0.1:…/?token=… (a person opens it)
  log(`MCP: ${edge.mcpUrl} with Authorization: Bearer ${tokens.tokenFor('alice')}`);
  // … and when the team is done:
  // await edge.close(); await team.dispose(); hub.close(); await store.close();
  // README:end
  return { team: team as TeamService, store, hub, edge, tokens };
}
