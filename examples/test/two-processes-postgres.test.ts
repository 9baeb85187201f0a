import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { runExample } from './run-example.js';

const PG_URL = process.env.TEAMWIRE_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
const schema = `tw_example_${randomBytes(8).toString('hex')}`;
const client = new pg.Client({ connectionString: PG_URL, connectionTimeoutMillis: 3000 });
client.on('error', () => {});
const available = await client.connect().then(
  () => true,
  (error: unknown) => {
    // Under CI the database must be there: fail, never skip.
    if (process.env.CI === 'true') throw new Error(`PostgreSQL not reachable: ${String(error)}`);
    console.warn(`PostgreSQL not reachable (${String(error)}); skipping`);
    return false;
  },
);
afterAll(async () => {
  if (!available) return;
  await client.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
  await client.end();
});

describe.skipIf(!available)('two-processes-postgres.ts', () => {
  it('runs the lead here and ada in the forked worker, on one log', async () => {
    const run = await runExample('two-processes-postgres.ts', [], {
      TEAMWIRE_PG_URL: PG_URL,
      TEAMWIRE_PG_SCHEMA: schema,
    });
    expect(run.stderr).toBe('');
    expect(run.code).toBe(0);
    const lines = run.stdout.trim().split('\n');
    const lead = lines[0]?.match(/^(lead-\d+): lead turn \(host\)$/)?.[1];
    const worker = lines.find((l) => l.includes(': ada turn'))?.split(':')[0];
    expect(lead).toBeDefined();
    expect(worker).toMatch(/^worker-\d+$/);
    // each member's turns ran in one process only: the lead's here, ada's in the worker
    for (const line of lines.slice(0, -1)) {
      expect(line).toMatch(
        new RegExp(`^(${lead}: lead|${worker}: ada) turn \\((host|message|task-claim)\\)$`),
      );
    }
    expect(lines).toContain(`${worker}: ada turn (task-claim)`);
    expect(lines.at(-1)).toBe(`${lead}: task-1 completed; ada ran in ${worker}`);

    const { rows } = await client.query<{ record: string }>(
      `SELECT record FROM "${schema}".team_log ORDER BY team_id, seq`,
    );
    const records = rows.map((row) => JSON.parse(row.record));
    const tasks = records.filter((r) => r.type === 'task').map((r) => r.task.status);
    expect(tasks.at(-1)).toBe('completed');
    const queued = records.filter((r) => r.type === 'message.queued').map((r) => r.message.id);
    const delivered = records.filter((r) => r.type === 'message.delivered').map((r) => r.messageId);
    expect(queued.length).toBeGreaterThan(0);
    expect([...delivered].sort()).toEqual([...queued].sort());
  });
});
