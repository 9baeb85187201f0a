import { fork } from 'node:child_process';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { type ParseArgsConfig, parseArgs as parseNodeArgs } from 'node:util';
import type { Bench, BenchContext } from './context.js';
import { durableMessagingBench } from './durable-messaging.js';
import { eventHubBench } from './event-hub.js';
import { liveEventsBench } from './live-events.js';
import { opCostBench } from './op-cost.js';
import { postgresBench } from './postgres.js';
import { POSTGRES_SCALE_ENV, postgresScaleBench, runScaleProcess } from './postgres-scale.js';
import { POSTGRES_TEAMMATE_ENV, runPostgresTeammate } from './postgres-teammate.js';
import { POSTGRES_WRITER_ENV, runPostgresWriter } from './postgres-writer.js';
import { replayBench } from './replay.js';
import {
  type Figure,
  machineInfo,
  markdownTable,
  type RunReport,
  textTable,
  writeReport,
} from './report.js';
import { scaleBench } from './scale.js';
import { snapshotsBench } from './snapshots.js';
import { telemetryBench } from './telemetry.js';
import { tokenEconomyBench } from './token-economy.js';

/** Every benchmark, in the order of the issue that asked for them. */
export const BENCHES: readonly Bench[] = [
  replayBench,
  snapshotsBench,
  opCostBench,
  durableMessagingBench,
  eventHubBench,
  scaleBench,
  tokenEconomyBench,
  postgresBench,
  postgresScaleBench,
  telemetryBench,
  liveEventsBench,
];

interface CliOptions {
  quick: boolean;
  only: string[];
  out: string | undefined;
  markdown: boolean;
  help: boolean;
}

const USAGE = `Usage: node --expose-gc dist/run.js [--quick] [--only <name>[,<name>...]] [--out <file>] [--markdown]

  --quick      smaller sizes, for CI (about two minutes on 2 cores)
  --only       run only these benchmarks: ${BENCHES.map((b) => b.name).join(', ')}
  --out        where to write the JSON results (default: results/latest.json for a full run of
               every benchmark, results/quick.json for --quick, results/partial.json with --only)
  --markdown   also print the table as Markdown (for the README's Performance section)`;

const OPTIONS = {
  quick: { type: 'boolean' },
  only: { type: 'string', multiple: true },
  out: { type: 'string' },
  markdown: { type: 'boolean' },
  help: { type: 'boolean', short: 'h' },
} as const satisfies ParseArgsConfig['options'];

function parseArgs(argv: readonly string[]): CliOptions {
  // `pnpm bench -- --quick` passes its `--` along; it ends pnpm's options, not ours
  const args = argv[0] === '--' ? argv.slice(1) : [...argv];
  let values: ReturnType<typeof readArgs>['values'];
  try {
    ({ values } = readArgs(args));
  } catch (error) {
    throw new Error(explain(error, args));
  }
  return {
    quick: values.quick ?? false,
    only: (values.only ?? []).flatMap((list) => list.split(',').filter(Boolean)),
    out: values.out,
    markdown: values.markdown ?? false,
    help: values.help ?? false,
  };
}

function readArgs(args: string[]) {
  return parseNodeArgs({ args, options: OPTIONS, strict: true, allowPositionals: false });
}

/**
 * The one-line reason for node's parse error. Node names the offending argument only in prose, so
 * the arguments are read again, leniently, as tokens to find it.
 */
function explain(error: unknown, args: string[]): string {
  const code = (error as { code?: unknown } | null)?.code;
  if (typeof code !== 'string' || !code.startsWith('ERR_PARSE_ARGS_')) throw error;
  const { tokens } = parseNodeArgs({
    args,
    options: OPTIONS,
    strict: false,
    allowPositionals: true,
    tokens: true,
  });
  for (const token of tokens) {
    if (token.kind === 'positional') return `unknown argument ${token.value}`;
    if (token.kind !== 'option') continue;
    const type = (OPTIONS as Record<string, { type: string }>)[token.name]?.type;
    if (type === undefined) return `unknown argument ${args[token.index]}`;
    if (type === 'boolean' && token.value !== undefined) {
      return `${token.rawName} takes no value (got ${args[token.index]})`;
    }
    // node takes a value that starts with a dash only when it is attached with `=`
    if (
      type === 'string' &&
      (token.value === undefined || (!token.inlineValue && token.value.startsWith('-')))
    ) {
      return `${token.rawName} needs a value`;
    }
  }
  return (error as Error).message.split('\n')[0] ?? String(error);
}

