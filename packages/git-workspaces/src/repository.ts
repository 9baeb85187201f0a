import { realpathSync } from 'node:fs';
import { stat } from 'node:fs/promises';
import { basename, dirname, join, resolve } from 'node:path';
import { TeamError } from '@teamwire/core';
import { atLeast, type GitRunner, parseGitVersion } from './git-runner.js';

/** A repository as the commands below need it. */
export interface Repository {
  git: GitRunner;
  version: readonly [number, number];
  /** Absolute real path of the common git directory (`.git` of the main working tree). */
  commonDir: string;
  /** Absolute real path of the working tree `repoDir` belongs to, when it is one. */
  topLevel: string | undefined;
}

/** Oldest git the worktree provider runs on: `worktree list -z` and `worktree add --reason`. */
export const MIN_GIT_FOR_WORKTREES: readonly [number, number] = [2, 36];

/**
 * Finds the repository `repoDir` is in. Fails with `WORKSPACE_GIT_MISSING` when git cannot be
 * run and `WORKSPACE_NOT_A_REPOSITORY` when `repoDir` is no working tree of a repository.
 */
export async function openRepository(
  git: GitRunner,
  repoDir: string,
  options: { needWorkTree: boolean; signal?: AbortSignal | undefined },
): Promise<Repository> {
  const version = parseGitVersion(
    (await git.run(['--version'], { signal: options.signal })).stdout,
  );
  const dir = resolve(repoDir);
  const info = await stat(dir).catch(() => undefined);
  if (!info?.isDirectory()) {
    throw new TeamError('WORKSPACE_NOT_A_REPOSITORY', `${dir} is not a directory`, {
      details: { repoDir: dir },
    });
  }
  const args = ['-C', dir, 'rev-parse', '--path-format=absolute', '--git-common-dir'];
  if (options.needWorkTree) args.push('--show-toplevel');
  const out = await git.run(args, { ok: [0, 128], signal: options.signal });
  if (out.code !== 0) {
    const text = out.stderr.trim();
    if (/not a git repository|must be run in a work tree/i.test(text)) {
      throw new TeamError(
        'WORKSPACE_NOT_A_REPOSITORY',
        `${dir} is not a working tree of a git repository: ${text.slice(0, 500)}`,
        { details: { repoDir: dir } },
      );
    }
    throw new TeamError(
      'WORKSPACE_FAILED',
      `git rev-parse in ${dir} failed: ${text.slice(0, 2000)}`,
      {
        details: { command: `git ${args.join(' ')}`, stderr: text.slice(0, 2000) },
      },
    );
  }
  const [commonDir, topLevel] = out.stdout.split('\n');
  if (!commonDir || (options.needWorkTree && !topLevel)) {
    throw new TeamError('WORKSPACE_FAILED', `git rev-parse in ${dir} printed no paths`, {
      details: { stdout: out.stdout.slice(0, 500) },
    });
  }
  return {
    git,
    version,
    commonDir: realPathOf(commonDir),
    topLevel: topLevel ? realPathOf(topLevel) : undefined,
  };
}

/**
 * Where repository-wide commands run: the main working tree when there is one (commands like
 * `worktree add` expect one), else the git directory itself.
 */
export function at(repo: Repository): string[] {
  return repo.topLevel ? ['-C', repo.topLevel] : ['--git-dir', repo.commonDir];
}

/** Refuses a git too old for worktree management, naming the version it found. */
export function requireWorktreeSupport(repo: Repository): void {
  const [major, minor] = MIN_GIT_FOR_WORKTREES;
  if (!atLeast(repo.version, major, minor)) {
    throw new TeamError(
      'WORKSPACE_FAILED',
      `git ${repo.version.join('.')} is too old for teamwire worktrees: ${major}.${minor} or newer is needed`,
      { details: { version: repo.version.join('.') } },
    );
  }
}

/**
 * The real path of `path`, or of its deepest existing ancestor with the rest appended, so that
 * paths compare equal however they were spelled (symlinked temp dirs, `..`, trailing slashes).
 */
export function realPathOf(path: string): string {
  const absolute = resolve(path);
  const rest: string[] = [];
  let current = absolute;
  for (;;) {
    try {
      return join(realpathSync.native(current), ...rest.reverse());
    } catch {
      const parent = dirname(current);
      if (parent === current) return absolute;
      rest.push(basename(current));
      current = parent;
    }
  }
}

/** True when two paths name the same place (after {@link realPathOf}). */
export function samePath(a: string, b: string): boolean {
  return a === b || realPathOf(a) === realPathOf(b);
}

/** One entry of `git worktree list --porcelain -z`. */
export interface WorktreeEntry {
  path: string;
  head: string | undefined;
  /** Full ref name (`refs/heads/...`), absent for a detached HEAD or a bare repository. */
  branch: string | undefined;
  /** The lock reason (empty string when locked without one); absent when not locked. */
  locked: string | undefined;
}

/** Parses `git worktree list --porcelain -z`: NUL-ended fields, an empty field ends an entry. */
export function parseWorktreeList(text: string): WorktreeEntry[] {
  const entries: WorktreeEntry[] = [];
  let current: WorktreeEntry | undefined;
  for (const field of text.split('\0')) {
    if (field === '') {
      if (current) entries.push(current);
      current = undefined;
      continue;
    }
    const space = field.indexOf(' ');
    const key = space === -1 ? field : field.slice(0, space);
    const value = space === -1 ? '' : field.slice(space + 1);
    if (key === 'worktree') {
      if (current) entries.push(current);
      current = { path: value, head: undefined, branch: undefined, locked: undefined };
    } else if (current) {
      if (key === 'HEAD') current.head = value;
      else if (key === 'branch') current.branch = value;
      else if (key === 'locked') current.locked = value;
    }
  }
  if (current) entries.push(current);
  return entries;
}

/** Every worktree of the repository, the main one first. */
export async function listWorktrees(
  repo: Repository,
  signal?: AbortSignal | undefined,
): Promise<WorktreeEntry[]> {
  const out = await repo.git.run([...at(repo), 'worktree', 'list', '--porcelain', '-z'], {
    signal,
  });
  return parseWorktreeList(out.stdout);
}

/** The commit `ref` points at, or undefined when there is no such ref. */
export async function resolveRef(
  repo: Repository,
  ref: string,
  signal?: AbortSignal | undefined,
): Promise<string | undefined> {
  const out = await repo.git.run(
    [...at(repo), 'rev-parse', '--verify', '--quiet', '--end-of-options', `${ref}^{commit}`],
    { ok: [0, 1, 128], signal },
  );
  const sha = out.stdout.trim();
  return out.code === 0 && /^[0-9a-f]{40,64}$/.test(sha) ? sha : undefined;
}

/** Number of commits reachable from `tip` and not from `exclude`. */
export async function countCommits(
  repo: Repository,
  tip: string,
  exclude: string,
  signal?: AbortSignal | undefined,
): Promise<number> {
  const out = await repo.git.run(
    [...at(repo), 'rev-list', '--count', tip, '--not', exclude, '--'],
    { signal },
  );
  return Number.parseInt(out.stdout.trim(), 10) || 0;
}
