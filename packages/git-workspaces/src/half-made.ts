import { randomBytes } from 'node:crypto';
import { lstat, readdir, rename, rm, rmdir } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import { readSmallFile } from './member-marker.js';
import type { MemberPlace } from './member-place.js';
import { type Repository, samePath } from './repository.js';

/**
 * Clears what a `git worktree add` for this member left when its process was killed. Such an add
 * never returned, so nobody has worked in what it made: removing it loses nothing.
 *
 * An unfinished add is recognised by its lock: this package adds with
 * `--lock --reason "<initializingReason>"` and unlocks only once the add returned, and plain git
 * writes `initializing` there (that one counts as the member's only when it points at the
 * member's path). `git worktree prune` leaves locked entries alone, so this has to be done here.
 * A stale lock on the member's branch ref (killed during `git branch`) is removed too: the branch
 * is the member's alone and one process acts for a member at a time.
 */
export async function repairHalfMade(repo: Repository, place: MemberPlace): Promise<number> {
  let repaired = await removeDiscarded(place.path);
  const adminRoot = join(repo.commonDir, 'worktrees');
  const names = await readdir(adminRoot).catch(() => [] as string[]);
  for (const name of names) {
    const admin = join(adminRoot, name);
    const locked = await readSmallFile(join(admin, 'locked'));
    if (locked === undefined) continue;
    const reason = locked.trim();
    const gitdir = (await readSmallFile(join(admin, 'gitdir')))?.trim();
    const tree = gitdir ? dirname(gitdir) : undefined;
    const ours =
      reason === place.initializingReason ||
      (reason === 'initializing' && tree !== undefined && samePath(tree, place.path)) ||
      // Killed between creating `locked` and writing it: an empty lock, no gitdir yet. Such an
      // entry is invisible to git and only blocks its name; the name tells whose it was.
      (reason === '' && tree === undefined && sameBaseName(name, place.path));
    if (!ours) continue;
    if (tree !== undefined) await removeHalfMadeTree(tree, admin);
    await rm(admin, { recursive: true, force: true });
    repaired++;
  }
  const refLock = join(repo.commonDir, `${place.ref}.lock`);
  if (await exists(refLock)) {
    await rm(refLock, { force: true });
    repaired++;
  }
  return repaired;
}

/** Removes a half-made worktree folder, but only one whose `.git` points back at `admin`. */
async function removeHalfMadeTree(tree: string, admin: string): Promise<void> {
  const dotGit = (await readSmallFile(join(tree, '.git')))?.trim();
  if (dotGit) {
    const target = dotGit.replace(/^gitdir:\s*/, '');
    if (samePath(target, admin)) await discard(tree);
    return;
  }
  // Killed between creating the folder and writing its `.git` (or in the middle of writing it,
  // leaving it empty): only a folder holding nothing else is removed.
  const entries = await readdir(tree).catch(() => undefined);
  if (entries?.every((entry) => entry === '.git')) await discard(tree);
}

/** `git worktree add` names an entry after the folder, with digits added when taken. */
function sameBaseName(entry: string, path: string): boolean {
  const base = basename(path);
  return entry.startsWith(base) && /^\d*$/.test(entry.slice(base.length));
}

/**
 * Removes a folder so that a kill half-way cannot leave a half-deleted folder at its place (one
 * without its `.git` could no longer be told apart from someone else's): it is first renamed
 * aside, atomically, and only then deleted. {@link removeDiscarded} finishes an interrupted one.
 */
async function discard(tree: string): Promise<void> {
  const aside = join(
    dirname(tree),
    `${DISCARDED}${basename(tree)}.${randomBytes(4).toString('hex')}`,
  );
  await rename(tree, aside);
  await rm(aside, { recursive: true, force: true });
}

/** Prefix of folders renamed aside by {@link discard}; member names never start with a dot. */
const DISCARDED = '.discarded-';

async function removeDiscarded(path: string): Promise<number> {
  const prefix = `${DISCARDED}${basename(path)}.`;
  const names = await readdir(dirname(path)).catch(() => [] as string[]);
  let removed = 0;
  for (const name of names) {
    if (!name.startsWith(prefix)) continue;
    await rm(join(dirname(path), name), { recursive: true, force: true });
    removed++;
  }
  return removed;
}

/** Removes `path` when it is an empty directory; true when it is gone afterwards. */
export async function removeIfEmptyDir(path: string): Promise<boolean> {
  try {
    await rmdir(path);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'ENOENT';
  }
}

/** True when something (file, folder, dangling link) is at `path`. */
export async function exists(path: string): Promise<boolean> {
  try {
    await lstat(path);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code !== 'ENOENT';
  }
}
