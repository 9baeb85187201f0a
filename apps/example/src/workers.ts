import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import type { AgentEvent, TeamLog, TeamService } from '@teamwire/core';
import type { AppIo } from './app-io.js';
import type { ReviewCommand } from './args.js';
import { type CompactionStat, plainLine } from './board.js';
import type { TeamObserver } from './observe.js';
import type { PgTeamDatabase } from './pg-team.js';
import { ReviewProgress, sleep } from './review-progress.js';
import type { RunHooks } from './team-run.js';
import { parseCompactionLine, parseTurnLine } from './turn-lines.js';

/*
 * The main process of a review kept in PostgreSQL: it starts `--workers` worker processes of this
 * CLI (`teamwire-example worker`), shows their lines prefixed `[worker n]`, stops them when the
 * review is done and, with `--chaos`, SIGKILLs one of them mid-run and shows its reviewers being
 * taken over by the others.
 */

/** Set by the main process for its workers: their placement id, and its pid (see `worker.ts`). */
export const WORKER_PROCESS_ID_ENV = 'TEAMWIRE_EXAMPLE_PROCESS_ID';
export const WORKER_OF_ENV = 'TEAMWIRE_EXAMPLE_WORKER_OF';

/** How long a worker may take to exit on SIGTERM before it is SIGKILLed. */
const TERM_GRACE_MS = 5000;

/** One worker process. */
export interface Worker {
  /** 1-based, as its lines are prefixed. */
  readonly index: number;
  readonly pid: number | undefined;
  /** Its process id in the store's placement. */
  readonly processId: string;
  readonly child: ChildProcess;
  /** Resolves when it has exited and all its output is shown. */
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  /** Set once it exited. */
  exit?: { code: number | null; signal: NodeJS.Signals | null };
  /** Killed on purpose by `--chaos`. */
  chaosKilled: boolean;
}

/** The worker processes of one run. */
export class WorkerFleet {
  readonly workers: Worker[] = [];
  private stopping = false;

  constructor(
    private readonly options: {
      count: number;
      /** The arguments after `node cli.js`. */
      args: readonly string[];
      cwd: string;
      env: NodeJS.ProcessEnv;
      print(line: string, stderr: boolean): void;
      /** Each turn line a worker prints. */
      onTurn?(turn: { inputTokens: number; outputTokens: number }): void;
      /** Each compaction line a worker prints. */
      onCompaction?(compaction: CompactionStat): void;
      /**
       * Every worker has exited before `stop` was called; `sawDone`: one of them exited 0 by
       * itself, which a worker does only when it saw the review finished.
       */
      onAllExited?(sawDone: boolean): void;
    },
  ) {}

  start(): void {
    const cli = fileURLToPath(new URL('./cli.js', import.meta.url));
    for (let index = 1; index <= this.options.count; index++) {
      const processId = `worker-${index}-${randomBytes(4).toString('hex')}`;
      const child = spawn(process.execPath, [cli, ...this.options.args], {
        cwd: this.options.cwd,
        env: {
          ...this.options.env,
          [WORKER_PROCESS_ID_ENV]: processId,
          [WORKER_OF_ENV]: String(process.pid),
        },
        // stdin stays open and unused: the worker ends when it closes (this process died)
        stdio: ['pipe', 'pipe', 'pipe'],
      });
      const prefix = `[worker ${index}]`;
      const lines = (stream: NodeJS.ReadableStream, stderr: boolean) =>
        new Promise<void>((resolve) => {
          const rl = createInterface({ input: stream, crlfDelay: Number.POSITIVE_INFINITY });
          rl.on('line', (line) => {
            if (!stderr) {
              const turn = parseTurnLine(line);
              if (turn) this.options.onTurn?.(turn);
              const compaction = parseCompactionLine(line);
              if (compaction) this.options.onCompaction?.(compaction);
            }
            this.options.print(`${prefix} ${line}`, stderr);
          });
          rl.on('close', resolve);
        });
      const output = Promise.all([
        lines(child.stdout as NodeJS.ReadableStream, false),
        lines(child.stderr as NodeJS.ReadableStream, true),
      ]);
      const closed = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>(
        (resolve) => {
          child.on('close', (code, signal) => resolve({ code, signal }));
          child.on('error', (error) => {
            this.options.print(`${prefix} could not run: ${error.message}`, true);
            resolve({ code: null, signal: null });
          });
        },
      );
      const worker: Worker = {
        index,
        pid: child.pid,
        processId,
        child,
        chaosKilled: false,
        exited: Promise.all([closed, output]).then(([exit]) => {
          worker.exit = exit;
          this.exited(worker);
          return exit;
        }),
      };
      child.stdin?.on('error', () => {}); // EPIPE once it is gone
      this.workers.push(worker);
    }
  }

  byProcessId(processId: string): Worker | undefined {
    return this.workers.find((w) => w.processId === processId);
  }

  /** SIGKILLs a worker, for `--chaos`; it is not restarted. */
  kill(worker: Worker): void {
    worker.chaosKilled = true;
    worker.child.kill('SIGKILL');
  }

