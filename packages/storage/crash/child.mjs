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

import { appendFileSync, fdatasyncSync, openSync, writeSync } from 'node:fs';
import {
  createAgentRegistry,
  deterministicSummary,
  foldTeam,
  openTeam,
  TeamError,
} from '@teamwire/core';
import { createScriptedModel, createSimpleFormat } from '@teamwire/core/testing';
import { createCrashTeamScripts } from '../../../scripts/crash-support.mjs';
import { nodeFs, openJsonlTeamStore, TRANSCRIPT_JOURNAL_FILE } from '../dist/index.js';
import {
  CRASH_SEGMENT_BYTES,
  CRASH_SNAPSHOTS,
  CRASH_WINDOW_TOKENS,
  createRng,
  LEAD_TYPE,
  parseArgs,
  TEAMMATES,
  UsageError,
  WORKER_TYPE,
} from './shared.mjs';

const NAMES = ['alice', 'bob', 'carol', 'dave', 'erin', 'frank', 'grace', 'heidi', 'ivan'];

let args;
try {
  args = parseArgs(process.argv.slice(2), {
    dir: { type: 'string' },
    'team-id': { type: 'string' },
    acks: { type: 'string' },
    seed: { type: 'string' },
    drain: { type: 'boolean' },
    'kill-at': { type: 'string' },
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

function fatal(why, detail) {
  let text = detail instanceof Error ? (detail.stack ?? detail.message) : String(detail);
  for (let cause = detail?.cause; cause instanceof Error; cause = cause.cause) {
    text += `\ncaused by: ${cause.stack ?? cause.message}`;
  }
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

/**
 * Set once openTeam returned. Runners start inside openTeam (the lead finishes a turn its last
 * process stopped in, revived members take their mail), so a script waits for `opened` before it
 * looks at the team.
 */
let team;
let markOpened;
const opened = new Promise((resolve) => {
  markOpened = resolve;
});
const scripts = createCrashTeamScripts({
  createScriptedModel,
  rng,
  team: () => team,
  turns,
  draining: () => drain,
  ready: opened,
});
const { model, members, activeNames } = scripts;

// Fewer open transcript files than members, so the kills also land while files are being closed
// to make room and reopened; small segments and frequent snapshots, so they also land while the
// log moves to a new segment and while a snapshot is written.
const store = await openJsonlTeamStore({
  teamId,
  dir,
  durability: 'fsync',
  maxOpenTranscripts: 2,
  segmentBytes: CRASH_SEGMENT_BYTES,
  snapshots: CRASH_SNAPSHOTS,
  fs: killingFs(args['kill-at']),
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
  // A small window, so kills also land while members compact their context.
  context: { windowTokens: CRASH_WINDOW_TOKENS, policy: deterministicSummary({ maxChars: 600 }) },
  lead: { agentType: LEAD_TYPE },
  events,
  idleClaim: drain ? false : { intervalMs: 100 },
});
markOpened();
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
        text: `lead to ${to}, note ${scripts.nextNote()}`,
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

/**
 * With `--kill-at`, the file system kills this process (SIGKILL, as the parent would) at an exact
 * moment: `snapshot` halfway through writing a snapshot file, `segment` right after a new log
 * segment was created (before anything is written to it), `segment-write` halfway through the
 * first write to a new segment, `journal-write` halfway through the first append to the transcript
 * journal, `journal-synced` right after the journal's first group of appends is durable (before any
 * member file is written). A line naming the point goes to `<acks>.kill-points` first.
 */
function killingFs(point) {
  if (point === undefined || point === 'none') return nodeFs;
  const die = () => {
    appendFileSync(`${String(args.acks)}.kill-points`, `${point}\n`);
    process.kill(process.pid, 'SIGKILL');
  };
  const halfWriteThenDie = (handle) => ({
    read: (...a) => handle.read(...a),
    stat: () => handle.stat(),
    truncate: (n) => handle.truncate(n),
    datasync: () => handle.datasync(),
    sync: () => handle.sync(),
    close: () => handle.close(),
    async write(buffer, offset, length, position) {
      const half = Math.max(1, Math.floor(length / 2));
      await handle.write(buffer, offset, half, position);
      await handle.datasync();
      die();
      return new Promise(() => {});
    },
  });
  const journalAppendThenDie = (handle) => {
    let appended = false;
    return {
      read: (...a) => handle.read(...a),
      stat: () => handle.stat(),
      truncate: (n) => handle.truncate(n),
      sync: () => handle.sync(),
      close: () => handle.close(),
      async write(buffer, offset, length, position) {
        // position 0 is the header, written when the journal is created or emptied
        if (position === 0) return handle.write(buffer, offset, length, position);
        if (point === 'journal-write')
          return halfWriteThenDie(handle).write(buffer, offset, length, position);
        appended = true;
        return handle.write(buffer, offset, length, position);
      },
      async datasync() {
        await handle.datasync();
        if (appended) {
          die();
          await new Promise(() => {});
        }
      },
    };
  };
  return {
    ...nodeFs,
    async open(path, flags) {
      const handle = await nodeFs.open(path, flags);
      if (point.startsWith('journal-') && path.endsWith(TRANSCRIPT_JOURNAL_FILE)) {
        return journalAppendThenDie(handle);
      }
      if (flags !== 'wx') return handle;
      if (point === 'snapshot' && path.endsWith('.snapshot')) return halfWriteThenDie(handle);
      if (path.includes('/segments/')) {
        if (point === 'segment') die();
        if (point === 'segment-write') return halfWriteThenDie(handle);
      }
      return handle;
    },
  };
}
