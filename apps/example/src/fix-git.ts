import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, rename, rm } from 'node:fs/promises';
import path from 'node:path';
import { TeamError } from '@teamwire/core';

/*
 * The git side of `demo fix`: the scratch repository the team works in (never the user's), the
 * commits reviewers make in their worktrees, and what a branch holds beyond the base.
 */

/** Who the fix job's commits are by: the scratch repository's local identity. */
export const FIX_IDENTITY = { name: 'teamwire-example', email: 'teamwire-example@localhost' };

export interface GitResult {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs git; a non-zero exit is an error unless listed in `ok`. */
export function git(
  cwd: string,
  args: readonly string[],
  options: { ok?: readonly number[]; env?: Record<string, string> } = {},
): Promise<GitResult> {
  return new Promise((resolve, reject) => {
    execFile(
      'git',
      ['-C', cwd, ...args],
      {
        env: { ...process.env, GIT_TERMINAL_PROMPT: '0', ...options.env },
        maxBuffer: 64 * 1024 * 1024,
      },
      (error, stdout, stderr) => {
        const code = error === null ? 0 : typeof error.code === 'number' ? error.code : Number.NaN;
        if (code === 0 || options.ok?.includes(code)) {
          resolve({ code, stdout: String(stdout), stderr: String(stderr) });
          return;
        }
        reject(
          new TeamError(
            'WORKSPACE_FAILED',
            `git ${args.join(' ')} failed: ${String(stderr).trim().slice(0, 500) || error?.message}`,
            { cause: error },
          ),
        );
      },
    );
  });
}

/** The commit `HEAD` of the user's repository points at: what the fix job starts from. */
export async function resolveBase(dir: string): Promise<string> {
  try {
    return (await git(dir, ['rev-parse', '--verify', 'HEAD^{commit}'])).stdout.trim();
  } catch (cause) {
    throw new TeamError(
      'INVALID_ARGUMENT',
      `demo fix needs a git repository with at least one commit: ${dir} is not one`,
      { cause },
    );
  }
}

async function hasCommit(repo: string, commit: string): Promise<boolean> {
  if (!existsSync(path.join(repo, '.git'))) return false;
  const out = await git(repo, ['cat-file', '-e', `${commit}^{commit}`], { ok: [1, 128] });
  return out.code === 0;
}

/**
 * Makes (or finds again) the scratch repository of a fix team: a `git clone --local
 * --no-hardlinks` of the user's repository, checked out detached at `base`, with a local identity
 * and the result branch at `base`. The clone is made in a temporary folder and renamed into place,
 * so a kill mid-way leaves either nothing or a whole clone; calling it again is harmless. The
 * user's repository is only read.
 */
export async function ensureScratchRepo(options: {
  source: string;
  repo: string;
  base: string;
  resultBranch: string;
}): Promise<void> {
  const { source, repo, base, resultBranch } = options;
  if (!(await hasCommit(repo, base))) {
    await rm(repo, { recursive: true, force: true });
    const tmp = `${repo}.tmp-${process.pid}`;
    await rm(tmp, { recursive: true, force: true });
    await mkdir(path.dirname(repo), { recursive: true });
    await git(path.dirname(repo), [
      'clone',
      '--quiet',
      '--local',
      '--no-hardlinks',
      '--no-checkout',
      source,
      tmp,
    ]);
    await git(tmp, ['checkout', '--quiet', '--detach', base]);
    await git(tmp, ['config', 'user.name', FIX_IDENTITY.name]);
    await git(tmp, ['config', 'user.email', FIX_IDENTITY.email]);
    await rename(tmp, repo);
  }
  const branch = await git(
    repo,
    ['rev-parse', '--verify', '--quiet', `refs/heads/${resultBranch}`],
    {
      ok: [1],
    },
  );
  if (branch.code !== 0) await git(repo, ['branch', resultBranch, base]);
}

/** Author and committer date of `base`: commits made on top of it are the same in every run. */
export async function commitDate(repo: string, base: string): Promise<string> {
  return (await git(repo, ['show', '-s', '--format=%cI', base])).stdout.trim();
}

/** The commits of `branch` beyond `base` (oldest first) and the files they change. */
export async function branchWork(
  repo: string,
  branch: string,
  base: string,
): Promise<{ commits: { commit: string; subject: string }[]; files: string[] }> {
  const log = await git(repo, ['log', '--reverse', '--format=%H%x09%s', `${base}..${branch}`]);
  const commits = log.stdout
    .split('\n')
    .filter(Boolean)
    .map((line) => {
      const tab = line.indexOf('\t');
      return { commit: line.slice(0, tab), subject: line.slice(tab + 1) };
    });
  const diff = await git(repo, ['diff', '--name-only', '-z', base, branch]);
  return { commits, files: diff.stdout.split('\0').filter(Boolean).sort() };
}

export async function branchExists(repo: string, branch: string): Promise<boolean> {
  const out = await git(repo, ['rev-parse', '--verify', '--quiet', `refs/heads/${branch}`], {
    ok: [1],
  });
  return out.code === 0;
}

/** A worktree of the scratch repository, as `git worktree list --porcelain` lists it. */
export interface WorktreeEntry {
  path: string;
  branch?: string | undefined;
  locked?: boolean;
  prunable?: boolean;
}

export async function listWorktrees(repo: string): Promise<WorktreeEntry[]> {
  const out = await git(repo, ['worktree', 'list', '--porcelain']);
  const entries: WorktreeEntry[] = [];
  for (const block of out.stdout.split('\n\n')) {
    const lines = block.split('\n').filter(Boolean);
    const at = lines.find((l) => l.startsWith('worktree '));
    if (!at) continue;
    const branch = lines.find((l) => l.startsWith('branch '))?.slice('branch refs/heads/'.length);
    entries.push({
      path: at.slice('worktree '.length),
      branch,
      locked: lines.some((l) => l.startsWith('locked')),
      prunable: lines.some((l) => l.startsWith('prunable')),
    });
  }
  return entries;
}
