// The liveness test (`pnpm test:liveness`): the example's review team, on its offline policy
// model (no API key), run for real (the CLI, its worker processes, its dashboard) under random
// perturbations drawn from a seed: interrupt, shutdown, an operator's message or task, a burst of
// mail past a reviewer's context window, the member limit reached (the operator takes the last
// slot of a full review team, or the fix job has more folders than slots), the fix job's commits
// asked for with `--approve` and answered at random (approved, rejected, left to expire), and,
// for a team spread over worker processes on PostgreSQL, SIGKILL, SIGSTOP and SIGTERM of a worker
// and a worker joining. Each run must end with every task completed or deleted, every message delivered or
// dead-lettered with a reason, the report written (every folder in it), no identical failing tool
// call repeated past core's bound (DEFAULT_MAX_REPEATED_FAILURES), and at most 1.3x the model
// calls of the same team unperturbed, plus what the perturbations themselves require (see
// `allowance`); a fix whose folder was refused three times must exit 1 naming exactly that folder.
// Unperturbed runs (baselines) run once per team shape and are checked the same way.
//
//   node liveness/run.mjs [--runs N] [--seed S] [--parallel P] [--only KIND] [--timeout-ms 90000]
//                         [--url postgres://...] [--keep] [--verbose]
//
// --runs (env LIVENESS_RUNS): perturbed runs, default 50 (CI runs 50; run 1000 before a release).
// --seed (env LIVENESS_SEED): run i uses seed S+i; `--runs 1 --seed <its seed>` replays one run
//   (same plan; the processes' timing still varies, so a replay is likely, not certain, to hit
//   the same state).
// --parallel: runs at once, default 3 (each run is one to four processes, mostly waiting).
// --only KIND: only runs whose plan holds that perturbation (the seeds of the others are skipped).
// --timeout-ms: a run not finished by then is a failure (a stalled or spinning team).
// --url (env TEAMWIRE_PG_URL): the database of spread teams, default
//   postgres://postgres@127.0.0.1:5432/test; each run gets a fresh schema, dropped after a pass.
//   Without a reachable PostgreSQL the spread runs are skipped, unless CI is set: then it fails.
// --keep: keep every run's folder and schema (a failed run's are always kept).
// --verbose: a line per run, not only per failure.
//
// Exit 0 when every run held; 1 with each failing run's seed, what failed and its replay command.

import { randomInt } from 'node:crypto';
import { existsSync } from 'node:fs';
import pg from 'pg';
import { parseArgs, UsageError } from '../../../scripts/crash-support.mjs';
import { describePlan, PERTURBATIONS, planRun } from './scenario.mjs';
import { CLI, runTeam } from './team-run.mjs';

/** The perturbed run may make this many times the model calls of the unperturbed one... */
const CALLS_FACTOR = 1.3;
/** ...plus, for each perturbation that hit, what it requires (see `allowance`). */
const LEAD_LOOK = 3;
/** A perturbed run gets 4x its unperturbed run's wall time, at least this long, to finish. */
const MIN_TIMEOUT_MS = 45_000;

let args;
try {
  args = parseArgs(process.argv.slice(2), {
    runs: { type: 'string' },
    seed: { type: 'string' },
    parallel: { type: 'string' },
    only: { type: 'string' },
    'timeout-ms': { type: 'string' },
    url: { type: 'string' },
    keep: { type: 'boolean' },
    verbose: { type: 'boolean' },
  });
} catch (error) {
  if (!(error instanceof UsageError)) throw error;
  console.error(`liveness test: ${error.message}`);
  process.exit(2);
}
const inCi = process.env.CI !== undefined && !['', '0', 'false'].includes(process.env.CI);
const runs = integer('runs', args.runs ?? process.env.LIVENESS_RUNS ?? 50, 1);
const baseSeed = integer('seed', args.seed ?? process.env.LIVENESS_SEED ?? randomInt(2 ** 31), 0);
const parallel = integer('parallel', args.parallel ?? 3, 1);
const timeoutMs = integer('timeout-ms', args['timeout-ms'] ?? 90_000, 1000);
const url = String(
  args.url ?? process.env.TEAMWIRE_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/test',
);
const only = args.only;
if (only !== undefined && !PERTURBATIONS.includes(only)) {
  console.error(`liveness test: --only must be one of ${PERTURBATIONS.join(', ')}`);
  process.exit(2);
}
const keep = args.keep === true;
const verbose = args.verbose === true;
if (!existsSync(CLI)) {
  console.error(
    `liveness test: ${CLI} is missing; build the example first (pnpm test:liveness does)`,
  );
  process.exit(2);
}