async function main(): Promise<number> {
  let options: CliOptions;
  try {
    options = parseArgs(process.argv.slice(2));
  } catch (error) {
    process.stderr.write(`${(error as Error).message}\n${USAGE}\n`);
    return 2;
  }
  if (options.help) {
    process.stdout.write(`${USAGE}\n`);
    return 0;
  }
  const unknown = options.only.filter((name) => !BENCHES.some((b) => b.name === name));
  if (unknown.length > 0) {
    process.stderr.write(`unknown benchmark ${unknown.join(', ')}\n${USAGE}\n`);
    return 2;
  }
  const selected =
    options.only.length > 0 ? BENCHES.filter((b) => options.only.includes(b.name)) : BENCHES;
  const machine = machineInfo();
  if (!machine.exposeGc) {
    process.stderr.write('note: run with node --expose-gc for settled heap figures\n');
  }
  const started = Date.now();
  const context: BenchContext = {
    quick: options.quick,
    log: (message) =>
      process.stderr.write(`[${((Date.now() - started) / 1000).toFixed(1)}s] ${message}\n`),
  };
  const figures: Figure[] = [];
  const failures: RunReport['failures'] = [];
  for (const bench of selected) {
    context.log(`== ${bench.name}: ${bench.title}`);
    const outcome = await runAlone(bench, options.quick, started);
    figures.push(...outcome.figures);
    if (outcome.error !== undefined) {
      context.log(`${bench.name} failed: ${outcome.error}`);
      failures.push({ bench: bench.name, error: outcome.error });
    }
  }
  const wallSeconds = (Date.now() - started) / 1000;
  const summary = {
    met: figures.filter((f) => f.verdict === 'met').length,
    missed: figures.filter((f) => f.verdict === 'missed').length,
    info: figures.filter((f) => f.verdict === 'info').length,
  };
  const benchDir = resolve(dirname(fileURLToPath(import.meta.url)), '..');
  const defaultName =
    options.only.length > 0 ? 'partial.json' : options.quick ? 'quick.json' : 'latest.json';
  const out = resolve(options.out ?? join(benchDir, 'results', defaultName));
  const report: RunReport = {
    format: 1,
    startedAt: new Date(started).toISOString(),
    wallSeconds,
    mode: options.quick ? 'quick' : 'full',
    command: `node ${process.execArgv.join(' ')} dist/run.js ${process.argv.slice(2).join(' ')}`
      .replace(/\s+/g, ' ')
      .trim(),
    machine,
    benches: selected.map((b) => b.name),
    figures,
    summary,
    failures,
  };
  await writeReport(out, report);

  const gib = (machine.memoryBytes / 2 ** 30).toFixed(1);
  process.stdout.write(
    `\nteamwire bench (${report.mode}) — ${machine.cpus} × ${machine.cpuModel}, ${gib} GiB, node ${machine.node}, ${machine.platform}/${machine.arch}\n\n`,
  );
  process.stdout.write(`${textTable(figures)}\n\n`);
  if (options.markdown) process.stdout.write(`${markdownTable(figures)}\n\n`);
  for (const f of figures.filter((x) => x.note !== undefined)) {
    process.stdout.write(`  ${f.bench} / ${f.name}: ${f.note}\n`);
  }
  process.stdout.write(
    `\n${summary.met} met, ${summary.missed} missed, ${summary.info} informational; ${failures.length} failed; ${wallSeconds.toFixed(1)} s; results in ${out}\n`,
  );
  return failures.length > 0 ? 1 : 0;
}

/**
 * Set in the environment of the process {@link runAlone} forks for one benchmark: its name. The
 * value of {@link BENCH_STARTED_ENV} there is when the run started (ms since the epoch), so the
 * progress lines keep the run's clock.
 */
