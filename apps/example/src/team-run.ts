import { mkdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import {
  type AgentEvent,
  type AgentTool,
  createEventHub,
  defineTool,
  type EventHub,
  type ModelAdapter,
  openTeam,
  TeamError,
  type TeamLog,
  type TeamService,
  type TranscriptStore,
  type TurnOutcome,
  ulidIdSource,
  type WireFormat,
} from '@teamwire/core';
import { createModel } from '@teamwire/host-adapters';
import { jsonFormat, toolCallFormat, xmlFormat } from '@teamwire/protocol';
import { openJsonlTeamStore } from '@teamwire/storage';
import { z } from 'zod';
import type { AppIo } from './app-io.js';
import type { Command } from './args.js';
import { type CompactionStat, formatTokens, plainLine } from './board.js';
import { observeTeam, type TeamObserver } from './observe.js';
import { missingLines, missingWork, type OpenTask, openTasksOf } from './run-summary.js';
import { startAppTelemetry } from './telemetry.js';

export type { AppIo } from './app-io.js';

/*
 * How the review and the fix job set up and run a team: where it lives, the settings it was
 * started with (kept for `--resume`), its models and store, the board while it runs, the summary.
 */

export interface RunSummary {
  teamId: string;
  /** Where the team is kept: its folder, or `PostgreSQL host:port/db (schema s)`. */
  teamDir: string;
  /** The `--store` URL of a team kept in PostgreSQL (password masked), for the resume hint. */
  store?: string | undefined;
  /** Why the run stopped short, when it was not Ctrl-C (e.g. every worker exited). */
  problem?: string | undefined;
  reportPath: string;
  reportWritten: boolean;
  /**
   * The work the run did not do, one line each (open tasks of the final board, a report not
   * written): empty when it did all of it, and after Ctrl-C (the team can be resumed).
   */
  missing: string[];
  turns: number;
  messages: number;
  tasks: { done: number; total: number };
  inputTokens: number;
  outputTokens: number;
  /** Every compaction of a member's context this run saw, in order. */
  compactions: CompactionStat[];
  wallMs: number;
  interrupted: boolean;
}

/** What the review and the fix command have in common. */
type TeamCommand = Extract<Command, { command: 'review' | 'fix' }>;

/** The settings every job keeps in its team folder. */
interface BaseSettings {
  protocol: TeamCommand['protocol'];
  model?: string | undefined;
  report: string;
}

/** The wire format of each `--protocol` choice (the team runs core's default policy). */
export const FORMATS: Record<TeamCommand['protocol'], WireFormat> = {
  xml: xmlFormat,
  json: jsonFormat,
  'tool-call': toolCallFormat,
};

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

/** A team's id and folder: a new one, or the one `--resume` names. */
export interface TeamLocation {
  started: number;
  stateDir: string;
  teamId: string;
  teamDir: string;
}

export function teamLocation(command: TeamCommand, io: AppIo): TeamLocation {
  const started = Date.now();
  const stateDir = path.resolve(io.cwd, command.stateDir);
  const teamId = command.resume ?? ulidIdSource().next();
  return { started, stateDir, teamId, teamDir: path.join(stateDir, 'teams', teamId) };
}

/**
 * The settings of the team: read back from its folder on `--resume` (a team without them is not
 * found), else made by `create`.
 */
export async function teamSettings<S>(options: {
  command: TeamCommand;
  location: TeamLocation;
  file: string;
  schema: z.ZodType<S>;
  /** What the job calls a team, in the error when none is found. */
  what: string;
  /** Whether an invalid file's error says what is wrong with it. */
  explain: boolean;
  create: () => S | Promise<S>;
}): Promise<S> {
  const { location, file } = options;
  if (!options.command.resume) return options.create();
  let raw: string;
  try {
    raw = await readFile(path.join(location.teamDir, file), 'utf8');
  } catch {
    throw new TeamError(
      'TEAM_NOT_FOUND',
      `no ${options.what} ${location.teamId} under ${path.join(location.stateDir, 'teams')}`,
    );
  }
  const parsed = options.schema.safeParse(JSON.parse(raw));
  if (!parsed.success) {
    const why = options.explain ? `: ${parsed.error.message}` : '';
    throw new TeamError('INVALID_RECORD', `${file} in ${location.teamDir} is not valid${why}`);
  }
  return parsed.data;
}

/** The lead's and the reviewers' models: the `--model` LLM for both, else the offline policy. */
export function teamModels(
  model: string | undefined,
  offline: () => { lead: ModelAdapter; reviewer: ModelAdapter },
): { lead: ModelAdapter; reviewer: ModelAdapter } {
  return model ? { lead: createModel(model), reviewer: createModel(model) } : offline();
}

/** What a job gives `openTeam` besides the team's id, store and hub. */
export type TeamSetup = Omit<
  Parameters<typeof openTeam>[0],
  'teamId' | 'log' | 'transcripts' | 'events'
>;

/** A team's log and transcripts opened by the job itself (PostgreSQL), not the JSONL folder. */
export interface OpenedStore {
  log: TeamLog;
  transcripts: TranscriptStore;
  /** Where the team is kept, for the summary. */
  where: string;
  /** The `--store` URL, password masked, for the resume hint. */
  url?: string | undefined;
  /**
   * How long to wait for the lead when another process still holds it: one that was killed holds
   * it until its lease runs out. 0: never wait.
   */
  leadWaitMs: number;
  close(): Promise<void>;
}

/** What a job adds to a run of its team: worker processes, `--chaos`. */
export interface RunHooks {
  /** Every event the hub delivers (also the ones the board shows). */
  onEvent?(agent: string, event: AgentEvent): void;
  /**
   * After the team opened, before the lead is prompted. `stop(problem)` ends the run early as
   * Ctrl-C does (the team can be resumed), with `problem` in the summary.
   */
  started?(run: {
    team: TeamService;
    observer: TeamObserver;
    /** The hub the board reads, for other observers (a web dashboard). */
    hub: EventHub;
    /** The team's log. */
    log: TeamLog;
    /** The members' transcripts (where a dashboard reads each member's turns and tokens). */
    transcripts: TranscriptStore;
    stop(problem: string): void;
  }): Promise<void> | void;
  /** Once the lead is idle (not after Ctrl-C): e.g. wait for members in other processes. */
  settle?(team: TeamService): Promise<void>;
  /**
   * After `settle`: keeps the team open for members served from here (e.g. MCP clients) until
   * Ctrl-C, which then ends the run as finished, not interrupted.
   */
  serveAfter?(team: TeamService): Promise<void>;
  /** Always, after the team is disposed, before the board closes: e.g. stop worker processes. */
  stopped?(): Promise<void>;
}

/**
 * Runs a team until it is idle or Ctrl-C stops it, showing the board: opens its store (writing
 * the settings of a new team), opens the team with what `setup` gives (handed the lead's report
 * tool), prompts the lead, and sums the run up.
 */
export async function runTeam<S extends BaseSettings>(options: {
  command: TeamCommand;
  io: AppIo;
  location: TeamLocation;
  settingsFile: string;
  settings: S;
  /** The board's title, before the team id. */
  title: string;
  prompt: string;
  setup: (reportTool: AgentTool) => Promise<TeamSetup>;
  /** The team's store when the job opened it (PostgreSQL); default the JSONL folder. */
  store?: OpenedStore | undefined;
  hooks?: RunHooks | undefined;
}): Promise<RunSummary> {
  const { command, io, location, settings, hooks } = options;
  const { started, teamId } = location;
  let store: Omit<OpenedStore, 'leadWaitMs'> & { leadWaitMs?: number };
  if (options.store) {
    store = options.store;
  } else {
    const jsonl = await openJsonlTeamStore({
      teamId,
      dir: location.teamDir,
      durability: command.durability,
      create: !command.resume,
      // A review is a few dozen records: snapshot often enough that its folder shows them
      // (`teamwire verify` checks each against a full fold).
      snapshots: { everyRecords: 20 },
    });
    store = {
      log: jsonl.log,
      transcripts: jsonl.transcripts,
      where: location.teamDir,
      close: () => jsonl.close(),
    };
    if (!command.resume) {
      await writeFile(
        path.join(location.teamDir, options.settingsFile),
        `${JSON.stringify(settings, null, 2)}\n`,
      );
    }
  }

  let reportWritten = false;
  let team: TeamService | undefined;
  let interrupted = false;
  let serving = false;
  let problem: string | undefined;
  let openTasks: OpenTask[] = [];
  let unreadBoard: string | undefined;
  const hub = createEventHub({ teamId, log: store.log });
  const telemetry = startAppTelemetry(io);
  const title = `${options.title} — team ${teamId}${settings.model ? '' : ' (offline policy model, not an LLM)'}`;
  const observer = observeTeam({
    hub,
    io,
    plain: command.plain,
    title,
    started,
    onEvent: hooks?.onEvent,
  });
  if (io.stdout.isTTY !== true || command.plain) {
    io.stdout.write(
      `${plainLine(Date.now(), `${command.resume ? 'resuming' : 'starting'} ${title}`)}\n`,
    );
  }
  try {
    const setup = await options.setup(reportTool(settings.report, () => (reportWritten = true)));
    team = await openTeam({
      ...setup,
      teamId,
      log: store.log,
      transcripts: store.transcripts,
      events: telemetry.events(hub),
      ...telemetry.teamOptions,
    });
    telemetry.attach(team);
    const onAbort = () => {
      if (!serving) interrupted = true;
      void team?.dispose();
    };
    io.signal?.addEventListener('abort', onAbort, { once: true });
    const opened = team;
    if (!interrupted) {
      await hooks?.started?.({
        team: opened,
        observer,
        hub,
        log: store.log,
        transcripts: store.transcripts,
        stop: (why) => {
          problem ??= why;
          onAbort();
        },
      });
    }
    if (!interrupted) {
      await promptWhenPlaced(
        opened,
        options.prompt,
        store.leadWaitMs ?? 0,
        () => interrupted,
      ).catch((error: unknown) => {
        if (!interrupted) throw error;
      });
    }
    if (!interrupted) await untilTeamRests(team, () => interrupted, io.signal);
    if (!interrupted) await hooks?.settle?.(team);
    if (!interrupted && hooks?.serveAfter !== undefined) {
      serving = true;
      await hooks.serveAfter(team);
    }
    io.signal?.removeEventListener('abort', onAbort);
  } finally {
    try {
      await team?.dispose();
      await hooks?.stopped?.();
      if (team !== undefined && !interrupted) {
        openTasks = await openTasksOf(store.log, teamId).catch((error: unknown) => {
          unreadBoard = `the team's final board could not be read: ${String(error)}`;
          return [];
        });
      }
    } finally {
      hub.close();
      await telemetry.close();
      await observer.close();
      await store.close();
    }
  }
  try {
    await readFile(settings.report);
    reportWritten = true;
  } catch {
    // not written (yet)
  }
  const { board } = observer;
  const missing = interrupted
    ? []
    : [
        ...missingWork({ openTasks, reportWritten, reportPath: settings.report }),
        ...(unreadBoard === undefined ? [] : [unreadBoard]),
      ];
  return {
    teamId,
    teamDir: store.where,
    store: store.url,
    problem,
    reportPath: settings.report,
    reportWritten,
    missing,
    turns: board.turns,
    messages: board.messages,
    tasks: board.progress(),
    inputTokens: board.inputTokens,
    outputTokens: board.outputTokens,
    compactions: [...board.compactions],
    wallMs: Date.now() - started,
    interrupted,
  };
}

/**
 * Waits until the team rests: this process's runners are idle and no member elsewhere works, has
 * mail that wakes it or waits for a process. The lead's prompt may end early (an operator
 * interrupted it before it owned a task): its teammates in other processes go on, and their mail
 * wakes the lead here, so the run must stay open until the team, not this process, is done.
 */
async function untilTeamRests(
  team: TeamService,
  stopped: () => boolean,
  signal: AbortSignal | undefined,
): Promise<void> {
  for (;;) {
    await team.idle();
    if (stopped() || !team.progress(team.lead).progressing) return;
    await team
      .waitForChange(team.lead, {
        timeoutMs: 60_000,
        untilNoProgress: true,
        ...(signal === undefined ? {} : { signal }),
      })
      .catch((error: unknown) => {
        if (!stopped() && !TeamError.hasCode(error, 'ABORTED')) throw error;
      });
  }
}

/**
 * Prompts the lead. In a team spread over processes the lead may still be held by a process that
 * was killed (until its lease runs out): the prompt is tried again until `waitMs` have passed.
 */
async function promptWhenPlaced(
  team: TeamService,
  prompt: string,
  waitMs: number,
  stopped: () => boolean,
): Promise<TurnOutcome> {
  const deadline = Date.now() + waitMs;
  for (;;) {
    try {
      return await team.promptLead(prompt);
    } catch (error) {
      const notHere = TeamError.isInstance(error) && error.code === 'NOT_PLACED_HERE';
      if (!notHere || stopped()) throw error;
      if (Date.now() >= deadline) {
        throw new TeamError(
          'NOT_PLACED_HERE',
          `the lead of team ${team.teamId} runs in another process that is still alive (another run of this team?); stop it, or resume once it has ended`,
          { cause: error },
        );
      }
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/**
 * The lines every job's summary starts with: what the team did and what it cost, then the work
 * it did not do.
 */
export function summaryCounts(summary: RunSummary): string[] {
  return [
    `  turns ${summary.turns}, messages ${summary.messages}, tasks ${summary.tasks.done}/${summary.tasks.total} completed`,
    `  tokens ${summary.inputTokens} in / ${summary.outputTokens} out, wall time ${(summary.wallMs / 1000).toFixed(1)}s`,
    ...compactionLines(summary.compactions),
    `  report: ${summary.reportWritten ? summary.reportPath : '(not written)'}`,
    ...missingLines(summary),
  ];
}

/** How many compactions of one member the summary lists one by one; the rest are summed up. */
const LISTED_COMPACTIONS = 6;

/**
 * The summary's compactions, per member: how many, the tokens before → after of each (the last
 * few when there are many) and in all, and the time the summaries took.
 */
export function compactionLines(compactions: readonly CompactionStat[]): string[] {
  if (compactions.length === 0) return ['  context compactions: none'];
  const members = new Map<string, CompactionStat[]>();
  for (const c of compactions) members.set(c.member, [...(members.get(c.member) ?? []), c]);
  const lines = [`  context compactions: ${compactions.length}`];
  const width = Math.max(...[...members.keys()].map((m) => m.length));
  for (const [member, list] of members) {
    const shown = list.slice(-LISTED_COMPACTIONS);
    const each = shown.map((c) => `${formatTokens(c.tokensBefore)}→${formatTokens(c.tokensAfter)}`);
    if (list.length > shown.length) each.unshift(`… ${list.length - shown.length} earlier`);
    const before = list.reduce((n, c) => n + c.tokensBefore, 0);
    const after = list.reduce((n, c) => n + c.tokensAfter, 0);
    const ms = list.reduce((n, c) => n + c.durationMs, 0);
    const overflows = list.filter((c) => c.reason === 'overflow').length;
    const estimated = list.some((c) => c.estimated) ? ', some estimated' : '';
    lines.push(
      `    ${member.padEnd(width)}  ${list.length}×  ${each.join(', ')} tokens` +
        (list.length > 1 ? ` (${formatTokens(before)}→${formatTokens(after)} in all)` : '') +
        `, ${ms} ms${overflows > 0 ? `, ${overflows} after an overflow` : ''}${estimated}`,
    );
  }
  return lines;
}

/** Resolves when `signal` aborts (at once when it has already). */
export function untilAborted(signal: AbortSignal): Promise<void> {
  if (signal.aborted) return Promise.resolve();
  return new Promise<void>((resolve) =>
    signal.addEventListener('abort', () => resolve(), { once: true }),
  );
}

/** The hooks of several add-ons of a run, each called in turn (`undefined` ones are skipped). */
export function combineHooks(...all: (RunHooks | undefined)[]): RunHooks | undefined {
  const hooks = all.filter((h): h is RunHooks => h !== undefined);
  if (hooks.length <= 1) return hooks[0];
  return {
    onEvent(agent, event) {
      for (const h of hooks) h.onEvent?.(agent, event);
    },
    async started(run) {
      for (const h of hooks) await h.started?.(run);
    },
    async settle(team) {
      for (const h of hooks) await h.settle?.(team);
    },
    async serveAfter(team) {
      for (const h of hooks) await h.serveAfter?.(team);
    },
    async stopped() {
      // every add-on stops, even when one fails; the first failure is raised after
      let failure: unknown;
      for (const h of hooks) {
        try {
          await h.stopped?.();
        } catch (error) {
          failure ??= error;
        }
      }
      if (failure !== undefined) throw failure;
    },
  };
}
