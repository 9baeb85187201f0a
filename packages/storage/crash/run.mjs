// The crash test (`pnpm test:crash`): runs a scripted team in a child process, kills it with
// SIGKILL at random moments, restarts it on the same team folder (recovery runs through openTeam)
// and checks the folder after every kill; at the end a clean run drains the mailbox and every
// acknowledged send must be in its target's transcript exactly once. See the package README.
//
//   node crash/run.mjs [--kills N] [--seed S] [--min-ms 20] [--max-ms 300]
//                      [--kills-per-team 100] [--dir D] [--keep]
//
// --kills (env CRASH_KILLS): default 50 when CI is set, 100 otherwise. --seed (env CRASH_SEED)
// replays the same kill delays and scripted choices. A long run is split into teams of
// --kills-per-team kills, each ending with its own drain and final check, so a check costs the
// same at kill 5000 as at kill 50. The folder is removed after a pass unless --keep or --dir.

import { fork } from 'node:child_process';
import { randomInt } from 'node:crypto';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createRng, KILL_POINTS, parseArgs, UsageError } from './shared.mjs';
import { checkTeamFolder, readAcknowledged } from './verify.mjs';

/** How long a run aimed at a kill point may take to reach it before the timer kills it. */
const AIMED_KILL_MS = 3000;

const CHILD = join(dirname(fileURLToPath(import.meta.url)), 'child.mjs');
const READY_TIMEOUT_MS = 30_000;
const DRAIN_TIMEOUT_MS = 120_000;

let args;
try {
  args = parseArgs(process.argv.slice(2), {
    kills: { type: 'string' },
    seed: { type: 'string' },
    'min-ms': { type: 'string' },
    'max-ms': { type: 'string' },
    'kills-per-team': { type: 'string' },
    dir: { type: 'string' },
    keep: { type: 'boolean' },
  });
} catch (error) {
  if (!(error instanceof UsageError)) throw error;
  console.error(`crash test: ${error.message}`);
  process.exit(2);
}
const inCi = process.env.CI !== undefined && !['', '0', 'false'].includes(process.env.CI);
const kills = integer('kills', args.kills ?? process.env.CRASH_KILLS ?? (inCi ? 50 : 100), 1);
const seed = integer('seed', args.seed ?? process.env.CRASH_SEED ?? randomInt(2 ** 31), 0);
const minMs = integer('min-ms', args['min-ms'] ?? 20, 0);
const maxMs = integer('max-ms', args['max-ms'] ?? 300, minMs);
const perTeam = integer('kills-per-team', args['kills-per-team'] ?? 100, 1);
const root =
  args.dir === undefined
    ? mkdtempSync(join(tmpdir(), 'teamwire-crash-'))
    : resolve(String(args.dir));
mkdirSync(root, { recursive: true });
const keep = args.keep === true || args.dir !== undefined;

const replay = `node crash/run.mjs --kills ${kills} --seed ${seed} --min-ms ${minMs} --max-ms ${maxMs} --kills-per-team ${perTeam}`;
console.log(
  `crash test: ${kills} kills, seed ${seed}, kill ${minMs}-${maxMs} ms after ready, folder ${root}`,
);

const rng = createRng(seed);
const started = Date.now();
const totals = {
  kills: 0,
  teams: 0,
  checks: 0,
  recordsChecked: 0,
  staleLocks: 0,
  tornRepairs: 0,
  tornBytes: 0,
  tornTranscriptLines: 0,
  heldUndelivered: 0,
  pending: 0,
  inProgress: 0,
  provisioning: 0,
  drainRounds: 0,
  records: 0,
  queued: 0,
  delivered: 0,
  undeliverable: 0,
  acknowledged: 0,
  transcriptMessages: 0,
  compactions: 0,
  tasks: 0,
  taskRecords: 0,
  openedFromSnapshot: 0,
  snapshotsSkipped: 0,
  invalidSnapshots: 0,
  segments: 0,
  journalRewrites: 0, // restarts that rewrote a member file's end from the transcript journal
  journalTorn: 0, // restarts that cut a torn final journal line
  snapshots: 0,
};

