import { spawn } from 'node:child_process';
import { devNull } from 'node:os';
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

/**
 * Variables that would add configuration or name a program behind the forced configuration's
 * back: a parent git passes its `-c` options on in `GIT_CONFIG_PARAMETERS`, and the program
 * variables outrank the config keys that are forced off below.
 */
const PROGRAM_ENV = [
  'GIT_CONFIG',
  'GIT_CONFIG_PARAMETERS',
  'GIT_CONFIG_COUNT',
  'GIT_CONFIG_SYSTEM',
  'GIT_EXTERNAL_DIFF',
  'GIT_SSH',
  'GIT_SSH_COMMAND',
  'GIT_PROXY_COMMAND',
];
const NUMBERED_CONFIG_ENV = /^GIT_CONFIG_(KEY|VALUE)_\d+$/;

/**
 * Configuration every git command of this package runs with, as `-c` options: they outrank every
 * config file git reads, and git hands them on to the git processes it starts itself (the
 * `git status` inside `git worktree remove`, a submodule's). A member's files are untrusted input
 * to these commands; with this, no name, file or nested repository of theirs makes git run a
 * program. Each entry says which door it shuts.
 */
export const FORCED_GIT_CONFIG: readonly string[] = Object.freeze([
  // The fsmonitor hook is a program git runs (or a daemon it starts) on every index refresh; a
  // nested repository's config naming one is the way a member's files would run as the host.
  'core.fsmonitor=false',
  // Hooks are programs. None of these commands needs one, and a hooks folder that does not exist
  // holds none (post-checkout after `worktree add`, reference-transaction on `update-ref`, the
  // merge hooks of the worktree merge).
  `core.hooksPath=${devNull}`,
  // A cache of the member's untracked folders, written into the index; not needed, so not trusted.
  'core.untrackedCache=false',
  // Nested repositories are the member's: never entered, never asked whether they changed.
  'submodule.recurse=false',
  'diff.ignoreSubmodules=all',
  'status.submoduleSummary=false',
  'fetch.recurseSubmodules=false',
  // Nothing here talks to a remote. No transport (the `file` one could read a repository a member
  // wrote, `ext` runs a command), so no ssh command, proxy or credential helper is ever reached.
  'protocol.allow=never',
  'protocol.file.allow=never',
  'core.sshCommand=false',
  'credential.helper=',
  // Signing runs gpg or ssh-keygen, which may prompt; the commits made here are not signed.
  'commit.gpgSign=false',
  // Automatic housekeeping starts git processes in the background that outlive the timeout.
  'gc.auto=0',
  'maintenance.auto=false',
]);

/** Options before the command: no pager, then {@link FORCED_GIT_CONFIG}. */
const FORCED_ARGS: readonly string[] = Object.freeze([
  '--no-pager',
  ...FORCED_GIT_CONFIG.flatMap((entry) => ['-c', entry]),
]);

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
  /** Extra environment (identity for commits, optional locks); it cannot undo a forced variable. */
  env?: Record<string, string>;
  signal?: AbortSignal | undefined;
}

/** Runs the git binary with an argument array (never a shell), bounded in time and output. */
export interface GitRunner {
  readonly binary: string;
  /** Runs `git <forced options> <args>` ({@link FORCED_GIT_CONFIG}). */
  run(args: readonly string[], call?: GitCall): Promise<GitOutput>;
}

/**
 * Creates a runner for `binary` (a name looked up on `PATH`, or a path). Every command it runs
 * gets {@link FORCED_GIT_CONFIG} and an environment without inherited repository, config or
 * program variables, whatever the call site passes.
 */
export function createGitRunner(binary: string, timeoutMs: number): GitRunner {
  const inherited = withoutUnsafe(process.env);
  const forced: Record<string, string> = {
    GIT_TERMINAL_PROMPT: '0',
    LC_ALL: 'C',
    LANGUAGE: 'C',
    // The system config is the machine's, not this host's choice; it may name drivers and helpers.
    GIT_CONFIG_NOSYSTEM: '1',
    // An empty allow-list refuses every transport and outranks any `protocol.<name>.allow`.
    GIT_ALLOW_PROTOCOL: '',
    // `:` is git's "no editor": nothing is started. Every command here passes its message.
    GIT_EDITOR: ':',
    GIT_SEQUENCE_EDITOR: ':',
    GIT_PAGER: 'cat',
    // An askpass program could still prompt through a GUI; nothing here talks to a remote.
    GIT_ASKPASS: 'true',
    SSH_ASKPASS: 'true',
  };

  return {
    binary,
    run(args, call = {}) {
      // A call adds identity or lock settings; it cannot undo what is forced.
      const env = { ...inherited, ...withoutUnsafe(call.env ?? {}), ...forced };
      return runOnce(binary, args, call, env, timeoutMs);
    },
  };
}

function withoutUnsafe(env: Record<string, string | undefined>): Record<string, string> {
  const kept: Record<string, string> = {};
  for (const [key, value] of Object.entries(env)) {
    if (value === undefined || REPOSITORY_ENV.includes(key) || PROGRAM_ENV.includes(key)) continue;
    if (NUMBERED_CONFIG_ENV.test(key)) continue;
    kept[key] = value;
  }
  return kept;
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
    const child = spawn(binary, [...FORCED_ARGS, ...args], {
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
