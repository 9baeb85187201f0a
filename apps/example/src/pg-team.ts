import { hostname } from 'node:os';
import { TeamError } from '@teamwire/core';
import {
  openPostgresTeamStore,
  type PlacementRuns,
  type PostgresTeamStore,
} from '@teamwire/postgres';
import pg from 'pg';
import type { z } from 'zod';
import { redactUrl } from './args.js';

/*
 * A review kept in PostgreSQL (`--store`): the store of `@teamwire/postgres` holds the team log,
 * the transcripts and the placement of members on processes; the app keeps the settings a team
 * was started with in a table of its own, so `--resume` and worker processes (on any machine)
 * find them by team id.
 */

/** The SQL schema of the store when none is chosen (the store's own default). */
export const DEFAULT_PG_SCHEMA = 'teamwire';

/**
 * How long a process may miss heartbeats before its members are taken over. Short, so a killed
 * worker's reviewers move within about a second (`--chaos` shows it); fencing keeps a slow
 * process that lost its members from writing for them, whatever the lease.
 */
export const LEASE_MS = 1000;

/** The version of the app's own tables in `<schema>_example`; a newer database is refused. */
const APP_TABLES_VERSION = 1;

/**
 * Internal knobs, read from the environment and never from the command line (tests use them):
 * `TEAMWIRE_EXAMPLE_PG_SCHEMA` picks the store's SQL schema (the app's table goes to
 * `<schema>_example`), `TEAMWIRE_EXAMPLE_LEASE_MS` the lease.
 */
export interface PgSettings {
  schema: string;
  appSchema: string;
  leaseMs: number;
}

const SCHEMA_PATTERN = /^[a-z_][a-z0-9_]{0,54}$/;

export function pgSettings(env: NodeJS.ProcessEnv): PgSettings {
  const schema = env.TEAMWIRE_EXAMPLE_PG_SCHEMA || DEFAULT_PG_SCHEMA;
  if (!SCHEMA_PATTERN.test(schema)) {
    throw new TeamError(
      'INVALID_ARGUMENT',
      `TEAMWIRE_EXAMPLE_PG_SCHEMA must match ${SCHEMA_PATTERN} (got ${JSON.stringify(schema)})`,
    );
  }
  const rawLease = env.TEAMWIRE_EXAMPLE_LEASE_MS;
  const leaseMs = rawLease ? Number(rawLease) : LEASE_MS;
  if (!Number.isSafeInteger(leaseMs) || leaseMs < 100) {
    throw new TeamError(
      'INVALID_ARGUMENT',
      `TEAMWIRE_EXAMPLE_LEASE_MS must be a whole number of milliseconds >= 100 (got ${rawLease})`,
    );
  }
  return { schema, appSchema: `${schema}_example`, leaseMs };
}

/** `postgres://host:port/db` of a URL, without credentials, for messages. */
export function describeDatabase(url: string): string {
  try {
    const u = new URL(url);
    return `${u.hostname}:${u.port || '5432'}${u.pathname}`;
  } catch {
    return redactUrl(url);
  }
}

/** SQLSTATE classes and codes that mean "the server cannot be used", not "the query is wrong". */
function unreachable(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  if (typeof code !== 'string') return error instanceof Error;
  return (
    code.startsWith('08') || // connection exception
    code.startsWith('28') || // invalid authorization
    code === '3D000' || // database does not exist
    code === '57P03' || // cannot connect now
    /^E[A-Z]+$/.test(code) // ECONNREFUSED, ENOTFOUND, ETIMEDOUT, ...
  );
}

/** `unique_violation`, `duplicate_schema` or `duplicate_table`: created concurrently elsewhere. */
function isDuplicateObject(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return code === '23505' || code === '42P06' || code === '42P07';
}

/** One process's connection to the database of a team kept in PostgreSQL. */
export class PgTeamDatabase {
  private constructor(
    readonly url: string,
    readonly pool: pg.Pool,
    readonly settings: PgSettings,
    readonly processId: string,
  ) {}

