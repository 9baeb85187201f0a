import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { describe } from 'vitest';
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
