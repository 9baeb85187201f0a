import { readFileSync } from 'node:fs';
import path from 'node:path';
import { foldTeam, type TeamRecord } from '@teamwire/core';
import { readTeamLog } from '@teamwire/storage';
import { describe, expect, it } from 'vitest';
import { parseArgs } from './args.js';
import { formatFixSummary, runFix } from './fix-app.js';
import { MAX_STALLED_WAITS } from './policy-lead-common.js';
import { runExitCode } from './run-summary.js';
import {
  FIX_EXPECTED,
  failedCalls,
  gitOut,
  makeFixRepo,
  repoSnapshot,
  tempDir,
  textSink,
  toolCalls,
  transcriptOf,
} from './test-support.js';

async function fix(work: string, extra: { conflictFile?: string; maxMembers?: number } = {}) {
  const command = parseArgs(['fix', '--dir', 'repo', '--durability', 'buffered', '--plain'], {
    cwd: work,
  });
  if (command.command !== 'fix') throw new Error('expected a fix command');
  const out = textSink();
  const summary = await runFix(
    { ...command, ...extra },
    { stdout: out, stderr: out, cwd: work, env: {} },
  );
  return { summary, out: out.text() };
}

describe('demo fix on the offline policy model', () => {
  it('commits every folder’s REVIEW.md in its own worktree and merges them all, leaving --dir alone', async () => {
    const work = tempDir('fix');
    const repo = path.join(work, 'repo');
    makeFixRepo(repo);
    const before = repoSnapshot(repo);

    const { summary, out } = await fix(work);
    expect(summary.reportWritten).toBe(true);
    expect(summary.interrupted).toBe(false);
    expect(repoSnapshot(repo)).toBe(before);

    // the result branch holds each folder's REVIEW.md with the folder's numbers, and nothing else new
    const scratch = summary.repo;
    expect(scratch.startsWith(path.join(work, '.teamwire', 'fix', summary.teamId))).toBe(true);
    const base = gitOut(repo, ['rev-parse', 'main']).trim();
    const changed = gitOut(scratch, ['diff', '--name-only', base, summary.resultBranch]);
    expect(changed.split('\n').filter(Boolean)).toEqual([
      'alpha/REVIEW.md',
      'beta/REVIEW.md',
      'gamma/REVIEW.md',
    ]);
    for (const [unit, lines] of Object.entries(FIX_EXPECTED)) {
      const text = gitOut(scratch, ['show', `${summary.resultBranch}:${unit}/REVIEW.md`]);
      for (const line of lines) expect(text.split('\n')).toContain(line);
    }

    // each reviewer committed on its own branch, in its own worktree
    const team = foldTeam((await readTeamLog(summary.teamDir)).records, {
      teamId: summary.teamId,
    });
    const fixers = team.roster.filter((m) => m.name !== 'lead');
    expect(fixers.map((m) => [m.name, m.phase])).toEqual([
      ['fixer-1', 'retired'],
      ['fixer-2', 'retired'],
      ['fixer-3', 'retired'],
    ]);
    for (const [i, unit] of ['alpha', 'beta', 'gamma'].entries()) {
      const member = fixers[i];
      expect(member?.workspace?.branch).toBe(`teamwire/${summary.teamId}/fixer-${i + 1}`);
      const files = gitOut(scratch, ['diff', '--name-only', base, member?.workspace?.branch ?? '']);
      expect(files.trim()).toBe(`${unit}/REVIEW.md`);
    }
    expect(team.tasks.every((t) => t.status === 'completed')).toBe(true);
    expect(team.pendingMail).toEqual([]);

    // the report lists every merge with its commit and file; the kept worktrees are named
    const report = readFileSync(summary.reportPath, 'utf8');
    for (const [i, unit] of ['alpha', 'beta', 'gamma'].entries()) {
      const branch = `teamwire/${summary.teamId}/fixer-${i + 1}`;
      expect(report).toContain(`| ${unit} | fixer-${i + 1} | \`${branch}\` | merged | 1 | 1 |`);
      const commit = gitOut(scratch, ['rev-parse', branch]).trim().slice(0, 12);
      expect(report).toContain(`- commit \`${commit}\` Add review notes for ${unit}`);
    }
    expect(report).toMatch(/## Conflicts\n\nNone\./);
    expect(summary.worktrees.map((w) => [w.branch, w.commitsAhead])).toEqual([
      [`teamwire/${summary.teamId}/fixer-1`, 1],
      [`teamwire/${summary.teamId}/fixer-2`, 1],
      [`teamwire/${summary.teamId}/fixer-3`, 1],
    ]);
    expect(report).toContain('## Worktrees kept');
    expect(out).toContain('fixer-1 commit_changes');
  });

  it('reports two units that changed one file as conflicts, as data', async () => {
    const work = tempDir('fix-conflict');
    const repo = path.join(work, 'repo');
    makeFixRepo(repo);
    const { summary } = await fix(work, { conflictFile: 'NOTES.md' });
    expect(summary.reportWritten).toBe(true);

    const report = readFileSync(summary.reportPath, 'utf8');
    const branch = (n: number) => `teamwire/${summary.teamId}/fixer-${n}`;
    expect(report).toContain(`| alpha | fixer-1 | \`${branch(1)}\` | merged | 1 | 2 |`);
    expect(report).toContain(`| beta | fixer-2 | \`${branch(2)}\` | conflict | 1 | 2 |`);
    expect(report).toContain(`| gamma | fixer-3 | \`${branch(3)}\` | conflict | 1 | 2 |`);
    const conflicts = report.slice(report.indexOf('## Conflicts'), report.indexOf('## alpha'));
    // git names the kind (`add/add`, or `contents` for the same path added twice, by version)
    const listed = conflicts.trim().split('\n').slice(2);
    expect(listed.map((line) => line.replace(/ \((add\/add|contents)\)$/, ' (kind)'))).toEqual([
      `- \`${branch(2)}\`: \`NOTES.md\` (kind)`,
      `- \`${branch(3)}\`: \`NOTES.md\` (kind)`,
    ]);
    // only the first branch reached the result branch; the others are untouched, still whole
    const base = gitOut(repo, ['rev-parse', 'main']).trim();
    expect(
      gitOut(summary.repo, ['diff', '--name-only', base, summary.resultBranch]).trim().split('\n'),
    ).toEqual(['NOTES.md', 'alpha/REVIEW.md']);
    expect(gitOut(summary.repo, ['show', `${branch(3)}:NOTES.md`])).toBe(
      'Last folder reviewed: gamma\n',
    );
  });
});

/** The most teammates (the lead not counted) that were live at once, record by record. */
function mostLiveAtOnce(records: readonly TeamRecord[], leadId: string): number {
  const phases = new Map<string, string>();
  let most = 0;
  for (const r of records) {
    if (r.type !== 'member' || r.member.id === leadId) continue;
    phases.set(r.member.id, r.member.phase);
    const live = [...phases.values()].filter((p) => p === 'provisioning' || p === 'active');
    most = Math.max(most, live.length);
  }
  return most;
}

describe('demo fix with more folders than the team has places', () => {
  it('does every folder, never past the member limit: a reviewer whose folder is done gives its place up', async () => {
    const work = tempDir('fix-limit');
    makeFixRepo(path.join(work, 'repo'));
    const { summary } = await fix(work, { maxMembers: 2 });

    expect(summary.missing).toEqual([]);
    expect(runExitCode(summary)).toBe(0);
    expect(summary.tasks).toEqual({ done: 4, total: 4 });
    expect(formatFixSummary(summary)).toMatch(/^Fix finished\.$/m);
    const { records } = await readTeamLog(summary.teamDir);
    const team = foldTeam(records, { teamId: summary.teamId });
    expect(team.tasks.every((t) => t.status === 'completed')).toBe(true);
    expect(mostLiveAtOnce(records, summary.teamId)).toBe(2);
    // one reviewer per folder, each spawned once: no spawn refused, none replaced
    expect(team.roster.filter((m) => m.name !== 'lead').map((m) => [m.name, m.phase])).toEqual([
      ['fixer-1', 'retired'],
      ['fixer-2', 'retired'],
      ['fixer-3', 'retired'],
    ]);
    const lead = transcriptOf(summary.teamDir, summary.teamId);
    expect(toolCalls(lead).filter((n) => n === 'spawn_teammate')).toHaveLength(3);
    expect(failedCalls(lead)).toEqual([]);

    const report = readFileSync(summary.reportPath, 'utf8');
    for (const [i, unit] of ['alpha', 'beta', 'gamma'].entries()) {
      const branch = `teamwire/${summary.teamId}/fixer-${i + 1}`;
      expect(report).toContain(`| ${unit} | fixer-${i + 1} | \`${branch}\` | merged | 1 | 1 |`);
    }
    const base = gitOut(path.join(work, 'repo'), ['rev-parse', 'main']).trim();
    const changed = gitOut(summary.repo, ['diff', '--name-only', base, summary.resultBranch]);
    expect(changed.split('\n').filter(Boolean)).toEqual([
      'alpha/REVIEW.md',
      'beta/REVIEW.md',
      'gamma/REVIEW.md',
    ]);
  });

  it('fails loudly, naming every unfinished folder, when no folder can get a place', async () => {
    const work = tempDir('fix-no-place');
    makeFixRepo(path.join(work, 'repo'));
    const { summary } = await fix(work, { maxMembers: 0 });

    expect(summary.reportWritten).toBe(true);
    expect(summary.missing).toEqual([
      'task-1 "Fix alpha" is pending',
      'task-2 "Fix beta" is pending',
      'task-3 "Fix gamma" is pending',
    ]);
    expect(runExitCode(summary)).toBe(1);
    const printed = formatFixSummary(summary);
    expect(printed).toMatch(/^Fix finished with work missing\.$/m);
    expect(printed).toContain('  work missing (3):\n    - task-1 "Fix alpha" is pending\n');
    expect(printed).toContain(`resume with: teamwire-example fix --resume ${summary.teamId}`);
    // the lead waited a bounded number of times, then wrapped up and said what is missing
    const lead = transcriptOf(summary.teamDir, summary.teamId);
    expect(toolCalls(lead).filter((n) => n === 'wait_for_team').length).toBeLessThanOrEqual(
      MAX_STALLED_WAITS,
    );
    expect(toolCalls(lead).filter((n) => n === 'spawn_teammate')).toEqual([]);
    const report = readFileSync(summary.reportPath, 'utf8');
    expect(report).toContain('| alpha | fixer-1 | - | unfinished, not merged | - | - |');
  });
});
