import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import path from 'node:path';
import { type AgentTool, createAgentRegistry, TeamError } from '@teamwire/core';
import { OPERATOR_AGENT } from '@teamwire/dashboard';
import { z } from 'zod';
import type { ReviewCommand } from './args.js';
import { CONTEXT_WINDOW_RANGE, contextBudget, withContext } from './context-window.js';
import { readTools } from './file-tools.js';
import { CODING_AGENT, MCP_SECRET_ENV, mcpSecret } from './mcp-serve.js';
import { PgTeamDatabase } from './pg-team.js';
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
  type TeamSetup,
  teamLocation,
  teamModels,
  teamSettings,
} from './team-run.js';
import { serveHooks } from './web-serve.js';
import { multiProcessHooks } from './workers.js';
import { openReviewRoot, type ReviewRoot } from './workspace-files.js';

export type { ReviewCommand } from './args.js';
export type { AppIo, RunSummary } from './team-run.js';
export { FORMATS, reportTool } from './team-run.js';

/** The settings a team was started with, kept in its folder so `--resume` continues the same review. */
export const TeamSettings = z.object({
  version: z.literal(1),
  dir: z.string(),
  teammates: z.number().int().min(1).max(8),
  protocol: z.enum(['xml', 'json', 'tool-call']),
  model: z.string().optional(),
  /** `--context-window`, when given: the model's window in tokens (else its default). */
  contextWindow: z
    .number()
    .int()
    .min(CONTEXT_WINDOW_RANGE.min)
    .max(CONTEXT_WINDOW_RANGE.max)
    .optional(),
  report: z.string(),
  /** Started with `--mcp`: the team has the external agent type of the `coder` member. */
  mcp: z.boolean().optional(),
  /** Started with `--web`: the team has the agent type of the dashboard's `operator` member. */
  web: z.boolean().optional(),
});
export type TeamSettings = z.infer<typeof TeamSettings>;
const SETTINGS_FILE = 'example-app.json';

export const LEAD_SYSTEM_PROMPT = `You lead a code-review team. Split the directory under review into one review task per
top-level package or folder, plus a summary task blocked by all of them that you own. Spawn the
reviewers, let them claim the review tasks, wait for their findings, then write the report with
write_report (per folder: files, lines, largest files, TODO/FIXME counts, exported symbols, the
reviewers' notes), complete the summary task and shut every reviewer down.`;

export const REVIEWER_SYSTEM_PROMPT = `You are a code reviewer on a team. Claim one ready review task at a time. For its folder,
use list_files, search_text and read_file (paths are relative to the directory under review),
send your findings to the lead with send_message, then complete the task.`;

function fileTools(root: ReviewRoot): AgentTool[] {
  return readTools(() => root, 'the directory under review');
}

/** The agent type of the reviewers: what a worker process offers to run. */
export const REVIEWER_AGENT_TYPE = 'reviewer';

/** The settings of a new team, from the command line. */
function newSettings(command: ReviewCommand, io: AppIo): TeamSettings {
  return {
    version: 1,
    dir: path.resolve(io.cwd, command.dir),
    teammates: command.teammates,
    protocol: command.protocol,
    ...(command.model ? { model: command.model } : {}),
    ...(command.contextWindow === undefined ? {} : { contextWindow: command.contextWindow }),
    report: path.resolve(io.cwd, command.report),
    ...(command.mcp ? { mcp: true } : {}),
    ...(command.web ? { web: true } : {}),
  };
}

/**
 * The agents of a review team, the same in every process that runs a part of it: the lead (with
 * the report tool) and the reviewers, on the `--model` LLM or the offline policy, each with its
 * context budget (see context-window.ts).
 */
export function reviewTeamSetup(
  settings: TeamSettings,
  options: { cwd: string; paceMs: number; report: AgentTool; root?: ReviewRoot; web?: boolean },
): TeamSetup {
  const root = options.root ?? openReviewRoot(settings.dir);
  const format = FORMATS[settings.protocol];
  const models = teamModels(settings.model, () => ({
    lead: createPolicyModel({
      role: 'lead',
      format,
      teammates: settings.teammates,
      displayDir: path.relative(options.cwd, root.dir) || '.',
      paceMs: options.paceMs,
    }),
    reviewer: createPolicyModel({ role: 'reviewer', format, paceMs: options.paceMs }),
  }));
  return {
    format,
    agents: createAgentRegistry([
      {
        type: 'lead',
        description: 'Plans the review, collects findings, writes the report.',
        systemPrompt: LEAD_SYSTEM_PROMPT,
        model: models.lead,
        tools: [...fileTools(root), options.report],
        maxSteps: 1000,
        ...withContext(contextBudget(settings, 'keep')),
      },
      {
        type: REVIEWER_AGENT_TYPE,
        description: 'Reviews one folder at a time.',
        systemPrompt: REVIEWER_SYSTEM_PROMPT,
        model: models.reviewer,
        tools: fileTools(root),
        maxSteps: 40,
        ...withContext(contextBudget(settings, 'summarise')),
      },
      ...(settings.mcp === true ? [CODING_AGENT] : []),
      ...(settings.web === true || options.web === true ? [OPERATOR_AGENT] : []),
    ]),
    lead: { agentType: 'lead', description: 'Leads the review.' },
    idleClaim: { intervalMs: 1000 },
  };
}

