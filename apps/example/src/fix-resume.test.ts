import { readFileSync } from 'node:fs';
import path from 'node:path';
import { foldTeam } from '@teamwire/core';
import { readTeamLog } from '@teamwire/storage';
import { describe, expect, it } from 'vitest';
import { gitOut, makeFixRepo, repoSnapshot, runCli, runCliUntil, tempDir } from './test-support.js';

/** The report with the team id taken out: two teams that did the same work print the same. */
const normalize = (report: string, teamId: string) => {
  const kept = report.indexOf('## Worktrees kept');
  return report.slice(0, kept === -1 ? undefined : kept).replaceAll(teamId, '<team>');
};

describe('killing demo fix mid-run and resuming it', () => {
  it('finishes the same work as an uninterrupted run, each reviewer back in its own worktree', async () => {
    const work = tempDir('fix-resume');
    const repo = path.join(work, 'repo');
    makeFixRepo(repo);
    const before = repoSnapshot(repo);
    const common = ['--state-dir', path.join(work, 'state'), '--plain'];

    // the reference: one run to the end
    const clean = await runCli(
      ['fix', '--dir', repo, '--report', path.join(work, 'clean.md'), ...common],
      { cwd: work },
    );
    expect(clean.stderr).toBe('');
    expect(clean.code).toBe(0);
    const cleanId = /team (\S+)/.exec(clean.stdout)?.[1] as string;

    // killed once the first folder is committed and completed, then resumed to the end
    const first = await runCliUntil(
      ['fix', '--dir', repo, '--report', path.join(work, 'report.md'), '--pace', '15', ...common],
      work,
      (out) => / in_progress -> completed \(fixer-/.test(out),
    );
    expect(first.killed).toBe(true);
    const id = /team (\S+)/.exec(first.stdout)?.[1] as string;
    expect(id).toMatch(/^[0-9A-Z]{26}$/);
    const teamDir = path.join(work, 'state', 'teams', id);
    const mid = foldTeam((await readTeamLog(teamDir)).records, { teamId: id });
    expect(mid.tasks.some((t) => t.status !== 'completed')).toBe(true);
    const recorded = new Map(
      mid.roster.filter((m) => m.workspace).map((m) => [m.name, m.workspace?.path]),
    );
    expect(recorded.size).toBeGreaterThanOrEqual(1);

    const last = await runCli(['fix', '--resume', id, ...common], { cwd: work });
    expect(last.stderr).toBe('');
    expect(last.code).toBe(0);
    expect(last.stdout).toContain('Fix finished.');

    const records = (await readTeamLog(teamDir)).records;
    const team = foldTeam(records, { teamId: id });
    expect(team.tasks.map((t) => t.status)).toEqual(Array(4).fill('completed'));
    expect(team.pendingMail).toEqual([]);
    const fixers = team.roster.filter((m) => m.name !== 'lead');
    expect(fixers.every((m) => m.phase === 'retired')).toBe(true);
    // a member that had its worktree before the kill has the same one after it
    for (const [name, where] of recorded) {
      expect(fixers.find((m) => m.name === name)?.workspace?.path).toBe(where);
    }
    // every task completed once: nothing finished before the kill was redone
    const completions = new Map<string, number>();
    for (const r of records) {
      if (r.type === 'task' && r.task.status === 'completed') {
        completions.set(r.task.id, (completions.get(r.task.id) ?? 0) + 1);
      }
    }
    expect([...completions.values()]).toEqual([1, 1, 1, 1]);

    // the same result as the uninterrupted run: the same tree, commits and report
    const scratch = path.join(work, 'state', 'fix', id, 'repo');
    const cleanScratch = path.join(work, 'state', 'fix', cleanId, 'repo');
    expect(gitOut(scratch, ['rev-parse', `teamwire-fix/${id}^{tree}`])).toBe(
      gitOut(cleanScratch, ['rev-parse', `teamwire-fix/${cleanId}^{tree}`]),
    );
    expect(normalize(readFileSync(path.join(work, 'report.md'), 'utf8'), id)).toBe(
      normalize(readFileSync(path.join(work, 'clean.md'), 'utf8'), cleanId),
    );
    expect(repoSnapshot(repo)).toBe(before);
  });
});
