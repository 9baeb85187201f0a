// The root README's usage example on @teamwire/core alone: the same team, on core's in-memory
// log and transcripts, its simple wire format and a scripted model (all from
// @teamwire/core/testing) instead of storage, protocol and host-adapters. Plain JavaScript as
// well as TypeScript: the consumer test runs it as .mjs and type-checks it as .ts.
import { createAgentRegistry, openTeam } from '@teamwire/core';
import {
  createMemoryTeamLog,
  createMemoryTranscriptStore,
  createScriptedModel,
  createSimpleFormat,
} from '@teamwire/core/testing';

const teamId = 'migration-1'; // the lead's session id
const model = createScriptedModel({
  scripts: {
    lead: ({ call }) =>
      call === 1
        ? {
            toolCalls: ['ada', 'grace'].map((name) => ({
              name: 'spawn_teammate',
              input: { name, description: 'An engineer', prompt: 'Migrate your half.' },
            })),
          }
        : { text: 'Noted.' },
    ada: () => ({ text: 'Migrated my half.' }),
    grace: () => ({ text: 'Migrated my half.' }),
  },
});
const team = await openTeam({
  teamId,
  log: createMemoryTeamLog({ teamId }),
  transcripts: createMemoryTranscriptStore(),
  format: createSimpleFormat(),
  agents: createAgentRegistry([
    { type: 'lead', systemPrompt: 'You lead a small engineering team.', model },
    { type: 'engineer', systemPrompt: 'You are a careful engineer.', model },
  ]),
  lead: { agentType: 'lead' },
});
await team.promptLead('Split the migration into tasks and have two engineers do them.');
await team.idle(); // every runner parked, no wakeup mail pending
await team.dispose();
console.log(JSON.stringify({ calls: ['lead', 'ada', 'grace'].map((n) => model.calls(n)) }));
