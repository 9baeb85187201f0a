import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { TeamError } from '@teamwire/core';
import { atLeast, createGitRunner, DEFAULT_GIT_TIMEOUT_MS } from './git-runner.js';
import { at, listWorktrees, openRepository, type Repository, resolveRef } from './repository.js';

/** Options of {@link mergeBranch}. */
export interface MergeBranchOptions {
  /** Any folder of the repository (the lead's working tree). */
  repoDir: string;
  /** The branch to merge, e.g. a member's `teamwire/<teamId>/<name>`. */
  branch: string;
  /** The branch to merge into. It must exist and must not be checked out in any worktree. */
  into: string;
  /** Message of the merge commit. Default `Merge branch '<branch>' into <into>`. */
  message?: string | undefined;
  /** Author and committer of the merge commit. Default: the repository's git identity. */
  author?:
    | {
        /** `user.name` of the commit. */
        name: string;
        /** `user.email` of the commit. */
        email: string;
      }
    | undefined;
  /**
   * How to merge: `merge-tree` (in memory, git ≥ 2.38), `worktree` (in a temporary detached
   * worktree, any git), or `auto` (the first when git is new enough). Default `auto`.
   */
  method?: 'auto' | 'merge-tree' | 'worktree' | undefined;
  /** The git binary. Default `git`. */
  git?: string | undefined;
  /** Longest one git command may run. Default 120 000 ms. */
  timeoutMs?: number | undefined;
}

/** One path that could not be merged. */
export interface MergeConflict {
  /** Path relative to the repository root. */
  path: string;
  /** Git's kind of conflict: `content`, `add/add`, `modify/delete`, `rename/delete`, … */
  type: string;
  /** Git's own description, when it gave one. */
  message?: string | undefined;
}

/** What {@link mergeBranch} did. */
export type MergeResult =
  | {
      /** The merge is done. */
      merged: true;
      /** The commit `into` points at now. */
      commit: string;
      /** `merge`: a merge commit was made; `fast-forward`: `into` moved to `branch`; `up-to-date`: nothing to do. */
      kind: 'merge' | 'fast-forward' | 'up-to-date';
    }
  | {
      /** Nothing was merged. */
      merged: false;
      /** The conflicting paths; `into` and every working tree are as they were. */
      conflicts: MergeConflict[];
    };

/** At most this many conflicts are reported. */
export const MAX_CONFLICTS = 1_000;
const LOCK_PREFIX = 'teamwire merge pid=';

/**
 * Merges `branch` into `into` without touching any working tree: the merge is computed with
 * `git merge-tree --write-tree` (or in a temporary detached worktree on older git), committed,
 * and `into` is moved with a compare-and-swap. Conflicts are returned as data and change nothing.
 * `into` must exist (it is never created implicitly) and must not be checked out anywhere,
 * because moving a checked-out branch would leave that tree's files and index behind it.
 */
export async function mergeBranch(options: MergeBranchOptions): Promise<MergeResult> {
  const git = createGitRunner(options.git ?? 'git', options.timeoutMs ?? DEFAULT_GIT_TIMEOUT_MS);
  const repo = await openRepository(git, options.repoDir, { needWorkTree: false });
  await checkBranchName(repo, options.branch, 'branch');
  await checkBranchName(repo, options.into, 'into');
  const intoRef = `refs/heads/${options.into}`;
  const intoHead = await resolveRef(repo, intoRef);
  const branchHead = await resolveRef(repo, `refs/heads/${options.branch}`);
  if (intoHead === undefined || branchHead === undefined) {
    const missing = intoHead === undefined ? options.into : options.branch;
    throw new TeamError('INVALID_ARGUMENT', `branch ${missing} does not exist`, {
      details: { branch: missing },
    });
  }
  const checkedOut = (await listWorktrees(repo)).find((w) => w.branch === intoRef);
  if (checkedOut) {
    throw new TeamError(
      'INVALID_ARGUMENT',
      `${options.into} is checked out at ${checkedOut.path}; mergeBranch never moves a checked-out branch (merge there with git, or into another branch)`,
      { details: { into: options.into, worktree: checkedOut.path } },
    );
  }

  if (await isAncestor(repo, branchHead, intoHead)) {
    return { merged: true, commit: intoHead, kind: 'up-to-date' };
  }
  if (await isAncestor(repo, intoHead, branchHead)) {
    await moveRef(repo, intoRef, branchHead, intoHead, options);
    return { merged: true, commit: branchHead, kind: 'fast-forward' };
  }

  const message = options.message ?? `Merge branch '${options.branch}' into ${options.into}`;
  const env = identity(options.author);
  const method = options.method ?? 'auto';
  const useMergeTree =
    method === 'merge-tree' || (method === 'auto' && atLeast(repo.version, 2, 38));
  const outcome = useMergeTree
    ? await mergeInMemory(repo, intoHead, branchHead, message, env)
    : await mergeInWorktree(repo, intoHead, branchHead, message, env);
  if ('conflicts' in outcome) return { merged: false, conflicts: outcome.conflicts };
  await moveRef(repo, intoRef, outcome.commit, intoHead, options);
  return { merged: true, commit: outcome.commit, kind: 'merge' };
}