const replay = (seed) =>
  `pnpm test:liveness --runs 1 --seed ${seed}${only === undefined ? '' : ` --only ${only}`}`;

const admin = new pg.Pool({ connectionString: url, max: 4, application_name: 'teamwire-liveness' });
admin.on('error', () => {});
const pgProblem = await probe();
if (pgProblem !== undefined && inCi) {
  console.error(
    `liveness test FAILED: ${pgProblem}; CI needs it: start PostgreSQL or set TEAMWIRE_PG_URL`,
  );
  process.exit(1);
}

const plans = [];
for (let i = 0; plans.length < runs; i++) {
  const plan = planRun((baseSeed + i) >>> 0);
  if (only !== undefined && !plan.perturbations.some((p) => p.kind === only)) continue;
  plans.push(plan);
  if (i > runs * 1000) break;
}
console.log(
  `liveness test: ${plans.length} perturbed runs, seeds ${baseSeed}..${plans.at(-1)?.seed}, ${parallel} at once, timeout ${timeoutMs / 1000} s per run${only ? `, only ${only}` : ''}`,
);
if (pgProblem !== undefined) {
  console.log(`  ${pgProblem}: the runs of teams spread over processes are skipped`);
}

const started = Date.now();
const slots = semaphore(parallel);
const baselines = new Map();
const results = [];
const failures = [];
let finished = 0;

process.on('SIGINT', () => {
  console.error('liveness test interrupted');
  process.exit(130);
});

await Promise.all(plans.map((plan, i) => runOne(plan, i + 1)));
await admin.end();
summarize();
process.exit(failures.length === 0 ? 0 : 1);

async function runOne(plan, number) {
  if (plan.team.kind === 'spread' && pgProblem !== undefined) {
    results.push({ plan, skipped: true });
    return;
  }
  const baseline = await baselineOf(plan);
  // a perturbed run may take a few leases and a redone task longer than the unperturbed one; one
  // far slower has stalled (the lead of the example waits up to 10 minutes for a team that moves)
  const limitMs = Math.min(timeoutMs, Math.max(MIN_TIMEOUT_MS, 4 * baseline.wallMs));
  const result = await slots.run(() =>
    runTeam(plan, { perturb: true, url, timeoutMs: limitMs, keep: true, admin }),
  );
  const violations = [...result.violations];
  let bound;
  if (baseline.ok) {
    bound = Math.floor(CALLS_FACTOR * baseline.totalCalls + allowance(result.applied, baseline));
    if (result.totalCalls > bound) {
      violations.push(
        `${result.totalCalls} model calls, more than ${bound} (${CALLS_FACTOR} x ${baseline.totalCalls} of the unperturbed run + ${bound - Math.floor(CALLS_FACTOR * baseline.totalCalls)} the perturbations require): ${perMember(result.calls)} against ${perMember(baseline.calls)}`,
      );
    }
  } else {
    violations.push(`the unperturbed run of this team failed (see its own failure): no baseline`);
  }
  const record = { plan, number, result, baseline, bound, violations };
  results.push(record);
  finished++;
  if (violations.length > 0) {
    failures.push(record);
    report(record);
  } else {
    if (!keep) await removeRun(result);
    if (verbose) {
      console.log(
        `  ok  run ${number} seed ${plan.seed}: ${describePlan(plan)} — ${result.totalCalls} calls (baseline ${baseline.totalCalls}, bound ${bound}), ${(result.wallMs / 1000).toFixed(1)} s; ${result.applied.map((a) => a.note).join('; ')}`,
      );
    }
  }
  if (!verbose && (finished % 10 === 0 || finished === plans.length)) {
    console.log(
      `  ${finished}/${plans.length} runs, ${failures.length} failed (${secondsSince(started)} s)`,
    );
  }
}

/** The unperturbed run of a team shape: run once, shared by every run of that shape. */
function baselineOf(plan) {
  let pending = baselines.get(plan.key);
  if (pending === undefined) {
    pending = slots
      .run(() => runTeam(plan, { perturb: false, url, timeoutMs, keep: true, admin }))
      .then(async (result) => {
        if (!result.ok) {
          const record = {
            plan,
            number: `baseline ${plan.key}`,
            result,
            violations: result.violations,
          };
          failures.push(record);
          report(record, true);
        } else if (!keep) {
          await removeRun(result);
        }
        return result;
      });
    baselines.set(plan.key, pending);
  }
  return pending;
}

