// The README's usage example: the lines between the markers appear in it verbatim (checked by
// readme.test.ts), which also runs it.
import { createAgentRegistry, createEventHub, type ModelAdapter, openTeam } from '@teamwire/core';
import { xmlFormat } from '@teamwire/protocol';
import { openJsonlTeamStore } from '@teamwire/storage';
import { OPERATOR_AGENT, serveDashboard } from './index.js';

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
  const dashboard = await serveDashboard({ log: store.log, hub, team }); // 127.0.0.1, any port
  log(`open ${dashboard.url}`); // http://127.0.0.1:…/?token=…
  // README:end
  return { team, store, hub, dashboard };
}
