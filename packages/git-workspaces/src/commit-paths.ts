import { realpath } from 'node:fs/promises';
import { relative } from 'node:path';
import { TeamError } from '@teamwire/core';
import { createGitRunner, DEFAULT_GIT_TIMEOUT_MS, type GitRunner } from './git-runner.js';
import { pinnedWorktree } from './pinned-worktree.js';
import { resolveInside } from './resolve-inside.js';

/** Options of {@link commitPaths}. */
export interface CommitPathsOptions {
  /** The working tree to commit in: a member's worktree (its repository must lie outside it). */
  dir: string;
  /** Files or folders relative to `dir` whose changes are committed (added, changed, deleted). */
  paths: readonly string[];
  /** The commit message. */
  message: string;
  /** Author and committer. Default: the repository's git identity. */
  author?:
    | {
        /** `user.name` of the commit. */
        name: string;
        /** `user.email` of the commit. */
        email: string;
      }
    | undefined;
  /** Author and committer date, in any form git accepts (`2024-05-01T12:00:00Z`). Default: now. */
  date?: string | undefined;
  /** The git binary. Default `git`. */
  git?: string | undefined;
  /** Longest one git command may run. Default 120 000 ms. */
  timeoutMs?: number | undefined;
}

/** What {@link commitPaths} did. */
export type CommitPathsResult =
  | {
      /** Nothing under the paths had changed; no commit was made. */
      committed: false;
      /** The commit `HEAD` still points at. */
      head: string;
    }
  | {
      /** A commit was made on the working tree's branch. */
      committed: true;
      /** The new commit. */
      commit: string;
      /** The paths it changes, relative to the repository root. */
      files: string[];
    };

/** Most paths one {@link commitPaths} call takes. */
export const MAX_COMMIT_PATHS = 1_000;
/** Longest commit message, in UTF-8 bytes. */
export const MAX_COMMIT_MESSAGE_BYTES = 64 * 1024;
/** Longest author name, email or date, in UTF-8 bytes. */
const MAX_IDENTITY_BYTES = 512;
/** Nested repositories named in a refusal. */
const NAMED_IN_REFUSAL = 20;

/**
 * Commits the changes below `paths` of a member's working tree, the way a file tool does it for
 * the member: each path goes through {@link resolveInside} (so none leads outside or through a
 * `.git`), `git add -A` stages them, and the staged changes are committed.
 *
 * A folder holding a repository of its own (a `.git` inside it) is never committed: git would
 * record it as a gitlink, a submodule whose config git obeys when it enters it. Such a commit is
 * refused with `PATH_OUTSIDE_WORKSPACE`. When no commit is made (refused, or git failed), the
 * index under `paths` is reset to `HEAD`.
 */