/**
 * The model calls the perturbations that hit require beyond the unperturbed run. `perTask`: the
 * calls of one review task in the unperturbed run (a reviewer's calls per folder, rounded up).
 * Each hit may also make the lead look at the team again (LEAD_LOOK: its wait returns, it reads
 * the board, it waits again).
 */
function allowance(applied, baseline) {
  const reviewerCalls = [...baseline.calls]
    .filter(([name]) => name !== 'lead')
    .reduce((n, [, c]) => n + c, 0);
  const perTask = Math.ceil(reviewerCalls / Math.max(1, baseline.folders));
  let extra = 0;
  for (const a of applied) {
    if (!a.done) continue;
    extra += LEAD_LOOK;
    switch (a.kind) {
      case 'interrupt':
        extra += 2; // the call cut off, made again; the resumed turn's end
        break;
      case 'shutdown':
      case 'task':
        extra += perTask + 2; // one task (re)done by another member, its claim and end
        break;
      case 'message':
        extra += a.to === 'lead' ? 4 : 2; // a turn on the mail (the lead reads the team first)
        break;
      case 'burst':
        extra += (a.sent ?? 0) + 2; // at most a turn per message
        break;
      case 'kill':
      case 'stop':
      case 'leave':
        extra += (a.members ?? 1) * (perTask + 2); // each of its members' task, resumed elsewhere
        break;
      case 'approvals':
        // `fix --approve`: each refused commit is written again and asked again (two calls of its
        // reviewer), and the lead may look at the team again; each request may end a wait of the
        // lead once more (a decision comes with it)
        extra += (a.refusals ?? 0) * (2 + LEAD_LOOK) + (a.requests ?? 0);
        break;
      case 'limit':
        // the fix job: the folders past the limit; a review: the operator's message to the lead
        extra += a.extraFolders === undefined ? 4 : a.extraFolders * (perTask + 2);
        break;
      default:
        break;
    }
  }
  return extra;
}

function report(record, isBaseline = false) {
  const { plan, result } = record;
  const what = isBaseline ? `the unperturbed run of ${plan.key}` : `run ${record.number}`;
  const lines = [`liveness FAILED: ${what} (seed ${plan.seed}): ${describePlan(plan)}`];
  for (const v of record.violations.slice(0, 20)) lines.push(`  - ${v}`);
  if (record.violations.length > 20) lines.push(`  ... and ${record.violations.length - 20} more`);
  if (!isBaseline) {
    for (const a of result.applied)
      lines.push(`  ${a.kind}: ${a.done ? '' : '(missed) '}${a.note}`);
  }
  lines.push(
    `  model calls: ${result.totalCalls} (${perMember(result.calls)})` +
      (record.baseline?.ok
        ? `; unperturbed ${record.baseline.totalCalls} (${perMember(record.baseline.calls)}), bound ${record.bound}`
        : ''),
  );
  if (result.failedMembers.length > 0)
    lines.push(`  failed members: ${result.failedMembers.join(', ')}`);
  if (result.errorCodes.size > 0) lines.push(`  runtime errors: ${counts(result.errorCodes)}`);
  lines.push(`  --- last lines of the run ---`);
  for (const l of result.tail) lines.push(`  | ${l}`);
  lines.push(
    `  kept: ${result.dir}${result.schema ? `, schema ${result.schema} (and ${result.schema}_example)` : ''}`,
  );
  lines.push(`  replay: ${replay(plan.seed)}`);
  console.log(lines.join('\n'));
}