  /** Connects and makes sure the app's settings table exists (created on first use). */
  static async open(options: {
    url: string;
    env: NodeJS.ProcessEnv;
    processId: string;
  }): Promise<PgTeamDatabase> {
    const settings = pgSettings(options.env);
    const pool = new pg.Pool({
      connectionString: options.url,
      application_name: `teamwire-example:${options.processId}`.slice(0, 63),
      max: 10,
      connectionTimeoutMillis: 5000,
      keepAlive: true,
    });
    // an idle connection that dies is dropped by the pool; without a listener it would crash us
    pool.on('error', () => {});
    const db = new PgTeamDatabase(options.url, pool, settings, options.processId);
    try {
      try {
        await db.migrate();
      } catch (error) {
        // Another process created them at the same moment: under the advisory lock a backend can
        // still act on a stale catalog and collide with the committed schema. Looking again
        // finds them.
        if (!isDuplicateObject(error)) throw error;
        await db.migrate();
      }
    } catch (error) {
      await pool.end().catch(() => undefined);
      throw db.failure('opening', error);
    }
    return db;
  }

  get where(): string {
    return `PostgreSQL ${describeDatabase(this.url)} (schema ${this.settings.schema})`;
  }

  private table(): string {
    return `"${this.settings.appSchema}"."review_settings"`;
  }

  private versionTable(): string {
    return `"${this.settings.appSchema}"."app_tables_version"`;
  }

  private async migrate(): Promise<void> {
    // the common case, tables at this version, takes no lock and writes nothing
    const present = await this.pool.query<{ present: boolean }>(
      'SELECT to_regclass($1) IS NOT NULL AS present',
      [this.versionTable()],
    );
    const found = present.rows[0]?.present
      ? await this.pool.query<{ version: number | null }>(
          `SELECT max(version) AS version FROM ${this.versionTable()}`,
        )
      : undefined;
    const version = found?.rows[0]?.version ?? 0;
    if (version === APP_TABLES_VERSION) return;
    if (version > APP_TABLES_VERSION) throw this.newer(version);
    const client = await this.pool.connect();
    try {
      await client.query('BEGIN');
      // many processes may open a new database at once: one creates, the others wait and see it
      await client.query('SELECT pg_advisory_xact_lock(hashtextextended($1, 0))', [
        `teamwire-example:${this.settings.appSchema}`,
      ]);
      await client.query(`CREATE SCHEMA IF NOT EXISTS "${this.settings.appSchema}"`);
      await client.query(
        `CREATE TABLE IF NOT EXISTS ${this.versionTable()} (version integer PRIMARY KEY)`,
      );
      const found = await client.query<{ version: number | null }>(
        `SELECT max(version) AS version FROM ${this.versionTable()}`,
      );
      const from = found.rows[0]?.version ?? 0;
      if (from > APP_TABLES_VERSION) throw this.newer(from);
      if (from < 1) {
        await client.query(
          `CREATE TABLE ${this.table()} (
             team_id    text        PRIMARY KEY,
             settings   jsonb       NOT NULL,
             created_at timestamptz NOT NULL DEFAULT now(),
             created_by text        NOT NULL
           )`,
        );
        await client.query(`INSERT INTO ${this.versionTable()} (version) VALUES (1)`);
      }
      await client.query('COMMIT');
    } catch (error) {
      await client.query('ROLLBACK').catch(() => undefined);
      throw error;
    } finally {
      client.release();
    }
  }

  private newer(version: number): TeamError {
    return new TeamError(
      'UNSUPPORTED_SCHEMA_VERSION',
      `the tables in schema ${this.settings.appSchema} are at version ${version}, newer than this teamwire-example knows (${APP_TABLES_VERSION})`,
    );
  }