export async function commitPaths(options: CommitPathsOptions): Promise<CommitPathsResult> {
  checkOptions(options);
  const git = createGitRunner(options.git ?? 'git', options.timeoutMs ?? DEFAULT_GIT_TIMEOUT_MS);
  const root = await realpath(options.dir).catch((cause: unknown) => {
    throw new TeamError('INVALID_ARGUMENT', `the working tree ${options.dir} does not exist`, {
      cause,
    });
  });
  const paths: string[] = [];
  for (const path of options.paths) {
    paths.push(relative(root, await resolveInside(root, path)) || '.');
  }
  // Pathspec magic (`:(top)`, `:!x`) in a member's path must not widen what is committed.
  const at = [...(await pinnedWorktree(git, root)), '--literal-pathspecs'];

  await git.run([...at, 'add', '-A', '--', ...paths]);
  try {
    const staged = await git.run([
      ...at,
      'diff-index',
      '--cached',
      '--raw',
      '-z',
      '--no-abbrev',
      // Compares recorded commits only: a submodule's own files are never looked at.
      '--ignore-submodules=dirty',
      'HEAD',
    ]);
    const changes = parseRaw(staged.stdout);
    const gitlinks = changes.filter((change) => change.mode === GITLINK).map((c) => c.path);
    if (gitlinks.length > 0) {
      const named = gitlinks.slice(0, NAMED_IN_REFUSAL);
      throw new TeamError(
        'PATH_OUTSIDE_WORKSPACE',
        `${named.join(', ')}${gitlinks.length > named.length ? ', …' : ''}: a folder holding a repository of its own (.git) is not committed; nothing was committed`,
        { details: { paths: named } },
      );
    }
    if (changes.length === 0) return { committed: false, head: await head(git, at) };
    await git.run([...at, 'commit', '--quiet', '-m', options.message], {
      env: identity(options),
    });
  } catch (error) {
    // Whatever stopped the commit, nothing stays staged under the paths for a later one.
    await git.run([...at, 'reset', '--quiet', 'HEAD', '--', ...paths]).catch(() => {});
    throw error;
  }
  const commit = await head(git, at);
  const files = await git.run([
    ...at,
    'diff-tree',
    '--no-commit-id',
    '--name-only',
    '-r',
    '-z',
    '--root',
    commit,
  ]);
  return { committed: true, commit, files: files.stdout.split('\0').filter(Boolean) };
}

const GITLINK = '160000';

/** `git diff-index --raw -z`: `:<old mode> <new mode> <old> <new> <status>`, NUL, path, NUL. */
function parseRaw(text: string): { mode: string; path: string }[] {
  const fields = text.split('\0');
  const changes: { mode: string; path: string }[] = [];
  for (let i = 0; i + 1 < fields.length; i += 2) {
    const header = fields[i]!;
    if (!header.startsWith(':')) break;
    changes.push({ mode: header.slice(1).split(' ')[1] ?? '', path: fields[i + 1]! });
  }
  return changes;
}

async function head(git: GitRunner, at: string[]): Promise<string> {
  return (await git.run([...at, 'rev-parse', '--verify', 'HEAD^{commit}'])).stdout.trim();
}

function identity(options: CommitPathsOptions): Record<string, string> {
  const env: Record<string, string> = {};
  if (options.author) {
    env.GIT_AUTHOR_NAME = options.author.name;
    env.GIT_AUTHOR_EMAIL = options.author.email;
    env.GIT_COMMITTER_NAME = options.author.name;
    env.GIT_COMMITTER_EMAIL = options.author.email;
  }
  if (options.date !== undefined) {
    env.GIT_AUTHOR_DATE = options.date;
    env.GIT_COMMITTER_DATE = options.date;
  }
  return env;
}

function checkOptions(options: CommitPathsOptions): void {
  const { paths, message, author, date } = options;
  if (!Array.isArray(paths) || paths.length === 0 || paths.length > MAX_COMMIT_PATHS) {
    throw new TeamError(
      'INVALID_ARGUMENT',
      `paths must list 1 to ${MAX_COMMIT_PATHS} paths relative to the working tree`,
    );
  }
  if (
    typeof message !== 'string' ||
    message.trim() === '' ||
    message.includes('\0') ||
    Buffer.byteLength(message) > MAX_COMMIT_MESSAGE_BYTES
  ) {
    throw new TeamError(
      'INVALID_ARGUMENT',
      `a commit message must be non-blank text without NUL of at most ${MAX_COMMIT_MESSAGE_BYTES} bytes`,
    );
  }
  const texts = [author?.name, author?.email, date].filter((t) => t !== undefined);
  if (
    (author !== undefined && (!author.name || !author.email)) ||
    texts.some(
      (t) => typeof t !== 'string' || t.includes('\0') || Buffer.byteLength(t) > MAX_IDENTITY_BYTES,
    )
  ) {
    throw new TeamError(
      'INVALID_ARGUMENT',
      `author name and email (both required) and date must be text of at most ${MAX_IDENTITY_BYTES} bytes`,
    );
  }
}
