import { randomBytes } from 'node:crypto';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { hostname } from 'node:os';
import path from 'node:path';
import { type AgentTool, createAgentRegistry, type WorkspaceProvider } from '@teamwire/core';
import { OPERATOR_AGENT } from '@teamwire/dashboard';
import { createGitWorkspaces } from '@teamwire/git-workspaces';
import { z } from 'zod';
import { reviewWebHooks } from './app.js';
import type { Command } from './args.js';
import { APPROVE_EXPIRES_RANGE } from './args.js';
import { CONTEXT_WINDOW_RANGE, contextBudget, withContext } from './context-window.js';
import { type RefusedFolder, refusedLine, terminalApprovals } from './fix-approvals.js';
import { branchWork, ensureScratchRepo, listWorktrees, resolveBase } from './fix-git.js';
import { fixReadTools, fixWriteTools, mergeTool } from './fix-tools.js';
import { PgTeamDatabase } from './pg-team.js';
import { FIX_SUMMARY_SUBJECT } from './policy-fix-lead.js';
import { createPolicyModel } from './policy-model.js';
import {
  type AppIo,
  combineHooks,
  FORMATS,
  type OpenedStore,
  type RunHooks,
  type RunSummary,
  runTeam,
  summaryCounts,
  type TeamLocation,
  teamLocation,
  teamModels,
  teamSettings,
} from './team-run.js';
import { multiProcessHooks } from './workers.js';

export type FixCommand = Extract<Command, { command: 'fix' }>;

/** The settings a fix team was started with, kept in its folder for `fix --resume`. */
export const FixSettings = z.object({
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
  /** `--context-window`, when given with `--model`: the model's window in tokens. */
  contextWindow: z
    .number()
    .int()
    .min(CONTEXT_WINDOW_RANGE.min)
    .max(CONTEXT_WINDOW_RANGE.max)
    .optional(),
  report: z.string(),
  conflictFile: z.string().optional(),
  /** The team's limit of live teammates, when a test set one (else core's default). */
  maxMembers: z.number().int().min(0).optional(),
  /** Started with `--web`: the team has the agent type of the dashboard's `operator` member. */
  web: z.boolean().optional(),
  /** Started with `--approve`: each commit waits for the host's decision (`--approve-expires`). */
  approve: z
    .object({
      expiresInMs: z
        .number()
        .int()
        .min(APPROVE_EXPIRES_RANGE.min)
        .max(APPROVE_EXPIRES_RANGE.max)
        .optional(),
    })
    .optional(),
});
export type FixSettings = z.infer<typeof FixSettings>;
const SETTINGS_FILE = 'example-fix.json';

export const FIX_LEAD_PROMPT = `You lead a team that changes code. The team works in a scratch clone of the repository. Create
one task per top-level package or folder and a summary task blocked by all of them that you own;
spawn one reviewer (agent type fixer) per folder, each in its own git worktree; wait until every
folder is done; merge every reviewer's branch with merge_branch, one at a time; write the report
with write_report (merged branches, commits, files changed, conflicts); complete the summary task
and shut the reviewers down.`;

export const FIX_REVIEWER_PROMPT = `You are a reviewer with a git worktree of your own. Claim the task the lead gave you. Review
your folder with list_files, search_text and read_file, write <folder>/REVIEW.md with your
findings using write_file, commit it with commit_changes, then complete the task. A commit may
need approval: a refused one comes back as an APPROVAL_REJECTED error with the reason; note the
reason in REVIEW.md and commit again, and after three refusals complete the task without the
commit, saying so.`;

/** What the run of a fix team adds to a review's summary: the result branch and the worktrees left. */
export interface FixSummary extends RunSummary {
  repo: string;
  resultBranch: string;
  /** Worktrees of the scratch repository besides its own, after the run. */
  worktrees: { path: string; branch?: string | undefined; commitsAhead: number }[];
  /** `--approve`: the folders whose commit was refused for good (also in `missing`). */
  refused: RefusedFolder[];
}

/**
 * `demo fix`: each reviewer writes and commits its folder's REVIEW.md in a git worktree of its
 * own, and the lead merges their branches into `teamwire-fix/<teamId>`. It all happens in a
 * scratch clone under `<state-dir>/fix/<teamId>/repo`; the user's repository is only read.
 */