async function checkBranchName(repo: Repository, name: string, what: string): Promise<void> {
  const out =
    typeof name === 'string' && name.length > 0 && name.length <= 255 && !name.startsWith('-')
      ? await repo.git.run(['check-ref-format', `refs/heads/${name}`], { ok: [0, 1] })
      : { code: 1 };
  if (out.code !== 0) {
    throw new TeamError(
      'INVALID_ARGUMENT',
      `${what} ${JSON.stringify(String(name).slice(0, 200))} is not a branch name`,
    );
  }
}

function identity(author: MergeBranchOptions['author']): Record<string, string> {
  if (!author) return {};
  return {
    GIT_AUTHOR_NAME: author.name,
    GIT_AUTHOR_EMAIL: author.email,
    GIT_COMMITTER_NAME: author.name,
    GIT_COMMITTER_EMAIL: author.email,
  };
}

async function isAncestor(repo: Repository, ancestor: string, of: string): Promise<boolean> {
  const out = await repo.git.run([...at(repo), 'merge-base', '--is-ancestor', ancestor, of], {
    ok: [0, 1],
  });
  return out.code === 0;
}

/** Moves `ref` from `expected` to `commit`, failing if someone moved it meanwhile. */
async function moveRef(
  repo: Repository,
  ref: string,
  commit: string,
  expected: string,
  options: MergeBranchOptions,
): Promise<void> {
  const reason = `teamwire: merge ${options.branch} into ${options.into}`;
  await repo.git.run([...at(repo), 'update-ref', '-m', reason, ref, commit, expected]);
}

type Outcome = { commit: string } | { conflicts: MergeConflict[] };

/** `git merge-tree --write-tree`: the merge as a tree object, nothing checked out. */
async function mergeInMemory(
  repo: Repository,
  ours: string,
  theirs: string,
  message: string,
  env: Record<string, string>,
): Promise<Outcome> {
  const out = await repo.git.run(
    [...at(repo), 'merge-tree', '--write-tree', '-z', '--name-only', ours, theirs],
    { ok: [0, 1], allowTruncated: true },
  );
  const parsed = parseMergeTree(out.stdout);
  if (out.code === 0) {
    if (!/^[0-9a-f]{40,64}$/.test(parsed.tree)) {
      throw new TeamError('WORKSPACE_FAILED', 'git merge-tree printed no tree', {
        details: { stdout: out.stdout.slice(0, 500) },
      });
    }
    const commit = await repo.git.run(
      [...at(repo), 'commit-tree', parsed.tree, '-p', ours, '-p', theirs, '-m', message],
      { env },
    );
    return { commit: commit.stdout.trim() };
  }
  return { conflicts: parsed.conflicts };
}

/**
 * Parses `git merge-tree --write-tree -z --name-only`: the tree, NUL; each conflicted path, NUL;
 * an empty field; then messages, each `<n>NUL<path>NUL…<type>NUL<text>NUL`.
 */
