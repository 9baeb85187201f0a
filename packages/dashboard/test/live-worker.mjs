// One worker process of the dashboard's multi-process test: it opens the team in PostgreSQL with
// its own processId, runs the teammates the placement gives it on a scripted model (each turn
// streams `<name> on <slot>, turn <n>`), and publishes no events of its own: what a page elsewhere
// sees of its members comes through the live relay.
//
//   node test/live-worker.mjs <postgres url> <schema> <team id> <slot>
//
// IPC: {type: 'ready', processId} once the team is open. SIGTERM disposes the team, closes the
// store and exits 0.

import { createAgentRegistry, openTeam } from '@teamwire/core';
import {
  createScriptedModel,
  createSimpleFormat,
  createSimplePolicy,
} from '@teamwire/core/testing';
import { openPostgresTeamStore } from '@teamwire/postgres';

const [url, schema, teamId, slot] = process.argv.slice(2);
const processId = `live-${slot}-${process.pid}`;
const turns = new Map();
const say = (name) => () => {
  const turn = (turns.get(name) ?? 0) + 1;
  turns.set(name, turn);
  return { text: `${name} on ${slot}, turn ${turn}` };
};
const model = createScriptedModel({
  scripts: { lead: () => ({ text: 'Noted.' }), alice: say('alice'), bob: say('bob') },
});
const store = await openPostgresTeamStore({
  teamId,
  connectionString: url,
  schema,
  processId,
  runs: { lead: false, agentTypes: ['worker'] },
  leaseMs: 600,
  pollMs: 100,
});
const team = await openTeam({
  teamId,
  log: store.log,
  transcripts: store.transcripts,
  format: createSimpleFormat(),
  policy: createSimplePolicy(),
  agents: createAgentRegistry([
    { type: 'lead', systemPrompt: 'You lead.', model },
    { type: 'worker', systemPrompt: 'You work.', model },
  ]),
  lead: { agentType: 'lead' },
  idleClaim: false,
});
process.send?.({ type: 'ready', processId });
process.on('SIGTERM', async () => {
  await team.dispose().catch(() => undefined);
  await store.close().catch(() => undefined);
  process.exit(0);
});