export async function runFix(command: FixCommand, io: AppIo): Promise<FixSummary> {
  if (command.store !== undefined) return runFixInPostgres(command, command.store, io);
  const location = teamLocation(command, io);
  const settings = await teamSettings({
    command,
    location,
    file: SETTINGS_FILE,
    schema: FixSettings,
    what: 'fix team',
    explain: false,
    create: () => newFixSettings(command, io, location),
  });
  // a resumed team keeps asking as it was started, unless the command line says otherwise
  const approve = command.approve ?? settings.approve;
  const approvals = approve === undefined ? undefined : terminalApprovals(io);
  return runFixTeam(command, io, location, settings, {
    approve,
    approvals,
    hooks: combineHooks(reviewWebHooks(command, io), approvals),
  });
}

/** The settings of a new fix team: its scratch clone lives under `--state-dir` on this machine. */
async function newFixSettings(
  command: FixCommand,
  io: AppIo,
  location: TeamLocation,
): Promise<FixSettings> {
  const dir = path.resolve(io.cwd, command.dir);
  const { stateDir, teamId } = location;
  return {
    version: 1,
    job: 'fix',
    dir,
    base: await resolveBase(dir),
    repo: path.join(stateDir, 'fix', teamId, 'repo'),
    resultBranch: `teamwire-fix/${teamId}`,
    protocol: command.protocol,
    ...(command.model ? { model: command.model } : {}),
    ...(command.contextWindow === undefined ? {} : { contextWindow: command.contextWindow }),
    report: path.resolve(io.cwd, command.report),
    ...(command.conflictFile ? { conflictFile: command.conflictFile } : {}),
    ...(command.maxMembers === undefined ? {} : { maxMembers: command.maxMembers }),
    ...(command.web ? { web: true } : {}),
    ...(command.approve ? { approve: command.approve } : {}),
  };
}

/**
 * A fix kept in PostgreSQL: its settings in the app's table, the team in the store. With
 * `--workers` this process runs only the lead and starts worker processes for the reviewers; a
 * reviewer runs only on a process that reaches the scratch repository (the placement's
 * capability of its git worktrees), so its worktree is made where the repository is.
 */
async function runFixInPostgres(command: FixCommand, url: string, io: AppIo): Promise<FixSummary> {
  const location = teamLocation(command, io);
  const { teamId } = location;
  const db = await PgTeamDatabase.open({
    url,
    env: io.env,
    processId: `main-${hostname()}-${process.pid}-${randomBytes(3).toString('hex')}`,
  });
  try {
    let settings: FixSettings;
    if (command.resume) {
      settings = await db.loadSettings(teamId, FixSettings);
    } else {
      settings = await newFixSettings(command, io, location);
      await db.saveSettings(teamId, settings);
    }
    const workers = command.workers;
    const store = await db.openStore(teamId, {
      lead: true,
      agentTypes: workers === undefined ? 'all' : [],
    });
    const hooks = combineHooks(
      multiProcessHooks({
        command,
        io,
        db,
        log: store.log,
        teamId,
        url,
        summarySubject: FIX_SUMMARY_SUBJECT,
      }),
      reviewWebHooks(command, io),
    );
    return await runFixTeam(command, io, location, settings, {
      store: db.asRunStore(store, url),
      hooks,
    });
  } finally {
    await db.end();
  }
}

/** Runs a fix team (in a JSONL folder, or in the store given) and sums it up. */
async function runFixTeam(
  command: FixCommand,
  io: AppIo,
  location: TeamLocation,
  settings: FixSettings,
  extra: {
    store?: OpenedStore;
    hooks?: RunHooks | undefined;
    approve?: FixSettings['approve'] | undefined;
    approvals?: ReturnType<typeof terminalApprovals> | undefined;
  },
): Promise<FixSummary> {
  const { teamId } = location;
  const summary = await runTeam({
    command: command.web ? { ...command, plain: true } : command,
    hooks: extra.hooks,
    io,
    location,
    settingsFile: SETTINGS_FILE,
    settings,
    title: `teamwire fix of ${settings.dir} in ${settings.repo}`,
    prompt: command.resume
      ? 'The team was restarted. Check the board and the team, and finish what is left of the fix.'
      : `Write and commit a REVIEW.md in every folder of ${settings.dir} (cloned to ${settings.repo}), one reviewer per folder in its own worktree, merge their branches into ${settings.resultBranch} and write the report.`,
    setup: async (report) => {
      await ensureScratchRepo({
        source: settings.dir,
        repo: settings.repo,
        base: settings.base,
        resultBranch: settings.resultBranch,
      });
      return fixTeamSetup(settings, {
        teamId,
        cwd: io.cwd,
        paceMs: command.paceMs,
        report,
        approve: extra.approve,
        web: command.web !== undefined,
      });
    },
    store: extra.store,
  });
  const { interrupted, reportWritten } = summary;
  const worktrees = interrupted ? [] : await keptWorktrees(settings);
  if (reportWritten && !interrupted) await appendWorktrees(settings.report, worktrees);
  // a folder whose commit was refused for good is work the run did not do
  const refused = interrupted ? [] : (extra.approvals?.refused() ?? []);
  return {
    ...summary,
    missing: [...summary.missing, ...refused.map(refusedLine)],
    refused,
    wallMs: Date.now() - location.started,
    repo: settings.repo,
    resultBranch: settings.resultBranch,
    worktrees,
  };
}