  private exited(worker: Worker): void {
    const { code, signal } = worker.exit ?? { code: null, signal: null };
    if (this.stopping) return;
    if (!worker.chaosKilled && code !== 0) {
      this.options.print(
        `[worker ${worker.index}] exited ${signal ? `on ${signal}` : `with code ${code}`}`,
        true,
      );
    }
    if (this.workers.every((w) => w.exit !== undefined)) {
      this.options.onAllExited?.(this.workers.some((w) => w.exit?.code === 0 && !w.chaosKilled));
    }
  }

  /**
   * Stops the workers: after `graceMs` for them to exit by themselves (they do once the review is
   * done), SIGTERM, then SIGKILL for any still there after {@link TERM_GRACE_MS}.
   */
  async stop(graceMs: number): Promise<void> {
    this.stopping = true;
    const all = Promise.all(this.workers.map((w) => w.exited));
    const within = async (ms: number) => {
      let timer: NodeJS.Timeout | undefined;
      const timeout = new Promise<boolean>((resolve) => {
        timer = setTimeout(() => resolve(false), ms);
      });
      try {
        return await Promise.race([all.then(() => true), timeout]);
      } finally {
        clearTimeout(timer); // a pending timer would keep this process alive
      }
    };
    if (await within(graceMs)) return;
    for (const w of this.workers) if (w.exit === undefined) w.child.kill('SIGTERM');
    if (await within(TERM_GRACE_MS)) return;
    for (const w of this.workers) {
      if (w.exit === undefined) {
        this.options.print(`[worker ${w.index}] did not stop on SIGTERM; SIGKILL`, true);
        w.child.kill('SIGKILL');
      }
    }
    await all;
  }
}

/**
 * `--chaos`: once a reviewer has claimed a task, SIGKILLs the worker that runs it (as the store's
 * placement says), and follows its reviewers until another worker has taken each of them over.
 */
class Chaos {
  private armed = true;
  private stopped = false;

  constructor(
    private readonly options: {
      fleet: WorkerFleet;
      db: PgTeamDatabase;
      team: TeamService;
      progress: ReviewProgress;
      print(line: string): void;
    },
  ) {}

  onEvent(event: AgentEvent): void {
    if (!this.armed || event.type !== 'record') return;
    const { record } = event;
    if (record.type !== 'task' || record.task.status !== 'in_progress') return;
    const owner = record.task.ownerId;
    if (owner === undefined || owner === this.options.team.teamId) return;
    this.armed = false;
    this.strike(owner, record.task.id).catch((error: unknown) => {
      this.options.print(`chaos: could not strike: ${String(error)}`);
    });
  }

  stop(): void {
    this.stopped = true;
    this.armed = false;
  }

  private nameOf(memberId: string): string {
    try {
      return (
        this.options.team.listMembers(this.options.team.lead).find((m) => m.id === memberId)
          ?.name ?? memberId
      );
    } catch {
      return memberId;
    }
  }

  private phaseOf(memberId: string): string | undefined {
    return this.options.progress.reviewers().find((m) => m.id === memberId)?.phase;
  }

  private async strike(ownerId: string, taskId: string): Promise<void> {
    const { fleet, db, team } = this.options;
    const placed = await db.placements(team.teamId);
    const processId = placed.get(ownerId);
    const victim = processId === undefined ? undefined : fleet.byProcessId(processId);
    if (this.stopped) return;
    if (victim === undefined || victim.exit !== undefined) {
      // not placed on a live worker of ours (yet): try again at the next claim
      this.armed = true;
      return;
    }
    const members = [...placed].filter(([, p]) => p === processId).map(([m]) => m);
    fleet.kill(victim);
    const killedAt = Date.now();
    const names = members.map((m) => this.nameOf(m)).join(', ');
    this.options.print(
      `chaos: SIGKILLed worker ${victim.index} (pid ${victim.pid}, process ${victim.processId}) while ${this.nameOf(ownerId)} works on ${taskId}; its reviewers (${names}) wait for its lease (${db.settings.leaseMs} ms) to run out`,
    );
    const waiting = new Set(members);
    while (waiting.size > 0 && !this.stopped) {
      await sleep(100);
      const now = await db.placements(team.teamId).catch(() => undefined);
      if (now === undefined) continue;
      for (const memberId of [...waiting]) {
        const at = now.get(memberId);
        const seconds = ((Date.now() - killedAt) / 1000).toFixed(1);
        if (at !== undefined && at !== processId) {
          const by = fleet.byProcessId(at);
          this.options.print(
            `chaos: ${this.nameOf(memberId)} was taken over by ${by ? `worker ${by.index}` : `process ${at}`}, ${seconds}s after the kill`,
          );
          waiting.delete(memberId);
        } else if (at === undefined && this.phaseOf(memberId) !== 'active') {
          // taken over and already retired between two looks (a retired member has no placement)
          this.options.print(
            `chaos: ${this.nameOf(memberId)} was taken over and has retired, ${seconds}s after the kill`,
          );
          waiting.delete(memberId);
        }
      }
    }
    if (!this.stopped) {
      const seconds = ((Date.now() - killedAt) / 1000).toFixed(1);
      this.options.print(
        `chaos: every reviewer of worker ${victim.index} runs in a surviving worker now (${seconds}s after the kill); worker ${victim.index} is not restarted`,
      );
    }
  }
}

