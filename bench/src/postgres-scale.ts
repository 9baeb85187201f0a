import { type ChildProcess, fork } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { type EventSink, openTeam, type TeamService } from '@teamwire/core';
import { openPostgresTeamStore, type PostgresTeamStore } from '@teamwire/postgres';
import { xmlFormat } from '@teamwire/protocol';
import pg from 'pg';
import type { Bench } from './context.js';
import { pgUrl } from './postgres.js';
import { type Figure, figure } from './report.js';
import { now, percentile, within } from './stats.js';
import {
  benchAgents,
  createPolicyModel,
  errorCollector,
  PING,
  pingPolicy,
} from './team-fixture.js';
import { LEAD_TYPE, WORKER_TYPE } from './team-log.js';

/**
 * Set (to `1`) in the environment of the processes the `postgres-scale` benchmark forks: `run.js`
 * then runs {@link runScaleProcess} instead of the benchmarks.
 */
export const POSTGRES_SCALE_ENV = 'TEAMWIRE_BENCH_POSTGRES_SCALE';

const BENCH = 'postgres-scale';
/** Processes the teammates are spread over (the lead runs in a process of its own). */
const PROCESSES = 3;
/** The round trip's budget at p99, ms. */
const P99_BUDGET_MS = 50;
/** Spawning is over once no teammate went idle for this long, ms. */
const STALL_MS = 30_000;

/** What the parent tells a teammate process. */
type ToProcess =
  | {
      type: 'open';
      connectionString: string;
      schema: string;
      teamId: string;
      limits: { maxMembers: number; maxPendingPerMember: number };
    }
  | { type: 'close' };

/** What a teammate process tells the parent. */
type FromProcess = { type: 'ready' } | { type: 'error'; message: string };

/**
 * A teammate process of the benchmark: opens the team in the same schema with
 * `runs: { lead: false }`, so it claims its share of the teammates the lead spawns (placement
 * gives each new teammate to the live process running the fewest), and runs them on the policy
 * model.
 */
export async function runScaleProcess(): Promise<number> {
  let store: PostgresTeamStore | undefined;
  let team: TeamService | undefined;
  let closing: Promise<void> | undefined;
  const tell = (message: FromProcess) => process.send?.(message);
  const close = () => {
    closing ??= (async () => {
      await team?.dispose().catch(() => undefined);
      await store?.close().catch(() => undefined);
    })();
    return closing;
  };
  return new Promise<number>((resolve) => {
    process.on('disconnect', () => void close().then(() => resolve(1)));
    process.on('message', (raw) => {
      const message = raw as ToProcess;
      if (message.type === 'close') void close().then(() => resolve(0));
      else if (message.type === 'open') {
        (async () => {
          store = await openPostgresTeamStore({
            teamId: message.teamId,
            connectionString: message.connectionString,
            schema: message.schema,
            runs: { lead: false },
          });
          const events: EventSink = {
            publish(agent, event) {
              if (event.type === 'error') {
                tell({ type: 'error', message: `${agent}: ${event.code}: ${event.message}` });
              }
            },
          };
          team = await openTeam({
            teamId: message.teamId,
            log: store.log,
            transcripts: store.transcripts,
            format: xmlFormat,
            agents: benchAgents(createPolicyModel(pingPolicy)),
            lead: { agentType: LEAD_TYPE },
            events,
            idleClaim: false,
            limits: message.limits,
          });
          tell({ type: 'ready' });
        })().catch((error: unknown) => {
          tell({ type: 'error', message: error instanceof Error ? error.message : String(error) });
          void close().then(() => resolve(1));
        });
      }
    });
  });
}

/** A forked teammate process and what it reported. */
class ScaleProcess {
  readonly child: ChildProcess;
  readonly errors: string[] = [];
  readonly ready: Promise<void>;
  /** Rejects when the process reports an error or exits before it was asked to. */
  readonly failed: Promise<never>;
  private stopping = false;
  private readonly exited: Promise<unknown>;

