import { isAbsolute, relative, sep } from 'node:path';
import { TeamError } from '@teamwire/core';
import type { GitRunner } from './git-runner.js';
import { realPathOf } from './repository.js';

/**
 * Options that run git in the working tree at `dir` against a repository checked first, and named
 * explicitly so that nothing found in `dir` later can redirect the command.
 *
 * Git finds a working tree's repository through its `.git` and then obeys that repository's
 * config. A member's files are untrusted, so the git directory and the common directory git finds
 * must lie outside the working tree (a linked worktree's live in the repository's `.git`); one
 * inside is a repository the member could have written, and is refused with `WORKSPACE_FAILED`.
 * With `commonDir`, the working tree must also belong to that repository.
 *
 * Returns `-C <dir> --git-dir <git dir> --work-tree <top level>` for the runner.
 */
export async function pinnedWorktree(
  git: GitRunner,
  dir: string,
  options: { commonDir?: string | undefined; signal?: AbortSignal | undefined } = {},
): Promise<string[]> {
  const at = realPathOf(dir);
  const out = await git.run(
    [
      '-C',
      at,
      'rev-parse',
      '--path-format=absolute',
      '--git-dir',
      '--git-common-dir',
      '--show-toplevel',
    ],
    { signal: options.signal },
  );
  const [gitDirText, commonDirText, topText] = out.stdout.split('\n');
  if (!gitDirText || !commonDirText || !topText) {
    throw new TeamError('WORKSPACE_FAILED', `git rev-parse in ${at} printed no paths`, {
      details: { stdout: out.stdout.slice(0, 500) },
    });
  }
  const gitDir = realPathOf(gitDirText);
  const commonDir = realPathOf(commonDirText);
  const top = realPathOf(topText);
  if (within(top, gitDir) || within(top, commonDir)) {
    throw new TeamError(
      'WORKSPACE_FAILED',
      `the repository of ${top} lies inside it (${gitDir}); files there are the member's, so git is not run on it`,
      { details: { path: top, gitDir } },
    );
  }
  if (options.commonDir !== undefined && commonDir !== realPathOf(options.commonDir)) {
    throw new TeamError(
      'WORKSPACE_FAILED',
      `${top} is a working tree of ${commonDir}, not of ${options.commonDir}`,
      { details: { path: top, gitDir } },
    );
  }
  return ['-C', at, '--git-dir', gitDir, '--work-tree', top];
}

function within(root: string, path: string): boolean {
  const rel = relative(root, path);
  return rel === '' || (rel !== '..' && !rel.startsWith(`..${sep}`) && !isAbsolute(rel));
}
