import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { TeamError, type TeamErrorCode } from '@teamwire/core';
import { afterEach, describe, expect, it } from 'vitest';
import { createGitWorkspaces } from './git-workspaces.js';
import {
  branchExists,
  commitAll,
  git,
  makeRepo,
  removeTempDirs,
  tempDir,
  worktrees,
} from './test-support.js';

const TEAM = '01JTEAMULID0000000000000AB';
const alice = { id: '01JALICE', name: 'alice' };
const bob = { id: '01JBOB', name: 'bob' };

afterEach(removeTempDirs);

async function codeOf(promise: Promise<unknown>): Promise<TeamErrorCode | string> {
  try {
    await promise;
  } catch (error) {
    if (TeamError.isInstance(error)) return error.code;
    throw error;
  }
  return 'resolved';
}

describe('createGitWorkspaces: acquire', () => {
  it('gives two members isolated worktrees: edits to one file stay apart', async () => {
    const repo = makeRepo({ 'shared.txt': 'original\n' });
    const head = git(repo, 'rev-parse', 'HEAD').trim();
    const provider = createGitWorkspaces({ repoDir: repo });
    expect(provider.specificationVersion).toBe('v1');
    expect(provider.name).toBe('git-worktree');

    const a = await provider.acquire({ teamId: TEAM, member: alice });
    const b = await provider.acquire({ teamId: TEAM, member: bob });
    expect(a.branch).toBe(`teamwire/${TEAM}/alice`);
    expect(b.branch).toBe(`teamwire/${TEAM}/bob`);
    expect(a.base).toBe(head);
    expect(a.path).not.toBe(b.path);

    writeFileSync(join(a.path, 'shared.txt'), 'alice was here\n');
    writeFileSync(join(b.path, 'shared.txt'), 'bob was here\n');
    commitAll(a.path, 'alice');

    expect(readFileSync(join(a.path, 'shared.txt'), 'utf8')).toBe('alice was here\n');
    expect(readFileSync(join(b.path, 'shared.txt'), 'utf8')).toBe('bob was here\n');
    expect(readFileSync(join(repo, 'shared.txt'), 'utf8')).toBe('original\n');
    // The lead's tree sees neither the edits nor the worktrees as untracked files.
    expect(git(repo, 'status', '--porcelain', '--untracked-files=all')).toBe('');
    expect(git(repo, 'rev-parse', 'HEAD').trim()).toBe(head);
  });

  it('is idempotent: a second acquire returns the same worktree', async () => {
    const repo = makeRepo();
    const provider = createGitWorkspaces({ repoDir: repo });
    const first = await provider.acquire({ teamId: TEAM, member: alice });
    writeFileSync(join(first.path, 'work.txt'), 'unsaved\n');
    const [again, concurrent] = await Promise.all([
      provider.acquire({ teamId: TEAM, member: alice }),
      createGitWorkspaces({ repoDir: repo }).acquire({ teamId: TEAM, member: alice }),
    ]);
    expect(again).toEqual(first);
    expect(concurrent).toEqual(first);
    expect(readFileSync(join(first.path, 'work.txt'), 'utf8')).toBe('unsaved\n');
    expect(worktrees(repo).filter((w) => w.branch === `refs/heads/${first.branch}`)).toHaveLength(
      1,
    );
  });

  it('branches from `base` when given, and keeps worktrees under `root`', async () => {
    const repo = makeRepo({ 'a.txt': '1\n' });
    const first = git(repo, 'rev-parse', 'HEAD').trim();
    writeFileSync(join(repo, 'a.txt'), '2\n');
    commitAll(repo, 'second');
    const root = join(tempDir(), 'worktrees');
    const provider = createGitWorkspaces({ repoDir: repo, base: first, root });
    const ws = await provider.acquire({ teamId: TEAM, member: alice });
    expect(ws.path).toBe(join(root, TEAM, 'alice'));
    expect(ws.base).toBe(first);
    expect(readFileSync(join(ws.path, 'a.txt'), 'utf8')).toBe('1\n');
  });

  it('on revival returns the recorded worktree, and recreates it from the branch if its folder vanished', async () => {
    const repo = makeRepo();
    const provider = createGitWorkspaces({ repoDir: repo });
    const recorded = await provider.acquire({ teamId: TEAM, member: alice });
    writeFileSync(join(recorded.path, 'done.txt'), 'committed work\n');
    const commit = commitAll(recorded.path, 'work');

    const revived = createGitWorkspaces({ repoDir: repo });
    expect(await revived.acquire({ teamId: TEAM, member: alice, recorded })).toEqual(recorded);

    git(repo, 'worktree', 'remove', '--force', recorded.path);
    expect(existsSync(recorded.path)).toBe(false);
    const again = await revived.acquire({ teamId: TEAM, member: alice, recorded });
    expect(again).toEqual(recorded);
    expect(git(again.path, 'rev-parse', 'HEAD').trim()).toBe(commit);
    expect(readFileSync(join(again.path, 'done.txt'), 'utf8')).toBe('committed work\n');
  });

  it('on revival after a clean release whose retirement was never recorded, recreates from the recorded base', async () => {
    const repo = makeRepo({ 'a.txt': '1\n' });
    const provider = createGitWorkspaces({ repoDir: repo });
    const recorded = await provider.acquire({ teamId: TEAM, member: alice });
    expect((await provider.release({ teamId: TEAM, member: alice, recorded })).kept).toBe(false);
    // The lead moved on meanwhile; the revived member still starts from its recorded base.
    writeFileSync(join(repo, 'a.txt'), '2\n');
    commitAll(repo, 'lead moved on');
    const again = await provider.acquire({ teamId: TEAM, member: alice, recorded });
    expect(again).toEqual(recorded);
    expect(git(again.path, 'rev-parse', 'HEAD').trim()).toBe(recorded.base);
  });

  it('refuses a record that names another branch', async () => {
    const repo = makeRepo();
    const provider = createGitWorkspaces({ repoDir: repo });
    const recorded = { path: join(repo, 'x'), branch: 'main' };
    expect(await codeOf(provider.acquire({ teamId: TEAM, member: alice, recorded }))).toBe(
      'INVALID_ARGUMENT',
    );
  });

  it('refuses team ids and names that cannot be a branch', async () => {
    const provider = createGitWorkspaces({ repoDir: makeRepo() });
    for (const teamId of ['a..b', 'x.lock', '-x', 'a/b', 'a b', '', 'é']) {
      expect(await codeOf(provider.acquire({ teamId, member: alice }))).toBe('INVALID_ARGUMENT');
    }
    for (const name of ['Alice', 'a--b', 'a/b', '../x', '']) {
      expect(await codeOf(provider.acquire({ teamId: TEAM, member: { id: 'x', name } }))).toBe(
        'INVALID_NAME',
      );
    }
  });
});

