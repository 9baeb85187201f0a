// One team in two processes on PostgreSQL: this process runs the lead and forks a worker process
// (this file, role "worker") that runs the engineer the lead spawns; both share one team log.
// Database: TEAMWIRE_PG_URL (default postgres://postgres@127.0.0.1:5432/test), TEAMWIRE_PG_SCHEMA.
// Run: pnpm --filter @teamwire/examples exec tsx two-processes-postgres.ts
import { fork } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { once } from 'node:events';
import { createAgentRegistry, openTeam, type TeamRecord, type TeamService } from '@teamwire/core';
import { createScriptedModel } from '@teamwire/core/testing';
import { openPostgresTeamStore } from '@teamwire/postgres';
import { xmlFormat } from '@teamwire/protocol';

const [role = 'lead', teamId = randomUUID()] = process.argv.slice(2);
const connectionString = process.env.TEAMWIRE_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
const schema = process.env.TEAMWIRE_PG_SCHEMA ?? 'teamwire';
const runs =
  role === 'lead' ? { lead: true, agentTypes: [] } : { lead: false, agentTypes: ['engineer'] };
const processId = `${role}-${process.pid}`; // names the process in the placement
const store = await openPostgresTeamStore({ teamId, connectionString, schema, runs, processId });

const spawn = { name: 'ada', description: 'Engineer', prompt: 'Take the task on the board.' };
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
      const done = { taskId: last.source.taskId, action: 'complete' };
      const mail = { to: 'lead', message: `${done.taskId} is done (in ${processId}).` };
      return {
        toolCalls: [
          { name: 'task_update', input: done },
          { name: 'send_message', input: mail },
        ],
      };
    },
  },
});
const team = await openTeam({
  teamId,
  log: store.log,
  transcripts: store.transcripts,
  format: xmlFormat,
  agents: createAgentRegistry([
    { type: 'lead', systemPrompt: 'You lead a small team.', model },
    { type: 'engineer', systemPrompt: 'You are a careful engineer.', model },
  ]),
  lead: { agentType: 'lead' },
  events: {
    publish(agent, event) {
      if (event.type === 'turn.start') console.log(`${processId}: ${agent} turn (${event.reason})`);
    },
  },
});

/** Waits for durable changes (from either process), each handed to `seen`, until `done` holds. */
async function until(service: TeamService, done: () => boolean, seen = (_: TeamRecord) => {}) {
  while (!done()) {
    const change = await service.waitForChange(service.lead, { timeoutMs: 60_000 });
    if (!change.changed) throw new Error('no change in 60 s');
    change.records.forEach(seen);
  }
}
const ada = () => team.listMembers(team.lead).find((m) => m.name === 'ada');

if (role === 'lead') {
  const worker = fork(process.argv[1] ?? '', ['worker', teamId]); // same file, the other role
  await team.promptLead('Have one engineer write the parser.');
  let ranIn: string | undefined; // ada's mail says where its model ran
  await until(
    team,
    () => team.listTasks(team.lead).tasks[0]?.status === 'completed' && ranIn !== undefined,
    (r) => {
      if (r.type !== 'message.queued' || r.message.senderName !== 'ada') return;
      ranIn = /\(in (\S+)\)/.exec(JSON.stringify(r.message.content))?.[1] ?? ranIn;
    },
  );
  await team.shutdown(team.lead, { target: 'ada' }); // ada retires in the worker
  await until(team, () => ada()?.status === 'retired');
  await once(worker, 'exit');
  const [done] = team.listTasks(team.lead).tasks;
  console.log(`${processId}: ${done?.id} ${done?.status}; ada ran in ${ranIn}`);
} else {
  await until(team, () => ada()?.status === 'retired');
}
await team.dispose();
await store.close();