/**
 * What the main process of a review in PostgreSQL adds to the run: its workers, `--chaos`, and
 * waiting, once the report is written, for the reviewers in other processes to retire.
 */
export function multiProcessHooks(options: {
  /** The review's or the fix's command: `--workers`, `--chaos` (review only), `--plain`, `--pace`. */
  command: Pick<ReviewCommand, 'workers' | 'plain' | 'paceMs'> & { chaos?: boolean | undefined };
  io: AppIo;
  db: PgTeamDatabase;
  log: TeamLog;
  teamId: string;
  url: string;
  /** The subject of the lead's summary task (default the review's). */
  summarySubject?: string | undefined;
}): RunHooks {
  const { command, io, db, teamId, url } = options;
  // the lead's member id is the team id
  const progress = new ReviewProgress(teamId, options.summarySubject);
  let fleet: WorkerFleet | undefined;
  let chaos: Chaos | undefined;
  let observer: TeamObserver | undefined;
  let finished = false;
  const say = (line: string) =>
    observer?.print(command.plain || io.stdout.isTTY !== true ? plainLine(Date.now(), line) : line);
  /**
   * Every worker this process started exited before the review finished. The team lives on as
   * long as another process of it is live (a `worker --team` someone joined takes the reviewers
   * over): the run stops only when none has been for two leases, so a placement, not what this
   * process spawned, says whether the team is abandoned.
   */
  const watchOtherProcesses = async (stop: (problem: string) => void): Promise<void> => {
    let told = false;
    let aloneSince: number | undefined;
    while (!finished && !progress.finished && io.signal?.aborted !== true) {
      const live = await db.liveProcesses(teamId).catch(() => undefined);
      if (live !== undefined) {
        live.delete(db.processId);
        if (live.size > 0) {
          aloneSince = undefined;
          if (!told) {
            say(
              `the workers this process started exited; ${live.size} other process(es) of the team go on`,
            );
            told = true;
          }
        } else {
          aloneSince ??= Date.now();
          if (Date.now() - aloneSince >= 2 * db.settings.leaseMs) {
            stop(
              'every worker process exited before the review finished, and no other process of the team is live (see their lines)',
            );
            return;
          }
        }
      }
      await sleep(100);
    }
  };
  return {
    onEvent: (_agent, event) => {
      if (event.type === 'record') progress.apply(event.record);
      chaos?.onEvent(event);
    },
    async started(run) {
      observer = run.observer;
      await progress.read(options.log);
      const board = run.observer.board;
      if (command.workers === undefined) return;
      board.unknownStatus = 'in a worker';
      fleet = new WorkerFleet({
        count: command.workers,
        args: [
          'worker',
          '--store',
          url,
          '--team',
          teamId,
          ...(command.paceMs ? ['--pace', String(command.paceMs)] : []),
        ],
        cwd: io.cwd,
        env: io.env,
        print: (line, stderr) => run.observer.print(line, { stderr }),
        onTurn: (turn) => {
          board.turns++;
          board.inputTokens += turn.inputTokens;
          board.outputTokens += turn.outputTokens;
        },
        // the line itself is printed as every worker line is
        onCompaction: (stat) => board.noteCompaction(stat, { feed: false }),
        onAllExited: (sawDone) => {
          if (!sawDone) void watchOtherProcesses(run.stop);
        },
      });
      fleet.start();
      for (const w of fleet.workers) {
        say(`started worker ${w.index} (pid ${w.pid}, process ${w.processId})`);
      }
      // reviewers are placed on the live workers with the fewest members: wait until every
      // worker is there, so that the first one up does not get them all
      const deadline = Date.now() + 20_000;
      for (;;) {
        const live = await db.liveProcesses(teamId).catch(() => new Set<string>());
        const waiting = fleet.workers.filter((w) => w.exit === undefined && !live.has(w.processId));
        if (waiting.length === 0 || Date.now() > deadline || io.signal?.aborted) break;
        await sleep(50);
      }
      if (command.chaos) {
        chaos = new Chaos({ fleet, db, team: run.team, progress, print: say });
      }
    },
    async settle(team) {
      // The lead is idle once the report is written and the shutdowns are sent; the reviewers
      // retire in their own processes (a killed worker's after its lease). Wait for that, bounded.
      const deadline = Date.now() + 3 * db.settings.leaseMs + 15_000;
      for (;;) {
        if (!progress.reportDone) return;
        if (progress.finished) break;
        if (Date.now() > deadline) {
          const left = progress
            .reviewers()
            .filter((m) => m.phase === 'active')
            .map((m) => m.name);
          say(`reviewers still not retired, stopping anyway: ${left.join(', ')}`);
          return;
        }
        await sleep(100);
      }
      finished = true;
      await team.idle();
    },
    async stopped() {
      chaos?.stop();
      // a worker exits by itself once it sees every reviewer retired
      await fleet?.stop(finished ? 3000 : 0);
    },
  };
}
