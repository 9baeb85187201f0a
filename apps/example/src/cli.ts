#!/usr/bin/env node
import { TeamError } from '@teamwire/core';
import { formatSummary, runReview } from './app.js';
import { parseArgs, UsageError } from './args.js';
import { formatFixSummary, runFix } from './fix-app.js';
import { runExitCode } from './run-summary.js';
import { runWeb } from './web-command.js';
import { runWorker } from './worker.js';
import { WORKER_OF_ENV } from './workers.js';

async function main(): Promise<number> {
  const cwd = process.env.INIT_CWD ?? process.cwd();
  let command: ReturnType<typeof parseArgs>;
  try {
    command = parseArgs(process.argv.slice(2), { cwd });
  } catch (error) {
    if (error instanceof UsageError) {
      process.stderr.write(`teamwire-example: ${error.message} (see --help)\n`);
      return 2;
    }
    throw error;
  }
  if (command.command === 'help') {
    process.stdout.write(command.text);
    return 0;
  }
  if (command.command === 'worker') return worker(command, cwd);
  if (command.command === 'web') {
    const controller = new AbortController();
    process.once('SIGINT', () => controller.abort());
    process.once('SIGTERM', () => controller.abort());
    await runWeb(command, {
      stdout: process.stdout,
      cwd,
      env: process.env,
      signal: controller.signal,
    });
    return 0;
  }
  const controller = new AbortController();
  let signals = 0;
  const onSignal = () => {
    signals++;
    if (signals > 1) process.exit(130);
    process.stderr.write('\nstopping the team (Ctrl-C again to quit at once)...\n');
    controller.abort();
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  const io = {
    stdout: process.stdout,
    stderr: process.stderr,
    // read only by `fix --approve`, for the answers to its requests
    stdin: process.stdin,
    cwd,
    env: process.env,
    signal: controller.signal,
  };
  let summary: Awaited<ReturnType<typeof runReview>>;
  if (command.command === 'fix') {
    const fixed = await runFix(command, io);
    process.stdout.write(formatFixSummary(fixed));
    summary = fixed;
  } else {
    summary = await runReview(command, io);
    process.stdout.write(formatSummary(summary));
  }
  return runExitCode(summary);
}

/**
 * A worker stops quietly on SIGTERM or Ctrl-C (its reviewers end the turns they are in, then go
 * back to the other processes at once), and when the process that started it dies (its stdin closes); a second signal ends it at
 * once.
 */
async function worker(
  command: Extract<ReturnType<typeof parseArgs>, { command: 'worker' }>,
  cwd: string,
): Promise<number> {
  const controller = new AbortController();
  let signals = 0;
  const onSignal = () => {
    signals++;
    if (signals > 1) process.exit(130);
    controller.abort();
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  const parent = process.env[WORKER_OF_ENV] !== undefined;
  if (parent) {
    process.stdin.on('end', () => controller.abort());
    process.stdin.on('error', () => controller.abort());
    process.stdin.resume();
  }
  try {
    await runWorker(command, {
      stdout: process.stdout,
      stderr: process.stderr,
      cwd,
      env: process.env,
      signal: controller.signal,
    });
  } finally {
    if (parent) process.stdin.destroy();
  }
  return 0;
}

main().then(
  (code) => {
    process.exitCode = code;
  },
  (error: unknown) => {
    const message = TeamError.isInstance(error) ? `${error.code}: ${error.message}` : String(error);
    process.stderr.write(`teamwire-example: ${message}\n`);
    process.exitCode = 1;
  },
);
