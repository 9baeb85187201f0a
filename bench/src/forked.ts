import { type ChildProcess, fork } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { within } from './stats.js';

/** What every forked benchmark process may report: a failure, which fails the row. */
export interface ForkedError {
  type: 'error';
  message: string;
}

/**
 * A process forked from `run.js` with `env` set to `1` (so it runs the child side of a benchmark
 * instead of the benchmarks), spoken to over IPC. An `error` report or an exit before
 * {@link stop} rejects {@link failed}; every wait through {@link ask} and {@link wait} races it
 * and is bounded, so a crashed or stuck child fails the row instead of hanging the run.
 */
export class ForkedProcess<To extends { type: string }, From extends { type: string }> {
  readonly child: ChildProcess;
  readonly errors: string[] = [];
  /** Rejects when the process reports an error or exits before it was asked to. */
  readonly failed: Promise<never>;
  private stopping = false;
  private readonly exited: Promise<unknown>;
  private readonly waiters: { type: string; resolve: (m: From) => void }[] = [];

  /** `name` names the process in failures; `execArgv` is given to its node. */
  constructor(
    readonly name: string,
    env: string,
    execArgv: string[] = [],
  ) {
    this.child = fork(fileURLToPath(new URL('./run.js', import.meta.url)), [], {
      env: { ...process.env, [env]: '1' },
      execArgv,
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    });
    this.exited = new Promise((resolve) => this.child.once('exit', resolve));
    this.failed = new Promise<never>((_, reject) => {
      this.child.on('message', (raw) => {
        const message = raw as From | ForkedError;
        if (message.type === 'error') {
          const text = (message as ForkedError).message;
          this.errors.push(text);
          reject(new Error(`${this.name} reported: ${text}`));
          return;
        }
        const i = this.waiters.findIndex((w) => w.type === message.type);
        if (i >= 0) this.waiters.splice(i, 1)[0]?.resolve(message as From);
      });
      this.child.once('exit', (code, signal) => {
        if (!this.stopping) reject(new Error(`${this.name} exited (${signal ?? code})`));
      });
    });
    this.failed.catch(() => undefined);
  }

  send(message: To): void {
    this.child.send(message);
  }

  /** The next report of `type` (registered now, so one sent after this call is not missed). */
  wait<T extends From['type']>(
    type: T,
    ms: number,
    what: string,
  ): Promise<Extract<From, { type: T }>> {
    const next = new Promise<From>((resolve) => this.waiters.push({ type, resolve }));
    return within(
      Promise.race([next, this.failed]) as Promise<Extract<From, { type: T }>>,
      ms,
      `${what} (${this.name})`,
    );
  }

  /** Sends `message` and waits for the next report of `type`. */
  ask<T extends From['type']>(
    message: To,
    type: T,
    ms: number,
    what: string,
  ): Promise<Extract<From, { type: T }>> {
    const reply = this.wait(type, ms, what);
    this.send(message);
    return reply;
  }

  /** Asks the process to close (`close`) and waits for it to exit; kills it if it hangs. */
  async stop(close: To, ms = 15_000): Promise<void> {
    this.stopping = true;
    if (this.child.exitCode !== null || this.child.signalCode !== null) return;
    if (this.child.connected) this.send(close);
    const timer = setTimeout(() => this.child.kill('SIGKILL'), ms);
    await this.exited;
    clearTimeout(timer);
  }
}
