import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { foldTeam } from '@teamwire/core';
import { readTeamLog } from '@teamwire/storage';
import { describe, expect, it } from 'vitest';
import { runReview } from './app.js';
import { parseArgs } from './args.js';
import { inspectTeam } from './inspect.js';
import {
  FIXTURE_EXPECTED,
  makeFixtureRepo,
  parseReportTable,
  runCli,
  tempDir,
  textSink,
} from './test-support.js';

describe('a review on the offline policy model', () => {
  for (const protocol of ['xml', 'json', 'tool-call'] as const) {
    it(`reports the fixture's numbers exactly over the ${protocol} protocol`, async () => {
      const work = tempDir(`review-${protocol}`);
      const repo = path.join(work, 'repo');
      makeFixtureRepo(repo);
      const command = parseArgs(
        [
          '--dir',
          'repo',
          '--protocol',
          protocol,
          '--teammates',
          '2',
          '--durability',
          'buffered',
          '--plain',
        ],
        { cwd: work },
      );
      if (command.command !== 'review') throw new Error('expected a review command');
      const out = textSink();
      const summary = await runReview(command, { stdout: out, stderr: out, cwd: work, env: {} });

      expect(summary.reportWritten).toBe(true);
      expect(summary.interrupted).toBe(false);
      const rows = parseReportTable(readFileSync(path.join(work, 'team-report.md'), 'utf8'));
      expect(
        Object.fromEntries(
          rows.map((r) => [
            r.unit,
            { files: r.files, lines: r.lines, todo: r.todo, exports: r.exports },
          ]),
        ),
      ).toEqual(FIXTURE_EXPECTED);
      for (const row of rows) expect(row.reviewer).toMatch(/^reviewer-[12]$/);

      // the team really ran: every task completed once, everyone retired, no mail left behind
      const log = await readTeamLog(summary.teamDir);
      const team = foldTeam(log.records, { teamId: summary.teamId });
      expect(team.tasks.map((t) => t.status)).toEqual(Array(5).fill('completed'));
      expect(team.pendingMail).toEqual([]);
      expect(team.roster.filter((m) => m.name !== 'lead').map((m) => m.phase)).toEqual([
        'retired',
        'retired',
      ]);
      expect(summary.tasks).toEqual({ done: 5, total: 5 });
      expect(out.text()).toContain('reviewer-1 list_files');

      // inspect prints the same team from its folder, without taking the lock
      const printed = await inspectTeam(
        { command: 'inspect', teamId: summary.teamId, stateDir: '.teamwire' },
        { cwd: work },
      );
      expect(printed).toMatch(/^ {2}reviewer-2 +retired +reviewer$/m);
      expect(printed).toMatch(/^ {2}task-5 +completed +lead +r3 Write the team report$/m);
      expect(printed).toContain('Pending mail: 0');
      expect(printed).toMatch(/Transcript of lead \(\d+ entries\):\n {2}user: Review the codebase/);
      expect(printed).toContain(
        'assistant: All 4 folders are reviewed; writing the report. -> write_report(',
      );
    });
  }
});

describe('pnpm demo on this repository', () => {
  const repoRoot = fileURLToPath(new URL('../../..', import.meta.url));

  it('exits 0 with a report whose numbers match the files themselves', async () => {
    const work = tempDir('repo');
    const run = await runCli(
      [
        '--dir',
        repoRoot,
        '--state-dir',
        path.join(work, '.teamwire'),
        '--report',
        path.join(work, 'report.md'),
        '--plain',
      ],
      { cwd: work },
    );
    expect(run.stderr).toBe('');
    expect(run.code).toBe(0);
    expect(run.stdout).toContain('Review finished.');

    // an independent oracle: git's own idea of the files (tracked and untracked, not ignored)
    const files = execFileSync(
      'git',
      ['ls-files', '--cached', '--others', '--exclude-standard', '-z'],
      { cwd: repoRoot },
    )
      .toString()
      .split('\0')
      .filter((f) => f && !f.split('/').some((part) => part === 'node_modules'))
      .filter((f) => {
        try {
          readFileSync(path.join(repoRoot, f));
          return true;
        } catch {
          return false; // deleted in the working tree
        }
      });
    const rows = parseReportTable(readFileSync(path.join(work, 'report.md'), 'utf8'));
    expect(rows.map((r) => r.unit)).toEqual(
      expect.arrayContaining([
        'packages/core',
        'packages/protocol',
        'packages/storage',
        'packages/host-adapters',
        'apps/example',
      ]),
    );
    for (const row of rows) {
      const mine = files.filter((f) => f.startsWith(`${row.unit}/`));
      let lines = 0;
      let todo = 0;
      for (const f of mine) {
        const buffer = readFileSync(path.join(repoRoot, f));
        if (buffer.subarray(0, 8192).includes(0)) continue;
        const text = buffer.toString('utf8');
        const split = text.split('\n');
        lines += text === '' ? 0 : text.endsWith('\n') ? split.length - 1 : split.length;
        todo += split.filter((l) => /\b(TODO|FIXME)\b/.test(l)).length;
      }
      expect({ unit: row.unit, files: row.files, lines: row.lines, todo: row.todo }).toEqual({
        unit: row.unit,
        files: mine.length,
        lines,
        todo,
      });
    }
  });
});