const BENCH_ALONE_ENV = 'TEAMWIRE_BENCH_ALONE';
const BENCH_STARTED_ENV = 'TEAMWIRE_BENCH_STARTED';

/** What the process of one benchmark reports over IPC before it exits. */
type AloneReport = { type: 'figures'; figures: Figure[] } | { type: 'failed'; error: string };

/**
 * Runs one benchmark in a fresh node process (this script, with the same node options), so what
 * one benchmark leaves behind (a grown heap, code compiled for other shapes, timers, sockets)
 * cannot weigh on the next one's figures: each is measured as it would be alone. Resolves with its
 * figures, or with the error it threw or how its process ended without reporting.
 */
function runAlone(
  bench: Bench,
  quick: boolean,
  started: number,
): Promise<{ figures: Figure[]; error?: string }> {
  return new Promise((resolve) => {
    const child = fork(fileURLToPath(import.meta.url), quick ? ['--quick'] : [], {
      env: { ...process.env, [BENCH_ALONE_ENV]: bench.name, [BENCH_STARTED_ENV]: String(started) },
      execArgv: process.execArgv,
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    });
    let report: AloneReport | undefined;
    child.on('message', (message) => {
      report ??= message as AloneReport;
    });
    child.once('error', (error) => resolve({ figures: [], error: error.message }));
    child.once('exit', (code, signal) => {
      if (report?.type === 'figures') resolve({ figures: report.figures });
      else if (report?.type === 'failed') resolve({ figures: [], error: report.error });
      else resolve({ figures: [], error: `its process exited (${signal ?? code}) with no report` });
    });
  });
}

/** The side of {@link runAlone} in the forked process: runs the benchmark and reports. */
async function benchAlone(name: string): Promise<number> {
  const bench = BENCHES.find((b) => b.name === name);
  const started = Number(process.env[BENCH_STARTED_ENV] ?? Date.now());
  const context: BenchContext = {
    quick: process.argv.includes('--quick'),
    log: (message) =>
      process.stderr.write(`[${((Date.now() - started) / 1000).toFixed(1)}s] ${message}\n`),
  };
  let report: AloneReport;
  try {
    if (bench === undefined) throw new Error(`unknown benchmark ${name}`);
    report = { type: 'figures', figures: await bench.run(context) };
  } catch (error) {
    report = {
      type: 'failed',
      error: error instanceof Error ? (error.stack ?? error.message) : String(error),
    };
  }
  await new Promise<void>((resolve, reject) =>
    process.send?.(report, undefined, undefined, (error) => (error ? reject(error) : resolve())),
  );
  return report.type === 'figures' ? 0 : 1;
}

const alone = process.env[BENCH_ALONE_ENV];
// the processes a benchmark forks (the postgres ones) are not that benchmark again
delete process.env[BENCH_ALONE_ENV];
const child =
  alone !== undefined
    ? () => benchAlone(alone)
    : process.env[POSTGRES_TEAMMATE_ENV] === '1'
      ? runPostgresTeammate
      : process.env[POSTGRES_SCALE_ENV] === '1'
        ? runScaleProcess
        : process.env[POSTGRES_WRITER_ENV] === '1'
          ? runPostgresWriter
          : undefined;
if (child !== undefined) {
  // One benchmark of a run, alone in its process; or the other process of the `postgres`
  // benchmark's cross-process delivery, one of the 16 team processes of its sequencer row, or one
  // of the teammate processes of `postgres-scale`, forked by them.
  child().then(
    (code) => {
      process.exitCode = code;
      if (process.connected) process.disconnect();
      setTimeout(() => process.exit(code), 2000).unref();
    },
    (error: unknown) => {
      process.stderr.write(
        `${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`,
      );
      process.exit(1);
    },
  );
} else {
  main().then(
    (code) => {
      process.exitCode = code;
      // Whatever a failed benchmark left open (a team that never settled) must not hold the run.
      setTimeout(() => process.exit(code), 5000).unref();
    },
    (error: unknown) => {
      process.stderr.write(
        `${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`,
      );
      process.exitCode = 1;
    },
  );
}
