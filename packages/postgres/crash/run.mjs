// The PostgreSQL crash test (`pnpm test:crash:pg`): one team spread over several worker processes
// (crash/worker.mjs), each with its own store connection and processId, in a fresh SQL schema.
// Faults chosen by a seeded RNG hit them while they work: SIGKILL of a random worker (restarted at
// once); about every third fault, pg_terminate_backend of every connection of a random worker
// (its pool and its LISTEN client) without killing it; about every sixth, SIGSTOP of a random
// worker for 1-3 leases, then SIGCONT: it wakes up believing it still runs members that others
// took over meanwhile, and must be fenced. About every tenth fault (on top of those) is a worker
// leaving with SIGTERM: it must hand its members over at their turn boundaries (no turn cut: the
// runtime's TIMEOUT error fails the run) and exit 0; a new worker joins in its slot, and the
// placement rebalances members onto it. The workers of the first --capable slots (and every worker
// that replaces one of them) declare the capability GPU_CAPABILITY; half of the teammates are of
// GPU_TYPE, which requires it, so they may run only there, through every takeover, handover and
// rebalancing. After every fault the database is checked
// (crash/checks.mjs): the log folds strictly; no transcript holds a message twice or holds one not
// queued for its member; every acknowledged send is queued; no member was written for by two
// processes with one fence token, nor by an older token after a newer one; every in-progress task
// has one owner, a live member; every log row a constrained member acts in, every transcript row of
// it and every placements row of it names a process of a capable slot, and every processes row
// declares the capabilities its slot was given. At the end the workers drain the mailbox and stop cleanly, and
// every acknowledged send must be delivered exactly once and be in its target's transcript once;
// the drain also waits for every task to be completed (liveness), within --drain-ms.
//
//   node crash/run.mjs [--kills N] [--seed S] [--min-ms 20] [--max-ms 800] [--lease-ms 600]
//                      [--workers 3] [--capable 2] [--teammates 4] [--cut-every 3] [--pause-every 6] [--term-every 10]
//                      [--kills-per-team 250] [--drain-ms 120000] [--snapshot-every 50]
//                      [--url postgres://...] [--keep] [--quiet]
//
// --kills (env CRASH_PG_KILLS, default 50): SIGKILLs to deal; cuts and pauses come on top.
// --seed (env CRASH_PG_SEED): replays the same fault times, victims and scripted choices (the
//   processes' timing still varies, so a replay is likely, not certain, to hit the same state).
// --min-ms/--max-ms: each fault comes this long after the previous one (and its check).
// --lease-ms: the store's leaseMs: how soon a killed worker's members are taken over.
// --capable N (default: half of --workers, rounded up; 1 to --workers): the slots 0 to N-1 are
//   capable: their workers, restarted or joining ones too, declare GPU_CAPABILITY. A slot is
//   refilled at once after a kill or a leave and the drain starts once every slot's worker is
//   ready, so the GPU_TYPE members always get a capable live process back.
// --cut-every N: each fault is a connection cut with chance 1/N (0: no cuts).
// --pause-every N: each fault is a SIGSTOP of 1-3 leases with chance 1/N (0: no pauses).
// --term-every N: before each fault, with chance 1/N, a ready worker leaves with SIGTERM and a new
//   one joins in its slot (0: none). These come on top of the kills.
// --kills-per-team: a long run is split into teams of this many kills (team crash-pg-team-<n>),
//   each ending with its own drain and final check, so that a worker's start (it reads the whole
//   log) and a check cost the same at kill 5000 as at kill 50.
// --drain-ms: how long the final drain of a team may take.
// --snapshot-every N: the workers' stores write a snapshot of the team state every N records (0:
//   none), so workers that restart open from a snapshot and the records after it. Every check
//   compares each new snapshot plus the records after it with the strict fold of the whole log;
//   after each team's final check, every member's loadContext must fold to what load folds to.
// --url (env TEAMWIRE_PG_URL): the database, default postgres://postgres@127.0.0.1:5432/test.
// --keep: keep the schema and the folder of ack files; both are kept anyway after a failure.
// --quiet: do not echo the workers' stderr (runtime errors they report are still counted).
//
// Without a reachable PostgreSQL the test is skipped (exit 0), unless CI is set: then it fails.
// Exit 0 when every check held; 1 with the failing check, the seed and the replay command.

