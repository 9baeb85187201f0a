import { pinnedWorktree } from './pinned-worktree.js';
import type { Repository } from './repository.js';

/** At most this many changed files are reported. */
export const MAX_CHANGED_FILES = 100;
/** Enough status output for far more than the reported files; the rest is only counted as "more". */
const MAX_STATUS_BYTES = 256 * 1024;

/** Uncommitted changes of a worktree: tracked changes and untracked files (ignored ones are not work). */
export interface WorktreeChanges {
  /** Changed paths relative to the worktree, at most {@link MAX_CHANGED_FILES}. */
  files: string[];
  /** True when there are changes at all (also when `files` had to be cut). */
  dirty: boolean;
}

/**
 * Reads `git status` of the worktree at `path`, bounded, against the repository's own git
 * directory for it (never one the member's files could name). Nested repositories are not
 * entered: a submodule's inside is the member's, and asking it whether it changed runs git with
 * its config. A nested repository that is not committed still counts as an untracked folder.
 */
export async function worktreeChanges(
  repo: Repository,
  path: string,
  signal?: AbortSignal | undefined,
): Promise<WorktreeChanges> {
  const pinned = await pinnedWorktree(repo.git, path, { commonDir: repo.commonDir, signal });
  const out = await repo.git.run(
    [
      ...pinned,
      'status',
      '--porcelain=v1',
      '-z',
      '--untracked-files=all',
      '--ignore-submodules=all',
    ],
    // A status must not take the index lock the member's own git commands may want.
    { maxStdout: MAX_STATUS_BYTES, allowTruncated: true, env: { GIT_OPTIONAL_LOCKS: '0' }, signal },
  );
  return { files: parseStatus(out.stdout), dirty: out.stdout.length > 0 };
}

/** Paths of `git status --porcelain=v1 -z`; a rename or copy is reported under its new path. */
export function parseStatus(text: string): string[] {
  const fields = text.split('\0');
  // The last field is empty after a complete output, or a cut-off entry after a truncated one.
  fields.pop();
  const files: string[] = [];
  for (let i = 0; i < fields.length && files.length < MAX_CHANGED_FILES; i++) {
    const field = fields[i]!;
    if (field.length < 4) continue;
    const xy = field.slice(0, 2);
    files.push(field.slice(3));
    // Renames and copies carry their old path in the next field.
    if (xy.includes('R') || xy.includes('C')) i++;
  }
  return files;
}
