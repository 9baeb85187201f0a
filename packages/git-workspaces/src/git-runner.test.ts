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
    // A 1 ms budget: no git process starts, runs and exits within it.
    const git = createGitRunner('git', 1);
    await expect(git.run(['help', '-a'])).rejects.toMatchObject({ code: 'WORKSPACE_FAILED' });
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