import { fork } from 'node:child_process';
import { randomBytes, randomInt } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { isDeepStrictEqual } from 'node:util';
import { transcriptContext } from '@teamwire/core';
import pg from 'pg';
import { openPostgresTeamStore } from '../dist/index.js';
import { TeamChecker } from './checks.mjs';
import {
  AGENT_REQUIRES,
  capabilitiesOf,
  createRng,
  DEFAULT_PG_URL,
  defaultCapableSlots,
  EXIT_SERVICE_BROKE,
  EXPECTED_ERROR_CODES,
  GPU_CAPABILITY,
  GPU_TYPE,
  PROCESS_PREFIX,
  parseArgs,
  UsageError,
} from './shared.mjs';

const WORKER = join(dirname(fileURLToPath(import.meta.url)), 'worker.mjs');
const READY_TIMEOUT_MS = 30_000;
const STOP_TIMEOUT_MS = 20_000;
const KILL_TIMEOUT_MS = 5_000;
/** The drain is over once nothing is pending for a live member and the log stood still this long. */
const QUIET_MS = 1_500;
/** How often the drain looks, and how long pending mail waits before its target is nudged. */
const DRAIN_POLL_MS = 250;
const NUDGE_AFTER_MS = 1_000;

let args;
try {
  args = parseArgs(process.argv.slice(2), {
    kills: { type: 'string' },
    seed: { type: 'string' },
    'min-ms': { type: 'string' },
    'max-ms': { type: 'string' },
    'lease-ms': { type: 'string' },
    workers: { type: 'string' },
    capable: { type: 'string' },
    teammates: { type: 'string' },
    'cut-every': { type: 'string' },
    'kills-per-team': { type: 'string' },
    'pause-every': { type: 'string' },
    'term-every': { type: 'string' },
    'drain-ms': { type: 'string' },
    'snapshot-every': { type: 'string' },
    url: { type: 'string' },
    keep: { type: 'boolean' },
    quiet: { type: 'boolean' },
  });
} catch (error) {
  if (!(error instanceof UsageError)) throw error;
  console.error(`crash test: ${error.message}`);
  process.exit(2);
}
const inCi = process.env.CI !== undefined && !['', '0', 'false'].includes(process.env.CI);
const kills = integer('kills', args.kills ?? process.env.CRASH_PG_KILLS ?? 50, 1);
const seed = integer('seed', args.seed ?? process.env.CRASH_PG_SEED ?? randomInt(2 ** 31), 0);
const minMs = integer('min-ms', args['min-ms'] ?? 20, 0);
const maxMs = integer('max-ms', args['max-ms'] ?? 800, minMs);
const leaseMs = integer('lease-ms', args['lease-ms'] ?? 600, 30);
const workerCount = integer('workers', args.workers ?? 3, 1);
const capableSlots = integer('capable', args.capable ?? defaultCapableSlots(workerCount), 1);
if (capableSlots > workerCount) {
  console.error(`crash test: --capable ${capableSlots} exceeds --workers ${workerCount}`);
  process.exit(2);
}
const teammates = integer('teammates', args.teammates ?? 4, 1);
const cutEvery = integer('cut-every', args['cut-every'] ?? 3, 0);
const pauseEvery = integer('pause-every', args['pause-every'] ?? 6, 0);
const termEvery = integer('term-every', args['term-every'] ?? 10, 0);
const termChance = termEvery === 0 ? 0 : 1 / termEvery;
const cutChance = cutEvery === 0 ? 0 : 1 / cutEvery;
const pauseChance = pauseEvery === 0 ? 0 : 1 / pauseEvery;
if (cutChance + pauseChance >= 1) {
  console.error('crash test: --cut-every and --pause-every leave no room for kills');
  process.exit(2);
}
const drainMs = integer('drain-ms', args['drain-ms'] ?? 120_000, 1);
const perTeam = integer('kills-per-team', args['kills-per-team'] ?? 250, 1);
const snapshotEvery = integer('snapshot-every', args['snapshot-every'] ?? 50, 0);
const url = String(args.url ?? process.env.TEAMWIRE_PG_URL ?? DEFAULT_PG_URL);
const keep = args.keep === true;
const quiet = args.quiet === true;

