import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { describe } from 'vitest';

/** The database the PostgreSQL tests use. */
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

/** Why PostgreSQL cannot be used, or `undefined` when it answers. */
async function probe(): Promise<string | undefined> {
  const client = new pg.Client({ connectionString: PG_URL, connectionTimeoutMillis: 3000 });
  client.on('error', () => {});
  try {
    await client.connect();
    await client.end();
    return undefined;
  } catch (error) {
    await client.end().catch(() => undefined);
    return `PostgreSQL not reachable at ${redacted(PG_URL)} (${String(error)})`;
  }
}

const unavailable = await probe();
if (unavailable !== undefined && process.env.CI === 'true') {
  throw new Error(`${unavailable}; CI needs it: start PostgreSQL or set TEAMWIRE_PG_URL`);
}

/** `describe`, skipped with a message when PostgreSQL is not reachable (never when CI=true). */
export function describePg(name: string, body: () => void): void {
  if (unavailable !== undefined) {
    console.warn(`${unavailable}; skipping "${name}" (set TEAMWIRE_PG_URL to run it)`);
  }
  describe.skipIf(unavailable !== undefined)(name, body);
}

/**
 * A fresh SQL schema for one test (the app puts its settings table in `<schema>_example`), and
 * the environment that makes the CLI use it.
 */
export function freshSchema(): { schema: string; env: NodeJS.ProcessEnv } {
  const schema = `tw_example_${randomBytes(6).toString('hex')}`;
  return { schema, env: { TEAMWIRE_EXAMPLE_PG_SCHEMA: schema } };
}

/** A connection for inspecting and cleaning up, not the app's. */
export function adminPool(): pg.Pool {
  const pool = new pg.Pool({ connectionString: PG_URL, max: 2 });
  pool.on('error', () => {});
  return pool;
}

/** Drops the schemas a test's runs created. */
export async function dropSchema(pool: pg.Pool, schema: string): Promise<void> {
  await pool.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
  await pool.query(`DROP SCHEMA IF EXISTS "${schema}_example" CASCADE`);
}
