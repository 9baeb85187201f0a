import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { describe, expect } from 'vitest';
import { notePlacement } from '../crash/placement-notes.mjs';
import type { OpenPostgresTeamStoreOptions, PostgresTeamStore } from './store.js';
import { openPostgresTeamStore } from './store.js';

/** The database the tests use. */
export const PG_URL = process.env.TEAMWIRE_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/test';

function redacted(url: string): string {
  try {
    const parsed = new URL(url);
    if (parsed.password) parsed.password = '***';
    return parsed.toString();
  } catch {
    return '(unparsable TEAMWIRE_PG_URL)';
  }
}

async function probe(): Promise<boolean> {
  const client = new pg.Client({ connectionString: PG_URL, connectionTimeoutMillis: 3000 });
  client.on('error', () => {});
  try {
    await client.connect();
    await client.end();
    return true;
  } catch (error) {
    await client.end().catch(() => undefined);
    const message = `PostgreSQL not reachable at ${redacted(PG_URL)} (${String(error)})`;
    if (process.env.CI === 'true') {
      throw new Error(`${message}; CI needs it: start PostgreSQL or set TEAMWIRE_PG_URL`);
    }
    console.warn(`${message}; skipping @teamwire/postgres tests`);
    return false;
  }
}

/** Whether the database answers; without it the suites are skipped (and fail when CI is set). */
export const pgAvailable = await probe();

/** `describe`, skipped when PostgreSQL is not reachable. */
export function describePg(name: string, body: () => void): void {
  describe.skipIf(!pgAvailable)(name, body);
}

/** A connection to the test database for setup and inspection, not the store's. */
export function adminPool(): pg.Pool {
  const pool = new pg.Pool({ connectionString: PG_URL, max: 3 });
  pool.on('error', () => {});
  return pool;
}

/** A fresh schema name, so every test has tables of its own and tests run in parallel. */
export function freshSchema(): string {
  return `tw_test_${randomBytes(8).toString('hex')}`;
}

/**
 * A scratch schema and the stores opened in it, all closed and the schema dropped by `cleanup`.
 */
export class Scratch {
  readonly schema = freshSchema();
  readonly admin = adminPool();
  readonly stores: PostgresTeamStore[] = [];
  readonly pools: pg.Pool[] = [];

  /** Opens a store of `teamId` in this schema (its own pool unless `pool` is given). */
  async open(
    teamId: string,
    options: Partial<OpenPostgresTeamStoreOptions> = {},
  ): Promise<PostgresTeamStore> {
    const store = await openPostgresTeamStore({
      teamId,
      schema: this.schema,
      ...(options.pool ? {} : { connectionString: PG_URL }),
      reconnect: { initialDelayMs: 10, maxDelayMs: 200 },
      // rings come from notifications (and reconnects) only, so tests can count them
      pollMs: 600_000,
      ...options,
    });
    this.stores.push(store);
    return store;
  }

  /** A pool of its own that `cleanup` ends. */
  pool(): pg.Pool {
    const pool = adminPool();
    this.pools.push(pool);
    return pool;
  }

  /** Runs SQL as the admin connection. */
  sql<R extends pg.QueryResultRow = pg.QueryResultRow>(
    text: string,
    values: unknown[] = [],
  ): Promise<pg.QueryResult<R>> {
    return this.admin.query<R>(text, values);
  }

  /** Closes every store, ends the pools and drops the schema. */
  async cleanup(): Promise<void> {
    for (const store of this.stores) await store.close().catch(() => undefined);
    for (const pool of this.pools) await pool.end().catch(() => undefined);
    await this.admin.query(`DROP SCHEMA IF EXISTS "${this.schema}" CASCADE`);
    await this.admin.end();
  }
}

