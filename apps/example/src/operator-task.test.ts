import { existsSync } from 'node:fs';
import { request } from 'node:http';
import path from 'node:path';
import { contentText, foldTeam } from '@teamwire/core';
import { readTeamLog } from '@teamwire/storage';
import { describe, expect, it, vi } from 'vitest';
import { runReview } from './app.js';
import { parseArgs } from './args.js';
import { runExitCode } from './run-summary.js';
import {
  failedCalls,
  makeFixtureRepo,
  tempDir,
  textSink,
  toolCalls,
  transcriptOf,
} from './test-support.js';

function post(url: string, token: string, body: object): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request(
      url,
      {
        method: 'POST',
        headers: { 'x-teamwire-token': token, 'content-type': 'application/json' },
      },
      (res) => {
        let text = '';
        res.on('data', (chunk) => {
          text += chunk;
        });
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: text }));
      },
    );
    req.on('error', reject);
    req.end(JSON.stringify(body));
  });
}

describe('a task the operator adds from the dashboard mid-run', () => {
  it('is taken and closed once, with no failing call, and the review still finishes', async () => {
    const work = tempDir('operator-task');
    makeFixtureRepo(path.join(work, 'repo'));
    const command = parseArgs(
      [
        '--dir',
        'repo',
        '--teammates',
        '2',
        '--durability',
        'buffered',
        '--web',
        // slow enough that the task lands while the reviewers still have folders to do
        '--pace',
        '40',
      ],
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
    // once a reviewer works on its first folder
    await vi.waitUntil(() => / task-1 pending -> in_progress /.test(out.text()), {
      timeout: 60_000,
      interval: 20,
    });
    expect(existsSync(path.join(work, 'team-report.md'))).toBe(false); // mid-run
    const url = /web: the dashboard is at (\S+)/.exec(out.text())?.[1] as string;
    const token = new URL(url).searchParams.get('token') as string;
    const created = await post(new URL('/api/actions/task', url).toString(), token, {
      subject: 'Check the licence headers',
      description: 'Every source file should start with one.',
    });
    expect(created.status).toBe(200);
    const operatorTask = JSON.parse(created.body).id as string;

    await vi.waitUntil(() => out.text().includes('the dashboard stays at'), {
      timeout: 60_000,
      interval: 50,
    });
    controller.abort();
    const summary = await running;

    const { records } = await readTeamLog(summary.teamDir);
    const team = foldTeam(records, { teamId: summary.teamId });
    // no member made a call that failed: no release, again and again, of a task it cannot do
    const reviewers = team.roster.filter((m) => m.agentType === 'reviewer');
    expect(reviewers).toHaveLength(2);
    for (const member of [...reviewers, team.roster[0]]) {
      const conversation = transcriptOf(summary.teamDir, member?.id as string);
      expect(failedCalls(conversation), member?.name).toEqual([]);
    }
    // the review finished, the operator's task with it
    expect(summary).toMatchObject({ reportWritten: true, interrupted: false, missing: [] });
    expect(runExitCode(summary)).toBe(0);
    expect(team.tasks.map((t) => [t.subject, t.status])).toContainEqual([
      'Check the licence headers',
      'completed',
    ]);
    expect(team.tasks.every((t) => t.status === 'completed')).toBe(true);
    // claimed once: never released and claimed again
    const claims = records.filter(
      (r) => r.type === 'task' && r.task.id === operatorTask && r.task.status === 'in_progress',
    );
    expect(claims).toHaveLength(1);

    // the lead heard of it once
    const notes = records.filter(
      (r) =>
        r.type === 'message.queued' &&
        r.message.kind === 'message' &&
        contentText(r.message.content).includes(`${operatorTask} ("Check the licence headers")`),
    );
    expect(notes).toHaveLength(1);
    const lead = transcriptOf(summary.teamDir, summary.teamId);
    expect(toolCalls(lead).filter((n) => n === 'write_report')).toHaveLength(1);
  });
});