for (let team = 1; totals.kills < kills; team++) {
  const teamId = `crash-team-${team}`;
  const dir = join(root, teamId);
  const acks = join(root, `${teamId}.acks`);
  const killsHere = Math.min(perTeam, kills - totals.kills);
  for (let i = 1; i <= killsHere; i++) {
    const killAfterMs = rng.int(minMs, maxMs);
    const childSeed = rng.int(0, 2 ** 31 - 1);
    const where = `team ${team}, kill ${totals.kills + 1} (child seed ${childSeed}, ${killAfterMs} ms)`;
    // One run in two dies at an exact moment of its own (inside a snapshot write, at a new
    // segment), unless the timer comes first: the points take turns, so every run of a few dozen
    // kills aims at each of them several times.
    const turn = totals.kills % (2 * KILL_POINTS.length);
    const killAt = turn < KILL_POINTS.length ? KILL_POINTS[turn] : 'none';
    // An aimed run gets time to reach its point; the timer still ends it if it does not.
    const timer = killAt === 'none' ? killAfterMs : Math.max(killAfterMs, AIMED_KILL_MS);
    const run = await runChild({ dir, teamId, acks, seed: childSeed, killAfterMs: timer, killAt });
    if (run.problem !== undefined) fail(where, [run.problem]);
    totals.kills++;
    if ((run.recovered?.snapshotSeq ?? 0) > 0) totals.openedFromSnapshot++;
    totals.snapshotsSkipped += run.recovered?.snapshotsSkipped ?? 0;
    if (run.recovered?.staleLock !== undefined) totals.staleLocks++;
    const journal = run.recovered?.transcriptJournal;
    if ((journal?.rewritten.length ?? 0) > 0) totals.journalRewrites++;
    if ((journal?.tornBytes ?? 0) > 0) totals.journalTorn++;
    if ((run.recovered?.tornBytes ?? 0) > 0) {
      totals.tornRepairs++;
      totals.tornBytes += run.recovered.tornBytes;
    }
    const check = await checkTeamFolder({ dir, teamId, acknowledged: readAcknowledged(acks) });
    totals.checks++;
    totals.recordsChecked += check.counts.records;
    if (check.violations.length > 0) fail(`after ${where}`, check.violations);
    for (const key of [
      'heldUndelivered',
      'pending',
      'inProgress',
      'provisioning',
      'invalidSnapshots',
    ]) {
      totals[key] += check.counts[key];
    }
    if (totals.kills % 25 === 0 || totals.kills === kills) {
      const c = check.counts;
      console.log(
        `  ${totals.kills}/${kills} kills: ${c.records} records, ${c.acknowledged} sends acknowledged, ${c.delivered} delivered, ${c.tasks} tasks (${secondsSince(started)} s)`,
      );
    }
  }

  const drained = await runChild({ dir, teamId, acks, seed: rng.int(0, 2 ** 31 - 1), drain: true });
  if (drained.problem !== undefined) fail(`the drain of team ${team}`, [drained.problem]);
  const final = await checkTeamFolder({
    dir,
    teamId,
    acknowledged: readAcknowledged(acks),
    final: true,
  });
  totals.checks++;
  totals.recordsChecked += final.counts.records;
  if (final.violations.length > 0) fail(`the final check of team ${team}`, final.violations);
  totals.teams++;
  totals.drainRounds += drained.rounds ?? 0;
  for (const key of [
    'records',
    'queued',
    'delivered',
    'undeliverable',
    'acknowledged',
    'transcriptMessages',
    'compactions',
    'tasks',
    'taskRecords',
    'segments',
    'snapshots',
  ]) {
    totals[key] += final.counts[key];
  }
  totals.tornTranscriptLines += final.counts.tornTranscriptLines;
}

const t = totals;
console.log(`crash test passed in ${secondsSince(started)} s (seed ${seed})`);
console.log(
  `  kills: ${t.kills} SIGKILLs over ${t.teams} team(s); ${t.staleLocks} restarts took over the dead owner's lock, ${t.tornRepairs} repaired a torn log tail (${t.tornBytes} bytes)`,
);
console.log(
  `  checks: ${t.checks} folder checks (${t.recordsChecked} log records read and folded in all)`,
);
console.log(
  `  left by the kills for recovery: ${t.pending} pending messages, ${t.heldUndelivered} already in the transcript but not marked delivered, ${t.inProgress} in-progress tasks, ${t.provisioning} members provisioning`,
);
console.log(
  `  log: ${t.records} records; ${t.queued} messages queued, ${t.delivered} delivered, ${t.undeliverable} left for members whose spawn a kill cut (never acknowledged)`,
);
console.log(
  `  acknowledged sends: ${t.acknowledged}, each queued and delivered exactly once into its target's transcript`,
);
console.log(
  `  transcripts: ${t.transcriptMessages} team messages, no id twice; ${t.tornTranscriptLines} torn final lines; ${t.compactions} compactions, each folding to a context`,
);
console.log(
  `  tasks: ${t.tasks} tasks, ${t.taskRecords} task records, revisions contiguous, no task with two owners`,
);
const points = countKillPoints(root);
console.log(
  `  snapshots and segments: ${points.snapshot ?? 0} kills inside a snapshot write, ${points.segment ?? 0} right after a new segment was created, ${points['segment-write'] ?? 0} inside a new segment's first write; ${t.openedFromSnapshot} restarts opened from a snapshot, ${t.snapshotsSkipped} torn snapshots skipped; ${t.snapshots} snapshots and ${t.segments} segments in the final folders, every snapshot equal to the full fold`,
);
console.log(
  `  transcript journal: ${points['journal-write'] ?? 0} kills inside a journal append, ${points['journal-synced'] ?? 0} right after a journal group was durable (its member files unwritten); ${t.journalRewrites} restarts rewrote member files from the journal, ${t.journalTorn} cut a torn journal line`,
);
// A kill right after a journal group was durable leaves its member file behind: the next open must
// have rewritten it from the journal.
if ((points['journal-synced'] ?? 0) > 0 && t.journalRewrites === 0) {
  console.error(
    'crash test FAILED: kills after a durable journal group, but no restart rewrote a member file',
  );
  process.exit(1);
}
if (t.openedFromSnapshot === 0 || (points.snapshot ?? 0) === 0) {
  console.error(
    'crash test FAILED: no restart opened from a snapshot, or no kill landed inside one',
  );
  process.exit(1);
}
if (!keep) rmSync(root, { recursive: true, force: true });
process.exit(0);

