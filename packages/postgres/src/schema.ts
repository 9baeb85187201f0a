import { createHash } from 'node:crypto';
import { TeamError } from '@teamwire/core';
import type pg from 'pg';
import { execute, quoteIdent, transaction } from './connection.js';

/**
 * The version of the SQL schema this code creates and reads (the tables, not the records in
 * them: records carry their own `schemaVersion` from `@teamwire/core`). Every open migrates an
 * older database to it; a newer database is refused with `UNSUPPORTED_SCHEMA_VERSION`.
 */
export const SCHEMA_VERSION = 7;

/** The SQL schema used when `schema` is not given. */
export const DEFAULT_SCHEMA = 'teamwire';

/** Allowed SQL schema names: lower-case, so they never need quoting rules of their own. */
export const SCHEMA_NAME_PATTERN = /^[a-z_][a-z0-9_]{0,62}$/;

/** Refuses a schema name outside {@link SCHEMA_NAME_PATTERN}. */
export function checkSchemaName(schema: unknown): asserts schema is string {
  if (typeof schema !== 'string' || !SCHEMA_NAME_PATTERN.test(schema)) {
    throw new TeamError(
      'INVALID_ARGUMENT',
      `schema must match ${SCHEMA_NAME_PATTERN} (lower-case letters, digits and '_', at most 63), got ${JSON.stringify(schema)}`,
      { details: { schema } },
    );
  }
}

/** The qualified, quoted names of the store's objects in one schema. */
export interface Tables {
  readonly schema: string;
  readonly version: string;
  readonly log: string;
  readonly transcript: string;
  readonly processes: string;
  readonly placements: string;
  readonly tokens: string;
  /** Snapshots of the folded team state (from schema version 2). */
  readonly snapshots: string;
  /** Proposals waiting for the team's sequencer (from schema version 7). */
  readonly proposals: string;
  /** Each team's key for its live events (from schema version 7). */
  readonly keys: string;
  /** The LISTEN/NOTIFY channel appends ring (unquoted; at most 63 bytes). */
  readonly channel: string;
}

/** The names of the store's objects inside `schema`. */
export function tablesOf(schema: string): Tables {
  const q = (name: string) => `${quoteIdent(schema)}.${quoteIdent(name)}`;
  const channel = `teamwire_${schema}`;
  return {
    schema,
    version: q('schema_version'),
    log: q('team_log'),
    transcript: q('transcript'),
    processes: q('processes'),
    placements: q('placements'),
    tokens: q('placement_token'),
    snapshots: q('team_snapshots'),
    proposals: q('team_proposals'),
    keys: q('team_keys'),
    // Channel names are identifiers (63 bytes at most); a long schema name is hashed to fit.
    channel:
      channel.length <= 63
        ? channel
        : `teamwire_${createHash('sha256').update(schema).digest('hex').slice(0, 40)}`,
  };
}

/** The name of the team log's unique (team, proposal id) index. */
export const PROPOSAL_ONCE_INDEX = 'team_log_proposal_once';

/** The name of the transcript's unique (team, member, message, part) constraint. */
export const MESSAGE_ONCE_CONSTRAINT = 'transcript_message_once';

