// The README's usage example: the lines between the markers appear in it verbatim (checked by
// readme.test.ts), which also runs it.
import { createAgentRegistry, createEventHub, type ModelAdapter, openTeam } from '@teamwire/core';
import { xmlFormat } from '@teamwire/protocol';
import { openJsonlTeamStore } from '@teamwire/storage';
import { createDashboardRoutes, OPERATOR_AGENT } from './index.js';

export async function serveUsage(model: ModelAdapter, dir: string, log: (line: string) => void) {
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
      OPERATOR_AGENT, // the person at the page, as a member
    ]),
    lead: { agentType: 'lead' },
    events: hub, // the page reads the hub's stream
  });
  // Request in, Response out: serve it with @teamwire/edge (`startTeamEdge({ team, log, hub })`),
  // which adds the token, the Host/Origin checks and the body limit, on 127.0.0.1.
  const dashboard = createDashboardRoutes({ log: store.log, hub, team });
  const answer = await dashboard.fetch(new Request('http://127.0.0.1/api/snapshot'));
  log(`snapshot: ${answer.status}`); // snapshot: 200
  // README:end
  return { team, store, hub, dashboard };
}