  private failure(doing: string, error: unknown): TeamError {
    if (TeamError.isInstance(error)) return error;
    const message = error instanceof Error ? error.message : String(error);
    if (unreachable(error)) {
      return new TeamError(
        'STORE_UNAVAILABLE',
        `cannot use PostgreSQL at ${describeDatabase(this.url)}: ${message}`,
        { cause: error },
      );
    }
    return new TeamError('STORAGE_IO', `${doing} the team settings failed: ${message}`, {
      cause: error,
    });
  }

  /** Keeps a new team's settings; other processes read them with {@link loadSettings}. */
  async saveSettings(teamId: string, settings: unknown): Promise<void> {
    try {
      const saved = await this.pool.query(
        `INSERT INTO ${this.table()} (team_id, settings, created_by) VALUES ($1, $2, $3)
         ON CONFLICT (team_id) DO NOTHING`,
        [teamId, JSON.stringify(settings), `${hostname()}:${this.processId}`],
      );
      if (saved.rowCount !== 1) {
        throw new TeamError('INVALID_ARGUMENT', `team ${teamId} exists already in ${this.where}`);
      }
    } catch (error) {
      throw this.failure('saving', error);
    }
  }

  /** The settings a team was started with, validated; `TEAM_NOT_FOUND` when it has none here. */
  async loadSettings<S>(teamId: string, schema: z.ZodType<S>): Promise<S> {
    let rows: { settings: unknown }[];
    try {
      rows = (
        await this.pool.query<{ settings: unknown }>(
          `SELECT settings FROM ${this.table()} WHERE team_id = $1`,
          [teamId],
        )
      ).rows;
    } catch (error) {
      throw this.failure('reading', error);
    }
    const row = rows[0];
    if (!row) {
      throw new TeamError('TEAM_NOT_FOUND', `no team ${teamId} in ${this.where}`);
    }
    const parsed = schema.safeParse(row.settings);
    if (!parsed.success) {
      throw new TeamError(
        'INVALID_RECORD',
        `the settings of team ${teamId} in ${this.settings.appSchema}.review_settings are not valid: ${parsed.error.message}`,
      );
    }
    return parsed.data;
  }

  /** Opens the team's store over this connection, running what `runs` says in this process. */
  openStore(teamId: string, runs: PlacementRuns): Promise<PostgresTeamStore> {
    return openPostgresTeamStore({
      teamId,
      pool: this.pool,
      schema: this.settings.schema,
      runs,
      leaseMs: this.settings.leaseMs,
      processId: this.processId,
    });
  }

  /**
   * A store this connection opened, as a run of the team uses it: where it is, the `--store` URL
   * with its password masked, and how long to wait for a lead another process holds (a killed
   * process holds it until its lease runs out).
   */
  asRunStore(store: PostgresTeamStore, url: string) {
    return {
      log: store.log,
      transcripts: store.transcripts,
      where: this.where,
      url: redactUrl(url),
      leadWaitMs: 3 * this.settings.leaseMs + 1000,
      close: () => store.close(),
    };
  }

  /*
   * The next two read the store's own tables (schema version 1 of @teamwire/postgres), read-only:
   * its API tells a process only about its own members. Only the main process of `--workers`
   * looks, to show what happens.
   */

  /** Which process runs each member (the store's `placements`). */
  async placements(teamId: string): Promise<Map<string, string>> {
    const rows = await this.pool.query<{ member_id: string; process_id: string }>(
      `SELECT member_id, process_id FROM "${this.settings.schema}"."placements" WHERE team_id = $1`,
      [teamId],
    );
    return new Map(rows.rows.map((r) => [r.member_id, r.process_id]));
  }

  /** The processes of the team that have a heartbeat within the lease (the store's `processes`). */
  async liveProcesses(teamId: string): Promise<Set<string>> {
    const rows = await this.pool.query<{ process_id: string }>(
      `SELECT process_id FROM "${this.settings.schema}"."processes"
        WHERE team_id = $1 AND heartbeat_at > now() - $2 * interval '1 millisecond'`,
      [teamId, this.settings.leaseMs],
    );
    return new Set(rows.rows.map((r) => r.process_id));
  }

  async end(): Promise<void> {
    await this.pool.end();
  }
}
