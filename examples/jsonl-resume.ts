// A team on disk (JSONL) that survives a SIGKILL: the first run stops mid-task and is killed;
// running it again resumes the team from its folder, and every message arrives exactly once.
// Run: pnpm --filter @teamwire/examples exec tsx jsonl-resume.ts [dir]   (twice; Ctrl-C the first)
import { type ChatMessage, contentText, createAgentRegistry, openTeam } from '@teamwire/core';
import { createScriptedModel } from '@teamwire/core/testing';
import { xmlFormat } from '@teamwire/protocol';
import { openJsonlTeamStore } from '@teamwire/storage';

const teamId = 'resume-1';
const dir = process.argv[2] ?? '.teamwire/teams/resume-1';
const store = await openJsonlTeamStore({ teamId, dir, durability: 'fsync' });
const firstRun = store.recovered.created;
console.log(firstRun ? `new team in ${dir}` : `resuming: ${store.recovered.records} records`);

// The task this member claimed and has not finished, as a model reads it from its conversation
// (after a restart the claim prompt and the mail that came since are all there).
function claimedTask(messages: readonly ChatMessage[]): string | undefined {
  let taskId: string | undefined;
  for (const m of messages) {
    if (m.role === 'user' && m.source?.kind === 'task-claim') taskId = m.source.taskId;
    if (m.role === 'assistant' && m.toolCalls.some((c) => c.name === 'task_update')) {
      taskId = undefined;
    }
  }
  return taskId;
}

const model = createScriptedModel({
  scripts: {
    lead: ({ request }) => {
      const last = request.messages.at(-1);
      if (last?.role === 'tool') return { text: 'Team started.' };
      if (last?.source?.kind !== 'team-message') {
        const tasks = ['Lexer', 'Parser', 'Printer'].map((subject) => ({
          name: 'task_create',
          input: { subject, description: `Write the ${subject.toLowerCase()}.` },
        }));
        const prompt = 'Claim the tasks one by one.';
        const spawn = { name: 'ada', description: 'Engineer', prompt };
        return { toolCalls: [{ name: 'spawn_teammate', input: spawn }, ...tasks] };
      }
      if (!contentText(last.content).includes('task-1 is done')) return { text: 'Noted.' };
      const reply = { to: 'ada', message: 'Thanks! Now the rest.' };
      return { toolCalls: [{ name: 'send_message', input: reply }] };
    },
    ada: ({ request }) => {
      const taskId = claimedTask(request.messages);
      if (taskId === undefined) return { text: 'OK.' };
      if (firstRun && taskId === 'task-2') {
        // The first run stops here, in a model call that takes an hour: kill it now.
        console.log('mid task-2: kill me');
        return { gate: new Promise((resolve) => setTimeout(resolve, 3_600_000)) };
      }
      return {
        toolCalls: [
          { name: 'task_update', input: { taskId, action: 'complete' } },
          { name: 'send_message', input: { to: 'lead', message: `${taskId} is done.` } },
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
});
// A resumed team goes on by itself: pending mail is redelivered, owned tasks are resumed.
if (firstRun) await team.promptLead('Build the pretty-printer: lexer, parser, printer.');
await team.idle();

const queued = new Set<string>();
const delivered: string[] = [];
for await (const record of store.log.read()) {
  if (record.type === 'message.queued') queued.add(record.message.id);
  if (record.type === 'message.delivered') delivered.push(record.messageId);
}
for (const task of team.listTasks(team.lead).tasks) console.log(`${task.id}: ${task.status}`);
const twice = delivered.length - new Set(delivered).size;
console.log(`mail: ${queued.size} queued, ${delivered.length} delivered, ${twice} twice`);
await team.dispose();
await store.close();
