import { spawn } from 'node:child_process';
import { TeamError } from '@teamwire/core';

/** How much of a command's stderr an error message quotes. */
const STDERR_IN_MESSAGE = 2_000;
/** Default cap on the stdout kept from one command. */
export const DEFAULT_MAX_STDOUT = 4 * 1024 * 1024;
/** stderr is only ever quoted, so little of it is kept. */
const MAX_STDERR = 64 * 1024;
/** Default time one git command may take (a checkout of a large tree is the slow one). */
export const DEFAULT_GIT_TIMEOUT_MS = 120_000;

/**
 * Variables that point git at another repository, index or work tree. A process started from a
 * git hook inherits them, and they would make every command below act on the wrong repository.
 */
const REPOSITORY_ENV = [
  'GIT_DIR',
  'GIT_WORK_TREE',
  'GIT_INDEX_FILE',
  'GIT_COMMON_DIR',
  'GIT_OBJECT_DIRECTORY',
  'GIT_ALTERNATE_OBJECT_DIRECTORIES',
  'GIT_NAMESPACE',
  'GIT_PREFIX',
  'GIT_CEILING_DIRECTORIES',
  'GIT_DISCOVERY_ACROSS_FILESYSTEM',
];

/** What one git command printed. */
export interface GitOutput {
  code: number;
  stdout: string;
  stderr: string;
  /** True when stdout was longer than the cap and its end was dropped. */
  truncated: boolean;
}

/** Options of one git command. */
export interface GitCall {
  /** Exit codes that are answers rather than failures (default `[0]`). */
  ok?: readonly number[];
  /** Cap on the kept stdout; longer output is a failure unless `allowTruncated`. */
  maxStdout?: number;
  allowTruncated?: boolean;
  /** Extra environment (identity for commits, optional locks). */
  env?: Record<string, string>;
  signal?: AbortSignal | undefined;
}

/** Runs the git binary with an argument array (never a shell), bounded in time and output. */
export interface GitRunner {
  readonly binary: string;
  run(args: readonly string[], call?: GitCall): Promise<GitOutput>;
}

/** Creates a runner for `binary` (a name looked up on `PATH`, or a path). */
export function createGitRunner(binary: string, timeoutMs: number): GitRunner {
  const baseEnv: Record<string, string> = {};
  for (const [key, value] of Object.entries(process.env)) {
    if (value !== undefined && !REPOSITORY_ENV.includes(key)) baseEnv[key] = value;
  }
  baseEnv.GIT_TERMINAL_PROMPT = '0';
  baseEnv.LC_ALL = 'C';
  baseEnv.LANGUAGE = 'C';
  // An askpass program could still prompt through a GUI; nothing here talks to a remote.
  baseEnv.GIT_ASKPASS = 'true';
  baseEnv.SSH_ASKPASS = 'true';

  return {
    binary,
    run(args, call = {}) {
      return runOnce(binary, args, call, { ...baseEnv, ...call.env }, timeoutMs);
    },
  };
}

function describe(args: readonly string[]): string {
  const shown = args.map((a) => (/^[\w@%+=:,./^~-]+$/.test(a) ? a : JSON.stringify(a))).join(' ');
  return `git ${shown}`;
}

