import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { hostname } from 'node:os';
import { createEventHub, openTeam, TeamError, type TeamService } from '@teamwire/core';
import { z } from 'zod';
import { REVIEWER_AGENT_TYPE, reviewTeamSetup, TeamSettings } from './app.js';
import type { Command } from './args.js';
import { FIXER_AGENT_TYPE, FixSettings, fixTeamSetup } from './fix-app.js';
import { PgTeamDatabase } from './pg-team.js';
import { FIX_SUMMARY_SUBJECT } from './policy-fix-lead.js';
import { SUMMARY_SUBJECT } from './policy-lead.js';
import { ReviewProgress } from './review-progress.js';
import { reportTool, type TeamSetup } from './team-run.js';
import { startAppTelemetry } from './telemetry.js';
import { printTurns } from './turn-lines.js';
import { WORKER_PROCESS_ID_ENV } from './workers.js';

/*
 * `teamwire-example worker --store <url> --team <teamId>`: a process that runs reviewers of a
 * team kept in PostgreSQL (a review's, or a fix's where the scratch repository is), never its lead. The store's placement gives it the reviewers it runs
 * (and moves them to other workers if it dies); it prints a line per turn (errors on stderr) and
 * exits once the review is done (the report written, every reviewer retired, as the log says) or
 * on SIGTERM / Ctrl-C, after its reviewers ended the turns they were in and were handed to the
 * other processes (`dispose`).
 */

export type WorkerCommand = Extract<Command, { command: 'worker' }>;

export interface WorkerIo {
  /** A line per turn of the reviewers this process runs. */
  stdout: { write(text: string): unknown };
  /** A line per runtime error (a failed turn, a reviewer that could not be revived). */
  stderr: { write(text: string): unknown };
  cwd: string;
  env: NodeJS.ProcessEnv;
  /** Aborted on SIGTERM or Ctrl-C: the worker hands its reviewers back and exits. */
  signal?: AbortSignal;
}

/** How often the worker looks whether the review is done, besides after every record. */
const LOOK_EVERY_MS = 500;

/** What a worker runs of its team's job: the review's reviewers, or the fix's. */
interface WorkerJob {
  /** The one agent type this process runs. */
  agentType: string;
  /** The subject of the lead's summary task: completed once the report is written. */
  summarySubject: string;
  /** What the team is opened with here (the same as in the main process). */
  setup: TeamSetup;
}

/** The job of the team, from the settings it was started with. */
async function workerJob(
  command: WorkerCommand,
  io: WorkerIo,
  db: PgTeamDatabase,
): Promise<WorkerJob> {
  const settings = await db.loadSettings(command.teamId, z.union([FixSettings, TeamSettings]));
  // the lead never runs here: its report tool is never called in a worker
  const report = reportTool(settings.report, () => {});
  if ('job' in settings) {
    const setup = fixTeamSetup(settings, {
      teamId: command.teamId,
      cwd: io.cwd,
      paceMs: command.paceMs,
      report,
    });
    // Without the scratch repository here the team's placement gives this process no reviewer
    // (each needs the repository's capability): it says so and waits for the fix to end.
    if (!(await setup.workspaces.reachable?.())) {
      io.stdout.write(
        `the scratch repository ${settings.repo} is not on this machine: this worker runs no reviewer (they need ${setup.workspaces.capability})\n`,
      );
    }
    return { agentType: FIXER_AGENT_TYPE, summarySubject: FIX_SUMMARY_SUBJECT, setup };
  }
  if (!existsSync(settings.dir)) {
    throw new TeamError(
      'INVALID_ARGUMENT',
      `the directory under review, ${settings.dir}, is not on this machine: a worker needs it at the same path`,
    );
  }
  return {
    agentType: REVIEWER_AGENT_TYPE,
    summarySubject: SUMMARY_SUBJECT,
    setup: reviewTeamSetup(settings, { cwd: io.cwd, paceMs: command.paceMs, report }),
  };
}

export async function runWorker(command: WorkerCommand, io: WorkerIo): Promise<void> {
  const processId =
    io.env[WORKER_PROCESS_ID_ENV] ||
    `worker-${hostname()}-${process.pid}-${randomBytes(3).toString('hex')}`;
  const db = await PgTeamDatabase.open({ url: command.store, env: io.env, processId });
  try {
    const job = await workerJob(command, io, db);
    if (io.signal?.aborted) return;
    const store = await db.openStore(command.teamId, { lead: false, agentTypes: [job.agentType] });
    const hub = createEventHub({ teamId: command.teamId, log: store.log });
    const telemetry = startAppTelemetry(io);
    let team: TeamService | undefined;
    let look = () => {};
    // the lead's member id is the team id
    const progress = new ReviewProgress(command.teamId, job.summarySubject);
    const stopPrinting = printTurns(hub, {
      write: (line) => io.stdout.write(`${line}\n`),
      writeError: (line) => io.stderr.write(`${line}\n`),
      onRecord: (record) => {
        progress.apply(record);
        look();
      },
    });
    try {
      team = await openTeam({
        ...job.setup,
        teamId: command.teamId,
        log: store.log,
        transcripts: store.transcripts,
        events: telemetry.events(hub),
        ...telemetry.teamOptions,
      });
      telemetry.attach(team);
      // what was durable before the hub saw anything (the records it publishes come after)
      await progress.read(store.log);
      const opened = team;
      let failure: unknown;
      await new Promise<void>((resolve) => {
        const timer = setInterval(() => {
          try {
            opened.membership(opened.lead); // throws once the service broke (its store failed)
          } catch (error) {
            failure = error;
            done();
          }
          look();
        }, LOOK_EVERY_MS);
        const done = () => {
          clearInterval(timer);
          io.signal?.removeEventListener('abort', done);
          resolve();
        };
        look = () => {
          if (progress.finished) done();
        };
        io.signal?.addEventListener('abort', done, { once: true });
        if (io.signal?.aborted) done();
        look();
      });
      look = () => {};
      if (failure !== undefined && !io.signal?.aborted) throw failure;
    } finally {
      try {
        await team?.dispose();
      } finally {
        hub.close();
        await telemetry.close();
        await stopPrinting();
        await store.close();
      }
    }
  } finally {
    await db.end();
  }
}
