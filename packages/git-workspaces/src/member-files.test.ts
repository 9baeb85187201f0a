import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { createGitWorkspaces } from './git-workspaces.js';
import {
  git,
  makeRepo,
  plantNestedRepository,
  removeTempDirs,
  tempDir,
  writeFiles,
} from './test-support.js';

afterEach(removeTempDirs);

const TEAM = '01JMEMBERFILES000000000000';
const member = { id: '01JMALLORY', name: 'mallory' };

describe("a member's files are untrusted input to the host's git", () => {
  it('a nested repository committed as a gitlink never runs its fsmonitor when the workspace is released', async () => {
    const repo = makeRepo();
    const workspaces = createGitWorkspaces({ repoDir: repo });
    const ws = await workspaces.acquire({ teamId: TEAM, member });
    const marker = join(tempDir(), 'fsmonitor-ran');
    plantNestedRepository(ws.path, repo, marker);

    // Committed the way a file tool commits a folder: `git add -A -- pkg`, then `git commit`.
    git(ws.path, 'add', '-A', '--', 'pkg');
    git(ws.path, 'commit', '--quiet', '--no-verify', '-m', 'add pkg');
    expect(git(ws.path, 'ls-tree', 'HEAD', 'pkg')).toMatch(/^160000 commit /);
    expect(existsSync(marker)).toBe(false);

    const released = await workspaces.release({ teamId: TEAM, member, recorded: ws });
    expect(released).toMatchObject({ kept: true, commitsAhead: 1 });
    expect(existsSync(marker)).toBe(false);

    // The trap is live: a git that enters pkg/ (as release's status once did) runs it.
    git(ws.path, 'status', '--porcelain', '--ignore-submodules=none');
    expect(existsSync(marker)).toBe(true);
  });

  it('an uncommitted nested repository keeps the workspace (untracked work) and runs nothing', async () => {
    const repo = makeRepo();
    const workspaces = createGitWorkspaces({ repoDir: repo });
    const ws = await workspaces.acquire({ teamId: TEAM, member });
    const marker = join(tempDir(), 'fsmonitor-ran');
    plantNestedRepository(ws.path, repo, marker);

    const released = await workspaces.release({ teamId: TEAM, member, recorded: ws });
    expect(released).toMatchObject({ kept: true, commitsAhead: 0, changedFiles: ['pkg/'] });
    expect(existsSync(marker)).toBe(false);
  });

  it('release refuses to run git on a worktree whose .git a member pointed at its own repository', async () => {
    const repo = makeRepo();
    const workspaces = createGitWorkspaces({ repoDir: repo });
    const ws = await workspaces.acquire({ teamId: TEAM, member });
    const marker = join(tempDir(), 'fsmonitor-ran');
    plantNestedRepository(ws.path, repo, marker);
    // The worktree's own `.git` file, rewritten: git would take pkg/.git as its repository.
    writeFiles(ws.path, { '.git': 'gitdir: pkg/.git\n' });

    await expect(workspaces.release({ teamId: TEAM, member, recorded: ws })).rejects.toMatchObject({
      code: 'WORKSPACE_FAILED',
    });
    expect(existsSync(marker)).toBe(false);
    expect(existsSync(ws.path)).toBe(true);
  });
});