/** Polls `condition` every 10 ms until it holds, failing after `timeoutMs`. */
export async function eventually(
  condition: () => boolean | Promise<boolean>,
  what: string,
  timeoutMs = 10_000,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

/** Resolves once process `processId` wrote `beats` more heartbeats (read from the database). */
export async function heartbeats(scratch: Scratch, processId: string, beats: number) {
  const read = async () =>
    (
      await scratch.sql<{ at: string }>(
        `SELECT heartbeat_at::text AS at FROM "${scratch.schema}".processes WHERE process_id = $1`,
        [processId],
      )
    ).rows[0]?.at;
  let last = await read();
  let seen = 0;
  await eventually(
    async () => {
      const now = await read();
      if (now !== last) {
        seen++;
        last = now;
      }
      return seen >= beats;
    },
    `${beats} heartbeats of ${processId}`,
    60_000,
  );
}

/**
 * What one process's placement told its runtime, in order, each note with when it came (by the
 * test's clock): `+m` acquired m, `-m` lost it, `?m` was asked to release it. Every rebalancing
 * move and every close asks first; a member lost unasked means the process's lease lapsed (its
 * heartbeat stalled past the lease and another process took the member, or its own lease timer
 * gave it up).
 */
export class PlacementNotes {
  readonly notes: { readonly note: string; readonly at: number }[] = [];

  add(note: string): void {
    this.notes.push({ note, at: performance.now() });
  }

  /** The notes alone, in order. */
  list(): string[] {
    return this.notes.map((entry) => entry.note);
  }

  /** How many times this process was asked to release a member. */
  releases(): number {
    return this.notes.filter((entry) => entry.note.startsWith('?')).length;
  }

  /** When each lapse came: a member lost whose previous note was not a request to release it. */
  lapses(): number[] {
    const last = new Map<string, string>();
    const at: number[] = [];
    for (const entry of this.notes) {
      const kind = entry.note[0] ?? '';
      const memberId = entry.note.slice(1);
      if (kind === '-' && last.get(memberId) !== '?') at.push(entry.at);
      last.set(memberId, kind);
    }
    return at;
  }

  /** Notes what `store`'s placement tells whoever starts it (see crash/placement-notes.mjs). */
  static of(store: PostgresTeamStore): PlacementNotes {
    const notes = new PlacementNotes();
    notePlacement(store, (note) => notes.add(note));
    return notes;
  }
}

/**
 * The no-bounce check of rebalancing: once the members settle (`settled` holds), over `window`
 * (some heartbeats) no member changes process and no process is asked to release one. A lease
 * that lapses on a loaded machine (a member lost unasked, in any process of `notes`) is a fault of
 * the machine, not a move of the rebalancer: the members settle again and the window starts
 * over, at most `attempts` times. Resolves with the number of windows it took.
 */
export async function expectNoBounce(options: {
  settled: () => Promise<boolean>;
  /** Where each member runs: member id to process id. */
  placements: () => Promise<Record<string, string>>;
  notes: readonly PlacementNotes[];
  window: () => Promise<void>;
  leaseMs: number;
  attempts?: number;
}): Promise<number> {
  const attempts = options.attempts ?? 3;
  for (let attempt = 1; ; attempt++) {
    await eventually(options.settled, 'the members settling', 60_000);
    const before = await options.placements();
    const asked = options.notes.map((notes) => notes.releases());
    // a lapse noted up to a lease before the window may still be moving members in it
    const from = performance.now() - options.leaseMs;
    await options.window();
    const lapsed = () => options.notes.some((notes) => notes.lapses().some((at) => at >= from));
    const after = await options.placements();
    const askedAfter = options.notes.map((notes) => notes.releases());
    if (JSON.stringify([after, askedAfter]) === JSON.stringify([before, asked])) return attempt;
    // the process whose lease lapsed may hear of it only at its next look
    await eventually(lapsed, 'a lapsed lease to explain the move', 3 * options.leaseMs).catch(
      () => undefined,
    );
    if (!lapsed()) {
      expect(after).toEqual(before);
      expect(askedAfter).toEqual(asked);
    }
    if (attempt >= attempts) {
      throw new Error(
        `a ${options.leaseMs} ms lease lapsed in each of ${attempts} windows: too loaded a machine for this check`,
      );
    }
  }
}
