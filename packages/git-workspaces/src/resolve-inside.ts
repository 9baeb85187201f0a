import { lstat, readlink, realpath } from 'node:fs/promises';
import { basename, dirname, isAbsolute, join, relative, resolve, sep, win32 } from 'node:path';
import { TeamError } from '@teamwire/core';
import { hasDotGitSegment } from './dot-git.js';

/** Options of {@link resolveInside}. */
export interface ResolveInsideOptions {
  /**
   * Allow paths through a `.git` (in any position and any of the forms git treats as `.git`).
   * Default false, and it must stay false for paths from anyone the host does not trust: a `.git`
   * they write is a repository whose config git obeys (a nested one becomes a submodule git
   * enters; the workspace's own `.git` file, rewritten, points the worktree at another
   * repository). Pass true only for a caller that may manage git's files itself.
   */
  allowGitDir?: boolean | undefined;
}

/** Symlinks followed by hand (dangling ones) before a path counts as a loop. */
const MAX_LINKS = 40;
/** Longest path accepted, in UTF-8 bytes (Linux's `PATH_MAX`; longer ones could not be opened). */
export const MAX_PATH_BYTES = 4096;

/**
 * Resolves a path a user or a model gave a file tool to an absolute path inside `dir`, or throws
 * `PATH_OUTSIDE_WORKSPACE`. Refuses absolute paths (POSIX and Windows forms), `..` escapes,
 * symlinks whose real target is outside `dir`, and (unless allowed) any segment git treats as
 * `.git`, in the given path and in the real one: the real path of the deepest existing ancestor
 * must be inside, so paths of files that do not exist yet work, and a dangling symlink is followed
 * to where a write would land.
 *
 * The answer is the normalized path under the real path of `dir`; use it, not the given path.
 * The check cannot stop a symlink created after it (the member owns its folder); it keeps a
 * model's paths from leaving the folder, it is not a sandbox.
 */
export async function resolveInside(
  dir: string,
  path: string,
  options: ResolveInsideOptions = {},
): Promise<string> {
  if (typeof path !== 'string' || path.includes('\0')) {
    throw new TeamError('INVALID_ARGUMENT', 'a path must be a string without NUL characters');
  }
  if (Buffer.byteLength(path) > MAX_PATH_BYTES) {
    throw new TeamError('INVALID_ARGUMENT', `a path must be at most ${MAX_PATH_BYTES} bytes`, {
      details: { path: path.slice(0, 500) },
    });
  }
  if (isAbsolute(path) || win32.isAbsolute(path) || /^[A-Za-z]:/.test(path)) {
    throw outside(path, 'absolute paths are not allowed; give a path relative to the workspace');
  }
  let root: string;
  try {
    root = await realpath(dir);
  } catch (error) {
    throw new TeamError('INVALID_ARGUMENT', `the workspace ${dir} does not exist`, {
      cause: error,
    });
  }
  const target = resolve(root, path === '' ? '.' : path);
  if (!isInside(root, target)) throw outside(path, 'it leads outside the workspace');
  const guardGit = !options.allowGitDir;
  if (guardGit) refuseDotGit(root, target, path);
  const landing = await checkReal(root, target, path, 0);
  // A symlink inside the workspace may lead into a `.git` that the given path does not name.
  if (guardGit && landing !== target) refuseDotGit(root, landing, path);
  return target;
}

function refuseDotGit(root: string, target: string, given: string): void {
  if (hasDotGitSegment(relative(root, target))) {
    throw outside(
      given,
      'it goes through .git, which belongs to git (a nested one is a repository)',
    );
  }
}

function isInside(root: string, target: string): boolean {
  const rel = relative(root, target);
  return rel === '' || (!rel.startsWith(`..${sep}`) && rel !== '..' && !isAbsolute(rel));
}

function outside(path: string, why: string): TeamError {
  return new TeamError('PATH_OUTSIDE_WORKSPACE', `${JSON.stringify(path.slice(0, 500))}: ${why}`, {
    details: { path: path.slice(0, 500) },
  });
}

/**
 * The real path of the deepest existing ancestor of `target` (or of `target`) must be inside.
 * Returns where `target` really is: that real path with the missing rest appended.
 */
async function checkReal(
  root: string,
  target: string,
  given: string,
  links: number,
): Promise<string> {
  const rest: string[] = [];
  let current = target;
  for (;;) {
    const info = await lstat(current).catch(() => undefined);
    if (info) {
      let real: string;
      try {
        real = await realpath(current);
      } catch {
        if (!info.isSymbolicLink() || links >= MAX_LINKS) {
          throw outside(given, 'it could not be resolved (symlink loop?)');
        }
        // A dangling symlink: a write would create its target, so that is what must be inside.
        const base = await realpath(dirname(current)).catch(() => {
          throw outside(given, 'it could not be resolved');
        });
        const next = resolve(base, await readlink(current), ...rest.reverse());
        if (!isInside(root, next)) {
          throw outside(given, 'it is a symlink leading outside the workspace');
        }
        return checkReal(root, next, given, links + 1);
      }
      if (!isInside(root, real)) {
        throw outside(given, 'it is (or is under) a symlink leading outside the workspace');
      }
      return join(real, ...rest.reverse());
    }
    const parent = dirname(current);
    if (parent === current) throw outside(given, 'it could not be resolved');
    rest.push(basename(current));
    current = parent;
  }
}