/** Each migration brings the schema from `version - 1` to `version`. Never edit a published one. */
const MIGRATIONS: readonly { version: number; statements: (t: Tables) => string[] }[] = [
  {
    version: 1,
    statements: (t) => [
      `CREATE TABLE ${t.log} (
        team_id     text        NOT NULL,
        seq         bigint      NOT NULL CHECK (seq >= 1),
        record      text        NOT NULL,
        actor_id    text,
        process_id  text,
        fence       bigint,
        batch_id    uuid        NOT NULL,
        appended_at timestamptz NOT NULL DEFAULT now(),
        PRIMARY KEY (team_id, seq)
      )`,
      `CREATE TABLE ${t.transcript} (
        team_id      text        NOT NULL,
        member_id    text        NOT NULL,
        idx          bigint      NOT NULL CHECK (idx >= 1),
        entry        text        NOT NULL,
        message_id   text,
        message_part integer,
        process_id   text,
        fence        bigint,
        batch_id     uuid        NOT NULL,
        appended_at  timestamptz NOT NULL DEFAULT now(),
        PRIMARY KEY (team_id, member_id, idx),
        CONSTRAINT ${MESSAGE_ONCE_CONSTRAINT} UNIQUE (team_id, member_id, message_id, message_part)
      )`,
      `CREATE TABLE ${t.processes} (
        team_id      text        NOT NULL,
        process_id   text        NOT NULL,
        runs_lead    boolean     NOT NULL,
        agent_types  text[],
        host         text,
        pid          integer,
        started_at   timestamptz NOT NULL DEFAULT now(),
        heartbeat_at timestamptz NOT NULL DEFAULT now(),
        PRIMARY KEY (team_id, process_id)
      )`,
      `CREATE TABLE ${t.placements} (
        team_id    text        NOT NULL,
        member_id  text        NOT NULL,
        process_id text        NOT NULL,
        token      bigint      NOT NULL,
        placed_at  timestamptz NOT NULL DEFAULT now(),
        PRIMARY KEY (team_id, member_id)
      )`,
      `CREATE INDEX placements_by_process ON ${t.placements} (team_id, process_id)`,
      `CREATE SEQUENCE ${t.tokens} AS bigint`,
    ],
  },
  {
    // Snapshots of the folded team state, and what finding a member's compactions needs.
    version: 2,
    statements: (t) => [
      `CREATE TABLE ${t.snapshots} (
        team_id        text        NOT NULL,
        seq            bigint      NOT NULL CHECK (seq >= 1),
        format_version integer     NOT NULL CHECK (format_version >= 1),
        state          text        NOT NULL,
        checksum       text        NOT NULL,
        bytes          bigint      NOT NULL CHECK (bytes >= 0),
        process_id     text,
        created_at     timestamptz NOT NULL DEFAULT now(),
        PRIMARY KEY (team_id, seq)
      )`,
      // The shape of each compaction entry (contextLength, head, replaced, retained, at); NULL for
      // every other entry. Filled when the entry is appended.
      `ALTER TABLE ${t.transcript} ADD COLUMN compaction jsonb`,
      `CREATE INDEX transcript_compactions ON ${t.transcript} (team_id, member_id, idx)
        WHERE compaction IS NOT NULL`,
      // Entries a version-1 store wrote: found by text first, so only compaction entries are parsed;
      // one that does not parse is left NULL (loading that transcript reports it as CORRUPT_LOG).
      `DO $migrate$
       DECLARE
         r record;
       BEGIN
         FOR r IN SELECT team_id, member_id, idx, entry FROM ${t.transcript}
                   WHERE entry LIKE '%"kind":"compaction"%'
         LOOP
           BEGIN
             UPDATE ${t.transcript}
                SET compaction = ${compactionShapeSql('r.entry::jsonb')}
              WHERE team_id = r.team_id AND member_id = r.member_id AND idx = r.idx
                AND r.entry::jsonb #>> '{message,source,kind}' = 'compaction';
           EXCEPTION WHEN others THEN
             NULL;
           END;
         END LOOP;
       END
       $migrate$`,
    ],
  },
  {
    // What each process reports its members doing, so every process sees the team's activity.
    // Both nullable: adding them rewrites no row, and a row without a report reads as "none yet".
    version: 3,
    statements: (t) => [
      `ALTER TABLE ${t.processes}
         ADD COLUMN activity jsonb CONSTRAINT processes_activity_object
           CHECK (activity IS NULL OR jsonb_typeof(activity) = 'object'),
         ADD COLUMN reported_at timestamptz`,
    ],
  },
  {
    // The seq of the last team record a process had applied when it made its report: a record
    // after it that starts one of its members working is news the report predates. Nullable: a
    // row without it reads as a report that says nothing of its age.
    version: 4,
    statements: (t) => [
      `ALTER TABLE ${t.processes}
         ADD COLUMN reported_through bigint CONSTRAINT processes_reported_through
           CHECK (reported_through IS NULL OR reported_through >= 0)`,
    ],
  },
  {
    // The placement capabilities a process has (`runs.capabilities` and those its team adds, e.g.
    // its workspace provider's repository): a member whose agent type requires some is placed
    // only on, and taken over only by, a process that has them all. Nullable: a row written
    // before reads as a process with none, which hosts every member that requires nothing.
    version: 5,
    statements: (t) => [`ALTER TABLE ${t.processes} ADD COLUMN capabilities text[]`],
  },
  {
    // The id of the proposal whose records start at a row (see the README's sequencer), on that
    // first row only: unique per team, so a proposal is written once whoever writes it (the team's
    // sequencer, or its proposer after no answer). Nullable: adding it rewrites no row, and rows
    // written without a proposal keep NULL, which the partial index leaves out.
    version: 6,
    statements: (t) => [
      `ALTER TABLE ${t.log} ADD COLUMN IF NOT EXISTS proposal_id uuid`,
      `CREATE UNIQUE INDEX IF NOT EXISTS ${PROPOSAL_ONCE_INDEX} ON ${t.log} (team_id, proposal_id)
        WHERE proposal_id IS NOT NULL`,
    ],
  },
  {
    // Proposals on their way to the team's sequencer (see the README's sequencer), which takes
    // them out as it reads them. Until now they travelled as NOTIFY payloads, which any role that
    // may connect can send (and LISTEN to): a row needs this table's privileges. Unlogged: a
    // proposal lives for a moment, and one lost with a crash of the server is appended by its
    // proposer when no answer comes. And each team's key for sealing its live events, which still
    // travel as NOTIFY payloads (see the README's live events): made by the team's first open.
    version: 7,
    statements: (t) => [
      `CREATE UNLOGGED TABLE IF NOT EXISTS ${t.proposals} (
        team_id     text        NOT NULL,
        id          uuid        NOT NULL,
        payload     text        NOT NULL,
        proposed_at timestamptz NOT NULL DEFAULT clock_timestamp(),
        PRIMARY KEY (team_id, id)
      )`,
      `CREATE TABLE IF NOT EXISTS ${t.keys} (
        team_id    text        PRIMARY KEY,
        live_key   bytea       NOT NULL CONSTRAINT team_keys_live_key_length
                               CHECK (octet_length(live_key) = 32),
        created_at timestamptz NOT NULL DEFAULT now()
      )`,
    ],
  },
];

