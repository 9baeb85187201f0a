import path from 'node:path';
import { type AgentTool, createAgentRegistry } from '@teamwire/core';
import { z } from 'zod';
import type { Command } from './args.js';
import { readTools } from './file-tools.js';
import { createPolicyModel } from './policy-model.js';
import {
  type AppIo,
  FORMATS,
  type RunSummary,
  runTeam,
  summaryCounts,
  teamLocation,
  teamModels,
  teamSettings,
} from './team-run.js';
import { openReviewRoot, type ReviewRoot } from './workspace-files.js';

export type { AppIo, RunSummary } from './team-run.js';
export { FORMATS, reportTool } from './team-run.js';

export type ReviewCommand = Extract<Command, { command: 'review' }>;

/** The settings a team was started with, kept in its folder so `--resume` continues the same review. */
const TeamSettings = z.object({
  version: z.literal(1),
  dir: z.string(),
  teammates: z.number().int().min(1).max(8),
  protocol: z.enum(['xml', 'json', 'tool-call']),
  model: z.string().optional(),
  report: z.string(),
});
type TeamSettings = z.infer<typeof TeamSettings>;
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

/** Reviews a directory with a team, showing the board while it runs. */
export async function runReview(command: ReviewCommand, io: AppIo): Promise<RunSummary> {
  const location = teamLocation(command, io);
  const settings = await teamSettings({
    command,
    location,
    file: SETTINGS_FILE,
    schema: TeamSettings,
    what: 'team',
    explain: true,
    create: (): TeamSettings => ({
      version: 1,
      dir: path.resolve(io.cwd, command.dir),
      teammates: command.teammates,
      protocol: command.protocol,
      ...(command.model ? { model: command.model } : {}),
      report: path.resolve(io.cwd, command.report),
    }),
  });
  const root = openReviewRoot(settings.dir);
  const format = FORMATS[settings.protocol];
  const models = teamModels(settings.model, () => ({
    lead: createPolicyModel({
      role: 'lead',
      format,
      teammates: settings.teammates,
      displayDir: path.relative(io.cwd, root.dir) || '.',
      paceMs: command.paceMs,
    }),
    reviewer: createPolicyModel({ role: 'reviewer', format, paceMs: command.paceMs }),
  }));
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
      format,
      agents: createAgentRegistry([
        {
          type: 'lead',
          description: 'Plans the review, collects findings, writes the report.',
          systemPrompt: LEAD_SYSTEM_PROMPT,
          model: models.lead,
          tools: [...fileTools(root), report],
          maxSteps: 1000,
        },
        {
          type: 'reviewer',
          description: 'Reviews one folder at a time.',
          systemPrompt: REVIEWER_SYSTEM_PROMPT,
          model: models.reviewer,
          tools: fileTools(root),
          maxSteps: 40,
        },
      ]),
      lead: { agentType: 'lead', description: 'Leads the review.' },
      idleClaim: { intervalMs: 1000 },
    }),
  });
}

export function formatSummary(summary: RunSummary): string {
  const lines = [
    summary.interrupted ? 'Stopped before the review finished.' : 'Review finished.',
    ...summaryCounts(summary),
    `  team folder: ${summary.teamDir}`,
  ];
  if (summary.interrupted || !summary.reportWritten) {
    lines.push(`  resume with: teamwire-example --resume ${summary.teamId}`);
  }
  return `${lines.join('\n')}\n`;
}