const replay =
  `node crash/run.mjs --kills ${kills} --seed ${seed} --min-ms ${minMs} --max-ms ${maxMs}` +
  ` --lease-ms ${leaseMs} --workers ${workerCount} --capable ${capableSlots} --teammates ${teammates}` +
  ` --cut-every ${cutEvery} --pause-every ${pauseEvery} --term-every ${termEvery}` +
  ` --kills-per-team ${perTeam}` +
  ` --snapshot-every ${snapshotEvery}`;

const rng = createRng(seed);
const started = Date.now();
const totals = {
  teams: 0,
  faults: 0,
  kills: 0,
  cuts: 0,
  backendsCut: 0,
  pauses: 0,
  pausedMs: 0,
  terms: 0,
  termMs: 0,
  maxTermMs: 0,
  processes: 0,
  checks: 0,
  timedChecks: 0,
  checkMs: 0,
  maxCheckMs: 0,
  readyMs: 0,
  readies: 0,
  maxReadyMs: 0,
  drainMs: 0,
};
/** The checkers' counts, summed over the teams. */
const sums = {};
/** Runtime error events the workers reported, by code. */
const errorCodes = new Map();
/** Refusals the workers met as expected (host calls, tool results), by code. */
const refusals = new Map();
/** Problems noticed between checks (unexpected error codes, unplanned exits): fail the next check. */
let problems = [];
/** Exits of workers whose service broke (exit 3): allowed, listed in the verdict. */
const brokeExits = [];

// The team under test: a new one every --kills-per-team kills, so that reopening a team (every
// worker start reads its whole log) and every check cost the same at kill 5000 as at kill 50.
let teamId;
let checker;
/** Every ack file of the team, one per worker process. */
let ackFiles;
/** The live worker of each slot. */
let workers = [];
let incarnations;
/** What the last fault was, for violation reports. */
let where = 'startup';
let phase = 'faults'; // 'faults' | 'drain' | 'stop'

await probe();

const schema = `tw_crash_${randomBytes(6).toString('hex')}`;
const dir = mkdtempSync(join(tmpdir(), 'teamwire-pg-crash-'));
const admin = new pg.Pool({
  connectionString: url,
  max: 3,
  application_name: 'teamwire-crash-driver',
});
admin.on('error', () => {});
/** The driver's own statements, retried a while when the server is busy (shared with other tests). */
const db = { query: adminQuery };
process.on('unhandledRejection', (error) => {
  fail(where, [`the driver failed: ${error?.stack ?? error}`]);
});

// Create the schema once, so the workers race only for the team, not for the migration.
try {
  const migrating = await openPostgresTeamStore({
    teamId: 'crash-pg-team-0',
    connectionString: url,
    schema,
    processId: 'crash-driver',
  });
  await migrating.close();
} catch (error) {
  fail('creating the schema', [`openPostgresTeamStore failed: ${error?.stack ?? error}`]);
}

console.log(
  `crash test (PostgreSQL): ${kills} kills, seed ${seed}, ${workerCount} workers (${capableSlots} with ${GPU_CAPABILITY}), lease ${leaseMs} ms, faults ${minMs}-${maxMs} ms apart, ${perTeam} kills per team, schema ${schema}`,
);

process.on('SIGINT', () => {
  for (const w of workers) w.child.kill('SIGKILL');
  console.error(`crash test interrupted; schema ${schema} and folder ${dir} kept`);
  process.exit(130);
});

while (totals.kills < kills) {
  await runTeam(totals.teams + 1, Math.min(perTeam, kills - totals.kills));
}

