import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { type AgentTool, defineTool } from '@teamwire/core';
import { memberBranch, mergeBranch, resolveInside } from '@teamwire/git-workspaces';
import { z } from 'zod';
import { readTools } from './file-tools.js';
import { branchExists, branchWork, commitDate, FIX_IDENTITY, git } from './fix-git.js';
import { openReviewRoot } from './workspace-files.js';

/** The file each reviewer of the fix job writes into the folder it owns. */
export const REVIEW_FILE = 'REVIEW.md';

/**
 * The read tools of the fix job, on the caller's own directory (`ctx.cwd`: a reviewer's worktree,
 * the scratch repository for the lead). `REVIEW.md` files are hidden: they are the job's output,
 * and a reviewer that redoes a folder after a crash must see the tree it saw the first time.
 */
export function fixReadTools(): AgentTool[] {
  return readTools(
    (ctx) => openReviewRoot(ctx.cwd, { hideFiles: [REVIEW_FILE] }),
    'your working directory',
  );
}

/** The tools a reviewer changes code with: in its own worktree only. */
export function fixWriteTools(options: { base: string }): AgentTool[] {
  return [
    defineTool({
      name: 'write_file',
      description: 'Write a text file of your working directory (created or overwritten).',
      inputSchema: z.object({
        path: z.string().min(1).describe('File relative to your working directory.'),
        content: z.string().max(1_000_000),
      }),
      async execute(input, ctx) {
        const target = await resolveInside(ctx.cwd, input.path);
        await mkdir(path.dirname(target), { recursive: true });
        await writeFile(target, input.content);
        return { path: input.path, bytes: Buffer.byteLength(input.content) };
      },
    }),
    defineTool({
      name: 'commit_changes',
      description:
        'Commit the changes below the given paths of your working directory on your branch. Nothing to commit is not an error.',
      inputSchema: z.object({
        message: z.string().min(1).max(2000),
        paths: z.array(z.string().min(1)).min(1).max(100),
      }),
      async execute(input, ctx) {
        const paths: string[] = [];
        for (const p of input.paths) {
          const absolute = await resolveInside(ctx.cwd, p);
          paths.push(path.relative(ctx.cwd, absolute) || '.');
        }
        await git(ctx.cwd, ['add', '-A', '--', ...paths]);
        const staged = await git(ctx.cwd, ['diff', '--cached', '--quiet'], { ok: [1] });
        if (staged.code === 0) {
          const head = (await git(ctx.cwd, ['rev-parse', 'HEAD'])).stdout.trim();
          return { committed: false, head, reason: 'nothing to commit' };
        }
        // the base's date and a fixed identity: the same edit is the same commit in every run
        const date = await commitDate(ctx.cwd, options.base);
        await git(ctx.cwd, ['commit', '--quiet', '--no-verify', '-m', input.message], {
          env: {
            GIT_AUTHOR_NAME: FIX_IDENTITY.name,
            GIT_AUTHOR_EMAIL: FIX_IDENTITY.email,
            GIT_COMMITTER_NAME: FIX_IDENTITY.name,
            GIT_COMMITTER_EMAIL: FIX_IDENTITY.email,
            GIT_AUTHOR_DATE: date,
            GIT_COMMITTER_DATE: date,
          },
        });
        const head = (await git(ctx.cwd, ['rev-parse', 'HEAD'])).stdout.trim();
        const files = await git(ctx.cwd, ['show', '--name-only', '--format=', '-z', head]);
        return { committed: true, commit: head, files: files.stdout.split('\0').filter(Boolean) };
      },
    }),
  ] as AgentTool[];
}

/** What `merge_branch` returns; the lead's report is made of these. */
export interface MergeOutcome {
  member: string;
  branch: string;
  into: string;
  /** False when the branch is gone (a member whose empty worktree was removed). */
  exists: boolean;
  merged: boolean;
  kind?: string | undefined;
  conflicts: { path: string; type: string }[];
  commits: { commit: string; subject: string }[];
  files: string[];
}

/** The lead's merge tool: a member's branch into the result branch, conflicts as data. */
export function mergeTool(options: {
  repo: string;
  teamId: string;
  base: string;
  resultBranch: string;
}): AgentTool {
  return defineTool({
    name: 'merge_branch',
    description:
      "Merge a teammate's branch into the result branch without touching any working tree. Conflicts come back as data; nothing changes then.",
    inputSchema: z.object({
      member: z.string().min(1).describe('The teammate whose branch to merge.'),
    }),
    async execute(input): Promise<MergeOutcome> {
      const branch = memberBranch(options.teamId, input.member);
      const common = { member: input.member, branch, into: options.resultBranch };
      if (!(await branchExists(options.repo, branch))) {
        return { ...common, exists: false, merged: false, conflicts: [], commits: [], files: [] };
      }
      const work = await branchWork(options.repo, branch, options.base);
      const result = await mergeBranch({
        repoDir: options.repo,
        branch,
        into: options.resultBranch,
        author: FIX_IDENTITY,
      });
      if (!result.merged) {
        return {
          ...common,
          exists: true,
          merged: false,
          conflicts: result.conflicts.map((c) => ({ path: c.path, type: c.type })),
          ...work,
        };
      }
      return { ...common, exists: true, merged: true, kind: result.kind, conflicts: [], ...work };
    },
  }) as AgentTool;
}
