import { mkdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import {
  type AgentDefinition,
  createAgentRegistry,
  createEventHub,
  type ModelAdapter,
  openTeam,
  TeamError,
  type TeamService,
  ulidIdSource,
} from '@teamwire/core';
import { createGitWorkspaces } from '@teamwire/git-workspaces';
import { createModel } from '@teamwire/host-adapters';
import { openJsonlTeamStore } from '@teamwire/storage';
import { z } from 'zod';
import { type AppIo, FORMATS, type RunSummary, reportTool } from './app.js';
import type { Command } from './args.js';
import { plainLine } from './board.js';
import { branchWork, ensureScratchRepo, listWorktrees, resolveBase } from './fix-git.js';
import { fixReadTools, fixWriteTools, mergeTool } from './fix-tools.js';
import { observeTeam } from './observe.js';
import { createPolicyModel } from './policy-model.js';

export type FixCommand = Extract<Command, { command: 'fix' }>;

/** The settings a fix team was started with, kept in its folder for `fix --resume`. */
const FixSettings = z.object({
  version: z.literal(1),
  job: z.literal('fix'),
  dir: z.string(),
  /** The commit of `dir` the team started from. */
  base: z.string(),
  /** The scratch repository the team works in (a clone of `dir`). */
  repo: z.string(),
  resultBranch: z.string(),
  protocol: z.enum(['xml', 'json', 'tool-call']),
  model: z.string().optional(),
  report: z.string(),
  conflictFile: z.string().optional(),
});
type FixSettings = z.infer<typeof FixSettings>;
const SETTINGS_FILE = 'example-fix.json';

export const FIX_LEAD_PROMPT = `You lead a team that changes code. The team works in a scratch clone of the repository. Create
one task per top-level package or folder and a summary task blocked by all of them that you own;
spawn one reviewer (agent type fixer) per folder, each in its own git worktree; wait until every
folder is done; merge every reviewer's branch with merge_branch, one at a time; write the report
with write_report (merged branches, commits, files changed, conflicts); complete the summary task
and shut the reviewers down.`;

export const FIX_REVIEWER_PROMPT = `You are a reviewer with a git worktree of your own. Claim the task the lead gave you. Review
your folder with list_files, search_text and read_file, write <folder>/REVIEW.md with your
findings using write_file, commit it with commit_changes, then complete the task.`;

/** What the run of a fix team adds to a review's summary: the result branch and the worktrees left. */
export interface FixSummary extends RunSummary {
  repo: string;
  resultBranch: string;
  /** Worktrees of the scratch repository besides its own, after the run. */
  worktrees: { path: string; branch?: string | undefined; commitsAhead: number }[];
}

async function loadFixSettings(teamDir: string): Promise<FixSettings | undefined> {
  let raw: string;
  try {
    raw = await readFile(path.join(teamDir, SETTINGS_FILE), 'utf8');
  } catch {
    return undefined;
  }
  const parsed = FixSettings.safeParse(JSON.parse(raw));
  if (!parsed.success) {
    throw new TeamError('INVALID_RECORD', `${SETTINGS_FILE} in ${teamDir} is not valid`);
  }
  return parsed.data;
}

/**
 * `demo fix`: each reviewer writes and commits its folder's REVIEW.md in a git worktree of its
 * own, and the lead merges their branches into `teamwire-fix/<teamId>`. It all happens in a
 * scratch clone under `<state-dir>/fix/<teamId>/repo`; the user's repository is only read.
 */
export async function runFix(command: FixCommand, io: AppIo): Promise<FixSummary> {
  const started = Date.now();
  const stateDir = path.resolve(io.cwd, command.stateDir);
  const teamId = command.resume ?? ulidIdSource().next();
  const teamDir = path.join(stateDir, 'teams', teamId);

  let settings: FixSettings;
  if (command.resume) {
    const stored = await loadFixSettings(teamDir);
    if (!stored) {
      throw new TeamError(
        'TEAM_NOT_FOUND',
        `no fix team ${teamId} under ${path.join(stateDir, 'teams')}`,
      );
    }
    settings = stored;
  } else {
    const dir = path.resolve(io.cwd, command.dir);
    settings = {
      version: 1,
      job: 'fix',
      dir,
      base: await resolveBase(dir),
      repo: path.join(stateDir, 'fix', teamId, 'repo'),
      resultBranch: `teamwire-fix/${teamId}`,
      protocol: command.protocol,
      ...(command.model ? { model: command.model } : {}),
      report: path.resolve(io.cwd, command.report),
      ...(command.conflictFile ? { conflictFile: command.conflictFile } : {}),
    };
  }
  const format = FORMATS[settings.protocol];
  let reportWritten = false;
  const models: { lead: ModelAdapter; reviewer: ModelAdapter } = settings.model
    ? { lead: createModel(settings.model), reviewer: createModel(settings.model) }
    : {
        lead: createPolicyModel({
          role: 'fix-lead',
          format,
          displayDir: path.relative(io.cwd, settings.dir) || '.',
          paceMs: command.paceMs,
        }),
        reviewer: createPolicyModel({
          role: 'fix-reviewer',
          format,
          conflictFile: settings.conflictFile,
          paceMs: command.paceMs,
        }),
      };
  const store = await openJsonlTeamStore({
    teamId,
    dir: teamDir,
    durability: command.durability,
    create: !command.resume,
  });
  if (!command.resume) {
    await writeFile(path.join(teamDir, SETTINGS_FILE), `${JSON.stringify(settings, null, 2)}\n`);
  }

  let team: TeamService | undefined;
  let interrupted = false;
  const hub = createEventHub({ teamId, log: store.log });
  const title = `teamwire fix of ${settings.dir} in ${settings.repo} — team ${teamId}${settings.model ? '' : ' (offline policy model, not an LLM)'}`;
  const observer = observeTeam({ hub, io, plain: command.plain, title, started });
  if (io.stdout.isTTY !== true || command.plain) {
    io.stdout.write(
      `${plainLine(Date.now(), `${command.resume ? 'resuming' : 'starting'} ${title}`)}\n`,
    );
  }
  try {
    await ensureScratchRepo({
      source: settings.dir,
      repo: settings.repo,
      base: settings.base,
      resultBranch: settings.resultBranch,
    });
    const definitions: AgentDefinition[] = [
      {
        type: 'lead',
        description: 'Plans the fix, merges the branches, writes the report.',
        systemPrompt: FIX_LEAD_PROMPT,
        model: models.lead,
        tools: [
          ...fixReadTools(),
          mergeTool({
            repo: settings.repo,
            teamId,
            base: settings.base,
            resultBranch: settings.resultBranch,
          }),
          reportTool(settings.report, () => (reportWritten = true)),
        ],
        maxSteps: 1000,
      },
      {
        type: 'fixer',
        description: 'Writes and commits one folder’s review notes in its own worktree.',
        systemPrompt: FIX_REVIEWER_PROMPT,
        model: models.reviewer,
        tools: [...fixReadTools(), ...fixWriteTools({ base: settings.base })],
        maxSteps: 40,
        isolation: 'worktree',
      },
    ];
    team = await openTeam({
      teamId,
      log: store.log,
      transcripts: store.transcripts,
      format,
      agents: createAgentRegistry(definitions),
      lead: { agentType: 'lead', description: 'Leads the fix.' },
      events: hub,
      // each reviewer claims the task it was spawned for, never another one
      idleClaim: false,
      cwd: settings.repo,
      workspaces: createGitWorkspaces({ repoDir: settings.repo, base: settings.base }),
    });
    const onAbort = () => {
      interrupted = true;
      void team?.dispose();
    };
    io.signal?.addEventListener('abort', onAbort, { once: true });
    const prompt = command.resume
      ? 'The team was restarted. Check the board and the team, and finish what is left of the fix.'
      : `Write and commit a REVIEW.md in every folder of ${settings.dir} (cloned to ${settings.repo}), one reviewer per folder in its own worktree, merge their branches into ${settings.resultBranch} and write the report.`;
    if (!interrupted) {
      await team.promptLead(prompt).catch((error: unknown) => {
        if (!interrupted) throw error;
      });
    }
    if (!interrupted) await team.idle();
    io.signal?.removeEventListener('abort', onAbort);
  } finally {
    await team?.dispose();
    hub.close();
    await observer.close();
    await store.close();
  }
  try {
    await readFile(settings.report);
    reportWritten = true;
  } catch {
    // not written (yet)
  }
  const worktrees = interrupted ? [] : await keptWorktrees(settings);
  if (reportWritten && !interrupted) await appendWorktrees(settings.report, worktrees);
  const { board } = observer;
  return {
    teamId,
    teamDir,
    reportPath: settings.report,
    reportWritten,
    turns: board.turns,
    messages: board.messages,
    tasks: board.progress(),
    inputTokens: board.inputTokens,
    outputTokens: board.outputTokens,
    wallMs: Date.now() - started,
    interrupted,
    repo: settings.repo,
    resultBranch: settings.resultBranch,
    worktrees,
  };
}

/** The member worktrees left in the scratch repository: kept because they hold work. */
async function keptWorktrees(settings: FixSettings): Promise<FixSummary['worktrees']> {
  const out: FixSummary['worktrees'] = [];
  for (const w of await listWorktrees(settings.repo)) {
    if (path.resolve(w.path) === path.resolve(settings.repo)) continue;
    const commitsAhead = w.branch
      ? (await branchWork(settings.repo, w.branch, settings.base)).commits.length
      : 0;
    out.push({ path: w.path, branch: w.branch, commitsAhead });
  }
  return out;
}

const KEPT_HEADING = '## Worktrees kept';

/** Adds (or replaces) the section of the report that says which worktrees were kept. */
async function appendWorktrees(report: string, worktrees: FixSummary['worktrees']): Promise<void> {
  const text = await readFile(report, 'utf8');
  const head = text.includes(KEPT_HEADING)
    ? text.slice(0, text.indexOf(KEPT_HEADING))
    : `${text.trimEnd()}\n\n`;
  const lines = [
    KEPT_HEADING,
    '',
    'A retired reviewer whose worktree holds commits keeps it (its work is also on the result branch when merged); one without work is removed with its branch.',
    '',
    ...(worktrees.length > 0
      ? worktrees.map(
          (w) =>
            `- \`${w.branch ?? '(detached)'}\`: ${w.commitsAhead} commit(s) ahead, at \`${w.path}\``,
        )
      : ['None.']),
  ];
  await mkdir(path.dirname(report), { recursive: true });
  await writeFile(report, `${head}${lines.join('\n')}\n`);
}

export function formatFixSummary(summary: FixSummary): string {
  const lines = [
    summary.interrupted ? 'Stopped before the fix finished.' : 'Fix finished.',
    `  turns ${summary.turns}, messages ${summary.messages}, tasks ${summary.tasks.done}/${summary.tasks.total} completed`,
    `  tokens ${summary.inputTokens} in / ${summary.outputTokens} out, wall time ${(summary.wallMs / 1000).toFixed(1)}s`,
    `  report: ${summary.reportWritten ? summary.reportPath : '(not written)'}`,
    `  result branch: ${summary.resultBranch} in ${summary.repo}`,
    `    see it with: git -C ${summary.repo} log --stat ${summary.resultBranch}`,
    `    take it with: git fetch ${summary.repo} ${summary.resultBranch} && git merge FETCH_HEAD`,
  ];
  for (const w of summary.worktrees) {
    lines.push(
      `  kept worktree: ${w.branch ?? '(detached)'} (${w.commitsAhead} commit(s)) at ${w.path}`,
    );
  }
  lines.push(`  team folder: ${summary.teamDir}`);
  if (summary.interrupted || !summary.reportWritten) {
    lines.push(`  resume with: teamwire-example fix --resume ${summary.teamId}`);
  }
  return `${lines.join('\n')}\n`;
}
