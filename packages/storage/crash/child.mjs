// The crash test's child: opens (or reopens) a team on the JSONL store with durability `fsync`
// and runs a scripted team until it is killed. Every send that was answered (`queued` or
// `accepted`) is appended to the acknowledgement file after the answer, so the parent knows
// exactly which sends the team promised to keep.
//
//   node crash/child.mjs --dir <team folder> --team-id <id> --acks <file> --seed <n> [--drain]
//
// Without --drain it runs forever: the lead's host code sends teammates mail, and the scripted
// teammates message each other and the lead and create, claim, complete and release tasks.
// With --drain nobody starts new work: the child recovers, lets every pending message be
// delivered, then exits 0 once no mail is pending for a live member.
//
// It reports to the parent over IPC: {type: 'ready', recovered} once openTeam returned (recovery
// done), {type: 'drained', rounds} before a clean exit. Any runtime error is fatal (exit 2).

import { fdatasyncSync, openSync, writeSync } from 'node:fs';
import { createAgentRegistry, foldTeam, openTeam, TeamError } from '@teamwire/core';
import { createScriptedModel, createSimpleFormat } from '@teamwire/core/testing';
import { openJsonlTeamStore } from '../dist/index.js';
import { createRng, LEAD_TYPE, parseArgs, TEAMMATES, UsageError, WORKER_TYPE } from './shared.mjs';

const NAMES = ['alice', 'bob', 'carol', 'dave', 'erin', 'frank', 'grace', 'heidi', 'ivan'];

let args;
try {
  args = parseArgs(process.argv.slice(2), {
    dir: { type: 'string' },
    'team-id': { type: 'string' },
    acks: { type: 'string' },
    seed: { type: 'string' },
    drain: { type: 'boolean' },
  });
} catch (error) {
  if (!(error instanceof UsageError)) throw error;
  process.stderr.write(`crash child: ${error.message}\n`);
  process.exit(2);
}
const dir = String(args.dir);
const teamId = String(args['team-id']);
const drain = args.drain === true;
const rng = createRng(Number(args.seed ?? 1));
// The scripted model numbers tool calls from 1 in every process; a transcript that lives through
// many processes gets ids unique across them, as a real provider's would be.
const callTag = `${process.pid.toString(36)}${Date.now().toString(36)}`;
let callCount = 0;

function fatal(why, detail) {
  const text = detail instanceof Error ? (detail.stack ?? detail.message) : String(detail);
  process.stderr.write(`crash child: ${why}: ${text}\n`);
  process.exit(2);
}
process.on('unhandledRejection', (error) => fatal('unhandled rejection', error));
process.on('uncaughtException', (error) => fatal('uncaught exception', error));

// The acknowledgement file: one message id per line, written (and synced) only after the send
// was answered. A kill between the answer and this write merely loses the acknowledgement.
const ackFd = openSync(String(args.acks), 'a');
function acknowledge(messageId) {
  writeSync(ackFd, `${messageId}\n`);
  fdatasyncSync(ackFd);
}

/** The turn each agent is in: why it started and how many model calls it made. */
const turns = new Map();

const events = {
  publish(agentName, event) {
    switch (event.type) {
      case 'turn.start':
        turns.set(agentName, { step: 0, reason: event.reason, taskId: event.taskId });
        break;
      case 'tool.result':
        // Published right after the tool answered, before the result is even recorded.
        if (event.toolName === 'send_message' && !event.isError) {
          acknowledge(JSON.parse(event.text).messageId);
        }
        break;
      case 'error':
        fatal(`${agentName} reported ${event.code}`, event.message);
        break;
      default:
        break;
    }
  },
};

/** Set once openTeam returned; scripts run only after that (runners start inside openTeam). */
let team;
let counter = 0;

function members() {
  return team.listMembers(team.lead);
}

function activeNames(except) {
  return members()
    .filter((m) => m.phase === 'active' && m.name !== except)
    .map((m) => m.name);
}

function memberId(name) {
  return members().find((m) => m.name === name)?.memberId;
}

/** One teammate's (or the lead's) model: two calls per turn, the first one does the work. */
function script(agentName) {
  const isLead = agentName === 'lead';
  return () => {
    const turn = turns.get(agentName) ?? { step: 0 };
    turn.step++;
    // The second call ends the turn. Its step boundary delivered all mail pending meanwhile,
    // quiet mail included.
    if (turn.step > 1) return { text: `${agentName} is done for now.` };
    const calls = [];
    if (turn.reason === 'task-claim' && turn.taskId !== undefined) {
      calls.push({ name: 'task_update', input: { taskId: turn.taskId, action: 'complete' } });
    }
    if (!drain) calls.push(...work(agentName, isLead));
    if (calls.length === 0) calls.push({ name: 'task_list', input: { limit: 1 } });
    return { toolCalls: calls.map((call) => ({ ...call, id: `call-${callTag}-${++callCount}` })) };
  };
}

