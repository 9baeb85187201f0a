import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { type EventSink, openTeam, type TeamLog, type TeamService } from '@teamwire/core';
import { createScriptedModel } from '@teamwire/core/testing';
import {
  openPostgresTeamStore,
  type PostgresSequencer,
  type PostgresTeamStore,
  type SequencerStats,
} from '@teamwire/postgres';
import { xmlFormat } from '@teamwire/protocol';
import pg from 'pg';
import { benchAgents } from './team-fixture.js';
import { LEAD_TYPE, WORKER_TYPE } from './team-log.js';

/**
 * Set (to `1`) in the environment of the team processes the `postgres` benchmark's 16-process
 * row forks: `run.js` then runs {@link runPostgresWriter} instead of the benchmarks.
 */
export const POSTGRES_WRITER_ENV = 'TEAMWIRE_BENCH_POSTGRES_WRITER';

/**
 * Set to a folder to have the team processes write a `--cpu-prof` profile each there, beside
 * `rounds-<pid>.json`: the rounds' windows (`[start, end]`, µs of the profile's clock, from a
 * `send` to the `settle` after it), so the profile can be read over the rounds alone.
 */
export const POSTGRES_WRITER_PROFILE_ENV = 'TEAMWIRE_BENCH_PG16_PROFILE';

/** A placement that runs nothing here (the process only writes, as the lead's client would). */
export const RUNS_NOTHING = {
  specificationVersion: 'v1' as const,
  async start() {},
  runsHere: () => false,
  candidatesChanged() {},
  close: async () => {},
};

/**
 * A team log that counts the appends that pass through it (and how many of each size, while
 * `sizing` is set), and delegates everything.
 */
export function countingLog(
  log: TeamLog,
): TeamLog & { appends: number; sizing: boolean; sizes: Map<number, number> } {
  const counted = {
    specificationVersion: log.specificationVersion,
    teamId: log.teamId,
    shared: log.shared,
    appends: 0,
    sizing: false,
    sizes: new Map<number, number>(),
    append(options: Parameters<TeamLog['append']>[0]) {
      counted.appends++;
      if (counted.sizing) {
        const size = options.records.length;
        counted.sizes.set(size, (counted.sizes.get(size) ?? 0) + 1);
      }
      return log.append(options);
    },
    read: (options?: Parameters<TeamLog['read']>[0]) => log.read(options),
    subscribe: (options: Parameters<TeamLog['subscribe']>[0]) => log.subscribe(options),
    lastSeq: () => log.lastSeq(),
    close: () => log.close(),
  };
  return counted;
}

/**
 * A pool for a store, with the settings the store gives the pool it makes itself; the caller ends
 * it (a store never ends a pool it was given).
 */
export function storePool(connectionString: string): pg.Pool {
  const pool = new pg.Pool({
    connectionString,
    max: 10,
    connectionTimeoutMillis: 5000,
    keepAlive: true,
    keepAliveInitialDelayMillis: 10_000,
  });
  pool.on('error', () => {});
  return pool;
}

type Outcomes = SequencerStats['outcomes'];

/** What the parent tells a team process. */
export type ToWriter =
  | {
      type: 'open';
      connectionString: string;
      schema: string;
      teamId: string;
      /** Runs the lead and spawns `spawn` (process 0); the others run nothing. */
      lead: boolean;
      spawn: string[];
      maxMembers: number;
      /** The teammate this process messages, and the texts of every round, `perRound` a round. */
      to: string;
      texts: string[];
      perRound: number;
    }
  /** Until one proposal of this process is committed by the sequencer (unless it is the sequencer). */
  | { type: 'probe' }
  /** Send the texts of `round`, one `sendMessage` after the other. */
  | { type: 'send'; round: number; sizing: boolean }
  /** Report once this process's service has read and folded the log up to `seq`. */
  | { type: 'settle'; seq: number }
  | { type: 'close' };