/**
 * Starts the child on the team folder. Normal runs are killed `killAfterMs` after the child says
 * it recovered; a drain run must exit 0 by itself. `problem` says what went wrong, if anything.
 */
function runChild({ dir, teamId, acks, seed: childSeed, killAfterMs, killAt, drain = false }) {
  return new Promise((done) => {
    const argv = ['--dir', dir, '--team-id', teamId, '--acks', acks, '--seed', String(childSeed)];
    if (drain) argv.push('--drain');
    if (killAt !== undefined && killAt !== 'none') argv.push('--kill-at', killAt);
    const child = fork(CHILD, argv, { stdio: ['ignore', 'pipe', 'pipe', 'ipc'] });
    let output = '';
    const collect = (chunk) => {
      output = (output + chunk).slice(-8000);
    };
    child.stdout.on('data', collect);
    child.stderr.on('data', collect);
    const outcome = { recovered: undefined, rounds: undefined, problem: undefined };
    let killedByUs = false;
    let timer = setTimeout(
      () => {
        outcome.problem = drain
          ? `the drain did not finish within ${DRAIN_TIMEOUT_MS} ms`
          : `the child did not report ready within ${READY_TIMEOUT_MS} ms`;
        child.kill('SIGKILL');
      },
      drain ? DRAIN_TIMEOUT_MS : READY_TIMEOUT_MS,
    );
    child.on('message', (message) => {
      if (message?.type === 'ready') {
        outcome.recovered = message.recovered;
        if (drain) return;
        clearTimeout(timer);
        timer = setTimeout(() => {
          killedByUs = true;
          child.kill('SIGKILL');
        }, killAfterMs);
      } else if (message?.type === 'drained') {
        outcome.rounds = message.rounds;
      }
    });
    child.on('exit', (code, signal) => {
      clearTimeout(timer);
      if (outcome.problem === undefined) {
        if (drain && (code !== 0 || outcome.rounds === undefined)) {
          outcome.problem = `the drain run exited with ${signal ?? `code ${code}`}`;
        } else if (!drain && !killedByUs && !(killAt !== 'none' && signal === 'SIGKILL')) {
          outcome.problem = `the child exited by itself with ${signal ?? `code ${code}`}`;
        }
      }
      if (outcome.problem !== undefined && output.trim() !== '') {
        outcome.problem += `\n--- child output ---\n${output.trimEnd()}`;
      }
      done(outcome);
    });
  });
}

function fail(where, violations) {
  console.error(`crash test FAILED ${where}:`);
  for (const violation of violations.slice(0, 20)) console.error(`  - ${violation}`);
  if (violations.length > 20) console.error(`  ... and ${violations.length - 20} more`);
  console.error(`team folders kept in ${root}`);
  console.error(`replay: ${replay}`);
  process.exit(1);
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

function secondsSince(start) {
  return ((Date.now() - start) / 1000).toFixed(1);
}

/** How many self-kills each kill point made, from the children's `.kill-points` files. */
function countKillPoints(folder) {
  const counts = {};
  for (const name of readdirSync(folder)) {
    if (!name.endsWith('.kill-points')) continue;
    for (const line of readFileSync(join(folder, name), 'utf8').split('\n')) {
      if (line !== '') counts[line] = (counts[line] ?? 0) + 1;
    }
  }
  return counts;
}