export function parseMergeTree(text: string): { tree: string; conflicts: MergeConflict[] } {
  const fields = text.split('\0');
  const tree = fields[0] ?? '';
  let i = 1;
  const paths: string[] = [];
  while (i < fields.length && fields[i] !== '') paths.push(fields[i++]!);
  i++;
  const described = new Map<string, { type: string; message: string }>();
  while (i < fields.length) {
    const count = Number.parseInt(fields[i] ?? '', 10);
    if (!Number.isFinite(count) || count < 0) break;
    const about = fields.slice(i + 1, i + 1 + count);
    const type = fields[i + 1 + count] ?? '';
    const message = (fields[i + 2 + count] ?? '').trim();
    i += 3 + count;
    if (!type.startsWith('CONFLICT')) continue;
    // The message says it as `git merge` does (`content`); the bare type token is terser
    // (`contents`), so the message's word is preferred.
    const named = /^CONFLICT \(([^)]*)\)/.exec(message) ?? /^CONFLICT \(([^)]*)\)/.exec(type);
    for (const path of about) {
      if (!described.has(path)) described.set(path, { type: named?.[1] ?? 'unknown', message });
    }
  }
  const conflicts = paths.slice(0, MAX_CONFLICTS).map((path) => {
    const info = described.get(path);
    return info ? { path, type: info.type, message: info.message } : { path, type: 'unknown' };
  });
  return { tree, conflicts };
}

const UNMERGED: Record<string, string> = {
  DD: 'delete/delete',
  AU: 'add/add',
  UA: 'add/add',
  DU: 'modify/delete',
  UD: 'modify/delete',
  AA: 'add/add',
  UU: 'content',
};

/** The merge in a temporary detached worktree under the git directory, always removed. */
async function mergeInWorktree(
  repo: Repository,
  ours: string,
  theirs: string,
  message: string,
  env: Record<string, string>,
): Promise<Outcome> {
  const parent = join(repo.commonDir, 'teamwire-merges');
  await removeStaleMergeTrees(repo, parent);
  await mkdir(parent, { recursive: true });
  const dir = await mkdtemp(join(parent, 'm-'));
  let added = false;
  try {
    await repo.git.run([
      ...at(repo),
      'worktree',
      'add',
      '--detach',
      '--lock',
      '--reason',
      `${LOCK_PREFIX}${process.pid}`,
      '--quiet',
      dir,
      ours,
    ]);
    added = true;
    const merge = await repo.git.run(
      ['-C', dir, 'merge', '--no-ff', '--no-edit', '-m', message, theirs],
      { ok: [0, 1], env, allowTruncated: true },
    );
    if (merge.code === 0) {
      return { commit: (await repo.git.run(['-C', dir, 'rev-parse', 'HEAD'])).stdout.trim() };
    }
    const status = await repo.git.run(['-C', dir, 'status', '--porcelain=v1', '-z'], {
      allowTruncated: true,
    });
    const conflicts: MergeConflict[] = [];
    for (const field of status.stdout.split('\0')) {
      const type = UNMERGED[field.slice(0, 2)];
      if (type && conflicts.length < MAX_CONFLICTS) conflicts.push({ path: field.slice(3), type });
    }
    if (conflicts.length === 0) {
      throw new TeamError('WORKSPACE_FAILED', `git merge failed: ${merge.stderr.slice(0, 2000)}`, {
        details: { stderr: merge.stderr.slice(0, 2000) },
      });
    }
    return { conflicts };
  } finally {
    await removeMergeTree(repo, dir, added);
  }
}

async function removeMergeTree(repo: Repository, dir: string, added: boolean): Promise<void> {
  if (added) {
    await repo.git.run([...at(repo), 'worktree', 'unlock', dir], { ok: [0, 128] }).catch(() => {});
    await repo.git
      .run([...at(repo), 'worktree', 'remove', '--force', dir], { ok: [0, 128] })
      .catch(() => {});
  }
  await rm(dir, { recursive: true, force: true });
  await repo.git.run([...at(repo), 'worktree', 'prune']).catch(() => {});
}

/** Temporary merge worktrees of processes that died before removing theirs. */
async function removeStaleMergeTrees(repo: Repository, parent: string): Promise<void> {
  for (const entry of await listWorktrees(repo)) {
    if (!entry.path.startsWith(`${parent}/`) || !entry.locked?.startsWith(LOCK_PREFIX)) continue;
    const pid = Number.parseInt(entry.locked.slice(LOCK_PREFIX.length), 10);
    if (Number.isInteger(pid) && pid > 0 && alive(pid)) continue;
    await removeMergeTree(repo, entry.path, true);
  }
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}