/** What one process did from a `send` to the `settle` after it. */
export interface WriterRound {
  /** Appends this process made itself, and how many of each size (when sized). */
  appends: number;
  /** Statements this process's store ran (its pool's checkouts; the doorbell's not included). */
  statements: number;
  sizes: [number, number][];
  /** CPU (user + system) and event-loop utilization of this process over the round. */
  cpuMs: number;
  /** The kernel's part of `cpuMs` (system time). */
  systemMs: number;
  busy: number;
  /** Answers to this process's proposals, and proposals of others it sequenced. */
  outcomes: Outcomes;
  served: number;
  leading: boolean;
}

/** What a team process tells the parent. */
export type FromWriter =
  | { type: 'ready'; processId: string; members: number; seq: number }
  | { type: 'probed'; leading: boolean; attempts: number }
  | { type: 'sent'; seq: number }
  /** `round` from the last `send` on (none before the first). */
  | { type: 'settled'; seq: number; round?: WriterRound }
  | { type: 'error'; message: string };

function tell(message: FromWriter): void {
  process.send?.(message);
}

function failure(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/**
 * One of the 16 processes of the `postgres` benchmark's sequencer row: a store with its own pool
 * and doorbell, and a team service (`openTeam`) folding every record of the team. Process 0 runs
 * the lead (and spawns the teammates, which no process runs); the others run nothing and only
 * write. Every process sends its own teammate the texts of a round when told, and reports its
 * appends, CPU and sequencer outcomes once it has read the round's last record.
 */
export async function runPostgresWriter(): Promise<number> {
  let store: PostgresTeamStore | undefined;
  let pool: pg.Pool | undefined;
  let statements = 0;
  let team: TeamService | undefined;
  let log: ReturnType<typeof countingLog> | undefined;
  let opened: Extract<ToWriter, { type: 'open' }> | undefined;
  let closing: Promise<void> | undefined;
  /** The highest seq this process's service published (its own records and those read back). */
  let seen = 0;
  let settling: { seq: number; resolve: () => void } | undefined;
  let roundStart:
    | {
        cpu: NodeJS.CpuUsage;
        loop: ReturnType<typeof performance.eventLoopUtilization>;
        at: number;
      }
    | undefined;
  let before = {
    appends: 0,
    statements: 0,
    outcomes: undefined as Outcomes | undefined,
    served: 0,
  };
  const micros = () => Number(process.hrtime.bigint() / 1000n);
  const windows: [number, number][] = [];
  const close = () => {
    closing ??= (async () => {
      const profile = process.env[POSTGRES_WRITER_PROFILE_ENV];
      if (profile !== undefined) {
        writeFileSync(join(profile, `rounds-${process.pid}.json`), JSON.stringify(windows));
      }
      await team?.dispose().catch(() => undefined);
      await store?.close().catch(() => undefined);
      await pool?.end().catch(() => undefined);
    })();
    return closing;
  };
  const sequencer = () => {
    const found = store?.log.shared?.sequencer as PostgresSequencer | undefined;
    if (found === undefined) throw new Error('the store has no sequencer');
    return found;
  };
  const service = () => {
    if (team === undefined || log === undefined || opened === undefined) {
      throw new Error('the team is not open');
    }
    return { team, log, opened };
  };

  async function open(options: Extract<ToWriter, { type: 'open' }>): Promise<void> {
    opened = options;
    pool = storePool(options.connectionString);
    pool.on('acquire', () => statements++);
    store = await openPostgresTeamStore({
      teamId: options.teamId,
      pool,
      schema: options.schema,
      runs: { lead: options.lead, agentTypes: [] },
    });
    log = countingLog(store.log);
    const events: EventSink = {
      publish(agent, event) {
        if (event.type === 'record') {
          if (event.record.seq > seen) seen = event.record.seq;
          if (settling !== undefined && seen >= settling.seq) {
            const { resolve } = settling;
            settling = undefined;
            resolve();
          }
        } else if (event.type === 'error') {
          tell({ type: 'error', message: `${agent}: ${event.code}: ${event.message}` });
        }
      },
    };
    team = await openTeam({
      teamId: options.teamId,
      log,
      transcripts: store.transcripts,
      format: xmlFormat,
      agents: benchAgents(createScriptedModel({ scripts: { lead: () => ({ text: 'OK.' }) } })),
      lead: { agentType: LEAD_TYPE },
      events,
      idleClaim: false,
      limits: { maxMembers: options.maxMembers, maxPendingPerMember: 1_000_000_000 },
      ...(options.lead ? {} : { placement: RUNS_NOTHING }),
    });
    for (const name of options.spawn) {
      await team.spawnTeammate(team.lead, {
        name,
        description: 'Implements and tests one area of the code base.',
        prompt: 'Wait for instructions from the lead.',
        agentType: WORKER_TYPE,
      });
    }
    tell({
      type: 'ready',
      processId: store.processId,
      members: team.listMembers(team.lead).length,
      seq: seen,
    });
  }

  /**
   * Sends its teammate a message until the sequencer commits one of them (a process that has not
   * heard the sequencer yet appends its own, answered `unsent`); the sequencer itself sends none.
   */
  async function probe(): Promise<void> {
    const { team, opened } = service();
    const seq = sequencer();
    let attempts = 0;
    while (!seq.leading()) {
      const committed = seq.stats.outcomes.committed;
      attempts++;
      await team.sendMessage(team.lead, { to: opened.to, text: `Probe ${attempts}.` });
      if (seq.stats.outcomes.committed > committed) break;
      // not heard yet: the sequencer says it is there once a poll (every second by default)
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    tell({ type: 'probed', leading: seq.leading(), attempts });
  }

  async function send(round: number, sizing: boolean): Promise<void> {
    const { team, log, opened } = service();
    const seq = sequencer();
    log.sizes.clear();
    log.sizing = sizing;
    before = {
      appends: log.appends,
      statements,
      outcomes: { ...seq.stats.outcomes },
      served: seq.stats.served,
    };
    roundStart = {
      cpu: process.cpuUsage(),
      loop: performance.eventLoopUtilization(),
      at: micros(),
    };
    const texts = opened.texts.slice(round * opened.perRound, (round + 1) * opened.perRound);
    for (const text of texts) await team.sendMessage(team.lead, { to: opened.to, text });
    log.sizing = false;
    tell({ type: 'sent', seq: log.lastSeq() });
  }

  async function settle(target: number): Promise<void> {
    const { log } = service();
    const seq = sequencer();
    if (seen < target) await new Promise<void>((resolve) => (settling = { seq: target, resolve }));
    const start = roundStart;
    if (start === undefined) {
      tell({ type: 'settled', seq: seen });
      return;
    }
    const cpu = process.cpuUsage(start.cpu);
    windows.push([start.at, micros()]);
    const outcomes = { ...seq.stats.outcomes };
    for (const key of Object.keys(outcomes) as (keyof Outcomes)[]) {
      outcomes[key] -= before.outcomes?.[key] ?? 0;
    }
    tell({
      type: 'settled',
      seq: seen,
      round: {
        appends: log.appends - before.appends,
        statements: statements - before.statements,
        sizes: [...log.sizes],
        cpuMs: (cpu.user + cpu.system) / 1000,
        systemMs: cpu.system / 1000,
        busy: performance.eventLoopUtilization(start.loop).utilization,
        outcomes,
        served: seq.stats.served - before.served,
        leading: seq.leading(),
      },
    });
  }

  return new Promise<number>((resolve) => {
    const fail = (error: unknown) => {
      tell({ type: 'error', message: failure(error) });
      void close().then(() => resolve(1));
    };
    // the parent went away: leave no connections (and no placement rows) behind
    process.on('disconnect', () => void close().then(() => resolve(1)));
    process.on('message', (raw) => {
      const message = raw as ToWriter;
      if (message.type === 'open') open(message).catch(fail);
      else if (message.type === 'probe') probe().catch(fail);
      else if (message.type === 'send') send(message.round, message.sizing).catch(fail);
      else if (message.type === 'settle') settle(message.seq).catch(fail);
      else if (message.type === 'close') void close().then(() => resolve(0));
    });
  });
}
