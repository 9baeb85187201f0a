import { chmod, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { createGitRunner, parseGitVersion } from './git-runner.js';

describe('git runner', () => {
  it('bounds stdout: a longer output fails unless truncation is allowed', async () => {
    const git = createGitRunner('git', 30_000);
    await expect(git.run(['help', '-a'], { maxStdout: 100 })).rejects.toMatchObject({
      code: 'WORKSPACE_FAILED',
    });
    const cut = await git.run(['help', '-a'], { maxStdout: 100, allowTruncated: true });
    expect(cut.truncated).toBe(true);
    expect(cut.stdout.length).toBeLessThanOrEqual(100);
  });

  it('names the command and quotes stderr when git fails, and runs without a shell', async () => {
    const git = createGitRunner('git', 30_000);
    const error = await git
      .run(['rev-parse', '--verify', 'no such; rm -rf /'], {})
      .catch((e: unknown) => e);
    expect(error).toMatchObject({ code: 'WORKSPACE_FAILED' });
    expect((error as Error).message).toContain('git rev-parse --verify "no such; rm -rf /"');
  });

  it('kills a command that runs past its timeout', async () => {
    // A "git" that sleeps for a minute: the 100 ms budget ends it, however busy the machine is
    // (a real git and a tiny budget raced the timer against the process's own exit).
    const dir = await mkdtemp(join(tmpdir(), 'teamwire-git-runner-'));
    try {
      const slow = join(dir, 'slow-git');
      await writeFile(slow, '#!/bin/sh\nexec sleep 60\n');
      await chmod(slow, 0o755);
      const started = Date.now();
      await expect(createGitRunner(slow, 100).run(['status'])).rejects.toMatchObject({
        code: 'WORKSPACE_FAILED',
      });
      expect(Date.now() - started).toBeLessThan(30_000);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('reports a missing binary as WORKSPACE_GIT_MISSING and reads versions', async () => {
    await expect(
      createGitRunner('/nonexistent/git', 1000).run(['--version']),
    ).rejects.toMatchObject({
      code: 'WORKSPACE_GIT_MISSING',
    });
    expect(parseGitVersion('git version 2.39.5')).toEqual([2, 39]);
    expect(parseGitVersion('git version 2.45.1.windows.1\n')).toEqual([2, 45]);
    expect(parseGitVersion('nonsense')).toEqual([0, 0]);
  });
});