describe('createGitWorkspaces: fail-closed', () => {
  it('WORKSPACE_NOT_A_REPOSITORY outside a repository', async () => {
    const provider = createGitWorkspaces({ repoDir: tempDir() });
    expect(await codeOf(provider.acquire({ teamId: TEAM, member: alice }))).toBe(
      'WORKSPACE_NOT_A_REPOSITORY',
    );
    const missing = createGitWorkspaces({ repoDir: join(tempDir(), 'nope') });
    expect(await codeOf(missing.acquire({ teamId: TEAM, member: alice }))).toBe(
      'WORKSPACE_NOT_A_REPOSITORY',
    );
  });

  it('WORKSPACE_GIT_MISSING when the git binary cannot be run', async () => {
    const provider = createGitWorkspaces({ repoDir: makeRepo(), git: '/nonexistent/git' });
    expect(await codeOf(provider.acquire({ teamId: TEAM, member: alice }))).toBe(
      'WORKSPACE_GIT_MISSING',
    );
    // A failed spawn left nothing: release reports nothing kept.
    expect(await provider.release({ teamId: TEAM, member: alice })).toEqual({
      kept: false,
      commitsAhead: 0,
      changedFiles: [],
    });
  });

  it('WORKSPACE_TAKEN when the member branch exists and is not this member’s', async () => {
    const repo = makeRepo();
    git(repo, 'branch', `teamwire/${TEAM}/alice`);
    const provider = createGitWorkspaces({ repoDir: repo });
    expect(await codeOf(provider.acquire({ teamId: TEAM, member: alice }))).toBe('WORKSPACE_TAKEN');
    // Release must not delete a branch it did not make.
    expect((await provider.release({ teamId: TEAM, member: alice })).kept).toBe(false);
    expect(branchExists(repo, `teamwire/${TEAM}/alice`)).toBe(true);
  });

  it('WORKSPACE_TAKEN when the branch is checked out in another worktree', async () => {
    const repo = makeRepo();
    const elsewhere = join(tempDir(), 'elsewhere');
    git(repo, 'worktree', 'add', '--quiet', '-b', `teamwire/${TEAM}/alice`, elsewhere);
    const provider = createGitWorkspaces({ repoDir: repo });
    expect(await codeOf(provider.acquire({ teamId: TEAM, member: alice }))).toBe('WORKSPACE_TAKEN');
  });

  it('WORKSPACE_TAKEN when the path is a plain folder holding files', async () => {
    const repo = makeRepo();
    const root = join(tempDir(), 'trees');
    mkdirSync(join(root, TEAM, 'alice'), { recursive: true });
    writeFileSync(join(root, TEAM, 'alice', 'mine.txt'), 'not yours\n');
    const provider = createGitWorkspaces({ repoDir: repo, root });
    expect(await codeOf(provider.acquire({ teamId: TEAM, member: alice }))).toBe('WORKSPACE_TAKEN');
    expect(readFileSync(join(root, TEAM, 'alice', 'mine.txt'), 'utf8')).toBe('not yours\n');
    expect(branchExists(repo, `teamwire/${TEAM}/alice`)).toBe(false);
  });

  it('WORKSPACE_FAILED naming the command when git fails', async () => {
    const repo = makeRepo();
    const provider = createGitWorkspaces({ repoDir: repo, base: 'no-such-commit' });
    await expect(provider.acquire({ teamId: TEAM, member: alice })).rejects.toMatchObject({
      code: 'WORKSPACE_FAILED',
    });
    const broken = createGitWorkspaces({ repoDir: repo });
    // A corrupt HEAD makes `git worktree prune` (the first repository command) fail.
    writeFileSync(join(repo, '.git', 'HEAD'), 'garbage\n');
    const error = await broken.acquire({ teamId: TEAM, member: alice }).catch((e: unknown) => e);
    expect(TeamError.isInstance(error)).toBe(true);
    expect((error as TeamError).code).toMatch(/^WORKSPACE_(FAILED|NOT_A_REPOSITORY)$/);
  });
});

