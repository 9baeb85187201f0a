import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { type AgentTool, defineTool } from '@teamwire/core';
import { commitPaths, memberBranch, mergeBranch, resolveInside } from '@teamwire/git-workspaces';
import { z } from 'zod';
import { readTools } from './file-tools.js';
import { branchExists, branchWork, commitDate, FIX_IDENTITY } from './fix-git.js';
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

/** The tool whose calls `fix --approve` asks the host about. */
export const COMMIT_TOOL = 'commit_changes';

/** What a `commit_changes` call asks for, as its approval's input holds it. */
export interface CommitInput {
  message: string;
  paths: string[];
}

/**
 * The tools a reviewer changes code with: in its own worktree only. Its files are untrusted, so
 * the host's git runs on them only through `@teamwire/git-workspaces` (`commitPaths`); `repo` is
 * the scratch repository, where the base's date is read. `approve`: each commit waits for a
 * decision (core parks the reviewer until then; a refused one is the call's error).
 */
export function fixWriteTools(options: {
  base: string;
  repo: string;
  approve?: boolean | undefined;
}): AgentTool[] {
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
      name: COMMIT_TOOL,
      description:
        'Commit the changes below the given paths of your working directory on your branch. Nothing to commit is not an error.',
      ...(options.approve === true ? { needsApproval: true } : {}),
      inputSchema: z.object({
        message: z.string().min(1).max(2000),
        paths: z.array(z.string().min(1)).min(1).max(100),
      }),
      async execute(input, ctx) {
        // the base's date and a fixed identity: the same edit is the same commit in every run
        const date = await commitDate(options.repo, options.base);
        const result = await commitPaths({
          dir: ctx.cwd,
          paths: input.paths,
          message: input.message,
          author: FIX_IDENTITY,
          date,
        });
        return result.committed
          ? result
          : { committed: false, head: result.head, reason: 'nothing to commit' };
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
