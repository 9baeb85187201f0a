import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { createGitWorkspaces } from './git-workspaces.js';
import {
  branchExists,
  commitAll,
  git,
  makeRepo,
  removeTempDirs,
  worktrees,
} from './test-support.js';

const TEAM = '01JCRASHTEAM00000000000000';
const here = dirname(fileURLToPath(import.meta.url));
const CHILD = resolve(here, '../test-fixtures/acquire-child.mjs');
const DIST = resolve(here, '../dist/index.js');

afterEach(removeTempDirs);

/** Exactly one worktree of the repository is on the member's branch, at `path`, fully checked out. */
function expectOneHealthyWorktree(repo: string, name: string, path: string): void {
  const mine = worktrees(repo).filter((w) => w.branch === `refs/heads/teamwire/${TEAM}/${name}`);
  expect(mine).toEqual([{ path, branch: `refs/heads/teamwire/${TEAM}/${name}` }]);
  // A half-populated checkout would show its missing files as deleted.
  expect(git(path, 'status', '--porcelain', '--untracked-files=all')).toBe('');
  const block = git(repo, 'worktree', 'list', '--porcelain')
    .split('\n\n')
    .find((b) => b.startsWith(`worktree ${path}\n`));
  expect(block).not.toMatch(/^locked/m);
}

function adminDirOf(path: string): string {
  return git(path, 'rev-parse', '--absolute-git-dir').trim();
}

function manyFiles(count: number): Record<string, string> {
  const files: Record<string, string> = {};
  for (let i = 0; i < count; i++)
    files[`src/dir${i % 20}/file${i}.txt`] = `content ${i}\n`.repeat(20);
  return files;
}

describe('crash during and after worktree creation (simulated states)', () => {
  const member = { id: '01JMEMBER', name: 'worker' };

  async function setUp() {
    const repo = makeRepo(manyFiles(40));
    const provider = createGitWorkspaces({ repoDir: repo });
    const ws = await provider.acquire({ teamId: TEAM, member });
    writeFileSync(join(ws.path, 'work.txt'), 'committed work\n');
    const commit = commitAll(ws.path, 'work');
    return { repo, provider, ws, commit };
  }

  it('branch created but no worktree: the branch is reused, its commits kept', async () => {
    const { repo, provider, ws, commit } = await setUp();
    git(repo, 'worktree', 'remove', '--force', ws.path);
    const again = await createGitWorkspaces({ repoDir: repo }).acquire({ teamId: TEAM, member });
    expect(again).toEqual(ws);
    expectOneHealthyWorktree(repo, 'worker', ws.path);
    expect(git(ws.path, 'rev-parse', 'HEAD').trim()).toBe(commit);
    void provider;
  });

  it('stale admin entry whose gitdir points to a missing folder (unlocked, and locked by git while initializing)', async () => {
    for (const lock of [undefined, 'initializing']) {
      const { repo, ws, commit } = await setUp();
      const admin = adminDirOf(ws.path);
      if (lock) writeFileSync(join(admin, 'locked'), lock);
      rmSync(ws.path, { recursive: true, force: true });
      const again = await createGitWorkspaces({ repoDir: repo }).acquire({ teamId: TEAM, member });
      expect(again).toEqual(ws);
      expectOneHealthyWorktree(repo, 'worker', ws.path);
      expect(git(ws.path, 'rev-parse', 'HEAD').trim()).toBe(commit);
    }
  });

  it('half-populated target folder of an add that never finished', async () => {
    const { repo, ws, commit } = await setUp();
    const admin = adminDirOf(ws.path);
    // What this package's add leaves until it returns (see half-made.ts).
    writeFileSync(join(admin, 'locked'), `teamwire initializing ${TEAM}/worker`);
    rmSync(join(ws.path, 'src'), { recursive: true, force: true });
    rmSync(join(admin, 'index'), { force: true });
    const again = await createGitWorkspaces({ repoDir: repo }).acquire({ teamId: TEAM, member });
    expect(again).toEqual(ws);
    expectOneHealthyWorktree(repo, 'worker', ws.path);
    expect(git(ws.path, 'rev-parse', 'HEAD').trim()).toBe(commit);
  });

  it('killed between mkdir and the first file: empty folder, admin entry without gitdir', async () => {
    const { repo, ws } = await setUp();
    const admin = adminDirOf(ws.path);
    writeFileSync(join(admin, 'locked'), `teamwire initializing ${TEAM}/worker`);
    rmSync(join(admin, 'gitdir'));
    rmSync(ws.path, { recursive: true, force: true });
    // An empty folder left at the path, and a stale lock on the branch ref (killed in `git branch`).
    mkdirSync(ws.path);
    writeFileSync(join(repo, '.git', 'refs', 'heads', 'teamwire', TEAM, 'worker.lock'), '');
    const again = await createGitWorkspaces({ repoDir: repo }).acquire({ teamId: TEAM, member });
    expect(again).toEqual(ws);
    expectOneHealthyWorktree(repo, 'worker', ws.path);
    expect(readdirSync(join(repo, '.git', 'worktrees'))).toHaveLength(1);
  });

  it('killed while writing the worktree’s .git file: a folder holding only an empty .git', async () => {
    const { repo, ws } = await setUp();
    const admin = adminDirOf(ws.path);
    writeFileSync(join(admin, 'locked'), `teamwire initializing ${TEAM}/worker`);
    rmSync(ws.path, { recursive: true, force: true });
    mkdirSync(ws.path);
    writeFileSync(join(ws.path, '.git'), '');
    const again = await createGitWorkspaces({ repoDir: repo }).acquire({ teamId: TEAM, member });
    expect(again).toEqual(ws);
    expectOneHealthyWorktree(repo, 'worker', ws.path);
  });

  it('release after a spawn that failed half-way removes what the attempt made', async () => {
    const repo = makeRepo();
    const provider = createGitWorkspaces({ repoDir: repo });
    const ws = await provider.acquire({ teamId: TEAM, member });
    // Simulate the add killed after `git branch`: only the branch (and the marker) remain.
    git(repo, 'worktree', 'remove', '--force', ws.path);
    expect(await provider.release({ teamId: TEAM, member })).toEqual({
      kept: false,
      commitsAhead: 0,
      changedFiles: [],
    });
    expect(branchExists(repo, ws.branch!)).toBe(false);
    expect(existsSync(dirname(ws.path))).toBe(false);
    expect(worktrees(repo)).toHaveLength(1);
  });
});

