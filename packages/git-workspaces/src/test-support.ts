import { execFileSync } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';

/** Identity for the commits tests make; set through the environment, never in a config file. */
export const IDENTITY = { name: 'Test Lead', email: 'lead@example.invalid' };

const ENV = {
  ...process.env,
  GIT_AUTHOR_NAME: IDENTITY.name,
  GIT_AUTHOR_EMAIL: IDENTITY.email,
  GIT_COMMITTER_NAME: IDENTITY.name,
  GIT_COMMITTER_EMAIL: IDENTITY.email,
  GIT_TERMINAL_PROMPT: '0',
  LC_ALL: 'C',
};

/** Runs git in `cwd` and returns its stdout (throws on a non-zero exit). */
export function git(cwd: string, ...args: string[]): string {
  return execFileSync('git', ['-C', cwd, ...args], {
    env: ENV,
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'pipe'],
  });
}

/** Temporary folders made by {@link tempDir}, removed by {@link removeTempDirs}. */
const made: string[] = [];

/** A fresh temporary folder (its real path). */
export function tempDir(): string {
  const dir = realpathSync(mkdtempSync(join(tmpdir(), 'tw-git-')));
  made.push(dir);
  return dir;
}

/** Removes every folder {@link tempDir} made; call in `afterEach`. */
export function removeTempDirs(): void {
  for (const dir of made.splice(0)) rmSync(dir, { recursive: true, force: true });
}

/** Writes files (creating folders) under `dir`. */
export function writeFiles(dir: string, files: Record<string, string>): void {
  for (const [path, text] of Object.entries(files)) {
    mkdirSync(dirname(join(dir, path)), { recursive: true });
    writeFileSync(join(dir, path), text);
  }
}

/** A repository on `main` with one commit holding `files`, in a fresh temporary folder. */
export function makeRepo(files: Record<string, string> = { 'README.md': 'hello\n' }): string {
  const dir = join(tempDir(), 'repo');
  mkdirSync(dir);
  git(dir, 'init', '--quiet', '-b', 'main');
  writeFiles(dir, files);
  git(dir, 'add', '--all');
  git(dir, 'commit', '--quiet', '-m', 'initial');
  return dir;
}

/** Commits everything in `dir` with `message`; returns the new commit. */
export function commitAll(dir: string, message: string): string {
  git(dir, 'add', '--all');
  git(dir, 'commit', '--quiet', '-m', message);
  return git(dir, 'rev-parse', 'HEAD').trim();
}

/** `git worktree list --porcelain` as `{path, branch}` entries. */
export function worktrees(repo: string): { path: string; branch: string | undefined }[] {
  const entries: { path: string; branch: string | undefined }[] = [];
  for (const block of git(repo, 'worktree', 'list', '--porcelain').split('\n\n')) {
    const path = /^worktree (.*)$/m.exec(block)?.[1];
    if (path) entries.push({ path, branch: /^branch (.*)$/m.exec(block)?.[1] });
  }
  return entries;
}

/** True when the branch exists. */
export function branchExists(repo: string, branch: string): boolean {
  try {
    git(repo, 'rev-parse', '--verify', '--quiet', `refs/heads/${branch}`);
    return true;
  } catch {
    return false;
  }
}

/**
 * What a member writes into its worktree to run a program as the host: `pkg/.git`, a repository
 * whose objects are the host repository's (so its `HEAD` names a real commit) and whose config
 * names an fsmonitor hook, a script of the member's that leaves `marker` when it runs.
 */
export function plantNestedRepository(worktree: string, repo: string, marker: string): void {
  const head = git(worktree, 'rev-parse', 'HEAD').trim();
  const hook = join(worktree, 'pkg', 'fsmonitor.sh');
  writeFiles(worktree, {
    'pkg/.git/HEAD': 'ref: refs/heads/main\n',
    'pkg/.git/refs/heads/main': `${head}\n`,
    'pkg/.git/objects/info/alternates': `${join(repo, '.git', 'objects')}\n`,
    'pkg/.git/config': `[core]\n\trepositoryformatversion = 0\n\tfsmonitor = ${hook}\n`,
    'pkg/fsmonitor.sh': `#!/bin/sh\ntouch '${marker}'\nexit 1\n`,
  });
  chmodSync(hook, 0o755);
}
