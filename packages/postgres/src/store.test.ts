import { TeamError } from '@teamwire/core';
import { conformanceRecord } from '@teamwire/core/testing';
import { afterEach, describe, expect, it } from 'vitest';
import { SCHEMA_VERSION } from './schema.js';
import type { OpenPostgresTeamStoreOptions } from './store.js';
import { openPostgresTeamStore } from './store.js';
import { adminPool, describePg, PG_URL, Scratch } from './test-support.js';

const TEAM = '01JTEAMSTORE00000000000000';

/** The rows of `schema_version` after migrating a new schema: one per migration. */
const allVersions = () => Array.from({ length: SCHEMA_VERSION }, (_, i) => ({ version: i + 1 }));

async function refused(options: OpenPostgresTeamStoreOptions): Promise<TeamError> {
  try {
    const store = await openPostgresTeamStore(options);
    await store.close();
  } catch (error) {
    if (TeamError.isInstance(error)) return error;
    throw error;
  }
  throw new Error('expected openPostgresTeamStore to reject');
}

describe('openPostgresTeamStore options', () => {
  const url = 'postgres://postgres@127.0.0.1:5432/test';

  it.each([
    ['neither pool nor connectionString', { teamId: TEAM }],
    ['a missing teamId', { connectionString: url } as OpenPostgresTeamStoreOptions],
    ['an empty teamId', { teamId: '', connectionString: url }],
    ['a teamId with NUL', { teamId: 'a\u0000b', connectionString: url }],
    ['a schema name with capitals', { teamId: TEAM, connectionString: url, schema: 'Teamwire' }],
    ['a schema name with a quote', { teamId: TEAM, connectionString: url, schema: 'a"b' }],
    ['a too long schema name', { teamId: TEAM, connectionString: url, schema: 'a'.repeat(64) }],
    ['a lease of 0', { teamId: TEAM, connectionString: url, leaseMs: 0 }],
    ['a fractional lease', { teamId: TEAM, connectionString: url, leaseMs: 100.5 }],
    ['an empty processId', { teamId: TEAM, connectionString: url, processId: '' }],
    ['an empty agent type', { teamId: TEAM, connectionString: url, runs: { agentTypes: [''] } }],
    [
      'a reconnect delay of 0',
      { teamId: TEAM, connectionString: url, reconnect: { initialDelayMs: 0 } },
    ],
    [
      'a snapshot policy of 0 records',
      { teamId: TEAM, connectionString: url, snapshots: { everyRecords: 0 } },
    ],
    [
      'a snapshot policy that is not an object',
      { teamId: TEAM, connectionString: url, snapshots: true },
    ],
    [
      'a max delay below the initial one',
      { teamId: TEAM, connectionString: url, reconnect: { initialDelayMs: 100, maxDelayMs: 10 } },
    ],
  ] as [string, OpenPostgresTeamStoreOptions][])(
    'refuses %s (INVALID_ARGUMENT)',
    async (_, options) => {
      expect((await refused(options)).code).toBe('INVALID_ARGUMENT');
    },
  );

  it('refuses both a pool and a connection string', async () => {
    const pool = adminPool();
    try {
      const error = await refused({ teamId: TEAM, pool, connectionString: url });
      expect(error.code).toBe('INVALID_ARGUMENT');
    } finally {
      await pool.end();
    }
  });

  it('reports an unreachable server as STORE_UNAVAILABLE, naming host and port but no password', async () => {
    const error = await refused({
      teamId: TEAM,
      connectionString: 'postgres://postgres:s3cret-pw@127.0.0.1:1/test',
    });
    expect(error.code).toBe('STORE_UNAVAILABLE');
    expect(error.message).toContain('127.0.0.1:1');
    expect(error.message).not.toContain('s3cret-pw');
    expect(JSON.stringify(error.toJSON())).not.toContain('s3cret-pw');
    expect(error.cause).toBeDefined();
  });
});

