import { lstat, readlink, realpath } from 'node:fs/promises';
import { basename, dirname, isAbsolute, relative, resolve, sep, win32 } from 'node:path';
import { TeamError } from '@teamwire/core';

/** Options of {@link resolveInside}. */
export interface ResolveInsideOptions {
  /**
   * Allow paths inside the workspace's `.git` (a file in a worktree, pointing at the repository's
   * administrative folder). Default false: writing there could point the worktree at another
   * repository, so file tools are kept out.
   */
  allowGitDir?: boolean | undefined;
}

/** Symlinks followed by hand (dangling ones) before a path counts as a loop. */
const MAX_LINKS = 40;

/**
 * Resolves a path a user or a model gave a file tool to an absolute path inside `dir`, or throws
 * `PATH_OUTSIDE_WORKSPACE`. Refuses absolute paths (POSIX and Windows forms), `..` escapes,
 * `.git` (unless allowed), and symlinks whose real target is outside `dir`: the real path of the
 * deepest existing ancestor must be inside, so paths of files that do not exist yet work, and a
 * dangling symlink is followed to where a write would land.
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
  if (!options.allowGitDir) {
    const first = relative(root, target).split(sep)[0] ?? '';
    if (first.toLowerCase() === '.git') throw outside(path, '.git belongs to the repository');
  }
  await checkReal(root, target, path, 0);
  return target;
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

/** The real path of the deepest existing ancestor of `target` (or of `target`) must be inside. */
async function checkReal(
  root: string,
  target: string,
  given: string,
  links: number,
): Promise<void> {
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
        await checkReal(root, next, given, links + 1);
        return;
      }
      if (!isInside(root, real)) {
        throw outside(given, 'it is (or is under) a symlink leading outside the workspace');
      }
      return;
    }
    const parent = dirname(current);
    if (parent === current) throw outside(given, 'it could not be resolved');
    rest.push(basename(current));
    current = parent;
  }
}