const c = sums;
console.log(`crash test passed in ${secondsSince(started)} s (seed ${seed})`);
console.log(
  `  faults: ${totals.kills} SIGKILLs, ${totals.cuts} connection cuts (${totals.backendsCut} backends terminated), ${totals.pauses} pauses (${(totals.pausedMs / 1000).toFixed(1)} s stopped) over ${workerCount} workers and ${totals.teams} team(s); ${totals.processes} worker processes, ready ${(totals.readyMs / Math.max(1, totals.readies)).toFixed(0)} ms after start on average (${totals.maxReadyMs} ms at most)`,
);
console.log(
  `  leaves: ${totals.terms} workers left with SIGTERM mid-run (${(totals.termMs / Math.max(1, totals.terms)).toFixed(0)} ms on average, ${totals.maxTermMs} ms at most), each handing its members over at their turn boundaries (no turn cut), a new worker joining each time`,
);
console.log(
  `  checks: ${totals.checks} database checks, ${(totals.checkMs / Math.max(1, totals.timedChecks)).toFixed(1)} ms on average, ${totals.maxCheckMs} ms at most; drains ${(totals.drainMs / 1000).toFixed(1)} s`,
);
console.log(
  `  log: ${c.records} records folded strictly; ${c.queued} messages queued, ${c.delivered} delivered; ${c.fenceTokens} member placements (fence tokens), each written by one process, never going back`,
);
console.log(
  `  acknowledged sends: ${c.acknowledged}, each queued, delivered once and in its target's transcript once`,
);
console.log(
  `  transcripts: ${c.transcriptRows} rows, ${c.transcriptMessages} team messages, no message twice or split over appends; ${c.compactions} compactions`,
);
console.log(
  `  tasks: ${c.tasks}, revisions contiguous, never two owners, all completed by the end of each drain`,
);
console.log(
  `  placement constraints: ${c.constrainedMembers} ${GPU_TYPE} members (requiring ${GPU_CAPABILITY}), ${c.constrainedWrites} rows written for them by ${c.constrainedHosts} processes and ${c.constrainedPlacements} placements (fence tokens) of them, ${c.placementRowsSeen} placements rows of them seen by the checks, all on processes of the ${capableSlots} capable slot(s); the processes rows of ${c.processesChecked} processes seen, each declaring what its slot was given`,
);
console.log(
  `  snapshots: ${c.snapshots} checked, each restored plus the records after it equal to the strict fold; ${c.contexts ?? 0} members' loadContext folded to what load folds to, from ${c.contextEntries ?? 0} of their ${c.transcriptEntries ?? 0} entries`,
);
const refused = [...refusals]
  .sort(([a], [b]) => a.localeCompare(b))
  .map(([code, n]) => `${code} x${n}`)
  .join(', ');
console.log(`  refusals met as expected: ${refused === '' ? 'none' : refused}`);
const codes = [...errorCodes].map(([code, n]) => `${code} x${n}`).join(', ');
console.log(`  runtime error events (expected under chaos): ${codes === '' ? 'none' : codes}`);
if (brokeExits.length === 0) console.log('  workers whose team service broke (exit 3): none');
else {
  console.log(
    `  workers whose team service broke (exit 3, restarted; allowed): ${brokeExits.length}`,
  );
  for (const exit of brokeExits) console.log(`    - ${exit}`);
}
await cleanUp(!keep);
process.exit(0);

/**
 * One team: workers start, `killsHere` kills (with cuts and pauses between them) each followed
 * by a check, then the drain, a clean stop and the final check.
 */
