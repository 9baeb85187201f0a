import { mkdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import {
  type AgentDefinition,
  type AgentTool,
  createAgentRegistry,
  createEventHub,
  defineTool,
  type ModelAdapter,
  openTeam,
  TeamError,
  type TeamService,
  ulidIdSource,
  type WireFormat,
} from '@teamwire/core';
import { createModel } from '@teamwire/host-adapters';
import { jsonFormat, toolCallFormat, xmlFormat } from '@teamwire/protocol';
import { openJsonlTeamStore } from '@teamwire/storage';
import { z } from 'zod';
import type { Command } from './args.js';
import { plainLine } from './board.js';
import {
  ListFilesInput,
  listFiles,
  ReadFileInput,
  readTextFile,
  SearchTextInput,
  searchText,
} from './file-tools.js';
import { observeTeam } from './observe.js';
import { createPolicyModel } from './policy-model.js';
import { openReviewRoot, type ReviewRoot } from './workspace-files.js';

export type ReviewCommand = Extract<Command, { command: 'review' }>;

/** Where the app writes and what it knows of the terminal. */
export interface AppIo {
  stdout: { write(text: string): unknown; isTTY?: boolean; columns?: number; rows?: number };
  stderr: { write(text: string): unknown };
  /** Base for relative paths (the directory the user ran the command in). */
  cwd: string;
  env: NodeJS.ProcessEnv;
  /** Aborted on Ctrl-C: the team is stopped cleanly and can be resumed. */
  signal?: AbortSignal;
}

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

/** The wire format of each `--protocol` choice (the team runs core's default policy). */
export const FORMATS: Record<TeamSettings['protocol'], WireFormat> = {
  xml: xmlFormat,
  json: jsonFormat,
  'tool-call': toolCallFormat,
};

export const LEAD_SYSTEM_PROMPT = `You lead a code-review team. Split the directory under review into one review task per
top-level package or folder, plus a summary task blocked by all of them that you own. Spawn the
reviewers, let them claim the review tasks, wait for their findings, then write the report with
write_report (per folder: files, lines, largest files, TODO/FIXME counts, exported symbols, the
reviewers' notes), complete the summary task and shut every reviewer down.`;

export const REVIEWER_SYSTEM_PROMPT = `You are a code reviewer on a team. Claim one ready review task at a time. For its folder,
use list_files, search_text and read_file (paths are relative to the directory under review),
send your findings to the lead with send_message, then complete the task.`;

export interface RunSummary {
  teamId: string;
  teamDir: string;
  reportPath: string;
  reportWritten: boolean;
  turns: number;
  messages: number;
  tasks: { done: number; total: number };
  inputTokens: number;
  outputTokens: number;
  wallMs: number;
  interrupted: boolean;
}

function fileTools(root: ReviewRoot): AgentTool[] {
  return [
    defineTool({
      name: 'list_files',
      description:
        'List the files below a folder of the directory under review, with sizes and line counts.',
      inputSchema: ListFilesInput,
      execute: (input) => listFiles(root, input),
    }),
    defineTool({
      name: 'read_file',
      description: 'Read lines of a text file of the directory under review.',
      inputSchema: ReadFileInput,
      execute: (input) => readTextFile(root, input),
    }),
    defineTool({
      name: 'search_text',
      description:
        'Search the files below a folder for lines matching a regular expression; returns matches and the exact total.',
      inputSchema: SearchTextInput,
      execute: (input) => searchText(root, input),
    }),
  ] as AgentTool[];
}

export function reportTool(reportPath: string, onWrite: () => void): AgentTool {
  return defineTool({
    name: 'write_report',
    description: 'Write the team report (Markdown). Overwrites an earlier report.',
    inputSchema: z.object({ markdown: z.string().min(1).max(1_000_000) }),
    async execute(input) {
      await mkdir(path.dirname(reportPath), { recursive: true });
      await writeFile(reportPath, input.markdown);
      onWrite();
      return { path: reportPath, bytes: Buffer.byteLength(input.markdown) };
    },
  }) as AgentTool;
}

async function loadSettings(teamDir: string): Promise<TeamSettings | undefined> {
  let raw: string;
  try {
    raw = await readFile(path.join(teamDir, SETTINGS_FILE), 'utf8');
  } catch {
    return undefined;
  }
  const parsed = TeamSettings.safeParse(JSON.parse(raw));
  if (!parsed.success) {
    throw new TeamError(
      'INVALID_RECORD',
      `${SETTINGS_FILE} in ${teamDir} is not valid: ${parsed.error.message}`,
    );
  }
  return parsed.data;
}

/** Reviews a directory with a team, showing the board while it runs. */
export async function runReview(command: ReviewCommand, io: AppIo): Promise<RunSummary> {
  const started = Date.now();
  const stateDir = path.resolve(io.cwd, command.stateDir);
  const teamId = command.resume ?? ulidIdSource().next();
  const teamDir = path.join(stateDir, 'teams', teamId);

  let settings: TeamSettings;
  if (command.resume) {
    const stored = await loadSettings(teamDir);
    if (!stored) {
      throw new TeamError(
        'TEAM_NOT_FOUND',
        `no team ${teamId} under ${path.join(stateDir, 'teams')}`,
      );
    }
    settings = stored;
  } else {
    settings = {
      version: 1,
      dir: path.resolve(io.cwd, command.dir),
      teammates: command.teammates,
      protocol: command.protocol,
      ...(command.model ? { model: command.model } : {}),
      report: path.resolve(io.cwd, command.report),
    };
  }
  const root = openReviewRoot(settings.dir);
  const format = FORMATS[settings.protocol];

  let reportWritten = false;
  const models: { lead: ModelAdapter; reviewer: ModelAdapter } = settings.model
    ? { lead: createModel(settings.model), reviewer: createModel(settings.model) }
    : {
        lead: createPolicyModel({
          role: 'lead',
          format,
          teammates: settings.teammates,
          displayDir: path.relative(io.cwd, root.dir) || '.',
          paceMs: command.paceMs,
        }),
        reviewer: createPolicyModel({ role: 'reviewer', format, paceMs: command.paceMs }),
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

  const definitions: AgentDefinition[] = [
    {
      type: 'lead',
      description: 'Plans the review, collects findings, writes the report.',
      systemPrompt: LEAD_SYSTEM_PROMPT,
      model: models.lead,
      tools: [...fileTools(root), reportTool(settings.report, () => (reportWritten = true))],
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
  ];

  const hub = createEventHub({ teamId, log: store.log });
  const title = `teamwire review of ${root.dir} — team ${teamId}${settings.model ? '' : ' (offline policy model, not an LLM)'}`;
  const observer = observeTeam({ hub, io, plain: command.plain, title, started });
  const { board } = observer;
  const tty = io.stdout.isTTY === true && !command.plain;
  if (!tty) {
    io.stdout.write(
      `${plainLine(Date.now(), `${command.resume ? 'resuming' : 'starting'} ${title}`)}\n`,
    );
  }

  let team: TeamService | undefined;
  let interrupted = false;
  try {
    team = await openTeam({
      teamId,
      log: store.log,
      transcripts: store.transcripts,
      format,
      agents: createAgentRegistry(definitions),
      lead: { agentType: 'lead', description: 'Leads the review.' },
      events: hub,
      idleClaim: { intervalMs: 1000 },
    });
    const onAbort = () => {
      interrupted = true;
      void team?.dispose();
    };
    io.signal?.addEventListener('abort', onAbort, { once: true });
    const prompt = command.resume
      ? 'The team was restarted. Check the board and the team, and finish what is left of the review.'
      : `Review the codebase in ${root.dir} with ${settings.teammates} reviewer(s), and write the report.`;
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
  };
}

export function formatSummary(summary: RunSummary): string {
  const lines = [
    summary.interrupted ? 'Stopped before the review finished.' : 'Review finished.',
    `  turns ${summary.turns}, messages ${summary.messages}, tasks ${summary.tasks.done}/${summary.tasks.total} completed`,
    `  tokens ${summary.inputTokens} in / ${summary.outputTokens} out, wall time ${(summary.wallMs / 1000).toFixed(1)}s`,
    `  report: ${summary.reportWritten ? summary.reportPath : '(not written)'}`,
    `  team folder: ${summary.teamDir}`,
  ];
  if (summary.interrupted || !summary.reportWritten) {
    lines.push(`  resume with: teamwire-example --resume ${summary.teamId}`);
  }
  return `${lines.join('\n')}\n`;
}