function summarize() {
  const done = results.filter((r) => !r.skipped);
  const skipped = results.length - done.length;
  const seconds = secondsSince(started);
  console.log(
    failures.length === 0
      ? `liveness test passed: ${done.length} perturbed runs in ${seconds} s (base seed ${baseSeed})${skipped ? `, ${skipped} skipped (no PostgreSQL)` : ''}`
      : `liveness test FAILED: ${failures.length} failure(s) in ${done.length} perturbed runs, ${seconds} s (base seed ${baseSeed})`,
  );
  const planned = new Map();
  const hit = new Map();
  for (const r of done) {
    for (const p of r.plan.perturbations) planned.set(p.kind, (planned.get(p.kind) ?? 0) + 1);
    for (const a of r.result.applied) if (a.done) hit.set(a.kind, (hit.get(a.kind) ?? 0) + 1);
  }
  console.log(
    `  perturbations (hit/planned): ${PERTURBATIONS.map((k) => `${k} ${hit.get(k) ?? 0}/${planned.get(k) ?? 0}`).join(', ')}`,
  );
  const kinds = new Map();
  for (const r of done) kinds.set(r.plan.team.kind, (kinds.get(r.plan.team.kind) ?? 0) + 1);
  console.log(
    `  teams: ${counts(kinds)}; ${baselines.size} unperturbed baseline(s), one per team shape`,
  );
  const ratios = done
    .filter((r) => r.baseline?.ok && r.result.totalCalls > 0)
    .map((r) => r.result.totalCalls / r.baseline.totalCalls)
    .sort((a, b) => a - b);
  if (ratios.length > 0) {
    const q = (f) => ratios[Math.min(ratios.length - 1, Math.floor(f * ratios.length))].toFixed(2);
    console.log(
      `  model calls perturbed / unperturbed: median ${q(0.5)}, p90 ${q(0.9)}, max ${q(1)} (bound ${CALLS_FACTOR} + what the perturbations require)`,
    );
  }
  const walls = new Map();
  for (const r of done) {
    walls.set(r.plan.team.kind, [...(walls.get(r.plan.team.kind) ?? []), r.result.wallMs]);
  }
  const wallLine = [...walls].map(([kind, ms]) => {
    const avg = ms.reduce((a, b) => a + b, 0) / ms.length / 1000;
    return `${kind} ${avg.toFixed(1)} s on average, ${(Math.max(...ms) / 1000).toFixed(1)} s at most`;
  });
  if (wallLine.length > 0) console.log(`  wall time per run: ${wallLine.join('; ')}`);
  const letters = new Map();
  const errors = new Map();
  let records = 0;
  for (const r of done) {
    records += r.result.records;
    for (const [k, n] of r.result.deadLetters) letters.set(k, (letters.get(k) ?? 0) + n);
    for (const [k, n] of r.result.errorCodes) errors.set(k, (errors.get(k) ?? 0) + n);
  }
  console.log(
    `  log: ${records} records folded; dead letters: ${letters.size === 0 ? 'none' : counts(letters)}`,
  );
  console.log(
    `  runtime errors printed by the runs: ${errors.size === 0 ? 'none' : counts(errors)}`,
  );
  if (failures.length > 0) {
    console.log('  failing seeds:');
    for (const f of failures) {
      console.log(`    ${f.plan.seed} (${describePlan(f.plan)}): ${replay(f.plan.seed)}`);
    }
  }
}

async function removeRun(result) {
  const { rmSync } = await import('node:fs');
  rmSync(result.dir, { recursive: true, force: true });
  if (result.schema !== undefined) {
    await admin.query(`DROP SCHEMA IF EXISTS "${result.schema}" CASCADE`);
    await admin.query(`DROP SCHEMA IF EXISTS "${result.schema}_example" CASCADE`);
  }
}

function perMember(calls) {
  return [...calls].map(([name, n]) => `${name} ${n}`).join(', ');
}

function counts(map) {
  return [...map]
    .sort(([a], [b]) => String(a).localeCompare(String(b)))
    .map(([k, n]) => `${k} x${n}`)
    .join(', ');
}

/** At most `n` tasks at once, in the order they asked. */
function semaphore(n) {
  let free = n;
  const queue = [];
  return {
    async run(task) {
      if (free > 0) free--;
      else await new Promise((resolve) => queue.push(resolve));
      try {
        return await task();
      } finally {
        const next = queue.shift();
        if (next) next();
        else free++;
      }
    },
  };
}

/** Why PostgreSQL cannot be used, or undefined when it answers. */
async function probe() {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 3000 });
  client.on('error', () => {});
  try {
    await client.connect();
    await client.end();
    return undefined;
  } catch (error) {
    await client.end().catch(() => undefined);
    const safe = url.replace(/:[^:@/]*@/, ':***@');
    return `PostgreSQL is not reachable at ${safe} (${error?.message ?? error})`;
  }
}

function integer(name, value, min) {
  const n = Number(value);
  if (!Number.isInteger(n) || n < min) {
    console.error(
      `liveness test: --${name} must be an integer >= ${min}, got ${JSON.stringify(value)}`,
    );
    process.exit(2);
  }
  return n;
}

function secondsSince(start) {
  return ((Date.now() - start) / 1000).toFixed(1);
}