async function runTeam(number, killsHere) {
  teamId = `crash-pg-team-${number}`;
  ackFiles = [];
  checker = new TeamChecker({
    pool: db,
    schema,
    teamId,
    ackFiles: () => ackFiles,
    requires: AGENT_REQUIRES,
    capabilitiesOf: (processId) => capabilitiesOf(processId, capableSlots),
  });
  incarnations = new Array(workerCount).fill(0);
  workers = [];
  phase = 'faults';
  where = `the start of team ${number}`;
  for (let slot = 0; slot < workerCount; slot++) startWorker(slot);
  await allReady();

  // ---------------------------------------------------------------------- faults
  for (let killed = 0; killed < killsHere; ) {
    await sleep(rng.int(minMs, maxMs));
    if (termChance > 0 && rng.next() < termChance) {
      const slot = rng.int(0, workerCount - 1);
      const leaving = workers[slot];
      if (leaving.ready) {
        const t0 = Date.now();
        await leaveWorker(leaving);
        const ms = Date.now() - t0;
        totals.terms++;
        totals.termMs += ms;
        totals.maxTermMs = Math.max(totals.maxTermMs, ms);
        startWorker(slot);
        where = `fault ${++totals.faults} (SIGTERM ${totals.terms}: ${leaving.processId} left in ${ms} ms, a new worker joins) of team ${number}`;
        await check();
        continue;
      }
    }
    const roll = rng.next();
    const cut = roll < cutChance;
    const pause = !cut && roll < cutChance + pauseChance;
    const slot = rng.int(0, workerCount - 1);
    const pauseMs = rng.int(leaseMs, 3 * leaseMs);
    const fault = ++totals.faults;
    const victim = workers[slot];
    if (pause) {
      pauseWorker(victim, pauseMs);
      totals.pauses++;
      totals.pausedMs += pauseMs;
      where = `fault ${fault} (pause ${totals.pauses}: ${victim.processId} stopped for ${pauseMs} ms)`;
    } else if (cut) {
      const n = await cutConnections(slot);
      totals.cuts++;
      totals.backendsCut += n;
      where = `fault ${fault} (cut ${totals.cuts}: ${n} connection(s) of ${victim.processId})`;
    } else {
      const wasReady = victim.ready;
      await killWorker(slot);
      killed++;
      totals.kills++;
      startWorker(slot);
      where = `fault ${fault} (kill ${totals.kills}: ${victim.processId}${wasReady ? '' : ', before it was ready'})`;
    }
    where += ` of team ${number}`;
    await check();
    if (!cut && !pause && (totals.kills % 25 === 0 || killed === killsHere)) {
      const k = checker.counts;
      console.log(
        `  ${totals.kills}/${kills} kills, ${totals.cuts} cuts, ${totals.pauses} pauses; team ${number}: ${k.records} records, ${k.acknowledged} sends acknowledged, ${k.delivered} delivered, ${k.tasks} tasks (${secondsSince(started)} s)`,
      );
    }
  }

  // ---------------------------------------------------------------------- drain
  phase = 'drain';
  where = `the drain of team ${number}`;
  for (const w of workers) resumeWorker(w);
  await allReady();
  for (const w of workers) send(w, { type: 'drain' });
  const drainStarted = Date.now();
  let lastSeq = -1;
  let stillSince = Date.now();
  const waiting = new Map(); // target id -> since when its mail waits
  let lastNudge = 0;
  for (;;) {
    await check();
    const pending = checker.pendingForLive();
    if (checker.lastSeq !== lastSeq) {
      lastSeq = checker.lastSeq;
      stillSince = Date.now();
    }
    const open = checker.openTasks();
    if (pending.length === 0 && open.length === 0 && Date.now() - stillSince >= QUIET_MS) break;
    if (Date.now() - drainStarted > drainMs) {
      const acked = checker.pendingAcknowledged();
      const first = pending[0];
      if (pending.length === 0 && open.length > 0) {
        const task = open[0];
        fail(where, [
          `the drain did not finish within ${drainMs} ms: ${open.length} task(s) not completed, first ${task.id} (${task.status}${task.ownerId === undefined ? '' : `, owned by ${checker.state.member(task.ownerId)?.name}`})`,
        ]);
      }
      fail(where, [
        `the drain did not finish within ${drainMs} ms: ${pending.length} message(s) pending for live members (${acked.length} acknowledged)` +
          (first === undefined
            ? ', but the log kept growing'
            : `, first ${first.id} (${first.kind}, ${first.delivery}) for ${checker.state.member(first.targetId)?.name}`),
      ]);
    }
    // Mail that waits (quiet mail, or a member nobody woke) gets its target nudged, and so does
    // the owner of a task in progress (a teammate finishes its tasks on its next drain turn).
    const now = Date.now();
    const targets = new Set(pending.map((m) => m.targetId));
    for (const task of open) if (task.status === 'in_progress') targets.add(task.ownerId);
    for (const id of waiting.keys()) if (!targets.has(id)) waiting.delete(id);
    for (const id of targets) if (!waiting.has(id)) waiting.set(id, now);
    const due = [...waiting].filter(([, since]) => now - since >= NUDGE_AFTER_MS).map(([id]) => id);
    if (due.length > 0 && now - lastNudge >= NUDGE_AFTER_MS) {
      lastNudge = now;
      for (const w of workers) send(w, { type: 'nudge', targets: due });
    }
    await sleep(DRAIN_POLL_MS);
  }
  totals.drainMs += Date.now() - drainStarted;

  // ---------------------------------------------------------------------- stop, final check
  phase = 'stop';
  where = `the clean stop of team ${number}`;
  await Promise.all(workers.map((w) => stopWorker(w)));
  where = `the final check of team ${number}`;
  const violations = [...takeProblems(), ...(await checker.final())];
  violations.push(...(await checkContexts(teamId, checker)));
  totals.checks++;
  if (violations.length > 0) fail(where, violations);
  totals.teams++;
  totals.processes += incarnations.reduce((a, b) => a + b, 0);
  for (const [key, value] of Object.entries(checker.counts)) sums[key] = (sums[key] ?? 0) + value;
}

