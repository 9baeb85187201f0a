import { existsSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { foldTeam } from '@teamwire/core';
import { readTeamLog } from '@teamwire/storage';
import { describe, expect, it } from 'vitest';
import { gitOut, makeFixRepo, runCli, runCliUntil, tempDir } from './test-support.js';

/** Output lines after which a round is killed: random, and printed so a failure can be replayed. */
function killPoints(rounds: number): number[] {
  const seed = process.env.FIX_CRASH_POINTS;
  if (seed) return seed.split(',').map(Number);
  return Array.from({ length: rounds }, () => 2 + Math.floor(Math.random() * 40));
}

describe('demo fix killed at random moments and resumed each time', () => {
  it('ends with every folder merged and no orphan worktree after its final drain', async () => {
    const work = tempDir('fix-crash');
    const repo = path.join(work, 'repo');
    makeFixRepo(repo);
    const common = ['--state-dir', path.join(work, 'state'), '--plain', '--pace', '5'];
    const points = killPoints(4);
    const context = `kill points ${points.join(',')} (replay with FIX_CRASH_POINTS=${points.join(',')})`;

    let id: string | undefined;
    for (const point of points) {
      const args = id
        ? ['fix', '--resume', id, ...common]
        : ['fix', '--dir', repo, '--report', path.join(work, 'report.md'), ...common];
      const run = await runCliUntil(args, work, (out) => out.split('\n').length > point);
      id ??= /team (\S+)/.exec(run.stdout)?.[1];
      expect(id, context).toMatch(/^[0-9A-Z]{26}$/);
      if (!run.killed) expect(run.code, `${context}\n${run.stdout}`).toBe(0);
    }
    const teamId = id as string;
    const final = await runCli(['fix', '--resume', teamId, ...common], { cwd: work });
    expect(final.stderr, context).toBe('');
    expect(final.code, `${context}\n${final.stdout}`).toBe(0);

    const team = foldTeam((await readTeamLog(path.join(work, 'state', 'teams', teamId))).records, {
      teamId,
    });
    expect(
      team.tasks.map((t) => t.status),
      context,
    ).toEqual(Array(4).fill('completed'));
    // mail is left only for members that can no longer read it: one that failed while
    // provisioning (its spawn prompt), or a retired one (a shutdown request repeated after a kill)
    const gone = new Set(
      team.roster.filter((m) => m.phase === 'failed' || m.phase === 'retired').map((m) => m.id),
    );
    expect(
      team.pendingMail.filter((m) => !gone.has(m.targetId)),
      context,
    ).toEqual([]);
    const fixers = team.roster.filter((m) => m.name !== 'lead');
    expect(
      fixers.every((m) => m.phase === 'retired' || m.phase === 'failed'),
      context,
    ).toBe(true);

    // every folder reached the result branch
    const scratch = path.join(work, 'state', 'fix', teamId, 'repo');
    const base = gitOut(repo, ['rev-parse', 'main']).trim();
    expect(
      gitOut(scratch, ['diff', '--name-only', base, `teamwire-fix/${teamId}`])
        .trim()
        .split('\n'),
      context,
    ).toEqual(['alpha/REVIEW.md', 'beta/REVIEW.md', 'gamma/REVIEW.md']);

    // the worktrees left are the kept ones of retired members with work, nothing else
    const listed = gitOut(scratch, ['worktree', 'list', '--porcelain'])
      .split('\n\n')
      .filter((block) => block.trim() !== '')
      .map((block) => ({
        path: /^worktree (.*)$/m.exec(block)?.[1] as string,
        branch: /^branch refs\/heads\/(.*)$/m.exec(block)?.[1],
        locked: /^locked/m.test(block),
      }))
      .filter((w) => path.resolve(w.path) !== path.resolve(scratch));
    const expected = fixers
      .filter((m) => m.phase === 'retired' && m.workspace !== undefined)
      .filter(
        (m) =>
          Number(gitOut(scratch, ['rev-list', '--count', `${base}..${m.workspace?.branch}`])) > 0,
      )
      .map((m) => ({ path: m.workspace?.path, branch: m.workspace?.branch, locked: false }));
    expect(listed, context).toEqual(expected);
    expect(listed.length, context).toBeGreaterThanOrEqual(3);
    for (const m of fixers.filter((f) => f.phase === 'failed')) {
      expect(gitOut(scratch, ['branch', '--list', `teamwire/${teamId}/${m.name}`]), context).toBe(
        '',
      );
    }
    // no dangling admin entries and no leftover folders of half-made worktrees
    expect(gitOut(scratch, ['worktree', 'prune', '--dry-run', '--verbose']), context).toBe('');
    const root = path.join(scratch, '.git', 'teamwire-worktrees', teamId);
    const folders = existsSync(root)
      ? readdirSync(root, { withFileTypes: true })
          .filter((d) => d.isDirectory())
          .map((d) => path.join(root, d.name))
      : [];
    expect(folders.sort(), context).toEqual(expected.map((w) => w.path).sort());
  });
});
