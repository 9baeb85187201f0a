// A worker of the PostgreSQL crash test: one process of a team spread over several. It opens the
// store with its own processId (`crash-<slot>-<pid>`), opens the team with openTeam over it and
// runs whatever the placement gives it (lead and teammates, every agent type) until the driver
// kills it, cuts its connections, or tells it to drain and stop.
//
//   node crash/worker.mjs --url <postgres url> --schema <s> --team-id <id> --slot <n>
//                         --acks <file> --seed <n> --lease-ms <ms> --teammates <n> [--capable]
//
// Scripted teammates message each other and the lead and create, claim, complete and release
// tasks; while this process runs the lead, its host code keeps `--teammates` teammates spawned
// and mails them, half of them (at least one) of the constrained type GPU_TYPE, which requires
// GPU_CAPABILITY: only a worker started with --capable declares it (`runs.capabilities`), so only
// such workers may run those members. Every send that was answered is appended to the acks file, and synced, after the
// answer: the driver then knows exactly which sends the team promised to keep.
//
// IPC to the driver: {type: 'ready', processId} once openTeam returned; {type: 'error', agent,
// code, message} for every runtime `error` event; {type: 'refused', code} for every host call
// refused as expected (FENCED, NOT_PLACED_HERE, ...); {type: 'broke', message} before exiting with
// code 3 when the team service broke (STORE_CLOSED). IPC from the driver: {type: 'drain'} (no new
// work: host sends stop, teammates only finish the tasks they have in progress), {type: 'nudge', targets}
// (the lead's process wakes members whose mail waits). SIGTERM disposes the team (its members stop
// at their next turn boundary and go to the other workers at once; a turn that does not end within
// HANDOVER_MS is reported by the runtime as a TIMEOUT error, which fails the run), closes the store
// and exits 0. Anything unexplained (an uncaught error, a refusal the team should never give)
// exits 2.

import { fdatasyncSync, openSync, writeSync } from 'node:fs';
import {
  createAgentRegistry,
  deterministicSummary,
  INTERRUPTED_TOOL_RESULT,
  openTeam,
  TeamError,
} from '@teamwire/core';
import {
  createScriptedModel,
  createSimpleFormat,
  createSimplePolicy,
} from '@teamwire/core/testing';
import { CRASH_WINDOW_TOKENS, createCrashTeamScripts } from '../../../scripts/crash-support.mjs';
import { openPostgresTeamStore } from '../dist/index.js';
import {
  AGENT_REQUIRES,
  createRng,
  EXIT_FATAL,
  EXIT_SERVICE_BROKE,
  GPU_CAPABILITY,
  GPU_TYPE,
  LEAD_TYPE,
  PROCESS_PREFIX,
  parseArgs,
  UsageError,
  WORKER_TYPE,
} from './shared.mjs';

const NAMES = ['alice', 'bob', 'carol', 'dave', 'erin', 'frank', 'grace', 'heidi', 'ivan'];
/** Spawns stop once the roster holds this many teammates (a kill can cut a spawn each time). */
const MAX_TEAMMATES_EVER = 24;
/** How long closing may take when the service broke or on SIGTERM, before exiting anyway. */
const CLOSE_TIMEOUT_MS = 15_000;
/** How long SIGTERM waits for the members' turns to end before handing them over anyway. */
const HANDOVER_MS = 10_000;

