import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { TeamError } from '@teamwire/core';
import { afterEach, describe, expect, it } from 'vitest';
import { createGitWorkspaces } from './git-workspaces.js';
import { mergeBranch, parseMergeTree } from './merge-branch.js';
import { commitAll, git, IDENTITY, makeRepo, removeTempDirs, worktrees } from './test-support.js';

afterEach(removeTempDirs);

const TEAM = '01JMERGETEAM00000000000000';

/** A repository on `main` with `integration` and two members' branches that both edit a.txt. */
async function scenario() {
  const repo = makeRepo({ 'a.txt': 'line 1\nline 2\nline 3\n', 'b.txt': 'b\n' });
  git(repo, 'branch', 'integration');
  const provider = createGitWorkspaces({ repoDir: repo, base: 'integration' });
  const alice = await provider.acquire({ teamId: TEAM, member: { id: 'A', name: 'alice' } });
  const bob = await provider.acquire({ teamId: TEAM, member: { id: 'B', name: 'bob' } });
  writeFileSync(join(alice.path, 'a.txt'), 'line 1\nalice\nline 3\n');
  writeFileSync(join(alice.path, 'alice.txt'), 'new\n');
  commitAll(alice.path, 'alice');
  writeFileSync(join(bob.path, 'a.txt'), 'line 1\nbob\nline 3\n');
  commitAll(bob.path, 'bob');
  // The lead has uncommitted work of its own, which no merge may touch.
  writeFileSync(join(repo, 'b.txt'), 'lead edits\n');
  writeFileSync(join(repo, 'lead-untracked.txt'), 'x\n');
  return { repo, alice: alice.branch!, bob: bob.branch! };
}

function leadState(repo: string) {
  return {
    head: git(repo, 'rev-parse', 'HEAD').trim(),
    status: git(repo, 'status', '--porcelain', '--untracked-files=all'),
    b: readFileSync(join(repo, 'b.txt'), 'utf8'),
    index: git(repo, 'ls-files', '--stage'),
  };
}

for (const method of ['merge-tree', 'worktree'] as const) {
  describe(`mergeBranch (${method})`, () => {
    it('merges cleanly with a merge commit, then reports a conflict as data and changes nothing', async () => {
      const { repo, alice, bob } = await scenario();
      const before = leadState(repo);
      // alice first: a fast-forward of integration.
      const ff = await mergeBranch({ repoDir: repo, branch: alice, into: 'integration', method });
      expect(ff).toMatchObject({ merged: true, kind: 'fast-forward' });
      // A branch from before alice's work: merging it needs a merge commit.
      git(repo, 'branch', 'side', 'main');
      const side = join(repo, '..', `side-${method}`);
      git(repo, 'worktree', 'add', '--quiet', side, 'side');
      writeFileSync(join(side, 'c.txt'), 'c\n');
      commitAll(side, 'side');
      git(repo, 'worktree', 'remove', side);
      const integrationBefore = git(repo, 'rev-parse', 'integration').trim();
      const clean = await mergeBranch({
        repoDir: repo,
        branch: 'side',
        into: 'integration',
        message: 'merge side',
        author: IDENTITY,
        method,
      });
      expect(clean).toMatchObject({ merged: true, kind: 'merge' });
      if (!clean.merged) throw new Error('unreachable');
      expect(git(repo, 'rev-parse', 'integration').trim()).toBe(clean.commit);
      expect(git(repo, 'log', '-1', '--format=%P%n%s', clean.commit).trim().split('\n')).toEqual([
        `${integrationBefore} ${git(repo, 'rev-parse', 'side').trim()}`,
        'merge side',
      ]);
      expect(git(repo, 'show', `${clean.commit}:c.txt`)).toBe('c\n');
      expect(git(repo, 'show', `${clean.commit}:alice.txt`)).toBe('new\n');

      const target = git(repo, 'rev-parse', 'integration').trim();
      const conflict = await mergeBranch({
        repoDir: repo,
        branch: bob,
        into: 'integration',
        method,
      });
      expect(conflict).toEqual({
        merged: false,
        conflicts: [expect.objectContaining({ path: 'a.txt', type: 'content' })],
      });
      expect(git(repo, 'rev-parse', 'integration').trim()).toBe(target);
      expect(leadState(repo)).toEqual(before);
      // No temporary worktree is left behind.
      expect(worktrees(repo).map((w) => w.branch)).toEqual([
        'refs/heads/main',
        `refs/heads/teamwire/${TEAM}/alice`,
        `refs/heads/teamwire/${TEAM}/bob`,
      ]);
      expect(readdirSync(join(repo, '.git', 'worktrees')).sort()).toEqual(['alice', 'bob']);
    });

    it('says up-to-date when the branch is already merged', async () => {
      const { repo } = await scenario();
      git(repo, 'branch', 'old', 'main');
      const result = await mergeBranch({
        repoDir: repo,
        branch: 'old',
        into: 'integration',
        method,
      });
      expect(result).toEqual({
        merged: true,
        kind: 'up-to-date',
        commit: git(repo, 'rev-parse', 'integration').trim(),
      });
    });
  });
}

describe('mergeBranch: refusals', () => {
  it('refuses a missing `into`, a bad name, and a branch checked out in a working tree', async () => {
    const { repo, alice } = await scenario();
    const code = (p: Promise<unknown>) =>
      p.then(
        () => 'merged',
        (e: unknown) => (TeamError.isInstance(e) ? e.code : String(e)),
      );
    expect(await code(mergeBranch({ repoDir: repo, branch: alice, into: 'nope' }))).toBe(
      'INVALID_ARGUMENT',
    );
    expect(await code(mergeBranch({ repoDir: repo, branch: alice, into: 'bad..name' }))).toBe(
      'INVALID_ARGUMENT',
    );
    expect(await code(mergeBranch({ repoDir: repo, branch: '--force', into: 'integration' }))).toBe(
      'INVALID_ARGUMENT',
    );
    const head = git(repo, 'rev-parse', 'main').trim();
    expect(await code(mergeBranch({ repoDir: repo, branch: alice, into: 'main' }))).toBe(
      'INVALID_ARGUMENT',
    );
    expect(git(repo, 'rev-parse', 'main').trim()).toBe(head);
  });
});

describe('parseMergeTree', () => {
  it('reads the tree, the conflicted paths and their conflict types', () => {
    const out = [
      'b40a5b9d94df520dfc97c0d96f3b64ea12f51667',
      'a.txt',
      'd.txt',
      '',
      '1',
      'a.txt',
      'Auto-merging',
      'Auto-merging a.txt\n',
      '1',
      'a.txt',
      'CONFLICT (contents)',
      'CONFLICT (content): Merge conflict in a.txt\n',
      '2',
      'd.txt',
      'e.txt',
      'CONFLICT (modify/delete)',
      'CONFLICT (modify/delete): d.txt deleted in x and modified in y.\n',
      '',
    ].join('\0');
    expect(parseMergeTree(out)).toEqual({
      tree: 'b40a5b9d94df520dfc97c0d96f3b64ea12f51667',
      conflicts: [
        { path: 'a.txt', type: 'content', message: 'CONFLICT (content): Merge conflict in a.txt' },
        {
          path: 'd.txt',
          type: 'modify/delete',
          message: 'CONFLICT (modify/delete): d.txt deleted in x and modified in y.',
        },
      ],
    });
  });
});