/**
 * SQL building the `compaction` column's value from an entry's JSON: the same shape
 * {@link compactionShape} gives when the entry is appended.
 */
function compactionShapeSql(entry: string): string {
  return `jsonb_build_object(
    'contextLength', ${entry} #> '{message,source,contextLength}',
    'head', ${entry} #> '{message,source,head}',
    'replaced', ${entry} #> '{message,source,replaced}',
    'retained', ${entry} #> '{message,source,retained}',
    'at', ${entry} -> 'at')`;
}

/** A 64-bit advisory lock key for migrating `schema`, the same in every process. */
function migrationLockKey(schema: string): string {
  const digest = createHash('sha256').update(`teamwire:migrate:${schema}`).digest();
  return digest.readBigInt64BE(0).toString();
}

function newerSchema(schema: string, found: number): TeamError {
  return new TeamError(
    'UNSUPPORTED_SCHEMA_VERSION',
    `schema ${schema} is at version ${found}, newer than this version of @teamwire/postgres knows (${SCHEMA_VERSION}); upgrade @teamwire/postgres`,
    { details: { schema, schemaVersion: found, supported: SCHEMA_VERSION } },
  );
}

/** What opening found in the schema and what migrating it did. */
export interface MigrationOutcome {
  /** The version found before migrating (0: the schema held no tables of this store). */
  from: number;
  /** The version after migrating: always {@link SCHEMA_VERSION}. */
  to: number;
}

/**
 * Brings `schema` to {@link SCHEMA_VERSION}, creating it on first use. Idempotent, and safe when
 * many processes open a new database at once: migrations run in one transaction under an
 * advisory lock derived from the schema name, taken before anything is created. A database at a
 * newer version is refused (`UNSUPPORTED_SCHEMA_VERSION`) without changing anything.
 */
export async function migrate(pool: pg.Pool, tables: Tables): Promise<MigrationOutcome> {
  // The common case, a database already at this version, takes no lock and writes nothing.
  const current = await readVersion(pool, tables);
  if (current === SCHEMA_VERSION) return { from: current, to: current };
  if (current > SCHEMA_VERSION) throw newerSchema(tables.schema, current);

  // Two processes creating the same new schema serialize on an advisory lock, but the one that
  // waited may still collide in the catalog (its catalog snapshot can predate the other's commit):
  // that attempt rolls back and the next sees the schema. Three attempts are plenty.
  for (let attempt = 1; ; attempt++) {
    try {
      return await migrateOnce(pool, tables);
    } catch (error) {
      if (attempt >= 3 || !isCatalogRace(error)) throw error;
    }
  }
}

/** A concurrent CREATE of the same schema, table or type (unique_violation, duplicate_*). */
function isCatalogRace(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  if (code === '23505' || code === '42P06' || code === '42P07' || code === '42710') return true;
  const cause = (error as { cause?: unknown } | null)?.cause;
  return cause !== undefined && cause !== error && isCatalogRace(cause);
}

async function migrateOnce(pool: pg.Pool, tables: Tables): Promise<MigrationOutcome> {
  return transaction(pool, async (client) => {
    await client.query('SELECT pg_advisory_xact_lock($1::bigint)', [
      migrationLockKey(tables.schema),
    ]);
    await client.query(`CREATE SCHEMA IF NOT EXISTS ${quoteIdent(tables.schema)}`);
    await client.query(
      `CREATE TABLE IF NOT EXISTS ${tables.version} (
        version    integer     PRIMARY KEY,
        applied_at timestamptz NOT NULL DEFAULT now()
      )`,
    );
    const found = await client.query<{ version: number | null }>(
      `SELECT max(version) AS version FROM ${tables.version}`,
    );
    const from = found.rows[0]?.version ?? 0;
    if (from > SCHEMA_VERSION) throw newerSchema(tables.schema, from);
    for (const migration of MIGRATIONS) {
      if (migration.version <= from) continue;
      for (const statement of migration.statements(tables)) await client.query(statement);
      await client.query(`INSERT INTO ${tables.version} (version) VALUES ($1)`, [
        migration.version,
      ]);
    }
    return { from, to: SCHEMA_VERSION };
  });
}

/** The schema's version, 0 when it has no version table yet. */
async function readVersion(pool: pg.Pool, tables: Tables): Promise<number> {
  const present = await execute<{ present: boolean }>(
    pool,
    'SELECT to_regclass($1) IS NOT NULL AS present',
    [tables.version],
  );
  if (!present.rows[0]?.present) return 0;
  const found = await execute<{ version: number | null }>(
    pool,
    `SELECT max(version) AS version FROM ${tables.version}`,
  );
  return found.rows[0]?.version ?? 0;
}
