// The README's usage example: the lines between the markers appear in it verbatim (checked by
// readme.test.ts), and readme.test.ts runs it with a scripted model, and serves it to a client.
import { createAgentRegistry, type ModelAdapter, openTeam, type TeamService } from '@teamwire/core';
import { xmlFormat } from '@teamwire/protocol';
import { openJsonlTeamStore } from '@teamwire/storage';
import { createMcpRoutes, createTokenIssuer, generateSecret } from './index.js';

export async function serveUsage(model: ModelAdapter, dir: string, log: (line: string) => void) {
  // README:start
  const store = await openJsonlTeamStore({ teamId: 'team-1', dir });
  const team = await openTeam({
    teamId: 'team-1',
    log: store.log,
    transcripts: store.transcripts,
    format: xmlFormat,
    agents: createAgentRegistry([
      { type: 'lead', systemPrompt: 'You lead a small engineering team.', model },
      { type: 'coding-agent', description: 'Claude Code, Cursor, ...', external: true },
    ]),
    lead: { agentType: 'lead' },
  });
  // The lead (its model, through spawn_teammate, or the host as here) spawns the member.
  await team.spawnTeammate(team.lead, {
    name: 'alice',
    description: 'Writes the parser',
    prompt: 'Write the parser, then tell me.',
    agentType: 'coding-agent',
  });
  const secret = process.env.TEAMWIRE_MCP_SECRET ?? generateSecret(); // keep it to keep tokens
  const tokens = createTokenIssuer({ secret, teamId: 'team-1' });
  // Request in, Response out: serve it with @teamwire/edge (`startTeamEdge({ …, mcp: { tokens } })`),
  // which checks each member's bearer token, Host, Origin and body size, on 127.0.0.1.
  const mcp = createMcpRoutes({ team, cursors: tokens });
  log(`alice connects with: Authorization: Bearer ${tokens.tokenFor('alice')}`);
  // README:end
  return { team: team as TeamService, store, mcp, tokens };
}