// ------------------------------------------------------------------------ helpers

/** Starts the worker of `slot`; it reports ready over IPC. */
function startWorker(slot) {
  const incarnation = ++incarnations[slot];
  const acks = join(dir, `${teamId}-acks-${slot}-${incarnation}.txt`);
  ackFiles.push(acks);
  const argv = [
    '--url',
    url,
    '--schema',
    schema,
    '--team-id',
    teamId,
    '--slot',
    String(slot),
    '--acks',
    acks,
    '--seed',
    String(rng.int(0, 2 ** 31 - 1)),
    '--lease-ms',
    String(leaseMs),
    '--teammates',
    String(teammates),
    '--snapshot-every',
    String(snapshotEvery),
    ...(slot < capableSlots ? ['--capable'] : []),
  ];
  const child = fork(WORKER, argv, { stdio: ['ignore', 'pipe', 'pipe', 'ipc'] });
  const w = {
    slot,
    child,
    processId: `${PROCESS_PREFIX}${slot}-${child.pid}`,
    startedAt: Date.now(),
    ready: false,
    paused: undefined,
    planned: false,
    output: '',
    broke: undefined,
    waiters: [],
  };
  w.exited = new Promise((resolve) =>
    child.on('exit', (code, signal) => resolve({ code, signal })),
  );
  workers[slot] = w;
  const collect = (chunk) => {
    w.output = (w.output + chunk).slice(-8000);
  };
  child.stdout.on('data', collect);
  child.stderr.on('data', (chunk) => {
    collect(chunk);
    if (!quiet) process.stderr.write(chunk);
  });
  w.readyTimer = setTimeout(() => {
    fail(where, [
      `worker ${w.processId} did not report ready within ${READY_TIMEOUT_MS} ms${tail(w)}`,
    ]);
  }, READY_TIMEOUT_MS);
  child.on('message', (message) => {
    if (message?.type === 'ready') {
      w.ready = true;
      const ms = Date.now() - w.startedAt;
      totals.readies++;
      totals.readyMs += ms;
      totals.maxReadyMs = Math.max(totals.maxReadyMs, ms);
      clearTimeout(w.readyTimer);
      if (phase === 'drain') send(w, { type: 'drain' });
      for (const resolve of w.waiters.splice(0)) resolve();
    } else if (message?.type === 'error') {
      errorCodes.set(message.code, (errorCodes.get(message.code) ?? 0) + 1);
      if (!EXPECTED_ERROR_CODES.has(message.code)) {
        problems.push(
          `worker ${w.processId}: ${message.agent} reported runtime error ${message.code}: ${message.message}`,
        );
      }
    } else if (message?.type === 'refused') {
      refusals.set(message.code, (refusals.get(message.code) ?? 0) + 1);
    } else if (message?.type === 'broke') {
      w.broke = message.message;
    }
  });
  child.on('exit', (code, signal) => {
    clearTimeout(w.readyTimer);
    clearTimeout(w.paused);
    if (w.planned) return;
    const how = signal ?? `code ${code}`;
    if (code === EXIT_SERVICE_BROKE) {
      brokeExits.push(`${w.processId} after ${where}: ${w.broke ?? '(no reason given)'}`);
    } else {
      const hint = w.output.includes('ERR_MODULE_NOT_FOUND')
        ? ' (a module it imports is missing: was dist/ rebuilt during the run?)'
        : '';
      problems.push(`worker ${w.processId} exited by itself with ${how}${hint}${tail(w)}`);
    }
    if (phase !== 'stop') startWorker(slot);
  });
}

