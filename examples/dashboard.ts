// The web dashboard of a running team: members, the task graph, the mail, live output; a person
// at the page can message the team. Prints the URL (with its access token); Ctrl-C stops it.
// Run: pnpm --filter @teamwire/examples exec tsx dashboard.ts
import { createAgentRegistry, createEventHub, openTeam } from '@teamwire/core';
import {
  createMemoryTeamLog,
  createMemoryTranscriptStore,
  createScriptedModel,
} from '@teamwire/core/testing';
import { OPERATOR_AGENT } from '@teamwire/dashboard';
import { startTeamEdge } from '@teamwire/edge';
import { xmlFormat } from '@teamwire/protocol';

const teamId = 'dashboard-1';
const spawn = { name: 'ada', description: 'Engineer', prompt: 'Claim what is on the board.' };
const task = { subject: 'Parser', description: 'Write the parser.' };
const model = createScriptedModel({
  scripts: {
    lead: ({ call }) =>
      call === 1
        ? {
            toolCalls: [
              { name: 'spawn_teammate', input: spawn },
              { name: 'task_create', input: task },
            ],
          }
        : { text: 'Noted.' },
    ada: ({ request }) => {
      const last = request.messages.at(-1);
      if (last?.role !== 'user' || last.source?.kind !== 'task-claim') return { text: 'Ready.' };
      return {
        toolCalls: [
          { name: 'task_update', input: { taskId: last.source.taskId, action: 'complete' } },
        ],
      };
    },
  },
});
const log = createMemoryTeamLog({ teamId }); // or @teamwire/storage's JSONL log, or PostgreSQL
const transcripts = createMemoryTranscriptStore();
const hub = createEventHub({ teamId, log }); // what the page streams from
const team = await openTeam({
  teamId,
  log,
  transcripts,
  format: xmlFormat,
  agents: createAgentRegistry([
    { type: 'lead', systemPrompt: 'You lead a small team.', model },
    { type: 'engineer', systemPrompt: 'You are a careful engineer.', model },
    OPERATOR_AGENT, // the person at the page, as a member
  ]),
  lead: { agentType: 'lead' },
  events: hub,
});
// the team's HTTP edge: the page, its events (and MCP, given tokens) on 127.0.0.1, any free port
const dashboard = await startTeamEdge({ team, log, hub, dashboard: { transcripts } });
console.log(`dashboard: ${dashboard.url}`); // http://127.0.0.1:…/?token=…
await team.promptLead('Have an engineer write the parser.');
await team.idle();
console.log('team idle; Ctrl-C to stop');

for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, async () => {
    await dashboard.close();
    await team.dispose();
    hub.close();
    console.log('stopped');
  });
}
