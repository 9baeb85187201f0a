// A team in memory on the scripted (offline) model: the lead spawns a teammate and creates a
// task, the teammate claims it, completes it and mails the lead. Prints every durable change.
// Run: pnpm --filter @teamwire/examples exec tsx in-memory.ts
import { type AgentEvent, contentText, createAgentRegistry, openTeam } from '@teamwire/core';
import {
  createMemoryTeamLog,
  createMemoryTranscriptStore,
  createScriptedModel,
} from '@teamwire/core/testing';
import { xmlFormat } from '@teamwire/protocol';

const teamId = 'in-memory-1';
// One model for every member, answering by member name: swap in a real one from
// @teamwire/host-adapters (see real-provider.ts) and write prompts instead of scripts.
const model = createScriptedModel({
  scripts: {
    lead: ({ call }) =>
      call === 1
        ? {
            toolCalls: [
              {
                name: 'spawn_teammate',
                input: { name: 'ada', description: 'Engineer', prompt: 'Say hello, then work.' },
              },
              { name: 'task_create', input: { subject: 'Parser', description: 'Write it.' } },
            ],
          }
        : { text: 'Noted.' },
    ada: ({ request }) => {
      const last = request.messages.at(-1);
      if (last?.role === 'user' && last.source?.kind === 'task-claim') {
        const { taskId } = last.source;
        return {
          toolCalls: [
            { name: 'task_update', input: { taskId, action: 'complete' } },
            { name: 'send_message', input: { to: 'lead', message: `${taskId} is done.` } },
          ],
        };
      }
      return { text: last?.role === 'tool' ? 'Finished.' : 'Hello, lead!' };
    },
  },
});

const names = new Map<string, string>(); // member id -> name, from the member records
function print(event: AgentEvent): void {
  if (event.type !== 'record') return;
  const r = event.record;
  if (r.type === 'member') {
    names.set(r.member.id, r.member.name);
    console.log(`member ${r.member.name}: ${r.member.phase}`);
  } else if (r.type === 'task') {
    const owner = r.task.ownerId === undefined ? '' : ` (${names.get(r.task.ownerId)})`;
    console.log(`task ${r.task.id} "${r.task.subject}": ${r.task.status}${owner}`);
  } else if (r.type === 'message.queued') {
    const m = r.message;
    const text = contentText(m.content).split('\n')[0];
    console.log(`mail ${m.senderName} -> ${names.get(m.targetId)} [${m.kind}]: ${text}`);
  }
}

const team = await openTeam({
  teamId,
  log: createMemoryTeamLog({ teamId }),
  transcripts: createMemoryTranscriptStore(),
  format: xmlFormat,
  agents: createAgentRegistry([
    { type: 'lead', systemPrompt: 'You lead a small team.', model },
    { type: 'engineer', systemPrompt: 'You are a careful engineer.', model },
  ]),
  lead: { agentType: 'lead' },
  events: { publish: (_agent, event) => print(event) },
});
await team.promptLead('Get the parser written by one engineer.');
await team.idle(); // every runner parked, no wakeup mail pending
const [task] = team.listTasks(team.lead).tasks;
console.log(
  `done: ${task?.id} ${task?.status}; model calls: lead ${model.calls('lead')}, ada ${model.calls('ada')}`,
);
await team.dispose();