/** Waits until the current worker of every slot reported ready (each has its own timeout). */
/**
 * Every member's context as loadContext reads it (from its last compaction's context on) must
 * fold to what its whole transcript folds to. Run once the team's workers stopped.
 */
async function checkContexts(id, teamChecker) {
  const violations = [];
  const store = await openPostgresTeamStore({
    teamId: id,
    connectionString: url,
    schema,
    processId: 'crash-driver',
    runs: { lead: false, agentTypes: [] },
    snapshots: false,
  });
  try {
    for (const member of teamChecker.state?.members() ?? []) {
      const entries = await store.transcripts.load({ memberId: member.id });
      const context = await store.transcripts.loadContext({ memberId: member.id });
      sums.contextEntries = (sums.contextEntries ?? 0) + context.length;
      sums.transcriptEntries = (sums.transcriptEntries ?? 0) + entries.length;
      const whole = transcriptContext(entries);
      const loaded = transcriptContext(context);
      if (!isDeepStrictEqual(loaded, whole)) {
        violations.push(
          `loadContext of ${member.name} folds to ${loaded.length} messages that differ from what load folds to (${whole.length})`,
        );
      }
      sums.contexts = (sums.contexts ?? 0) + 1;
    }
  } finally {
    await store.close();
  }
  return violations;
}

async function allReady() {
  for (;;) {
    const waiting = workers.filter((w) => !w.ready);
    if (waiting.length === 0) return;
    await Promise.race(waiting.map((w) => new Promise((resolve) => w.waiters.push(resolve))));
  }
}

/** SIGSTOP now, SIGCONT after `ms` (unless it died or was resumed meanwhile). */
function pauseWorker(w, ms) {
  if (w.paused !== undefined) clearTimeout(w.paused);
  w.child.kill('SIGSTOP');
  w.paused = setTimeout(() => resumeWorker(w), ms);
  // The ready timeout does not count the time it was stopped.
  if (!w.ready) w.readyTimer.refresh();
}

function resumeWorker(w) {
  if (w.paused === undefined) return;
  clearTimeout(w.paused);
  w.paused = undefined;
  if (w.child.exitCode === null && w.child.signalCode === null) w.child.kill('SIGCONT');
}

async function killWorker(slot) {
  const w = workers[slot];
  w.planned = true;
  clearTimeout(w.readyTimer);
  clearTimeout(w.paused);
  w.child.kill('SIGKILL');
  const timer = setTimeout(
    () =>
      fail(where, [`worker ${w.processId} did not die within ${KILL_TIMEOUT_MS} ms of SIGKILL`]),
    KILL_TIMEOUT_MS,
  );
  await w.exited;
  clearTimeout(timer);
}

/**
 * A worker leaves during the run: SIGTERM (after SIGCONT if it was paused); it must exit 0, its
 * members handed over at their turn boundaries (a cut turn shows as a TIMEOUT error event).
 */
async function leaveWorker(w) {
  resumeWorker(w);
  await stopWorker(w);
}

/** SIGTERM: the worker disposes its team, closes its store and must exit 0. */
async function stopWorker(w) {
  w.planned = true;
  w.child.kill('SIGTERM');
  const timer = setTimeout(() => {
    w.child.kill('SIGKILL');
    fail(where, [
      `worker ${w.processId} did not exit within ${STOP_TIMEOUT_MS} ms of SIGTERM${tail(w)}`,
    ]);
  }, STOP_TIMEOUT_MS);
  const { code, signal } = await w.exited;
  clearTimeout(timer);
  if (code !== 0) {
    fail(where, [
      `worker ${w.processId} exited with ${signal ?? `code ${code}`} after SIGTERM${tail(w)}`,
    ]);
  }
}

/** Terminates every connection of the worker in `slot` (pool and LISTEN client). */
async function cutConnections(slot) {
  const result = await adminQuery(
    `SELECT count(*) FILTER (WHERE pg_terminate_backend(pid))::int AS n
       FROM pg_stat_activity WHERE application_name LIKE $1`,
    [`teamwire:${PROCESS_PREFIX}${slot}-%`],
  );
  return result.rows[0].n;
}