function runOnce(
  binary: string,
  args: readonly string[],
  call: GitCall,
  env: Record<string, string>,
  timeoutMs: number,
): Promise<GitOutput> {
  const command = describe(args);
  const maxStdout = call.maxStdout ?? DEFAULT_MAX_STDOUT;
  return new Promise<GitOutput>((resolve, reject) => {
    if (call.signal?.aborted) {
      reject(new TeamError('ABORTED', `${command} was not started: aborted`));
      return;
    }
    const child = spawn(binary, [...args], {
      env,
      stdio: ['ignore', 'pipe', 'pipe'],
      windowsHide: true,
    });
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    let outBytes = 0;
    let errBytes = 0;
    let truncated = false;
    let settled = false;
    let timedOut = false;
    let aborted = false;

    const finish = (fn: () => void) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      call.signal?.removeEventListener('abort', onAbort);
      fn();
    };
    const timer = setTimeout(() => {
      timedOut = true;
      child.kill('SIGKILL');
    }, timeoutMs);
    const onAbort = () => {
      aborted = true;
      child.kill('SIGKILL');
    };
    call.signal?.addEventListener('abort', onAbort, { once: true });

    child.stdout.on('data', (chunk: Buffer) => {
      // Keep reading past the cap (a full pipe would stall git), only stop keeping.
      if (outBytes >= maxStdout) {
        truncated = true;
        return;
      }
      const room = maxStdout - outBytes;
      if (chunk.length > room) {
        truncated = true;
        out.push(chunk.subarray(0, room));
        outBytes = maxStdout;
      } else {
        out.push(chunk);
        outBytes += chunk.length;
      }
    });
    child.stderr.on('data', (chunk: Buffer) => {
      if (errBytes >= MAX_STDERR) return;
      const kept = chunk.subarray(0, MAX_STDERR - errBytes);
      err.push(kept);
      errBytes += kept.length;
    });

    child.on('error', (error: NodeJS.ErrnoException) => {
      finish(() => {
        if (error.code === 'ENOENT' || error.code === 'EACCES' || error.code === 'ENOTDIR') {
          reject(
            new TeamError('WORKSPACE_GIT_MISSING', `cannot run git (${binary}): ${error.code}`, {
              cause: error,
              details: { git: binary, errno: error.code },
            }),
          );
        } else {
          reject(
            new TeamError('WORKSPACE_FAILED', `${command} could not start: ${error.message}`, {
              cause: error,
              details: { command },
            }),
          );
        }
      });
    });

    child.on('close', (code, signal) => {
      finish(() => {
        const stdout = Buffer.concat(out).toString('utf8');
        const stderr = Buffer.concat(err).toString('utf8');
        if (aborted) {
          reject(new TeamError('ABORTED', `${command} was aborted`, { details: { command } }));
          return;
        }
        if (timedOut) {
          reject(
            new TeamError('WORKSPACE_FAILED', `${command} timed out after ${timeoutMs} ms`, {
              details: { command, timeoutMs },
            }),
          );
          return;
        }
        const exit = code ?? -1;
        if (!(call.ok ?? [0]).includes(exit)) {
          reject(failure(command, exit, signal, stderr));
          return;
        }
        if (truncated && !call.allowTruncated) {
          reject(
            new TeamError('WORKSPACE_FAILED', `${command} printed more than ${maxStdout} bytes`, {
              details: { command, maxStdout },
            }),
          );
          return;
        }
        resolve({ code: exit, stdout, stderr, truncated });
      });
    });
  });
}

function failure(
  command: string,
  exit: number,
  signal: NodeJS.Signals | null,
  stderr: string,
): TeamError {
  const text = stderr.trim();
  const quoted = text.length > STDERR_IN_MESSAGE ? `${text.slice(0, STDERR_IN_MESSAGE)}…` : text;
  const how = signal ? `was killed by ${signal}` : `failed (exit ${exit})`;
  return new TeamError('WORKSPACE_FAILED', `${command} ${how}${quoted ? `: ${quoted}` : ''}`, {
    details: { command, exitCode: exit, stderr: quoted },
  });
}

/** `git version 2.39.5` (or `2.39.5.windows.1`) as `[2, 39]`; `[0, 0]` when unreadable. */
export function parseGitVersion(text: string): readonly [number, number] {
  const match = /git version (\d+)\.(\d+)/.exec(text);
  return match ? [Number(match[1]), Number(match[2])] : [0, 0];
}

/** True when `version` is at least `major.minor`. */
export function atLeast(version: readonly [number, number], major: number, minor: number): boolean {
  return version[0] > major || (version[0] === major && version[1] >= minor);
}