describe('crash during and after worktree creation (real SIGKILL)', () => {
  function runChild(repo: string, id: string, name: string, killAfterMs: number | undefined) {
    return new Promise<{ killed: boolean; ms: number; stdout: string; stderr: string }>(
      (done, fail) => {
        const started = performance.now();
        // Its own process group, so the kill takes the git processes it started down with it,
        // as a crash of the machine or container would.
        const child = spawn(process.execPath, [CHILD, repo, TEAM, id, name], {
          detached: true,
          stdio: ['ignore', 'pipe', 'pipe'],
        });
        let stdout = '';
        let stderr = '';
        child.stdout.on('data', (d: Buffer) => {
          stdout += d;
        });
        child.stderr.on('data', (d: Buffer) => {
          stderr += d;
        });
        let killed = false;
        const timer =
          killAfterMs === undefined
            ? undefined
            : setTimeout(() => {
                killed = true;
                try {
                  process.kill(-child.pid!, 'SIGKILL');
                } catch {
                  // already gone
                }
              }, killAfterMs);
        child.on('error', fail);
        child.on('close', (code) => {
          clearTimeout(timer);
          const ms = performance.now() - started;
          if (!killed && code !== 0) fail(new Error(`child exited ${code}: ${stderr}`));
          else done({ killed, ms, stdout, stderr });
        });
      },
    );
  }

  it('acquire killed at random moments, then acquired again: one healthy worktree per member', async () => {
    expect(existsSync(DIST), 'build the package first (pnpm run build)').toBe(true);
    const repo = makeRepo(manyFiles(600));
    // How long a whole acquire takes here, so the kills spread over all of it.
    const probe = await runChild(repo, '01JPROBE', 'probe', undefined);
    expect(JSON.parse(probe.stdout).branch).toBe(`teamwire/${TEAM}/probe`);
    const span = probe.ms * 1.2;

    const members = Array.from({ length: 6 }, (_, i) => ({ id: `01JM${i}`, name: `member-${i}` }));
    let interrupted = 0;
    for (const m of members) {
      // Two kills per member: the second may land in the repair of what the first left.
      for (let round = 0; round < 2; round++) {
        const result = await runChild(repo, m.id, m.name, Math.random() * span);
        if (result.killed) interrupted++;
      }
    }
    expect(interrupted).toBeGreaterThan(0);

    const provider = createGitWorkspaces({ repoDir: repo });
    for (const m of members) {
      const ws = await provider.acquire({ teamId: TEAM, member: m });
      expectOneHealthyWorktree(repo, m.name, ws.path);
      // A clean workspace is removed whole on release, whatever the crashes left.
      expect((await provider.release({ teamId: TEAM, member: m, recorded: ws })).kept).toBe(false);
      expect(branchExists(repo, ws.branch!)).toBe(false);
    }
    expect(git(repo, 'worktree', 'list', '--porcelain')).not.toMatch(/^locked/m);
    expect(worktrees(repo).map((w) => w.branch)).toEqual([
      'refs/heads/main',
      `refs/heads/teamwire/${TEAM}/probe`,
    ]);
  });
});