  constructor() {
    this.child = fork(fileURLToPath(new URL('./run.js', import.meta.url)), [], {
      env: { ...process.env, [POSTGRES_SCALE_ENV]: '1' },
      execArgv: [],
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    });
    this.exited = new Promise((resolve) => this.child.once('exit', resolve));
    this.failed = new Promise<never>((_, reject) => {
      this.child.on('message', (raw) => {
        const message = raw as FromProcess;
        if (message.type === 'error') {
          this.errors.push(message.message);
          reject(new Error(`a teammate process reported: ${message.message}`));
        }
      });
      this.child.once('exit', (code) => {
        if (!this.stopping) reject(new Error(`a teammate process exited (${code})`));
      });
    });
    this.failed.catch(() => undefined);
    const ready = new Promise<void>((resolve) => {
      this.child.on('message', (raw) => {
        if ((raw as FromProcess).type === 'ready') resolve();
      });
    });
    this.ready = Promise.race([ready, this.failed]);
  }

  send(message: ToProcess): void {
    this.child.send(message);
  }

  /** Asks the process to close its team and store, and waits for it to exit (kills it if it hangs). */
  async stop(): Promise<void> {
    this.stopping = true;
    if (this.child.exitCode !== null || this.child.signalCode !== null) return;
    if (this.child.connected) this.send({ type: 'close' });
    const timer = setTimeout(() => this.child.kill('SIGKILL'), 30_000);
    await this.exited;
    clearTimeout(timer);
  }
}

/**
 * The lead's view: resolves `expect(memberId)` once a reply of that teammate to the lead is
 * delivered into the lead's transcript (its `message.delivered` record), and counts the idle
 * notifications of distinct teammates.
 */
function leadWatch(leadId: () => string) {
  const waiting = new Map<string, (at: number) => void>();
  const replies = new Map<string, string>();
  /** Idle notices queued for the lead and not yet read, by message id: their sender. */
  const notices = new Map<string, string>();
  const noticeWaiting = new Map<string, () => void>();
  const idle = new Set<string>();
  let idleWanted: { count: number; resolve: () => void } | undefined;
  let lastIdleAt = now();
  const sink: EventSink = {
    publish(_agent, event) {
      if (event.type !== 'record') return;
      const record = event.record;
      if (record.type === 'message.queued' && record.message.targetId === leadId()) {
        if (record.message.kind === 'message') {
          replies.set(record.message.id, record.message.senderId);
        } else if (record.message.kind === 'idle_notification') {
          idle.add(record.message.senderId);
          notices.set(record.message.id, record.message.senderId);
          lastIdleAt = now();
          if (idleWanted !== undefined && idle.size >= idleWanted.count) idleWanted.resolve();
        }
      } else if (record.type === 'message.delivered' && record.targetId === leadId()) {
        const noticeOf = notices.get(record.messageId);
        if (noticeOf !== undefined) {
          notices.delete(record.messageId);
          const read = noticeWaiting.get(noticeOf);
          noticeWaiting.delete(noticeOf);
          read?.();
          return;
        }
        const sender = replies.get(record.messageId);
        if (sender === undefined) return;
        replies.delete(record.messageId);
        const resolve = waiting.get(sender);
        waiting.delete(sender);
        resolve?.(now());
      }
    },
  };
  return {
    sink,
    expect(memberId: string): Promise<number> {
      return new Promise((resolve) => waiting.set(memberId, resolve));
    },
    /** Resolves once the lead read (was delivered) the next idle notice of `memberId`. */
    expectNotice(memberId: string): Promise<void> {
      return new Promise((resolve) => noticeWaiting.set(memberId, resolve));
    },
    /** Teammates whose idle notification reached the lead. */
    idle(): number {
      return idle.size;
    },
    /** When the last idle notification reached the lead ({@link now}). */
    lastIdleAt(): number {
      return lastIdleAt;
    },
    /** Whether the idle notification of `memberId` reached the lead. */
    isIdle(memberId: string): boolean {
      return idle.has(memberId);
    },
    idleCount(count: number): Promise<void> {
      if (idle.size >= count) return Promise.resolve();
      return new Promise((resolve) => {
        idleWanted = { count, resolve };
      });
    },
  };
}

/**
 * 1,000 teammates spread over three processes on one PostgreSQL team: the lead runs in this
 * process (its store runs the lead only), three forked processes claim the teammates the lead
 * spawns. Round trips one at a time, as in the one-process `scale` benchmark: the lead messages
 * a teammate (in another process), the teammate's runner delivers it, runs a turn whose model
 * call sends a reply, and the lead's runner delivers the reply into the lead's transcript. Timed
 * from `sendMessage` to that last durable write; every write crosses the shared log.
 */
