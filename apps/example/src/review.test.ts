import { execFileSync } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { foldTeam, parseTranscriptEntry } from '@teamwire/core';
import { readTeamLog, TRANSCRIPTS_DIR } from '@teamwire/storage';
import { describe, expect, it } from 'vitest';
import { formatSummary, runReview } from './app.js';
import { parseArgs } from './args.js';
import {
  FIXTURE_EXPECTED,
  makeFixtureRepo,
  parseReportTable,
  runCli,
  TEAMWIRE_CLI,
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

      // teamwire verify reads the team from its folder, without taking the lock: a full fold
      // of the log agrees with every snapshot the run wrote, and every transcript reads whole
      const verified = await runCli(
        ['verify', '--dir', '.teamwire', '--team', summary.teamId, '--json'],
        { cwd: work, cli: TEAMWIRE_CLI },
      );
      expect(verified).toMatchObject({ code: 0, stderr: '' });
      const verification = JSON.parse(verified.stdout);
      expect(verification).toMatchObject({
        teamId: summary.teamId,
        records: log.records.length,
        transcripts: team.roster.length,
        problems: [],
      });
      expect(verification.snapshots.length).toBeGreaterThan(0);
      for (const snapshot of verification.snapshots) expect(snapshot.status).toBe('matches');
    });
  }
});

describe('a review whose reviewers compact their context', () => {
  it('reports the same numbers, each compaction on the board, in the summary and in the transcript', async () => {
    const work = tempDir('review-compact');
    const repo = path.join(work, 'repo');
    makeFixtureRepo(repo);
    const command = parseArgs(
      [
        '--dir',
        'repo',
        '--teammates',
        '2',
        '--context-window',
        '3600',
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
    const rows = parseReportTable(readFileSync(path.join(work, 'team-report.md'), 'utf8'));
    expect(
      Object.fromEntries(
        rows.map((r) => [
          r.unit,
          { files: r.files, lines: r.lines, todo: r.todo, exports: r.exports },
        ]),
      ),
    ).toEqual(FIXTURE_EXPECTED);

    // the reviewers compacted (the offline lead keeps its whole conversation), and said so
    expect(summary.compactions.length).toBeGreaterThan(0);
    for (const c of summary.compactions) {
      expect(c.member).toMatch(/^reviewer-[12]$/);
      expect(c).toMatchObject({ reason: 'budget', policy: 'deterministic' });
      expect(c.tokensBefore).toBeGreaterThan(2250); // 75% of the window
      expect(c.tokensAfter).toBeGreaterThan(0);
    }
    // a summary of a few short messages may be longer than they were; most save tokens
    expect(summary.compactions.some((c) => c.tokensAfter < c.tokensBefore)).toBe(true);
    const fed = out.text().match(/ reviewer-\d compacted its context: /g) ?? [];
    expect(fed).toHaveLength(summary.compactions.length);
    const printed = formatSummary(summary);
    expect(printed).toContain(`  context compactions: ${summary.compactions.length}\n`);
    expect(printed).toMatch(/^ {4}reviewer-[12] +\d+× +[\d.]+k?→[\d.]+k?/m);

    // each one is an entry of its member's transcript, as the event said
    const team = foldTeam((await readTeamLog(summary.teamDir)).records, {
      teamId: summary.teamId,
    });
    for (const member of team.roster) {
      const stored = readFileSync(
        path.join(summary.teamDir, TRANSCRIPTS_DIR, `${member.id}.jsonl`),
        'utf8',
      )
        .split('\n')
        .filter(Boolean)
        .map((line) => parseTranscriptEntry(JSON.parse(line)).message.source)
        .filter((source) => source?.kind === 'compaction')
        .map(
          (source) => source?.kind === 'compaction' && [source.tokensBefore, source.tokensAfter],
        );
      expect(stored, member.name).toEqual(
        summary.compactions
          .filter((c) => c.member === member.name)
          .map((c) => [c.tokensBefore, c.tokensAfter]),
      );
    }
    // the team folder keeps the window, for --resume
    const settings = JSON.parse(
      readFileSync(path.join(summary.teamDir, 'example-app.json'), 'utf8'),
    );
    expect(settings.contextWindow).toBe(3600);
  });

  it('refuses a settings file with a bad window when resuming, with the usual error', async () => {
    const work = tempDir('review-bad-window');
    const teamId = '01J0000000000000000000BAD0';
    const teamDir = path.join(work, '.teamwire', 'teams', teamId);
    mkdirSync(teamDir, { recursive: true });
    writeFileSync(
      path.join(teamDir, 'example-app.json'),
      JSON.stringify({
        version: 1,
        dir: work,
        teammates: 1,
        protocol: 'xml',
        report: path.join(work, 'team-report.md'),
        contextWindow: 100,
      }),
    );
    const command = parseArgs(['--resume', teamId, '--plain'], { cwd: work });
    if (command.command !== 'review') throw new Error('expected a review command');
    const out = textSink();
    const refused = runReview(command, { stdout: out, stderr: out, cwd: work, env: {} });
    await expect(refused).rejects.toMatchObject({ code: 'INVALID_RECORD' });
    await expect(refused).rejects.toThrow(
      /example-app\.json in .* is not valid: [\s\S]*contextWindow/,
    );
  });
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
    // the default offline window is small enough that the reviewers compact their context
    const compactions = Number(/^ {2}context compactions: (\d+)$/m.exec(run.stdout)?.[1] ?? 0);
    expect(compactions).toBeGreaterThanOrEqual(1);
    expect(run.stdout.match(/ reviewer-\d compacted its context: /g)).toHaveLength(compactions);
    expect(run.stdout).toMatch(/^ {4}reviewer-\d +\d+× +[\d.]+k→[\d.]+k/m);

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
