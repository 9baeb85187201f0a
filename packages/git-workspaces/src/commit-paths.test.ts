import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { TeamError } from '@teamwire/core';
import { afterEach, describe, expect, it } from 'vitest';
import { commitPaths, MAX_COMMIT_PATHS } from './commit-paths.js';
import { createGitWorkspaces } from './git-workspaces.js';
import {
  git,
  IDENTITY,
  makeRepo,
  plantNestedRepository,
  removeTempDirs,
  tempDir,
  writeFiles,
} from './test-support.js';

afterEach(removeTempDirs);

const TEAM = '01JCOMMITPATHS000000000000';
const member = { id: '01JMEMBER', name: 'fixer' };

async function memberWorktree() {
  const repo = makeRepo({ 'README.md': 'hello\n', 'src/a.ts': 'a\n' });
  const workspaces = createGitWorkspaces({ repoDir: repo });
  const ws = await workspaces.acquire({ teamId: TEAM, member });
  return { repo, workspaces, ws, dir: ws.path };
}

async function codeOf(promise: Promise<unknown>): Promise<string> {
  try {
    await promise;
  } catch (error) {
    if (TeamError.isInstance(error)) return error.code;
    throw error;
  }
  return 'resolved';
}

describe('commitPaths', () => {
  it('commits the changes below the given paths, with the given identity and date', async () => {
    const { dir } = await memberWorktree();
    writeFiles(dir, { 'src/a.ts': 'changed\n', 'src/new.ts': 'new\n', 'other.txt': 'not this\n' });
    const fixer = { name: 'Member Fixer', email: 'fixer@example.invalid' };
    const done = await commitPaths({
      dir,
      paths: ['src'],
      message: 'change src',
      author: fixer,
      date: '2024-05-01T12:00:00Z',
    });
    if (!done.committed) throw new Error('expected a commit');
    expect(done.files).toEqual(['src/a.ts', 'src/new.ts']);
    expect(git(dir, 'rev-parse', 'HEAD').trim()).toBe(done.commit);
    expect(git(dir, 'log', '-1', '--format=%an <%ae> %cn <%ce> %aI %cI %s').trim()).toBe(
      'Member Fixer <fixer@example.invalid> Member Fixer <fixer@example.invalid> 2024-05-01T12:00:00+00:00 2024-05-01T12:00:00+00:00 change src',
    );
    expect(git(dir, 'status', '--porcelain')).toBe('?? other.txt\n');

    const again = await commitPaths({ dir, paths: ['src'], message: 'again', author: IDENTITY });
    expect(again).toEqual({ committed: false, head: done.commit });
  });

  it('takes paths literally: pathspec magic in a name does not widen the commit', async () => {
    const { dir } = await memberWorktree();
    // As magic, `:!a.txt` is "everything but a.txt"; here it is the name of one file.
    writeFiles(dir, { ':!a.txt': 'odd name\n', 'elsewhere.txt': 'not this\n' });
    const done = await commitPaths({ dir, paths: [':!a.txt'], message: 'odd', author: IDENTITY });
    expect(done).toMatchObject({ committed: true, files: [':!a.txt'] });
  });

  it('refuses a folder holding a repository of its own, commits nothing and runs nothing of it', async () => {
    const { repo, workspaces, ws, dir } = await memberWorktree();
    const marker = join(tempDir(), 'fsmonitor-ran');
    // Put there by other means than the file tools, which refuse `.git` in any position.
    plantNestedRepository(dir, repo, marker);
    writeFiles(dir, { 'src/a.ts': 'changed\n' });
    const head = git(dir, 'rev-parse', 'HEAD').trim();

    for (const paths of [['pkg'], ['.'], ['src', 'pkg']]) {
      const error = await commitPaths({ dir, paths, message: 'm', author: IDENTITY }).catch(
        (e: unknown) => e,
      );
      expect(error, paths.join()).toMatchObject({ code: 'PATH_OUTSIDE_WORKSPACE' });
      expect((error as Error).message).toContain('pkg');
      expect(git(dir, 'rev-parse', 'HEAD').trim()).toBe(head);
      expect(git(dir, 'diff', '--cached', '--name-only')).toBe('');
    }
    expect(existsSync(marker)).toBe(false);

    // The member's other work still commits, and the workspace is kept without entering pkg/.
    const done = await commitPaths({ dir, paths: ['src'], message: 'src', author: IDENTITY });
    expect(done).toMatchObject({ committed: true, files: ['src/a.ts'] });
    const released = await workspaces.release({ teamId: TEAM, member, recorded: ws });
    expect(released).toMatchObject({ kept: true, commitsAhead: 1, changedFiles: ['pkg/'] });
    expect(existsSync(marker)).toBe(false);
  });

  it('refuses paths through .git or outside the working tree before running git', async () => {
    const { dir } = await memberWorktree();
    for (const path of ['.git', 'pkg/.GIT./config', 'git~1', '../x', '/etc']) {
      expect(await codeOf(commitPaths({ dir, paths: [path], message: 'm' })), path).toBe(
        'PATH_OUTSIDE_WORKSPACE',
      );
    }
  });

  it('refuses a working tree whose repository lies inside it', async () => {
    // A main working tree: its `.git` folder is among the files, so it is not trusted.
    const repo = makeRepo();
    writeFileSync(join(repo, 'README.md'), 'changed\n');
    expect(await codeOf(commitPaths({ dir: repo, paths: ['.'], message: 'm' }))).toBe(
      'WORKSPACE_FAILED',
    );
    expect(git(repo, 'diff', '--cached', '--name-only')).toBe('');
  });

  it('bounds its input', async () => {
    const { dir } = await memberWorktree();
    const tooMany = Array.from({ length: MAX_COMMIT_PATHS + 1 }, (_, i) => `f${i}`);
    for (const options of [
      { paths: [], message: 'm' },
      { paths: tooMany, message: 'm' },
      { paths: ['src'], message: '  \n' },
      { paths: ['src'], message: 'x'.repeat(64 * 1024 + 1) },
      { paths: ['src'], message: 'm', author: { name: 'n', email: '' } },
      { paths: ['src'], message: 'm', date: 'd'.repeat(513) },
    ]) {
      expect(
        await codeOf(commitPaths({ dir, ...options })),
        JSON.stringify(options).slice(0, 80),
      ).toBe('INVALID_ARGUMENT');
    }
    expect(
      await codeOf(commitPaths({ dir: join(dir, 'missing'), paths: ['x'], message: 'm' })),
    ).toBe('INVALID_ARGUMENT');
  });
});
