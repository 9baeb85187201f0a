import { request } from 'node:http';
import path from 'node:path';
import { readTeamLog } from '@teamwire/storage';
import { describe, expect, it, vi } from 'vitest';
import { runReview } from './app.js';
import { parseArgs } from './args.js';
import { makeFixtureRepo, tempDir, textSink } from './test-support.js';
import { runWeb } from './web-command.js';

function http(
  url: string,
  options: { method?: string; headers?: Record<string, string>; body?: string } = {},
): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request(
      url,
      { method: options.method ?? 'GET', headers: options.headers },
      (res) => {
        let body = '';
        res.on('data', (chunk) => {
          body += chunk;
        });
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
      },
    );
    req.on('error', reject);
    req.end(options.body);
  });
}

describe('--web: the dashboard next to a review', () => {
  it('serves the running team with a token, takes a message from the page, and opens the folder read-only after', async () => {
    const work = tempDir('review-web');
    makeFixtureRepo(path.join(work, 'repo'));
    const command = parseArgs(
      ['--dir', 'repo', '--teammates', '2', '--durability', 'buffered', '--web'],
      {
        cwd: work,
      },
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
    await vi.waitUntil(() => out.text().includes('the dashboard stays at'), {
      timeout: 60_000,
      interval: 50,
    });
    const url = /web: the dashboard is at (\S+)/.exec(out.text())?.[1] as string;
    expect(url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/\?token=[\w-]+$/);
    const token = new URL(url).searchParams.get('token') as string;
    expect((await http(url.replace(/\?token=.*/, ''))).status).toBe(401);
    const page = await http(url);
    expect(page.status).toBe(200);
    expect(page.body).toContain('./assets/');
    const snapshot = JSON.parse(
      (await http(new URL(`/api/snapshot?token=${token}`, url).toString())).body,
    );
    expect(snapshot).toMatchObject({ version: 1, readOnly: false, operator: 'operator' });
    expect(snapshot.records.some((r: { type: string }) => r.type === 'task')).toBe(true);
    const sent = await http(new URL('/api/actions/message', url).toString(), {
      method: 'POST',
      headers: { 'x-teamwire-token': token, 'content-type': 'application/json' },
      body: JSON.stringify({ to: 'lead', text: 'Hello from the dashboard.' }),
    });
    expect(sent.status).toBe(200);
    controller.abort();
    const summary = await running;
    expect(summary).toMatchObject({ reportWritten: true, interrupted: false });

    const teamDir = path.join(work, '.teamwire', 'teams', summary.teamId);
    const { records } = await readTeamLog(teamDir);
    const note = records.find(
      (r) => r.type === 'message.queued' && r.message.senderName === 'operator',
    );
    expect(note).toBeDefined();

    // the stopped team, read-only, from another process's point of view
    const stop = new AbortController();
    let readOnlyUrl = '';
    const watching = runWeb(
      { command: 'web', teamId: summary.teamId, stateDir: '.teamwire', port: 0 },
      {
        stdout: textSink(),
        cwd: work,
        env: {},
        signal: stop.signal,
        onServing: (served) => {
          readOnlyUrl = served;
        },
      },
    );
    await vi.waitUntil(() => readOnlyUrl !== '', { timeout: 30_000 });
    const roToken = new URL(readOnlyUrl).searchParams.get('token') as string;
    const ro = JSON.parse(
      (await http(new URL(`/api/snapshot?token=${roToken}`, readOnlyUrl).toString())).body,
    );
    expect(ro.readOnly).toBe(true);
    // turns and tokens come from the transcripts, read without the folder's lock
    expect(ro.usage?.lead?.turns).toBeGreaterThan(0);
    expect(ro.usage?.lead?.inputTokens).toBeGreaterThan(0);
    expect(ro.records.map((r: { seq: number }) => r.seq)).toEqual(records.map((r) => r.seq));
    const refused = await http(new URL('/api/actions/message', readOnlyUrl).toString(), {
      method: 'POST',
      headers: { 'x-teamwire-token': roToken, 'content-type': 'application/json' },
      body: JSON.stringify({ to: 'lead', text: 'x' }),
    });
    expect(JSON.parse(refused.body).error.code).toBe('READ_ONLY');
    stop.abort();
    await watching;
  });
});
