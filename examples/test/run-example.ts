import { type ChildProcess, spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { onTestFinished } from 'vitest';

/** The examples folder: each example runs from here, as its header comment says. */
export const EXAMPLES_DIR = fileURLToPath(new URL('..', import.meta.url));

/** How an example ended. */
export interface ExampleRun {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

/** Starts `file` (e.g. `in-memory.ts`) with node and the tsx loader, as a user would run it. */
export function startExample(
  file: string,
  args: readonly string[] = [],
  env: NodeJS.ProcessEnv = {},
): { child: ChildProcess; done: Promise<ExampleRun>; output: () => string } {
  const child = spawn(process.execPath, ['--import', 'tsx', file, ...args], {
    cwd: EXAMPLES_DIR,
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  // A test that fails or times out leaves no example running behind it.
  onTestFinished(() => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  });
  let stdout = '';
  let stderr = '';
  child.stdout?.setEncoding('utf8').on('data', (chunk: string) => {
    stdout += chunk;
  });
  child.stderr?.setEncoding('utf8').on('data', (chunk: string) => {
    stderr += chunk;
  });
  const done = new Promise<ExampleRun>((resolve, reject) => {
    child.once('error', reject);
    child.once('close', (code, signal) => resolve({ code, signal, stdout, stderr }));
  });
  return { child, done, output: () => stdout };
}

/** Runs an example to its end. */
export function runExample(
  file: string,
  args: readonly string[] = [],
  env: NodeJS.ProcessEnv = {},
): Promise<ExampleRun> {
  return startExample(file, args, env).done;
}

/** Resolves with the output so far once a line of `child`'s stdout matches `pattern`. */
export function waitForLine(
  started: { child: ChildProcess; done: Promise<ExampleRun>; output: () => string },
  pattern: RegExp,
): Promise<RegExpMatchArray> {
  return new Promise((resolve, reject) => {
    const check = (): boolean => {
      const match = started.output().match(pattern);
      if (match) {
        started.child.stdout?.off('data', onData);
        resolve(match);
      }
      return match !== null;
    };
    const onData = (): void => {
      check();
    };
    if (check()) return;
    started.child.stdout?.on('data', onData);
    started.done.then((run) => {
      if (!check()) {
        reject(
          new Error(
            `exited (${run.code ?? run.signal}) before ${pattern}:\n${run.stdout}\n${run.stderr}`,
          ),
        );
      }
    }, reject);
  });
}