describePg('schema and migrations', () => {
  let scratch: Scratch;
  afterEach(async () => {
    await scratch.cleanup();
  });

  const tablesIn = async (schema: string) =>
    (
      await scratch.sql<{ name: string }>(
        `SELECT c.relname AS name FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
          WHERE n.nspname = $1 ORDER BY 1`,
        [schema],
      )
    ).rows.map((row) => row.name);

  it('creates the schema on first open and reopens without migrating again', async () => {
    scratch = new Scratch();
    const first = await scratch.open(TEAM);
    expect(first.migrated).toEqual({ from: 0, to: SCHEMA_VERSION });
    expect(await tablesIn(scratch.schema)).toEqual(
      expect.arrayContaining([
        'placement_token',
        'placements',
        'processes',
        'schema_version',
        'team_log',
        'team_snapshots',
        'transcript',
        'transcript_compactions',
      ]),
    );
    await first.log.append({ records: [conformanceRecord(TEAM, 1)] });
    await first.close();
    const again = await scratch.open(TEAM);
    expect(again.migrated).toEqual({ from: SCHEMA_VERSION, to: SCHEMA_VERSION });
    expect(again.log.lastSeq()).toBe(1);
    const versions = await scratch.sql(
      `SELECT version FROM "${scratch.schema}".schema_version ORDER BY version`,
    );
    expect(versions.rows).toEqual(allVersions());
  });

  it('lets many processes open a new database at once', async () => {
    scratch = new Scratch();
    const stores = await Promise.all(
      Array.from({ length: 4 }, (_, i) => scratch.open(`${TEAM}-${i}`, { pool: scratch.pool() })),
    );
    expect(stores.filter((store) => store.migrated.from === 0)).toHaveLength(1);
    const versions = await scratch.sql(
      `SELECT version FROM "${scratch.schema}".schema_version ORDER BY version`,
    );
    expect(versions.rows).toEqual(allVersions());
  });

  it('refuses a schema of a newer version without changing anything', async () => {
    scratch = new Scratch();
    await (await scratch.open(TEAM)).close();
    const newer = SCHEMA_VERSION + 1;
    await scratch.sql(`INSERT INTO "${scratch.schema}".schema_version (version) VALUES ($1)`, [
      newer,
    ]);
    const before = await tablesIn(scratch.schema);
    const error = await refused({ teamId: TEAM, connectionString: PG_URL, schema: scratch.schema });
    expect(error.code).toBe('UNSUPPORTED_SCHEMA_VERSION');
    expect(error.message).toContain(`version ${newer}`);
    expect(error.message).toContain(`(${SCHEMA_VERSION})`);
    expect(await tablesIn(scratch.schema)).toEqual(before);
    const versions = await scratch.sql(
      `SELECT version FROM "${scratch.schema}".schema_version ORDER BY version`,
    );
    expect(versions.rows).toEqual([...allVersions(), { version: newer }]);
  });

  it('uses a caller-owned pool without ending it', async () => {
    scratch = new Scratch();
    const pool = scratch.pool();
    const store = await scratch.open(TEAM, { pool });
    await store.log.append({ records: [conformanceRecord(TEAM, 1)] });
    await store.close();
    await store.close();
    expect((await pool.query('SELECT 1 AS one')).rows).toEqual([{ one: 1 }]);
  });

  it('keeps teams apart in one schema', async () => {
    scratch = new Scratch();
    const a = await scratch.open('team-a');
    const b = await scratch.open('team-b');
    await a.log.append({ records: [conformanceRecord('team-a', 1)] });
    await b.log.append({ records: [conformanceRecord('team-b', 1)] });
    await b.log.append({ records: [conformanceRecord('team-b', 2)] });
    const seqs = async (log: typeof a.log) => {
      const out: string[] = [];
      for await (const record of log.read()) out.push(`${record.teamId}:${record.seq}`);
      return out;
    };
    expect(await seqs(a.log)).toEqual(['team-a:1']);
    expect(await seqs(b.log)).toEqual(['team-b:1', 'team-b:2']);
    await expect(a.log.append({ records: [conformanceRecord('team-b', 2)] })).rejects.toMatchObject(
      { code: 'INVALID_ARGUMENT' },
    );
  });
});
