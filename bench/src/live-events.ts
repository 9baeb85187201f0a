import { randomBytes, randomUUID } from 'node:crypto';
import {
  createEventHub,
  LIVE_COALESCE_MS,
  type LiveChannel,
  LiveRelay,
  systemClock,
} from '@teamwire/core';
import { openPostgresTeamStore, type PostgresTeamStore } from '@teamwire/postgres';
import pg from 'pg';
import type { Bench } from './context.js';
import { pgUrl } from './postgres.js';
import { type Figure, figure } from './report.js';
import { now, percentile, within } from './stats.js';

const BENCH = 'live-events';

/** Why the database cannot be used, or `undefined` when it answers. */
async function unreachable(url: string): Promise<string | undefined> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 3000 });
  client.on('error', () => {});
  try {
    await client.connect();
    return undefined;
  } catch (error) {
    return error instanceof Error ? error.message || error.name : String(error);
  } finally {
    await client.end().catch(() => undefined);
  }
}

/**
 * The baseline: one `pg_notify` on a connection, received by another connection LISTENing on the
 * channel, one at a time. What any relay over NOTIFY pays at least.
 */
async function bareNotify(url: string, channel: string, samples: number): Promise<number[]> {
  const sender = new pg.Client({ connectionString: url });
  const listener = new pg.Client({ connectionString: url });
  for (const client of [sender, listener]) client.on('error', () => {});
  await sender.connect();
  await listener.connect();
  try {
    await listener.query(`LISTEN "${channel}"`);
    let arrived: (() => void) | undefined;
    listener.on('notification', () => arrived?.());
    const times: number[] = [];
    for (let i = 0; i < samples; i++) {
      const got = new Promise<void>((resolve) => {
        arrived = resolve;
      });
      const start = now();
      await sender.query('SELECT pg_notify($1, $2)', [channel, `{"i":${i}}`]);
      await within(got, 10_000, 'a bare notification');
      times.push(now() - start);
    }
    return times;
  } finally {
    await sender.end().catch(() => undefined);
    await listener.end().catch(() => undefined);
  }
}

/**
 * A live event from one store's relay to another store's hub: a text delta offered to the relay of
 * one store (as a runner publishes it) until the other store's hub publishes it, one at a time
 * (the stores opened go into `stores`, for the caller to close).
 * The relay holds an event `LIVE_COALESCE_MS` on purpose (to merge deltas), so that window is part
 * of every sample.
 */
async function relayed(
  url: string,
  schema: string,
  samples: number,
  stores: PostgresTeamStore[],
): Promise<number[]> {
  const team = `01JLIVEBENCH${randomBytes(7).toString('hex').toUpperCase()}`;
  for (let i = 0; i < 2; i++) {
    stores.push(await openPostgresTeamStore({ teamId: team, connectionString: url, schema }));
  }
  const [from, to] = stores.map((store) => store.log.shared?.live) as [LiveChannel, LiveChannel];
  const hub = createEventHub({ teamId: team });
  const sender = new LiveRelay({
    teamId: team,
    channel: from,
    clock: systemClock,
    origin: randomUUID(),
    runsHere: () => true,
  });
  const receiver = new LiveRelay({
    teamId: team,
    channel: to,
    sink: hub,
    clock: systemClock,
    origin: randomUUID(),
    runsHere: () => false,
  });
  let arrived: (() => void) | undefined;
  hub.listen(() => arrived?.());
  const times: number[] = [];
  try {
    for (let i = 0; i < samples; i++) {
      const got = new Promise<void>((resolve) => {
        arrived = resolve;
      });
      const start = now();
      sender.offer('alice', { type: 'model.text-delta', text: `piece ${i} of the answer ` });
      await within(got, 10_000, 'a relayed event');
      times.push(now() - start);
    }
  } finally {
    sender.close();
    receiver.close();
    hub.close();
  }
  return times;
}

/**
 * Live events between the processes of a team on PostgreSQL: how long a streamed event takes from
 * the relay of the process that runs the member to the event hub of another (two stores, each with
 * its own pool and LISTEN connection, so the path goes through the server), against a bare
 * `pg_notify` -> LISTEN round trip measured in the same run.
 */
export const liveEventsBench: Bench = {
  name: BENCH,
  title: 'live events across processes on PostgreSQL: relay latency vs a bare NOTIFY',
  async run({ quick, log: say }) {
    const url = pgUrl();
    const why = await unreachable(url);
    if (why !== undefined) {
      if (process.env.CI === 'true') throw new Error(`PostgreSQL not reachable (${why})`);
      say(`skipped: PostgreSQL not reachable (${why}); set TEAMWIRE_PG_URL`);
      return [];
    }
    const samples = quick ? 40 : 300;
    const warmups = quick ? 5 : 20;
    const schema = `bench_live_${randomBytes(6).toString('hex')}`;
    const admin = new pg.Client({ connectionString: url });
    admin.on('error', () => {});
    await admin.connect();
    const stores: PostgresTeamStore[] = [];
    try {
      say(`${BENCH}: bare NOTIFY, ${samples} samples`);
      const bare = (await bareNotify(url, `bench_live_${schema}`, samples + warmups)).slice(
        warmups,
      );
      say(`${BENCH}: relayed events, ${samples} samples`);
      const times = (await relayed(url, schema, samples + warmups, stores)).slice(warmups);
      const p50 = percentile(times, 0.5);
      const p99 = percentile(times, 0.99);
      const bareP50 = percentile(bare, 0.5);
      const bareP99 = percentile(bare, 0.99);
      const common = `${samples} events one at a time after ${warmups} warm-ups; two stores in one process, each with its own LISTEN connection; each sample includes the relay's deliberate ${LIVE_COALESCE_MS} ms coalescing window`;
      const figures: Figure[] = [
        figure({
          bench: BENCH,
          name: 'live event across processes p50 (relay -> other hub)',
          subject: { label: 'p50', value: p50, unit: 'ms' },
          baseline: {
            label: `${LIVE_COALESCE_MS} ms window + bare NOTIFY p50`,
            value: LIVE_COALESCE_MS + bareP50,
            unit: 'ms',
          },
          ratioOf: 'p50 / (window + bare p50)',
          ratio: p50 / (LIVE_COALESCE_MS + bareP50),
          target: { op: '<=', value: 1.2 },
          note: `bare pg_notify -> LISTEN on another connection, same run: p50 ${bareP50.toFixed(2)} ms, p99 ${bareP99.toFixed(2)} ms; ${common}`,
        }),
        figure({
          bench: BENCH,
          name: 'live event across processes p99 (relay -> other hub)',
          subject: { label: 'p99', value: p99, unit: 'ms' },
          baseline: {
            label: `${LIVE_COALESCE_MS} ms window + bare NOTIFY p99`,
            value: LIVE_COALESCE_MS + bareP99,
            unit: 'ms',
          },
          ratioOf: 'p99 / (window + bare p99)',
          ratio: p99 / (LIVE_COALESCE_MS + bareP99),
          target: { op: '<=', value: 1.5 },
          note: `max ${Math.max(...times).toFixed(2)} ms (bare max ${Math.max(...bare).toFixed(2)} ms); ${common}`,
        }),
      ];
      return figures;
    } finally {
      for (const store of stores) await store.close().catch(() => undefined);
      await admin.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`).catch(() => undefined);
      await admin.end().catch(() => undefined);
    }
  },
};