let args;
try {
  args = parseArgs(process.argv.slice(2), {
    url: { type: 'string' },
    schema: { type: 'string' },
    'team-id': { type: 'string' },
    slot: { type: 'string' },
    acks: { type: 'string' },
    seed: { type: 'string' },
    'lease-ms': { type: 'string' },
    teammates: { type: 'string' },
    'snapshot-every': { type: 'string' },
    capable: { type: 'boolean' },
  });
} catch (error) {
  if (!(error instanceof UsageError)) throw error;
  process.stderr.write(`crash worker: ${error.message}\n`);
  process.exit(EXIT_FATAL);
}
const teamId = String(args['team-id']);
const processId = `${PROCESS_PREFIX}${args.slot}-${process.pid}`;
const teammates = Number(args.teammates ?? 4);
const snapshotEvery = Number(args['snapshot-every'] ?? 50);
const capabilities = args.capable === true ? [GPU_CAPABILITY] : [];
/** How many of the teammates are of GPU_TYPE. */
const gpuTeammates = Math.max(1, Math.floor(teammates / 2));
const rng = createRng(Number(args.seed ?? 1));

function log(line) {
  process.stderr.write(`[${processId}] ${line}\n`);
}

function fatal(why, detail) {
  const text = detail instanceof Error ? (detail.stack ?? detail.message) : String(detail);
  log(`FATAL ${why}: ${text}`);
  process.exit(EXIT_FATAL);
}
process.on('unhandledRejection', (error) => fatal('unhandled rejection', error));
process.on('uncaughtException', (error) => fatal('uncaught exception', error));

/** Sends to the driver; a driver that is gone is not this process's problem. */
function report(message) {
  try {
    process.send?.(message);
  } catch {
    // the IPC channel closed: the driver is shutting down or killed us already
  }
}

// The acknowledgement file of this process: one message id per line, written (and synced) only
// after the send was answered. A kill between the answer and this write merely loses the ack.
const ackFd = openSync(String(args.acks), 'a');
function acknowledge(messageId) {
  writeSync(ackFd, `${messageId}\n`);
  fdatasyncSync(ackFd);
}

/** Set once the driver asked for the drain: nobody starts new work. */
let draining = false;
/** Set once this process is going away (SIGTERM or a broken service). */
let leaving = false;

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
        } else if (event.isError) {
          report({ type: 'refused', code: `${event.toolName}:${toolErrorCode(event.text)}` });
        }
        break;
      case 'error':
        log(`${agentName} reported error ${event.code}: ${event.message}`);
        report({ type: 'error', agent: agentName, code: event.code, message: event.message });
        if (event.code === 'STORE_CLOSED') void broke(`${agentName}: ${event.message}`);
        break;
      default:
        break;
    }
  },
};

/**
 * Set once openTeam returned. Runners start inside openTeam (members placed here are revived
 * during it), so a script waits for `opened` before it looks at the team.
 */
let team;
let markOpened;
const opened = new Promise((resolve) => {
  markOpened = resolve;
});
let store;
const scripts = createCrashTeamScripts({
  createScriptedModel,
  rng,
  team: () => team,
  turns,
  draining: () => draining,
  ready: opened,
  description: 'Scripted work for the PostgreSQL crash test.',
});
const { model, members, activeNames } = scripts;

/** Refusals the host code expects when another process runs the lead, or the team is busy. */
const HOST_REFUSALS = new Set([
  'FENCED', // another process took the lead over while this call was in flight
  'NOT_PLACED_HERE',
  'NOT_A_MEMBER',
  'MAILBOX_FULL',
  'NAME_TAKEN', // another process running the lead spawned the same name first
  'MEMBER_LIMIT',
  'UNKNOWN_TARGET',
]);

/** Refusals opening the team may meet under chaos. */
const OPEN_REFUSALS = new Set(['STORE_UNAVAILABLE', 'FENCED', 'STORE_CLOSED']);

/** A host call failed: expected refusals are skipped, a broken service ends the process. */
function hostFailed(error, what) {
  if (TeamError.hasCode(error, 'STORE_CLOSED')) return broke(`${what}: ${describe(error)}`);
  if (TeamError.hasCode(error, 'DISPOSED') && leaving) return;
  if (TeamError.isInstance(error) && HOST_REFUSALS.has(error.code)) {
    report({ type: 'refused', code: error.code });
    return;
  }
  fatal(`${what} failed`, error);
}