/** The random (seeded) work of one turn: a message, and maybe a change on the board. */
function work(agentName, isLead) {
  const calls = [];
  const targets = activeNames(agentName);
  if (targets.length > 0 && rng.chance(isLead ? 0.5 : 0.9)) {
    const to = rng.pick(targets);
    calls.push({
      name: 'send_message',
      input: {
        to,
        message: `${agentName} to ${to}, note ${++counter}`,
        ...(rng.chance(0.2) ? { delivery: 'quiet' } : {}),
      },
    });
  }
  const roll = rng.next();
  if (roll < (isLead ? 0.1 : 0.15)) {
    const open = team.listTasks(team.lead, { status: ['pending', 'in_progress'], limit: 20 }).tasks;
    const blocker = open.length > 0 && rng.chance(0.3) ? [rng.pick(open).id] : [];
    calls.push({
      name: 'task_create',
      input: {
        subject: `job ${++counter} by ${agentName}`,
        description: 'Scripted work for the crash test.',
        ...(blocker.length > 0 ? { blockedBy: blocker } : {}),
      },
    });
  } else if (isLead) {
    // The lead only creates tasks.
  } else if (roll < 0.35) {
    const ready = team.listTasks(team.lead, { ready: true, limit: 10 }).tasks;
    if (ready.length > 0) {
      const task = rng.pick(ready);
      // Sometimes a stale expected revision, so compare-and-set refusals happen too.
      const expectedRevision = rng.chance(0.2) ? Math.max(1, task.revision - 1) : task.revision;
      calls.push({
        name: 'task_update',
        input: { taskId: task.id, action: 'claim', expectedRevision },
      });
    }
  } else if (roll < 0.6) {
    const id = memberId(agentName);
    const mine = team.listTasks(team.lead, { ownerId: id, status: 'in_progress', limit: 5 }).tasks;
    if (mine.length > 0) {
      const action = roll < 0.55 ? 'complete' : 'release';
      calls.push({ name: 'task_update', input: { taskId: rng.pick(mine).id, action } });
    }
  }
  return calls;
}

const scripted = createScriptedModel();
const scriptedAgents = new Set();
/** The scripted model, giving each agent its script the first time it calls. */
const model = {
  specificationVersion: 'v1',
  provider: scripted.provider,
  modelId: scripted.modelId,
  stream(request) {
    const name = request.agentName;
    if (name !== undefined && !scriptedAgents.has(name)) {
      scriptedAgents.add(name);
      scripted.setScript(name, script(name));
    }
    return scripted.stream(request);
  },
};

// Fewer open transcript files than members, so the kills also land while files are being closed
// to make room and reopened.
const store = await openJsonlTeamStore({
  teamId,
  dir,
  durability: 'fsync',
  maxOpenTranscripts: 2,
});
team = await openTeam({
  teamId,
  log: store.log,
  transcripts: store.transcripts,
  format: createSimpleFormat(),
  agents: createAgentRegistry([
    { type: LEAD_TYPE, systemPrompt: 'You lead the crash-test team.', model },
    { type: WORKER_TYPE, systemPrompt: 'You are a crash-test worker.', model },
  ]),
  lead: { agentType: LEAD_TYPE },
  events,
  idleClaim: drain ? false : { intervalMs: 100 },
});
process.send?.({ type: 'ready', recovered: store.recovered });

if (drain) await drainMail();
else await runForever();

/** Keeps `TEAMMATES` teammates active, then mails them from two host loops, forever. */
async function runForever() {
  const used = new Set(members().map((m) => m.name));
  let active = members().filter((m) => !m.isLead && m.phase === 'active').length;
  let next = 0;
  while (active < TEAMMATES) {
    let name = NAMES[next] ?? `mate-${next}`;
    while (used.has(name)) name = NAMES[++next] ?? `mate-${next}`;
    used.add(name);
    const spawned = await team.spawnTeammate(team.lead, {
      name,
      description: 'A crash-test worker.',
      prompt: `Hi ${name}, keep busy.`,
      agentType: WORKER_TYPE,
    });
    acknowledge(spawned.messageId);
    active++;
  }
  await Promise.all([pump(), pump()]);
}

/** The lead's host code mailing random teammates, a few milliseconds apart. */
async function pump() {
  for (;;) {
    const to = rng.pick(activeNames('lead'));
    try {
      const sent = await team.sendMessage(team.lead, {
        to,
        text: `lead to ${to}, note ${++counter}`,
        delivery: rng.chance(0.2) ? 'quiet' : 'wakeup',
      });
      acknowledge(sent.messageId);
    } catch (error) {
      if (!TeamError.hasCode(error, 'MAILBOX_FULL')) throw error;
    }
    await new Promise((resolve) => setTimeout(resolve, rng.int(2, 15)));
  }
}

/** Lets the team deliver every pending message, nudging members whose mail waits, then exits. */
async function drainMail() {
  for (let round = 1; ; round++) {
    await team.idle();
    const records = [];
    for await (const record of store.log.read()) records.push(record);
    const folded = foldTeam(records, { teamId });
    const live = new Set(folded.roster.filter((m) => m.phase === 'active').map((m) => m.id));
    const waiting = new Set(
      folded.pendingMail.filter((m) => live.has(m.targetId)).map((m) => m.targetId),
    );
    if (waiting.size === 0) {
      await team.dispose();
      await store.close();
      process.send?.({ type: 'drained', rounds: round }, () => process.exit(0));
      return;
    }
    if (round > 50) fatal('drain', `mail is still pending after ${round} rounds`);
    // Quiet mail (and mail of a member no runner picked up) waits for a turn: start one. Its
    // second model call's step boundary delivers everything pending.
    for (const targetId of waiting) {
      if (targetId === teamId) {
        await team.promptLead('Deliver your pending mail.');
        continue;
      }
      const to = folded.roster.find((m) => m.id === targetId)?.name;
      const sent = await team.sendMessage(team.lead, { to, text: `drain ${to}` });
      acknowledge(sent.messageId);
    }
  }
}
