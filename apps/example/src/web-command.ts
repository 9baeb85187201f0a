import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import path from 'node:path';
import type { TeamRecord, TranscriptStore } from '@teamwire/core';
import { type FollowedLog, followTeamLog } from '@teamwire/dashboard';
import { startTeamEdge } from '@teamwire/edge';
import { readTeamLog, readTranscript } from '@teamwire/storage';
import type { Command } from './args.js';
import { PgTeamDatabase } from './pg-team.js';
import { untilAborted } from './team-run.js';

/*
 * `teamwire-example web --team <teamId> [--store <url>]`: a team's dashboard, read-only, from a
 * process that does not run the team: it follows the team log (a JSONL folder another process
 * owns, polled; or PostgreSQL, on its doorbell) and serves the page on 127.0.0.1 until Ctrl-C.
 * The page shows the roster, the task graph and the mail; streamed output and live status stay
 * with the process that runs the members.
 */

export type WebCommand = Extract<Command, { command: 'web' }>;

export interface WebIo {
  stdout: { write(text: string): unknown };
  cwd: string;
  env: NodeJS.ProcessEnv;
  /** Aborted on Ctrl-C: the server stops. */
  signal?: AbortSignal;
  /** The page's URL, once it serves (for tests). */
  onServing?: (url: string) => void;
}

export async function runWeb(command: WebCommand, io: WebIo): Promise<void> {
  if (command.store !== undefined) return webPostgres(command, command.store, io);
  const teamDir = path.join(path.resolve(io.cwd, command.stateDir), 'teams', command.teamId);
  // fails with TEAM_NOT_FOUND before anything is served
  await readTeamLog(teamDir);
  const followed = followTeamLog({
    teamId: command.teamId,
    async *read(fromSeq) {
      const { records } = await readTeamLog(teamDir);
      for (const record of records) if (record.seq >= fromSeq) yield record;
    },
  });
  await serveUntilAborted(command, io, followed, {
    // read without the lock the running team holds
    load: ({ memberId }) => readTranscript(teamDir, memberId),
  });
}

async function webPostgres(command: WebCommand, url: string, io: WebIo): Promise<void> {
  const processId = `web-${hostname()}-${process.pid}-${randomBytes(3).toString('hex')}`;
  const db = await PgTeamDatabase.open({ url, env: io.env, processId });
  try {
    // joins no placement: it only reads the log and listens for its doorbell
    const store = await db.openStore(command.teamId, { lead: false, agentTypes: [] });
    try {
      const followed = followTeamLog({
        teamId: command.teamId,
        read: (fromSeq): AsyncIterable<TeamRecord> => store.log.read({ fromSeq }),
        onAppended: (listener) => store.log.shared?.onAppended(listener) ?? (() => {}),
      });
      await serveUntilAborted(command, io, followed, store.transcripts);
    } finally {
      await store.close();
    }
  } finally {
    await db.end();
  }
}

async function serveUntilAborted(
  command: WebCommand,
  io: WebIo,
  followed: FollowedLog,
  transcripts?: Pick<TranscriptStore, 'load'>,
) {
  try {
    await followed.ready;
    const server = await startTeamEdge({
      log: followed.log,
      hub: followed.hub,
      port: command.port,
      ...(transcripts === undefined ? {} : { dashboard: { transcripts } }),
    });
    io.stdout.write(
      `web: the dashboard of team ${command.teamId} (read-only) is at ${server.url} (Ctrl-C to stop)\n`,
    );
    io.onServing?.(server.url);
    if (io.signal !== undefined) await untilAborted(io.signal);
    await server.close();
  } finally {
    followed.close();
  }
}
