// A process of a team kept in PostgreSQL, for the placement tests that need real processes
// (src/handover.test.ts): it opens the store and the team and runs what the placement gives it.
// Every model call of a teammate takes --turn-ms; the lead answers at once.
//
//   node crash/handover-worker.mjs --url <url> --schema <s> --team-id <id> --process-id <id>
//                                  --lease-ms <ms> --turn-ms <ms> [--lead]
//
// IPC to the test: {type: 'ready'}; {type: 'call', agent, call} when a model call starts;
// {type: 'turn', agent, stopReason} when a turn ends; {type: 'placement', note} for every notice
// its placement gives the runtime ('+m' acquired, '-m' lost, '?m' asked to release);
// {type: 'error', agent, code, message} for every runtime error event; {type: 'stopped'} after
// SIGTERM disposed the team and closed the store (the members handed over at their next turn
// boundary), before exiting 0.

import { createAgentRegistry, openTeam } from '@teamwire/core';
import {
  createScriptedModel,
  createSimpleFormat,
  createSimplePolicy,
} from '@teamwire/core/testing';
import { openPostgresTeamStore } from '../dist/index.js';
import { notePlacement } from './placement-notes.mjs';
import { parseArgs } from './shared.mjs';

const args = parseArgs(process.argv.slice(2), {
  url: { type: 'string' },
  schema: { type: 'string' },
  'team-id': { type: 'string' },
  'process-id': { type: 'string' },
  'lease-ms': { type: 'string' },
  'turn-ms': { type: 'string' },
  lead: { type: 'boolean' },
});
const turnMs = Number(args['turn-ms'] ?? 0);

function send(message) {
  try {
    process.send?.(message);
  } catch {
    // the test is gone
  }
}
function fatal(error) {
  process.stderr.write(`handover worker: ${error?.stack ?? error}\n`);
  process.exit(2);
}
process.on('unhandledRejection', fatal);
process.on('uncaughtException', fatal);

/** The members the tests spawn: the lead and these teammates. */
const NAMES = ['lead', 'alice', 'bob', 'carol', 'dave', 'erin', 'frank'];
const script = async ({ agentName, call }) => {
  send({ type: 'call', agent: agentName, call });
  if (agentName !== 'lead' && turnMs > 0) {
    await new Promise((resolve) => setTimeout(resolve, turnMs));
  }
  return { text: `${agentName} call ${call}` };
};
const model = createScriptedModel({
  scripts: Object.fromEntries(NAMES.map((name) => [name, script])),
});

const store = await openPostgresTeamStore({
  teamId: String(args['team-id']),
  connectionString: String(args.url),
  schema: String(args.schema),
  processId: String(args['process-id']),
  leaseMs: Number(args['lease-ms']),
  runs: { lead: args.lead === true, agentTypes: 'all' },
  reconnect: { initialDelayMs: 10, maxDelayMs: 200 },
});
notePlacement(store, (note) => send({ type: 'placement', note }));
const team = await openTeam({
  teamId: String(args['team-id']),
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
  events: {
    publish(agent, event) {
      if (event.type === 'turn.end') send({ type: 'turn', agent, stopReason: event.stopReason });
      else if (event.type === 'error') {
        send({ type: 'error', agent, code: event.code, message: event.message });
      }
    },
  },
});

process.once('SIGTERM', () => {
  (async () => {
    await team.dispose();
    await store.close();
    send({ type: 'stopped' });
    process.exit(0);
  })().catch(fatal);
});
send({ type: 'ready' });
