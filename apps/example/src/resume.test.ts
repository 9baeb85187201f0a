import { spawn } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { foldTeam, parseTranscriptEntry, type TeamRecord } from '@teamwire/core';
import { readTeamLog } from '@teamwire/storage';
import { describe, expect, it } from 'vitest';
import {
  CLI,
  FIXTURE_EXPECTED,
  makeFixtureRepo,
  parseReportTable,
  runCli,
  tempDir,
} from './test-support.js';

/** Starts the CLI and SIGKILLs it once `completions` more tasks have completed; resolves with its output. */
function runUntilKilled(
  args: readonly string[],
  cwd: string,
  completions: number,
): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [CLI, ...args], {
      cwd,
      env: { ...process.env, INIT_CWD: cwd },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    let seen = 0;
    child.stdout.on('data', (chunk: Buffer) => {
      out += chunk.toString();
      seen = (out.match(/ in_progress -> completed /g) ?? []).length;
      if (seen >= completions && child.exitCode === null && !child.killed) child.kill('SIGKILL');
    });
    child.on('error', reject);
    child.on('close', (_code, signal) => {
      if (signal !== 'SIGKILL') reject(new Error(`the run ended before it was killed:\n${out}`));
      else resolve(out);
    });
  });
}

describe('killing the app mid-run and resuming it', () => {
  for (const window of [undefined, 3600]) {
    const label =
      window === undefined ? '' : `, its reviewers compacting (--context-window ${window})`;
    it(`finishes every task exactly once and delivers no message twice${label}`, async () => {
      await killAndResume(window);
    });
  }
});

/** Kills a review twice and resumes it to the end; checks that nothing was done or delivered twice. */
async function killAndResume(window: number | undefined): Promise<void> {
  const work = tempDir('resume');
  const repo = path.join(work, 'repo');
  makeFixtureRepo(repo, { extraUnits: 4 });
  const common = ['--state-dir', path.join(work, 'state'), '--plain'];
  const first = await runUntilKilled(
    [
      '--dir',
      repo,
      '--report',
      path.join(work, 'report.md'),
      '--pace',
      '15',
      // kept in the team folder: the resumed runs compact as the first did
      ...(window === undefined ? [] : ['--context-window', String(window)]),
      ...common,
    ],
    work,
    2,
  );
  const teamId = /team (\S+)/.exec(first)?.[1];
  expect(teamId).toMatch(/^[0-9A-Z]{26}$/);
  const id = teamId as string;
  const teamDir = path.join(work, 'state', 'teams', id);
  const before = foldTeam((await readTeamLog(teamDir)).records, { teamId: id });
  const doneBefore = before.tasks.filter((t) => t.status === 'completed').map((t) => t.id);
  expect(doneBefore.length).toBeGreaterThanOrEqual(2);
  expect(before.tasks.some((t) => t.status !== 'completed')).toBe(true);

  // killed a second time while resuming, then resumed to the end
  await runUntilKilled(['--resume', id, '--pace', '15', ...common], work, 1);
  const last = await runCli(['--resume', id, ...common], { cwd: work });
  expect(last.stderr).toBe('');
  expect(last.code).toBe(0);

  const records = (await readTeamLog(teamDir)).records;
  const team = foldTeam(records, { teamId: id });
  expect(team.tasks).toHaveLength(9);
  expect(team.tasks.every((t) => t.status === 'completed')).toBe(true);
  expect(team.pendingMail).toEqual([]);
  expect(team.roster.filter((m) => m.name !== 'lead').every((m) => m.phase === 'retired')).toBe(
    true,
  );

  // every task reached `completed` once and never changed after it: nothing finished was redone
  const history = new Map<string, string[]>();
  for (const r of records) {
    if (r.type === 'task')
      history.set(r.task.id, [...(history.get(r.task.id) ?? []), r.task.status]);
  }
  for (const [taskId, statuses] of history) {
    expect({
      taskId,
      completions: statuses.filter((s) => s === 'completed').length,
      last: statuses.at(-1),
    }).toEqual({
      taskId,
      completions: 1,
      last: 'completed',
    });
  }
  for (const taskId of doneBefore)
    expect(history.get(taskId)?.indexOf('completed')).toBe((history.get(taskId)?.length ?? 0) - 1);

  // every queued message is delivered once, into its target's transcript, once
  const queued = records.filter(
    (r): r is Extract<TeamRecord, { type: 'message.queued' }> => r.type === 'message.queued',
  );
  const delivered = records.filter((r) => r.type === 'message.delivered');
  expect(delivered).toHaveLength(queued.length);
  const seen = new Map<string, string>();
  let compactions = 0;
  for (const file of readdirSync(path.join(teamDir, 'transcripts'))) {
    const memberId = file.replace(/\.jsonl$/, '');
    for (const line of readFileSync(path.join(teamDir, 'transcripts', file), 'utf8').split('\n')) {
      if (!line) continue;
      const source = parseTranscriptEntry(JSON.parse(line)).message.source;
      if (source?.kind === 'compaction') compactions++;
      if (source?.kind !== 'team-message') continue;
      expect(seen.has(source.messageId), `message ${source.messageId} twice`).toBe(false);
      seen.set(source.messageId, memberId);
    }
  }
  expect(new Map(queued.map((q) => [q.message.id, q.message.targetId]))).toEqual(seen);
  if (window === undefined) expect(compactions).toBe(0);
  else expect(compactions).toBeGreaterThan(0);

  const rows = parseReportTable(readFileSync(path.join(work, 'report.md'), 'utf8'));
  const byUnit = Object.fromEntries(
    rows.map((r) => [r.unit, { files: r.files, lines: r.lines, todo: r.todo, exports: r.exports }]),
  );
  const extras = Object.fromEntries(
    [1, 2, 3, 4].map((i) => [`extra${i}`, { files: 4, lines: 8, todo: 4, exports: 4 }]),
  );
  expect(byUnit).toEqual({ ...FIXTURE_EXPECTED, ...extras });
}
