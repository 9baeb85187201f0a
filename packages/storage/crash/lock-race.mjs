// The owner-lock race test (part of `pnpm test:crash`), with real processes:
//
// 1. Stale-lock race: in each round a team folder holds the lock of a dead process, and
//    --openers processes open it at the same moment. Exactly one may own it, and its
//    acknowledged record must be the only one in the log.
// 2. Kill, then resume at once: a process owns a folder and has appended; it is SIGKILLed and
//    the folder is opened again immediately. Half of the rounds leave the killed process a zombie
//    (its parent never reaps it), which `kill(pid, 0)` reports alive. Every reopen must succeed
//    with the acknowledged record in place.
//
//   node crash/lock-race.mjs [--rounds N] [--openers 6] [--resumes N]
//
// --rounds defaults to 200 (env LOCK_RACE_ROUNDS), --resumes to 40 (env LOCK_RESUMES).

import { fork, spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { hostname, tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { LOCK_FILE, openJsonlTeamStore, readTeamLog } from '../dist/index.js';

const WORKER = join(dirname(fileURLToPath(import.meta.url)), 'lock-worker.mjs');
const TEAM = '01JLOCKRACE000000000000000';

const { values } = parseArgs({
  options: {
    rounds: { type: 'string', default: process.env.LOCK_RACE_ROUNDS ?? '200' },
    openers: { type: 'string', default: '6' },
    resumes: { type: 'string', default: process.env.LOCK_RESUMES ?? '40' },
  },
});
const rounds = positive('rounds', values.rounds);
const openers = positive('openers', values.openers);
const resumes = positive('resumes', values.resumes);

function positive(name, text) {
  const value = Number(text);
  if (!Number.isSafeInteger(value) || value < 1) {
    console.error(`lock race: --${name} must be a whole number >= 1, got ${text}`);
    process.exit(2);
  }
  return value;
}

function fail(message) {
  console.error(`lock race: FAILED: ${message}`);
  process.exitCode = 1;
  throw new Error(message);
}

const root = mkdtempSync(join(tmpdir(), 'teamwire-lock-race-'));
const started = Date.now();

/** A pid that certainly names no running process: a child that has exited and been reaped. */
function deadPid() {
  return spawnSync(process.execPath, ['-e', '']).pid;
}

function next(worker, type) {
  return new Promise((resolve, reject) => {
    const onMessage = (message) => {
      if (message.type !== type) return;
      worker.off('message', onMessage);
      worker.off('exit', onExit);
      resolve(message);
    };
    const onExit = (code) =>
      reject(new Error(`worker exited with ${code} while waiting for ${type}`));
    worker.on('message', onMessage);
    worker.on('exit', onExit);
  });
}

async function staleRace() {
  const workers = Array.from({ length: openers }, () => fork(WORKER, [], { stdio: 'inherit' }));
  await Promise.all(workers.map((worker) => next(worker, 'ready')));
  const refusals = {};
  try {
    for (let round = 1; round <= rounds; round++) {
      const dir = join(root, `race-${round}`);
      await openJsonlTeamStore({ teamId: TEAM, dir }).then((store) => store.close());
      // A lock left by a dead process: every other round in the older format (pid alone).
      const stale = {
        pid: deadPid(),
        host: hostname(),
        acquiredAt: Date.now(),
        token: `stale-${round}`,
      };
      if (round % 2 === 0) Object.assign(stale, { version: 1, startTime: 1 });
      writeFileSync(join(dir, LOCK_FILE), JSON.stringify(stale));
      const answers = workers.map((worker) => next(worker, 'opened'));
      for (const worker of workers) worker.send({ type: 'open', dir, teamId: TEAM });
      const results = await Promise.all(answers);
      const owners = results.filter((result) => result.owner);
      for (const result of results) {
        if (!result.owner) {
          if (result.code !== 'TEAM_LOCKED')
            fail(`round ${round}: unexpected refusal ${result.code}: ${result.message}`);
          const kind = result.message.includes('kept changing') ? 'busy' : 'owned';
          refusals[kind] = (refusals[kind] ?? 0) + 1;
        }
      }
      if (owners.length !== 1)
        fail(`round ${round}: ${owners.length} processes own the folder at once`);
      const closes = workers.map((worker, i) =>
        results[i].owner ? next(worker, 'closed') : undefined,
      );
      for (const [i, worker] of workers.entries())
        if (results[i].owner) worker.send({ type: 'close' });
      await Promise.all(closes);
      const { records } = await readTeamLog(dir);
      if (records.length !== 1 || records[0].seq !== owners[0].seq) {
        fail(
          `round ${round}: the log holds ${records.length} records; expected the owner's one acknowledged record`,
        );
      }
      rmSync(dir, { recursive: true, force: true });
    }
  } finally {
    for (const worker of workers) worker.kill('SIGKILL');
  }
  return refusals;
}

/** Starts a holder of `dir`; as a zombie, its parent is a shell that exec'd into `sleep`. */
function hold(dir, zombie) {
  const args = [WORKER, '--hold', dir, '--team-id', TEAM];
  const child = zombie
    ? spawn('sh', ['-c', `"$0" "$@" & exec sleep 120`, process.execPath, ...args], {
        stdio: ['ignore', 'pipe', 'inherit'],
      })
    : spawn(process.execPath, args, { stdio: ['ignore', 'pipe', 'inherit'] });
  return new Promise((resolve, reject) => {
    let out = '';
    child.stdout.on('data', (chunk) => {
      out += chunk;
      const match = /held (\d+)/.exec(out);
      if (match) resolve({ pid: Number(match[1]), parent: child });
    });
    child.on('error', reject);
  });
}

/**
 * What became of a killed process: 'gone', 'zombie', 'exiting', or 'running' while the signal
 * has not taken effect yet. Polled synchronously, so this process's event loop cannot reap a
 * child in between.
 */
function fate(pid) {
  let stat;
  try {
    stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  } catch {
    return 'gone';
  }
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  if (fields[0] === 'Z') return 'zombie';
  return (Number(fields[6]) & 0x4) !== 0 ? 'exiting' : 'running';
}

async function killAndResume() {
  let zombies = 0;
  for (let round = 1; round <= resumes; round++) {
    const dir = join(root, `resume-${round}`);
    const zombie = round % 2 === 1;
    const holder = await hold(dir, zombie);
    process.kill(holder.pid, 'SIGKILL');
    let seen = fate(holder.pid);
    while (seen === 'running' || (zombie && seen === 'exiting')) seen = fate(holder.pid);
    if (zombie) {
      if (seen !== 'zombie')
        fail(`resume ${round}: the killed owner was to stay a zombie, but is ${seen}`);
      zombies++;
    }
    let store;
    try {
      store = await openJsonlTeamStore({ teamId: TEAM, dir });
    } catch (error) {
      fail(`resume ${round}${zombie ? ' (zombie owner)' : ''}: ${error.code}: ${error.message}`);
    }
    if (store.recovered.staleLock?.pid !== holder.pid)
      fail(`resume ${round}: the dead owner's lock was not reported as taken over`);
    if (store.log.lastSeq() !== 1) fail(`resume ${round}: the acknowledged record is missing`);
    await store.close();
    holder.parent.kill('SIGKILL');
    rmSync(dir, { recursive: true, force: true });
  }
  return zombies;
}

try {
  const refusals = await staleRace();
  console.log(
    `lock race: ${rounds} rounds of ${openers} processes opening a folder with a stale lock: exactly one owner each time (refused: ${JSON.stringify(refusals)})`,
  );
  const zombies = await killAndResume();
  console.log(
    `lock race: ${resumes} SIGKILLed owners reopened at once (${zombies} of them zombies): every reopen took over, nothing lost (${((Date.now() - started) / 1000).toFixed(1)} s)`,
  );
} finally {
  rmSync(root, { recursive: true, force: true });
}
