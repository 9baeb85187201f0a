import { readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { foldTeam } from '@teamwire/core';
import { readTeamLog } from '@teamwire/storage';
import { describe, expect, it, vi } from 'vitest';
import { runReview } from './app.js';
import { parseArgs } from './args.js';
import { callTool, makeFixtureRepo, TEAMWIRE_CLI, tempDir, textSink } from './test-support.js';

describe('--mcp: a coding agent joins the review over MCP', () => {
  it('prints a working client configuration, serves the coder over HTTP and, after the run, teamwire mcp serves it over stdio', async () => {
    const work = tempDir('review-mcp');
    makeFixtureRepo(path.join(work, 'repo'));
    const command = parseArgs(
      ['--dir', 'repo', '--teammates', '2', '--durability', 'buffered', '--mcp'],
      { cwd: work },
    );
    if (command.command !== 'review') throw new Error('expected a review command');
    const out = textSink();
    const controller = new AbortController();
    const running = runReview(command, {
      stdout: out,
      stderr: out,
      cwd: work,
      env: {},
      signal: controller.signal,
    });
    await vi.waitUntil(() => out.text().includes('still serving'), {
      timeout: 60_000,
      interval: 50,
    });
    const text = out.text();
    const claude = /Claude Code: {2}(claude mcp add .*)$/m.exec(text)?.[1] as string;
    const [, url, token] =
      /--transport http teamwire-coder (\S+) --header 'Authorization: Bearer ([^']+)'$/.exec(
        claude,
      ) as RegExpExecArray;
    expect(url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/mcp$/);
    const cursor = JSON.parse(/Cursor \(\.cursor\/mcp\.json\): (.*)$/m.exec(text)?.[1] as string);
    expect(cursor).toEqual({
      mcpServers: { 'teamwire-coder': { url, headers: { Authorization: `Bearer ${token}` } } },
    });

    const client = new Client({ name: 'test-coder', version: '1.0.0' });
    await client.connect(
      new StreamableHTTPClientTransport(new URL(url as string), {
        requestInit: { headers: { Authorization: `Bearer ${token}` } },
      }),
    );
    const board = await callTool(client, 'task_list', { status: 'completed' });
    expect(board.tasks.length).toBeGreaterThan(1);
    // the lead spawned nothing for it, but shut every member down once the report was written
    const page = await callTool(client, 'read_inbox');
    expect(page.messages.map((m: { kind: string; from: string }) => [m.kind, m.from])).toEqual([
      ['shutdown_request', 'lead'],
      ['message', 'lead'],
    ]);
    await callTool(client, 'send_message', { to: 'lead', message: 'coder here, joining late' });
    await client.close();
    controller.abort(); // the coder never acknowledged: its mail stays pending
    const summary = await running;
    expect(summary).toMatchObject({ reportWritten: true, interrupted: false });
    const teamDir = path.join(work, '.teamwire', 'teams', summary.teamId);
    expect(statSync(path.join(teamDir, 'mcp-secret')).mode & 0o777).toBe(0o600);

    // the team is stopped; a client that starts `teamwire mcp` itself gets the same mail again
    const transport = new StdioClientTransport({
      command: process.execPath,
      args: [
        TEAMWIRE_CLI,
        'mcp',
        '--dir',
        '.teamwire',
        '--team',
        summary.teamId,
        '--member',
        'coder',
      ],
      cwd: work,
      stderr: 'pipe',
    });
    const stdio = new Client({ name: 'test-coder-stdio', version: '1.0.0' });
    await stdio.connect(transport);
    const again = await callTool(stdio, 'read_inbox');
    expect(again.messages.map((m: { id: string }) => m.id)).toEqual(
      page.messages.map((m: { id: string }) => m.id),
    );
    expect(await callTool(stdio, 'ack_inbox', { cursor: again.cursor })).toEqual({
      acknowledged: 2,
      retired: true,
    });
    await stdio.close();
    const { records } = await readTeamLog(teamDir);
    const state = foldTeam(records, { teamId: summary.teamId });
    const coder = state.roster.find((m) => m.name === 'coder');
    expect(coder).toMatchObject({
      phase: 'retired',
      agentType: 'coding-agent',
      provider: 'external',
    });
    const delivered = records.filter((r) => r.type === 'message.delivered');
    for (const m of page.messages) {
      expect(delivered.filter((r) => r.messageId === m.id)).toHaveLength(1);
    }
    expect(readFileSync(path.join(work, 'team-report.md'), 'utf8')).toContain('reviewer-');
  });

  it('with --web too, serves the dashboard and the coder on one port', async () => {
    const work = tempDir('review-mcp-web');
    makeFixtureRepo(path.join(work, 'repo'));
    const command = parseArgs(
      ['--dir', 'repo', '--teammates', '2', '--durability', 'buffered', '--mcp', '--web'],
      { cwd: work },
    );
    if (command.command !== 'review') throw new Error('expected a review command');
    const out = textSink();
    const controller = new AbortController();
    const running = runReview(command, {
      stdout: out,
      stderr: out,
      cwd: work,
      env: {},
      signal: controller.signal,
    });
    await vi.waitUntil(() => out.text().includes('still serving'), {
      timeout: 60_000,
      interval: 50,
    });
    const text = out.text();
    const page = /web: the dashboard is at (\S+)/.exec(text)?.[1] as string;
    const [, url, token] = /teamwire-coder (\S+) --header 'Authorization: Bearer ([^']+)'$/m.exec(
      text,
    ) as RegExpExecArray;
    expect(new URL(url as string).origin).toBe(new URL(page).origin);
    expect(new URL(url as string).pathname).toBe('/mcp');
    const pageToken = new URL(page).searchParams.get('token') as string;
    const snapshot = await fetch(new URL('/api/snapshot', page), {
      headers: { authorization: `Bearer ${pageToken}` },
    });
    expect(await snapshot.json()).toMatchObject({ version: 1, readOnly: false });
    // each token opens only its own side
    const crossed = await fetch(new URL('/api/snapshot', page), {
      headers: { authorization: `Bearer ${token}` },
    });
    expect(crossed.status).toBe(401);
    const client = new Client({ name: 'test-coder', version: '1.0.0' });
    await client.connect(
      new StreamableHTTPClientTransport(new URL(url as string), {
        requestInit: { headers: { Authorization: `Bearer ${token}` } },
      }),
    );
    const board = await callTool(client, 'task_list', { status: 'completed' });
    expect(board.tasks.length).toBeGreaterThan(1);
    await client.close();
    controller.abort();
    expect(await running).toMatchObject({ reportWritten: true, interrupted: false });
  });
});