describe('createGitWorkspaces: release', () => {
  it('removes a clean worktree and deletes its branch', async () => {
    const repo = makeRepo();
    const provider = createGitWorkspaces({ repoDir: repo });
    const recorded = await provider.acquire({ teamId: TEAM, member: alice });
    expect(await provider.release({ teamId: TEAM, member: alice, recorded })).toEqual({
      kept: false,
      commitsAhead: 0,
      changedFiles: [],
    });
    expect(existsSync(recorded.path)).toBe(false);
    expect(branchExists(repo, recorded.branch!)).toBe(false);
    expect(worktrees(repo)).toHaveLength(1);
  });

  it('keeps a worktree with an uncommitted (untracked) file', async () => {
    const repo = makeRepo({ 'a.txt': 'a\n' });
    const provider = createGitWorkspaces({ repoDir: repo });
    const recorded = await provider.acquire({ teamId: TEAM, member: alice });
    writeFileSync(join(recorded.path, 'new.txt'), 'draft\n');
    writeFileSync(join(recorded.path, 'a.txt'), 'changed\n');
    const release = await provider.release({ teamId: TEAM, member: alice, recorded });
    expect(release).toEqual({
      kept: true,
      path: recorded.path,
      branch: recorded.branch,
      commitsAhead: 0,
      changedFiles: expect.arrayContaining(['a.txt', 'new.txt']),
    });
    expect(release.changedFiles).toHaveLength(2);
    expect(readFileSync(join(recorded.path, 'new.txt'), 'utf8')).toBe('draft\n');
  });

  it('keeps a branch with commits beyond its base, without a record too', async () => {
    const repo = makeRepo();
    const provider = createGitWorkspaces({ repoDir: repo });
    const ws = await provider.acquire({ teamId: TEAM, member: alice });
    writeFileSync(join(ws.path, 'one.txt'), '1\n');
    commitAll(ws.path, 'one');
    writeFileSync(join(ws.path, 'two.txt'), '2\n');
    commitAll(ws.path, 'two');
    // Without a record (a spawn that failed after acquire) the marker still names the base.
    expect(await provider.release({ teamId: TEAM, member: alice })).toEqual({
      kept: true,
      path: ws.path,
      branch: ws.branch,
      commitsAhead: 2,
      changedFiles: [],
    });
    expect(branchExists(repo, ws.branch!)).toBe(true);
    expect(existsSync(join(ws.path, 'two.txt'))).toBe(true);
  });

  it('reports at most 100 changed files', async () => {
    const repo = makeRepo();
    const provider = createGitWorkspaces({ repoDir: repo });
    const ws = await provider.acquire({ teamId: TEAM, member: alice });
    for (let i = 0; i < 150; i++) writeFileSync(join(ws.path, `f${i}.txt`), `${i}\n`);
    const release = await provider.release({ teamId: TEAM, member: alice, recorded: ws });
    expect(release.kept).toBe(true);
    expect(release.changedFiles).toHaveLength(100);
  });

  it('releases a member that never got a workspace as nothing kept', async () => {
    const repo = makeRepo();
    const provider = createGitWorkspaces({ repoDir: repo });
    expect(await provider.release({ teamId: TEAM, member: alice })).toEqual({
      kept: false,
      commitsAhead: 0,
      changedFiles: [],
    });
    expect(worktrees(repo)).toHaveLength(1);
  });
});