/**
 * The team service broke (an append it could not make): it must be reopened from the log. This
 * process gives its members back, tells the driver and exits 3; the driver starts a new one.
 */
async function broke(why) {
  if (leaving) return;
  leaving = true;
  log(`the team service broke, exiting ${EXIT_SERVICE_BROKE}: ${why}`);
  report({ type: 'broke', message: why });
  setTimeout(() => process.exit(EXIT_SERVICE_BROKE), CLOSE_TIMEOUT_MS).unref();
  await team?.dispose().catch(() => undefined);
  await store?.close().catch(() => undefined);
  process.exit(EXIT_SERVICE_BROKE);
}

/** The TeamError code of a failed tool's result text (`{"error": {"code": ...}}`). */
function toolErrorCode(text) {
  if (text === INTERRUPTED_TOOL_RESULT) return 'interrupted';
  try {
    return JSON.parse(text).error?.code ?? 'unknown';
  } catch {
    return 'unparsed';
  }
}

function describe(error) {
  const cause = error?.cause === undefined ? '' : ` (cause: ${describe(error.cause)})`;
  return `${error?.code === undefined ? '' : `${error.code}: `}${error?.message ?? error}${cause}`;
}

function sleep(ms) {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** While this process runs the lead: spawns teammates missing from the roster. One at a time. */
let spawning = false;
async function ensureTeammates() {
  if (spawning) return;
  spawning = true;
  try {
    while (!draining && !leaving && store.placement.runsHere(team.teamId)) {
      const roster = members();
      const mates = roster.filter((m) => !m.isLead);
      const live = mates.filter((m) => m.phase === 'active' || m.phase === 'provisioning');
      if (live.length >= teammates || mates.length >= MAX_TEAMMATES_EVER) return;
      const used = new Set(roster.map((m) => m.name));
      let name;
      for (let i = 0; name === undefined || used.has(name); i++) name = NAMES[i] ?? `mate-${i}`;
      const gpu = live.filter((m) => m.agentType === GPU_TYPE).length < gpuTeammates;
      const spawned = await team.spawnTeammate(team.lead, {
        name,
        description: gpu ? 'A crash-test worker that needs a GPU.' : 'A crash-test worker.',
        prompt: `Hi ${name}, keep busy.`,
        agentType: gpu ? GPU_TYPE : WORKER_TYPE,
      });
      acknowledge(spawned.messageId);
    }
  } finally {
    spawning = false;
  }
}

/** The host code of the lead's process: keeps the team spawned and mails teammates. */
async function pump() {
  while (!draining && !leaving) {
    await sleep(rng.int(5, 30));
    if (draining || leaving) return;
    if (!store.placement.runsHere(team.teamId)) {
      await sleep(50);
      continue;
    }
    try {
      await ensureTeammates();
    } catch (error) {
      hostFailed(error, 'spawning a teammate');
      continue;
    }
    const targets = activeNames('lead');
    if (targets.length === 0 || draining || leaving) continue;
    const to = rng.pick(targets);
    try {
      const sent = await team.sendMessage(team.lead, {
        to,
        text: `lead to ${to}, note ${scripts.nextNote()}`,
        delivery: rng.chance(0.2) ? 'quiet' : 'wakeup',
      });
      acknowledge(sent.messageId);
    } catch (error) {
      hostFailed(error, `sending ${to} mail`);
    }
  }
}

/**
 * Wakes members whose mail waits (the drain): the lead by a host prompt, a teammate by wakeup
 * mail from the lead. Only the process running the lead can do either; the others ignore it.
 */
async function nudge(targets) {
  if (leaving || !store.placement.runsHere(team.teamId)) return;
  for (const targetId of targets) {
    if (targetId === team.teamId) {
      team.promptLead('Deliver your pending mail.').catch((error) => {
        // A lead lost to another process meanwhile stops its runner, which rejects the prompts it
        // holds with DISPOSED (core words it "the team service was disposed"): expected here.
        if (
          TeamError.hasCode(error, 'DISPOSED') &&
          !leaving &&
          !store.placement.runsHere(team.teamId)
        ) {
          report({ type: 'refused', code: 'promptLead:DISPOSED' });
          return;
        }
        hostFailed(error, 'prompting the lead');
      });
      continue;
    }
    const to = members().find((m) => m.memberId === targetId)?.name;
    if (to === undefined) continue;
    try {
      const sent = await team.sendMessage(team.lead, { to, text: `drain ${to}` });
      acknowledge(sent.messageId);
    } catch (error) {
      hostFailed(error, `nudging ${to}`);
    }
  }
}

/**
 * A service that broke while nobody called it (a catch-up that failed) would leave its process
 * heart-beating and claiming members it can no longer run: look every 200 ms.
 */
function watch() {
  const timer = setInterval(() => {
    if (leaving) return clearInterval(timer);
    try {
      team.listMembers(team.lead);
    } catch (error) {
      clearInterval(timer);
      hostFailed(error, 'the service check');
    }
  }, 200);
  timer.unref();
}

process.on('SIGTERM', () => {
  if (leaving) return;
  leaving = true;
  draining = true;
  setTimeout(
    () => fatal('stopping', `dispose and close took over ${CLOSE_TIMEOUT_MS} ms`),
    CLOSE_TIMEOUT_MS,
  ).unref();
  (async () => {
    await team?.dispose();
    await store?.close();
    process.exit(0);
  })().catch((error) => fatal('stopping', error));
});

process.on('message', (message) => {
  if (message?.type === 'drain') draining = true;
  else if (message?.type === 'nudge' && team !== undefined && !leaving) {
    nudge(message.targets).catch((error) => fatal('nudge', error));
  }
});

try {
  store = await openPostgresTeamStore({
    teamId,
    connectionString: String(args.url),
    schema: String(args.schema),
    runs: { lead: true, agentTypes: 'all', capabilities },
    leaseMs: Number(args['lease-ms'] ?? 600),
    processId,
    reconnect: { initialDelayMs: 10, maxDelayMs: 250 },
    // Small, so snapshots are written (and opened from) many times during a run.
    snapshots: snapshotEvery === 0 ? false : { everyRecords: snapshotEvery },
  });
  team = await openTeam({
    teamId,
    log: store.log,
    transcripts: store.transcripts,
    format: createSimpleFormat(),
    policy: createSimplePolicy(),
    agents: createAgentRegistry([
      { type: LEAD_TYPE, systemPrompt: 'You lead the crash-test team.', model },
      { type: WORKER_TYPE, systemPrompt: 'You are a crash-test worker.', model },
      {
        type: GPU_TYPE,
        systemPrompt: 'You are a crash-test worker that needs a GPU.',
        model,
        placement: { requires: AGENT_REQUIRES[GPU_TYPE] },
      },
    ]),
    // A small window, so kills also land while members compact their context.
    context: { windowTokens: CRASH_WINDOW_TOKENS, policy: deterministicSummary({ maxChars: 600 }) },
    lead: { agentType: LEAD_TYPE },
    events,
    idleClaim: { intervalMs: 100 },
    handoverTimeoutMs: HANDOVER_MS,
  });
} catch (error) {
  // A cut while opening: the store does not retry its first connection (STORE_UNAVAILABLE), and
  // a member lost while openTeam revived it fails the open (FENCED). Both leave the log foldable;
  // the driver lists the exit and starts a new worker. Anything else is a bug.
  if (TeamError.isInstance(error) && OPEN_REFUSALS.has(error.code)) {
    await broke(`opening the team: ${describe(error)}`);
  }
  fatal('opening the team', error);
}
markOpened();
report({ type: 'ready', processId });
watch();
void pump();
void pump();