/** What {@link fixTeamSetup} needs besides the settings. */
export interface FixTeamSetupOptions {
  teamId: string;
  /** The directory the lead's display paths are relative to. */
  cwd: string;
  paceMs: number;
  /** The lead's `write_report` tool (never called in a worker, which does not run the lead). */
  report: AgentTool;
  approve?: FixSettings['approve'] | undefined;
  web?: boolean | undefined;
  /** The scratch repository's workspaces; default `createGitWorkspaces` of `settings.repo`. */
  workspaces?: WorkspaceProvider | undefined;
}

/**
 * What a fix team is opened with, the same in every process of it (the main one and its
 * workers): the lead and `fixer` types, one worktree per fixer from the scratch repository, whose
 * provider names the repository's placement capability, so in a team spread over processes a
 * fixer runs only on a process that reaches the repository.
 */
export function fixTeamSetup(settings: FixSettings, options: FixTeamSetupOptions) {
  const format = FORMATS[settings.protocol];
  const models = teamModels(settings.model, () => ({
    lead: createPolicyModel({
      role: 'fix-lead',
      format,
      displayDir: path.relative(options.cwd, settings.dir) || '.',
      memberLimit: settings.maxMembers,
      paceMs: options.paceMs,
    }),
    reviewer: createPolicyModel({
      role: 'fix-reviewer',
      format,
      conflictFile: settings.conflictFile,
      paceMs: options.paceMs,
    }),
  }));
  const { approve, teamId } = options;
  return {
    format,
    agents: createAgentRegistry([
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
          options.report,
        ],
        maxSteps: 1000,
        // offline, the fix team keeps its whole conversation: its policies read it all back
        ...withContext(contextBudget(settings, 'keep')),
      },
      {
        type: FIXER_AGENT_TYPE,
        description: 'Writes and commits one folder’s review notes in its own worktree.',
        systemPrompt: FIX_REVIEWER_PROMPT,
        model: models.reviewer,
        tools: [
          ...fixReadTools(),
          ...fixWriteTools({
            base: settings.base,
            repo: settings.repo,
            approve: approve !== undefined,
          }),
        ],
        ...(approve === undefined
          ? {}
          : {
              approval: {
                approver: 'host',
                ...(approve.expiresInMs === undefined ? {} : { expiresInMs: approve.expiresInMs }),
              },
            }),
        maxSteps: 40,
        isolation: 'worktree' as const,
        ...withContext(contextBudget(settings, 'keep')),
      },
      ...(settings.web === true || options.web === true ? [OPERATOR_AGENT] : []),
    ]),
    lead: { agentType: 'lead', description: 'Leads the fix.' },
    ...(settings.maxMembers === undefined ? {} : { limits: { maxMembers: settings.maxMembers } }),
    // each reviewer claims the task it was spawned for, never another one
    idleClaim: false,
    cwd: settings.repo,
    workspaces:
      options.workspaces ?? createGitWorkspaces({ repoDir: settings.repo, base: settings.base }),
  };
}

/** The agent type of a fix team's reviewers (each in a worktree of its own). */
export const FIXER_AGENT_TYPE = 'fixer';

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
    summary.interrupted
      ? 'Stopped before the fix finished.'
      : summary.missing.length > 0
        ? 'Fix finished with work missing.'
        : 'Fix finished.',
    ...summaryCounts(summary),
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
  if (summary.interrupted || summary.missing.length > 0) {
    lines.push(`  resume with: teamwire-example fix --resume ${summary.teamId}`);
  }
  return `${lines.join('\n')}\n`;
}