function send(w, message) {
  if (!w.child.connected) return;
  try {
    w.child.send(message);
  } catch {
    // it died meanwhile: its replacement gets the drain when it is ready
  }
}

/** Runs the database check and fails on any violation (or problem reported meanwhile). */
async function check() {
  const t0 = Date.now();
  const violations = [...takeProblems(), ...(await checker.check())];
  const ms = Date.now() - t0;
  totals.checks++;
  totals.timedChecks++;
  totals.checkMs += ms;
  totals.maxCheckMs = Math.max(totals.maxCheckMs, ms);
  if (violations.length > 0) fail(`after ${where}`, violations);
}

function takeProblems() {
  const taken = problems;
  problems = [];
  return taken;
}

function tail(w) {
  const text = w.output.trim();
  return text === '' ? '' : `\n--- output of ${w.processId} (last lines) ---\n${text}`;
}

function fail(at, violations) {
  phase = 'stop';
  for (const w of workers) {
    w.planned = true;
    w.child.kill('SIGKILL');
  }
  console.error(`crash test FAILED ${at} (seed ${seed}):`);
  for (const violation of violations.slice(0, 20)) console.error(`  - ${violation}`);
  if (violations.length > 20) console.error(`  ... and ${violations.length - 20} more`);
  if (brokeExits.length > 0) {
    console.error(`  workers whose team service broke before (exit 3): ${brokeExits.length}`);
    for (const exit of brokeExits) console.error(`    - ${exit}`);
  }
  console.error(
    `schema ${schema} kept (psql ${url} -c 'SELECT * FROM ${schema}.team_log ORDER BY seq'; drop it with DROP SCHEMA ${schema} CASCADE); ack files in ${dir} (node crash/check.mjs --schema ${schema} --acks ${dir} --capable ${capableSlots})`,
  );
  console.error(`replay: ${replay}`);
  process.exit(1);
}

async function cleanUp(drop) {
  if (drop) {
    await admin.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
    rmSync(dir, { recursive: true, force: true });
  } else {
    console.log(`  kept: schema ${schema}, ack files in ${dir}`);
  }
  await admin.end();
}

/**
 * A statement of the driver (checks, cuts), retried for up to ~10 s while PostgreSQL refuses
 * connections (too many clients, starting up) or drops them: the database may be shared with
 * other test runs. Anything else, or a server still refusing after that, fails the test.
 */
async function adminQuery(text, values) {
  for (let attempt = 1; ; attempt++) {
    try {
      return await admin.query(text, values);
    } catch (error) {
      const code = String(error?.code ?? '');
      const transient =
        ['53300', '57P01', '57P03', 'ECONNREFUSED', 'ECONNRESET'].includes(code) ||
        code.startsWith('08') ||
        /Connection terminated|timeout/i.test(String(error?.message));
      if (!transient || attempt >= 20) throw error;
      await sleep(50 * Math.min(attempt, 10));
    }
  }
}

/** Skips (exit 0) without a reachable database, unless CI is set (exit 1). */
async function probe() {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 3000 });
  client.on('error', () => {});
  try {
    await client.connect();
    await client.end();
  } catch (error) {
    await client.end().catch(() => undefined);
    const safe = url.replace(/:[^:@/]*@/, ':***@');
    const message = `PostgreSQL is not reachable at ${safe} (${error?.message ?? error})`;
    if (inCi) {
      console.error(
        `crash test FAILED: ${message}; CI needs it: start PostgreSQL or set TEAMWIRE_PG_URL`,
      );
      process.exit(1);
    }
    console.log(`crash test skipped: ${message}; set TEAMWIRE_PG_URL or start PostgreSQL`);
    process.exit(0);
  }
}

function integer(name, value, min) {
  const n = Number(value);
  if (!Number.isInteger(n) || n < min) {
    console.error(
      `crash test: --${name} must be an integer >= ${min}, got ${JSON.stringify(value)}`,
    );
    process.exit(2);
  }
  return n;
}

function sleep(ms) {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

function secondsSince(start) {
  return ((Date.now() - start) / 1000).toFixed(1);
}