export const postgresScaleBench: Bench = {
  name: BENCH,
  title: '1,000 teammates over 3 processes on PostgreSQL: lead round-trip latency',
  async run({ quick, log: say }) {
    const url = pgUrl();
    const probe = new pg.Client({ connectionString: url, connectionTimeoutMillis: 3000 });
    probe.on('error', () => {});
    try {
      await probe.connect();
    } catch (error) {
      const where = `PostgreSQL not reachable (${String(error)})`;
      if (process.env.CI === 'true') throw new Error(`${where}; CI needs it`);
      say(`skipped: ${where}; set TEAMWIRE_PG_URL to run the ${BENCH} benchmark`);
      return [];
    } finally {
      await probe.end().catch(() => undefined);
    }
    const teammates = quick ? 100 : 1000;
    const exchanges = quick ? 60 : 300;
    const warmups = 10;
    const schema = `bench_pgscale_${randomBytes(6).toString('hex')}`;
    const teamId = `01JC0PGSCALE${randomBytes(7).toString('hex').toUpperCase()}`;
    // Every teammate's idle notice may wait in the lead's mailbox at once (spawning them all).
    const limits = { maxMembers: teammates + 1, maxPendingPerMember: teammates + 1 };
    const children = Array.from({ length: PROCESSES }, () => new ScaleProcess());
    let store: PostgresTeamStore | undefined;
    let team: TeamService | undefined;
    try {
      store = await openPostgresTeamStore({
        teamId,
        connectionString: url,
        schema,
        runs: { lead: true, agentTypes: [] },
      });
      let leadId = '';
      const watch = leadWatch(() => leadId);
      const errors = errorCollector();
      team = await openTeam({
        teamId,
        log: store.log,
        transcripts: store.transcripts,
        format: xmlFormat,
        agents: benchAgents(createPolicyModel(pingPolicy)),
        lead: { agentType: LEAD_TYPE },
        events: {
          publish(agent, event) {
            watch.sink.publish(agent, event);
            errors.publish(agent, event);
          },
        },
        idleClaim: false,
        limits,
      });
      leadId = team.lead.memberId;
      for (const child of children) {
        child.send({ type: 'open', connectionString: url, schema, teamId, limits });
      }
      await within(Promise.all(children.map((c) => c.ready)), 60_000, 'the processes opening');

      say(`${BENCH}: spawning ${teammates} teammates over ${PROCESSES} processes`);
      const spawnStart = now();
      const names: string[] = [];
      const ids = new Map<string, string>();
      let next = 0;
      const spawner = async () => {
        while (next < teammates) {
          const name = `worker-${++next}`;
          const spawned = await (team as TeamService).spawnTeammate((team as TeamService).lead, {
            name,
            description: 'Implements and tests one area of the code base.',
            prompt: 'Wait for instructions from the lead; answer pings with send_message.',
            agentType: WORKER_TYPE,
          });
          names.push(name);
          ids.set(name, spawned.memberId);
        }
      };
      const failed = Promise.race(children.map((c) => c.failed));
      const progress = setInterval(
        () => say(`${BENCH}: ${watch.idle()} of ${teammates} teammates idle`),
        15_000,
      );
      try {
        await within(
          Promise.race([Promise.all(Array.from({ length: 16 }, spawner)), failed]),
          600_000,
          'spawning',
        );
        // Until every teammate is idle, or none became idle for STALL_MS (the note counts any that never is).
        while (watch.idle() < teammates) {
          const before = watch.idle();
          let timer: NodeJS.Timeout | undefined;
          await Promise.race([
            watch.idleCount(before + 1),
            failed,
            new Promise<void>((resolve) => {
              timer = setTimeout(resolve, STALL_MS);
            }),
          ]);
          clearTimeout(timer);
          if (watch.idle() === before) break;
        }
      } finally {
        clearInterval(progress);
      }
      const stuck = teammates - watch.idle();
      await within(team.idle(), 120_000, 'the lead reading the idle notifications');
      const spawnSeconds = (watch.lastIdleAt() - spawnStart) / 1000;
      const placed = await placementCounts(url, schema, teamId);
      say(`${BENCH}: placed ${placed}; ${exchanges} round trips`);

      const ready = names.filter((name) => watch.isIdle(ids.get(name) as string));
      const measured: number[] = [];
      for (let i = 0; i < warmups + exchanges; i++) {
        // every seventh teammate, so the round trips visit all three processes
        const name = ready[(i * 7) % ready.length] as string;
        const replied = watch.expect(ids.get(name) as string);
        const noticed = watch.expectNotice(ids.get(name) as string);
        const start = now();
        await team.sendMessage(team.lead, { to: name, text: `${PING} ${i}: please confirm.` });
        const end = await within(Promise.race([replied, failed]), 30_000, `the reply of ${name}`);
        if (i >= warmups) measured.push(end - start);
        // The teammate's idle notice follows its reply; once the lead read it, round trips do not
        // overlap (team.idle() sees only this process's runners, not the teammate's).
        await within(Promise.race([noticed, failed]), 30_000, `the idle notice of ${name}`);
        await within(team.idle(), 30_000, 'the lead reading the idle notification');
      }
      // Rebalancing moves one teammate at a time, so the spread may still change during the round
      // trips: a moved teammate's next message loads its transcript in its new process.
      const placedAfter = await placementCounts(url, schema, teamId);
      errors.check(BENCH);
      const failures = children.flatMap((c) => c.errors);
      if (failures.length > 0) throw new Error(`teammate processes: ${failures.join('; ')}`);

      const stall =
        stuck === 0
          ? 'every teammate went idle after its spawn prompt'
          : `${stuck} of ${teammates} teammates never sent the idle notice of their first turn (none went idle for ${STALL_MS / 1000} s after the others): a liveness bug; round trips go to the ${ready.length} others`;
      const note = `lead (its own process) -> teammate in one of ${PROCESSES} forked processes -> lead, sequential, one PostgreSQL team log shared by ${PROCESSES + 1} processes; placed ${placed} when the round trips started, ${placedAfter} when they ended; ${exchanges} round trips after ${warmups} warm-ups, each after the lead read the previous teammate's idle notice; ${watch.idle()} teammates idle ${spawnSeconds.toFixed(1)} s after the first spawn; ${stall}`;
      const p50 = percentile(measured, 0.5);
      const p99 = percentile(measured, 0.99);
      const figures: Figure[] = [
        figure({
          bench: BENCH,
          name: `message round trip p50, ${teammates} teammates over ${PROCESSES} processes`,
          subject: { label: 'p50', value: p50, unit: 'ms' },
          baseline: { label: 'budget', value: P99_BUDGET_MS, unit: 'ms' },
          ratioOf: `p50 / ${P99_BUDGET_MS} ms`,
          ratio: p50 / P99_BUDGET_MS,
          note,
        }),
        figure({
          bench: BENCH,
          name: `message round trip p99, ${teammates} teammates over ${PROCESSES} processes`,
          subject: { label: 'p99', value: p99, unit: 'ms' },
          baseline: { label: 'budget', value: P99_BUDGET_MS, unit: 'ms' },
          ratioOf: `p99 / ${P99_BUDGET_MS} ms`,
          ratio: p99 / P99_BUDGET_MS,
          target: { op: '<=', value: 1 },
          note: `max ${Math.max(...measured).toFixed(1)} ms; the round trip of the p50 row`,
        }),
      ];
      return figures;
    } finally {
      await team?.dispose().catch(() => undefined);
      await Promise.all(children.map((c) => c.stop().catch(() => undefined)));
      await store?.close().catch(() => undefined);
      const admin = new pg.Client({ connectionString: url });
      admin.on('error', () => {});
      try {
        await admin.connect();
        await admin.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
      } finally {
        await admin.end().catch(() => undefined);
      }
    }
  },
};

/** How many teammates each process runs, from the placement rows, e.g. `334 + 333 + 333`. */
async function placementCounts(url: string, schema: string, teamId: string): Promise<string> {
  const client = new pg.Client({ connectionString: url });
  client.on('error', () => {});
  await client.connect();
  try {
    const result = await client.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM "${schema}".placements
        WHERE team_id = $1 AND member_id <> $1 GROUP BY process_id ORDER BY n DESC`,
      [teamId],
    );
    return result.rows.map((row) => row.n).join(' + ');
  } finally {
    await client.end().catch(() => undefined);
  }
}
