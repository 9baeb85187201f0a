import { randomBytes } from 'node:crypto';
import { appendFile, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import {
  A2A_TASKS_FILE,
  type A2ATaskStore,
  openJsonlA2ATaskStore,
  openPostgresA2ATaskStore,
  type StoredA2ATask,
} from './task-store.js';
import { tempDir } from './test-team.js';

const PG_URL = process.env.TEAMWIRE_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/test';

const task = (id: string, state: StoredA2ATask['state']): StoredA2ATask => ({
  v: 1,
  id,
  contextId: 'ctx',
  state,
  history: [{ role: 'user', messageId: `m-${id}`, text: 'hi' }],
  artifacts: [],
  messageIds: [`m-${id}`],
  teamMail: [],
  appliedMail: [],
  updatedAt: '2026-01-01T00:00:00.000Z',
});

async function roundTrip(open: () => Promise<A2ATaskStore>) {
  const first = await open();
  await first.put(task('t1', 'working'));
  await first.put(task('t2', 'working'));
  await first.put(task('t1', 'completed'));
  await first.close();
  const again = await open();
  const all = await again.loadAll();
  await again.close();
  return Object.fromEntries(all.map((t) => [t.id, t.state]));
}

describe('JSONL A2A task store', () => {
  it('keeps the newest version of each task across a reopen, and ignores a torn last line', async () => {
    const { dir, remove } = await tempDir();
    try {
      expect(await roundTrip(() => openJsonlA2ATaskStore(dir))).toEqual({
        t1: 'completed',
        t2: 'working',
      });
      await appendFile(join(dir, A2A_TASKS_FILE), '{"v":1,"id":"t3","sta');
      const store = await openJsonlA2ATaskStore(dir);
      expect((await store.loadAll()).map((t) => t.id).sort()).toEqual(['t1', 't2']);
      await store.put(task('t4', 'working'));
      await store.close();
      const lines = (await readFile(join(dir, A2A_TASKS_FILE), 'utf8')).split('\n');
      expect(lines.at(-2)).toContain('"id":"t4"');
      const reopened = await openJsonlA2ATaskStore(dir);
      expect((await reopened.loadAll()).map((t) => t.id).sort()).toEqual(['t1', 't2', 't4']);
      await reopened.close();
    } finally {
      await remove();
    }
  });

  it('refuses a file with an invalid line that is not the last, and leaves it as it is', async () => {
    const { dir, remove } = await tempDir();
    try {
      const path = join(dir, A2A_TASKS_FILE);
      const text = `{"v":2,"id":"t1"}\n${JSON.stringify(task('t2', 'working'))}\n`;
      await writeFile(path, text);
      await expect(openJsonlA2ATaskStore(dir)).rejects.toMatchObject({ code: 'INVALID_RECORD' });
      expect(await readFile(path, 'utf8')).toBe(text);
    } finally {
      await remove();
    }
  });
});

async function reachable(): Promise<boolean> {
  const client = new pg.Client({ connectionString: PG_URL, connectionTimeoutMillis: 3000 });
  client.on('error', () => {});
  try {
    await client.connect();
    await client.end();
    return true;
  } catch (error) {
    await client.end().catch(() => undefined);
    const message = `PostgreSQL not reachable (${String(error)})`;
    if (process.env.CI === 'true') throw new Error(`${message}; CI needs it`);
    console.warn(`${message}; skipping the @teamwire/a2a PostgreSQL test`);
    return false;
  }
}

const available = await reachable();
const schema = `tw_a2a_${randomBytes(6).toString('hex')}`;
const pool = new pg.Pool({ connectionString: PG_URL, max: 2, options: `-c search_path=${schema}` });
pool.on('error', () => {});
afterAll(async () => {
  if (available) await pool.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
  await pool.end();
});

describe.skipIf(!available)('PostgreSQL A2A task store', () => {
  it('keeps the newest version of each task per team, and refuses an invalid row', async () => {
    await pool.query(`CREATE SCHEMA "${schema}"`);
    expect(await roundTrip(() => openPostgresA2ATaskStore(pool, 'team-a'))).toEqual({
      t1: 'completed',
      t2: 'working',
    });
    const other = await openPostgresA2ATaskStore(pool, 'team-b');
    expect(await other.loadAll()).toEqual([]);
    await pool.query(
      `INSERT INTO teamwire_a2a_tasks (team_id, task_id, format, body) VALUES ('team-b', 'bad', 1, '{"v":1}')`,
    );
    await expect(other.loadAll()).rejects.toMatchObject({ code: 'INVALID_RECORD' });
  });
});
