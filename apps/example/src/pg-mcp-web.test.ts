import path from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { afterAll, expect, it, vi } from 'vitest';
import { runReview } from './app.js';
import { parseArgs } from './args.js';
import { adminPool, describePg, dropSchema, freshSchema, PG_URL } from './pg-test-support.js';
import { callTool, makeFixtureRepo, TEAMWIRE_CLI, tempDir, textSink } from './test-support.js';
import { runWeb } from './web-command.js';

const { schema, env } = freshSchema();
const admin = adminPool();
afterAll(async () => {
  await dropSchema(admin, schema);
  await admin.end();
});

describePg('a review kept in PostgreSQL, joined by other processes', () => {
  it('serves its MCP member over stdio from a process of its own, and its dashboard read-only', async () => {
    const work = tempDir('review-pg-mcp');
    makeFixtureRepo(path.join(work, 'repo'));
    const command = parseArgs(['--dir', 'repo', '--teammates', '2', '--store', PG_URL, '--mcp'], {
      cwd: work,
    });
    if (command.command !== 'review') throw new Error('expected a review command');
    const out = textSink();
    const controller = new AbortController();
    const running = runReview(command, {
      stdout: out,
      stderr: out,
      cwd: work,
      env: { ...env, TEAMWIRE_MCP_SECRET: 'a secret long enough for the test' },
      signal: controller.signal,
    });
    await vi.waitUntil(() => out.text().includes('still serving'), {
      timeout: 90_000,
      interval: 50,
    });
    controller.abort();
    const summary = await running;
    expect(summary).toMatchObject({ reportWritten: true, interrupted: false });
    // the run did not wait for the coder, whose client has not read its shutdown request yet
    expect(out.text()).not.toContain('still not retired');

    // a client starts its own server process, teamwire mcp, which joins the team and serves only
    // `coder`
    const transport = new StdioClientTransport({
      command: process.execPath,
      args: [
        TEAMWIRE_CLI,
        'mcp',
        ...['--store', PG_URL, '--schema', schema],
        ...['--team', summary.teamId, '--member', 'coder'],
      ],
      cwd: work,
      env: { ...process.env, ...env } as Record<string, string>,
      stderr: 'pipe',
    });
    const client = new Client({ name: 'pg-coder', version: '1.0.0' });
    await client.connect(transport);
    const page = await callTool(client, 'read_inbox');
    expect(page.messages.map((m: { kind: string }) => m.kind)).toEqual([
      'shutdown_request',
      'message',
    ]);
    const tasks = await callTool(client, 'task_list', { status: 'completed' });
    expect(tasks.tasks.length).toBeGreaterThan(1);
    expect(await callTool(client, 'ack_inbox', { cursor: page.cursor })).toEqual({
      acknowledged: 2,
      retired: true,
    });
    await client.close();

    // the dashboard, read-only, from yet another process's point of view
    const stop = new AbortController();
    let url = '';
    const watching = runWeb(
      { command: 'web', teamId: summary.teamId, stateDir: '.teamwire', store: PG_URL, port: 0 },
      {
        stdout: textSink(),
        cwd: work,
        env,
        signal: stop.signal,
        onServing: (served) => {
          url = served;
        },
      },
    );
    await vi.waitUntil(() => url !== '', { timeout: 30_000 });
    const token = new URL(url).searchParams.get('token') as string;
    const snapshot = (await (await fetch(new URL(`/api/snapshot?token=${token}`, url))).json()) as {
      readOnly: boolean;
      records: { type: string; member?: { name: string; phase: string } }[];
    };
    expect(snapshot.readOnly).toBe(true);
    const coder = snapshot.records.filter((r) => r.type === 'member' && r.member?.name === 'coder');
    expect(coder.at(-1)?.member?.phase).toBe('retired');
    stop.abort();
    await watching;
  });
});
