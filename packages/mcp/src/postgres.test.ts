import { randomBytes } from 'node:crypto';
import { ResourceUpdatedNotificationSchema } from '@modelcontextprotocol/sdk/types.js';
import pg from 'pg';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { type FixtureTeam, openFixtureTeam } from '../test/team-fixture.mjs';
import { call, connectStdio, kill } from './test-clients.js';

/*
 * An MCP server in a process of its own, joined to a team kept in PostgreSQL: the lead runs in
 * this process, the member is served (and written for) only by the server process.
 */

const PG_URL = process.env.TEAMWIRE_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
const LEASE_MS = 1000;

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
    console.warn(`${message}; skipping the @teamwire/mcp PostgreSQL test`);
    return false;
  }
}

const available = await reachable();
const schema = `tw_mcp_${randomBytes(6).toString('hex')}`;
const admin = new pg.Pool({ connectionString: PG_URL, max: 2 });
admin.on('error', () => {});
afterAll(async () => {
  if (available) await admin.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
  await admin.end();
});

describe.skipIf(!available)('an MCP server process on a team kept in PostgreSQL', () => {
  it('serves a member the lead process spawned, pushes mail across processes, and survives a SIGKILL', async () => {
    const lead: FixtureTeam = await openFixtureTeam({
      pg: { url: PG_URL, schema, lead: true, leaseMs: LEASE_MS },
    });
    try {
      await lead.team.promptLead('Plan the work.');
      const server = ['--pg-url', PG_URL, '--pg-schema', schema, '--lease-ms', String(LEASE_MS)];
      const first = await connectStdio(server, 'alice', ['--serve', 'alice']);
      const updates: string[] = [];
      first.client.setNotificationHandler(ResourceUpdatedNotificationSchema, (n) => {
        updates.push(n.params.uri);
      });
      const page = await call(first.client, 'read_inbox');
      expect(page.messages.map((m: { from: string }) => m.from)).toEqual(['lead']);
      await first.client.subscribeResource({ uri: 'teamwire://inbox' });
      // mail queued in the lead's process rings in the server's
      await lead.team.sendMessage(lead.team.lead, { to: 'alice', text: 'from another process' });
      await vi.waitUntil(() => updates.length > 0, { timeout: 20_000, interval: 20 });
      const second = await call(first.client, 'read_inbox', { after: page.cursor });
      expect(second.messages.map((m: { text: string }) => m.text)).toEqual([
        expect.stringContaining('from another process'),
      ]);
      await call(first.client, 'task_update', { taskId: 'task-1', action: 'claim' });
      // the server process dies before acknowledging the second page
      await kill(first.transport.pid as number);
      await first.client.close();
      // its placement lapses; a new server process takes the member over
      await vi.waitUntil(
        async () => {
          const rows = await admin.query(
            `SELECT count(*)::int AS n FROM "${schema}".processes
              WHERE heartbeat_at > now() - $1 * interval '1 millisecond' AND NOT runs_lead`,
            [LEASE_MS],
          );
          return rows.rows[0].n === 0;
        },
        { timeout: 20_000, interval: 100 },
      );
      const next = await connectStdio(server, 'alice', ['--serve', 'alice']);
      try {
        const again = await call(next.client, 'read_inbox');
        expect(again.messages.map((m: { id: string }) => m.id)).toEqual(
          second.messages.map((m: { id: string }) => m.id),
        );
        expect(await call(next.client, 'task_get', { taskId: 'task-1' })).toMatchObject({
          status: 'in_progress',
          owner: 'alice',
        });
        expect(await call(next.client, 'ack_inbox', { cursor: again.cursor })).toEqual({
          acknowledged: 1,
          retired: false,
        });
      } finally {
        await next.client.close();
      }
      // every write for alice came from a server process, every message was delivered once
      const rows = await admin.query<{ record: string; process_id: string | null }>(
        `SELECT record, process_id FROM "${schema}".team_log ORDER BY seq`,
      );
      const records = rows.rows.map((r) => ({ ...JSON.parse(r.record), process: r.process_id }));
      const aliceId = lead.team
        .listMembers(lead.team.lead)
        .find((m) => m.name === 'alice')?.memberId;
      const delivered = records.filter(
        (r) => r.type === 'message.delivered' && r.targetId === aliceId,
      );
      expect(delivered.map((r) => r.messageId).sort()).toEqual(
        [...page.messages, ...second.messages].map((m: { id: string }) => m.id).sort(),
      );
      const leadProcess = (lead.store as { processId: string }).processId;
      for (const r of delivered) expect(r.process).not.toBe(leadProcess);
    } finally {
      await lead.close();
    }
  });
});