/** Reviews a directory with a team, showing the board while it runs. */
export async function runReview(given: ReviewCommand, io: AppIo): Promise<RunSummary> {
  // the client configuration --mcp prints and the --web URL must stay on screen: plain lines
  const command = given.mcp || given.web ? { ...given, plain: true } : given;
  if (command.store !== undefined) return runReviewInPostgres(command, command.store, io);
  const location = teamLocation(command, io);
  const settings = await teamSettings({
    command,
    location,
    file: SETTINGS_FILE,
    schema: TeamSettings,
    what: 'team',
    explain: true,
    create: () => newSettings(command, io),
  });
  return runReviewTeam(command, io, location, settings, {
    hooks: reviewServeHooks(command, io, settings, location.teamDir),
  });
}

/** The `--web` hooks of a run (none without `--web`). */
export function reviewWebHooks(command: { web?: { port: number } | undefined }, io: AppIo) {
  if (command.web === undefined) return undefined;
  return serveHooks({
    web: command.web,
    say: (line) => io.stdout.write(`${line}\n`),
    signal: io.signal,
  });
}

/**
 * The hooks of a review's `--web` and `--mcp`: one edge on one port serves both (none without
 * either; `--mcp` is refused for a team started without it).
 */
function reviewServeHooks(
  command: ReviewCommand,
  io: AppIo,
  settings: TeamSettings,
  teamDir: string | undefined,
) {
  if (command.mcp !== undefined && settings.mcp !== true) {
    throw new TeamError(
      'INVALID_ARGUMENT',
      'this team was started without --mcp: it has no member for an MCP client',
    );
  }
  if (command.mcp === undefined && command.web === undefined) return undefined;
  return serveHooks({
    web: command.web,
    mcp:
      command.mcp === undefined
        ? undefined
        : { port: command.mcp.port, secret: () => mcpSecret({ env: io.env, teamDir }) },
    say: (line) => io.stdout.write(`${line}\n`),
    signal: io.signal,
  });
}

/**
 * A review kept in PostgreSQL: its settings in the app's table, the team in the store. With
 * `--workers` this process runs only the lead and starts worker processes for the reviewers.
 */
async function runReviewInPostgres(
  command: ReviewCommand,
  url: string,
  io: AppIo,
): Promise<RunSummary> {
  const location = teamLocation(command, io);
  const { teamId } = location;
  const db = await PgTeamDatabase.open({
    url,
    env: io.env,
    processId: `main-${hostname()}-${process.pid}-${randomBytes(3).toString('hex')}`,
  });
  try {
    let settings: TeamSettings;
    if (command.resume) {
      settings = await db.loadSettings(teamId, TeamSettings);
      openReviewRoot(settings.dir); // refused before the store is opened
    } else {
      settings = newSettings(command, io);
      openReviewRoot(settings.dir); // refused before anything is kept
      await db.saveSettings(teamId, settings);
    }
    const workers = command.workers;
    const store = await db.openStore(teamId, {
      lead: true,
      agentTypes: workers === undefined ? 'all' : [],
    });
    if (command.mcp !== undefined && io.env[MCP_SECRET_ENV] === undefined) {
      io.stdout.write(
        `MCP: tokens are signed with a new secret each run; set ${MCP_SECRET_ENV} to keep them across --resume\n`,
      );
    }
    const hooks = combineHooks(
      multiProcessHooks({ command, io, db, log: store.log, teamId, url }),
      reviewServeHooks(command, io, settings, undefined),
    );
    return await runReviewTeam(command, io, location, settings, {
      store: db.asRunStore(store, url),
      hooks,
    });
  } finally {
    await db.end();
  }
}

function runReviewTeam(
  command: ReviewCommand,
  io: AppIo,
  location: TeamLocation,
  settings: TeamSettings,
  extra: { store?: OpenedStore; hooks?: RunHooks | undefined },
): Promise<RunSummary> {
  const root = openReviewRoot(settings.dir);
  return runTeam({
    command,
    io,
    location,
    settingsFile: SETTINGS_FILE,
    settings,
    title: `teamwire review of ${root.dir}`,
    prompt: command.resume
      ? 'The team was restarted. Check the board and the team, and finish what is left of the review.'
      : `Review the codebase in ${root.dir} with ${settings.teammates} reviewer(s), and write the report.`,
    setup: async (report) => ({
      ...reviewTeamSetup(settings, {
        cwd: io.cwd,
        paceMs: command.paceMs,
        report,
        root,
        web: command.web !== undefined,
      }),
      // in a team spread over processes, this one serves the MCP member and the dashboard's
      // operator (their clients connect here)
      ...(command.mcp === undefined
        ? command.web === undefined
          ? {}
          : { externalMembers: { serve: ['operator'] } }
        : { externalMembers: { serve: true } }),
    }),
    store: extra.store,
    hooks: extra.hooks,
  });
}

export function formatSummary(summary: RunSummary): string {
  const lines = [
    summary.interrupted
      ? 'Stopped before the review finished.'
      : summary.missing.length > 0
        ? 'Review finished with work missing.'
        : 'Review finished.',
    ...(summary.problem ? [`  why: ${summary.problem}`] : []),
    ...summaryCounts(summary),
    summary.store ? `  team: ${summary.teamDir}` : `  team folder: ${summary.teamDir}`,
  ];
  if (summary.interrupted || summary.missing.length > 0) {
    const store = summary.store ? ` --store ${summary.store}` : '';
    lines.push(`  resume with: teamwire-example --resume ${summary.teamId}${store}`);
  }
  return `${lines.join('\n')}\n`;
}
