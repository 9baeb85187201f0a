// The root README's usage example, verbatim: typechecked with the app, compared by readme.test.ts.
import { createAgentRegistry, openTeam } from '@teamwire/core';
import { createModel } from '@teamwire/host-adapters';
import { xmlFormat } from '@teamwire/protocol';
import { openJsonlTeamStore } from '@teamwire/storage';

const teamId = 'migration-1'; // the lead's session id
const store = await openJsonlTeamStore({ teamId }); // .teamwire/teams/migration-1/
const model = createModel('openai:gpt-4.1-mini'); // OPENAI_API_KEY, OPENAI_BASE_URL
const team = await openTeam({
  teamId,
  log: store.log,
  transcripts: store.transcripts,
  format: xmlFormat, // the wire format; the policy defaults to core's
  agents: createAgentRegistry([
    { type: 'lead', systemPrompt: 'You lead a small engineering team.', model },
    { type: 'engineer', systemPrompt: 'You are a careful engineer.', model },
  ]),
  lead: { agentType: 'lead' },
});
await team.promptLead('Split the migration into tasks and have two engineers do them.');
await team.idle(); // every runner parked, no wakeup mail pending
await team.dispose();
await store.close();
