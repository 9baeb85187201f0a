// The child of the compaction kill test (src/compaction-kill.test.ts): one teammate, bob, on the
// JSONL store (durability fsync) with a small context window, so it compacts every few turns.
//
//   node crash/compaction-child.mjs --dir <team folder> --acks <file> --mode run|resume
//                                   --window <tokens>
//
// run: mails bob forever, one message per turn; reports over IPC every request bob's model gets
// ({type: 'request', messages}), and `compacting` / `compacted` as bob's context is compacted.
// The parent kills it with SIGKILL at one of those points.
// resume: reopens the team, mails bob once more, lets every pending message be delivered, and
// reports bob's first request that reads the resume's mail and how many summaries it wrote
// ({type: 'resumed', first, summaries}) before exiting 0.
//
// Every send that was answered is appended to the acknowledgement file (synced) after the answer.

import { randomUUID } from 'node:crypto';
import { fdatasyncSync, openSync, writeSync } from 'node:fs';
import { createAgentRegistry, deterministicSummary, openTeam } from '@teamwire/core';
import { createScriptedModel, createSimpleFormat } from '@teamwire/core/testing';
import { openJsonlTeamStore } from '../dist/index.js';
import { parseArgs } from './shared.mjs';

const args = parseArgs(process.argv.slice(2), {
  dir: { type: 'string' },
  acks: { type: 'string' },
  mode: { type: 'string' },
  window: { type: 'string' },
});
const mode = args.mode;
const fatal = (why, error) => {
  process.stderr.write(`compaction child: ${why}: ${error?.stack ?? error}\n`);
  process.exit(2);
};
process.on('unhandledRejection', (error) => fatal('unhandled rejection', error));

const ackFd = openSync(String(args.acks), 'a');
const acknowledge = (messageId) => {
  writeSync(ackFd, `${messageId}\n`);
  fdatasyncSync(ackFd);
};

// The summary takes a while (as a model's would), so a kill can land while it is written.
let summaries = 0;
const deterministic = deterministicSummary({ maxChars: 400 });
const slowSummary = {
  name: 'slow-deterministic',
  async summarize(input) {
    summaries++;
    await new Promise((resolve) => setTimeout(resolve, 40));
    return deterministic.summarize(input);
  },
};

let note = 0;
const text = (n, bytes) => {
  const words = ['parse', 'token', 'module', 'test', 'fails', 'again', 'fixed', 'the'];
  const out = [];
  for (let i = 0; out.join(' ').length < bytes; i++)
    out.push(words[(n * 7 + i * 3) % words.length]);
  return out.join(' ');
};

// The mail of this process is named by a tag of its own: an earlier resume's mail, in the stored
// context, reads `mail resume` too, and a turn the kill cut is finished before this mail arrives.
const tag = `${mode} ${randomUUID().slice(0, 8)}`;
let first;
const model = createScriptedModel({
  tokens: {},
  scripts: {
    lead: () => ({ text: 'Noted.' }),
    bob: ({ call, request }) => {
      if (mode === 'run') process.send?.({ type: 'request', messages: request.messages });
      else if (request.messages.some((m) => JSON.stringify(m.content).includes(`mail ${tag} `))) {
        // the first request that reads the resume's mail (a turn the kill cut may be finished
        // first, when it starts before that mail is durable)
        first ??= request.messages;
      }
      const last = request.messages.at(-1);
      if (last?.role === 'tool') return { text: text(call, 300 + (call % 4) * 100) };
      return { text: `On it (${call}).`, toolCalls: [{ name: 'task_list', input: { limit: 1 } }] };
    },
  },
});

const events = {
  publish(agent, event) {
    if (event.type === 'error') fatal(`${agent} reported ${event.code}`, event.message);
    if (agent !== 'bob' || mode !== 'run') return;
    if (event.type === 'context.compacting') process.send?.({ type: 'compacting' });
    if (event.type === 'context.compacted') process.send?.({ type: 'compacted' });
  },
};

const store = await openJsonlTeamStore({
  teamId: 'compaction-team',
  dir: String(args.dir),
  durability: 'fsync',
});
const team = await openTeam({
  teamId: 'compaction-team',
  log: store.log,
  transcripts: store.transcripts,
  format: createSimpleFormat(),
  agents: createAgentRegistry([
    { type: 'lead', systemPrompt: 'You lead.', model },
    { type: 'worker', systemPrompt: 'You are bob, a worker.', model },
  ]),
  lead: { agentType: 'lead' },
  events,
  idleClaim: false,
  context: { windowTokens: Number(args.window), policy: slowSummary },
});

if (!team.listMembers(team.lead).some((m) => m.name === 'bob')) {
  const spawned = await team.spawnTeammate(team.lead, {
    name: 'bob',
    description: 'Works through the mail.',
    prompt: 'Hi bob. Answer every mail; keep this brief.',
    agentType: 'worker',
  });
  acknowledge(spawned.messageId);
}

const mail = async () => {
  const sent = await team.sendMessage(team.lead, {
    to: 'bob',
    text: `mail ${tag} ${++note}: ${text(note, 200 + (note % 5) * 80)}`,
  });
  acknowledge(sent.messageId);
};

if (mode === 'run') {
  process.send?.({ type: 'ready' });
  for (;;) {
    await mail();
    await team.idle();
  }
} else {
  await mail();
  await team.idle();
  await team.dispose();
  await store.close();
  process.send?.({ type: 'resumed', first, summaries }, () => process.exit(0));
}
