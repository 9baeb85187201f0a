import { randomBytes } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { hostname } from 'node:os';
import path from 'node:path';
import { openTeam, TeamError, type TeamLog, type TranscriptStore } from '@teamwire/core';
import { serveStdio } from '@teamwire/mcp';
import { openJsonlTeamStore } from '@teamwire/storage';
import { reviewTeamSetup, TeamSettings } from './app.js';
import type { Command } from './args.js';
import { PgTeamDatabase } from './pg-team.js';
import { reportTool } from './team-run.js';

/*
 * `teamwire-example mcp --team <teamId> [--member coder] [--store <url>]`: serves one member of a
 * review team over MCP stdio, for a client that starts the server itself (Claude Code's
 * `claude mcp add <name> -- teamwire-example mcp ...`, Cursor's `command`). The member is fixed by
 * this command line. A JSONL team must not be running elsewhere (this process opens its folder
 * and runs its lead and reviewers too); a team kept in PostgreSQL is joined as one more process
 * that serves only this member. Nothing but MCP is written to stdout.
 */

export type McpCommand = Extract<Command, { command: 'mcp' }>;

export interface McpIo {
  stderr: { write(text: string): unknown };
  cwd: string;
  env: NodeJS.ProcessEnv;
}

/** Serves until the client closes stdin. */
export async function runMcp(command: McpCommand, io: McpIo): Promise<void> {
  if (command.store !== undefined) return servePostgres(command, command.store, io);
  const teamDir = path.join(path.resolve(io.cwd, command.stateDir), 'teams', command.teamId);
  let raw: string;
  try {
    raw = await readFile(path.join(teamDir, 'example-app.json'), 'utf8');
  } catch {
    throw new TeamError('TEAM_NOT_FOUND', `no review team ${command.teamId} in ${teamDir}`);
  }
  const settings = TeamSettings.parse(JSON.parse(raw));
  const store = await openJsonlTeamStore({ teamId: command.teamId, dir: teamDir, create: false });
  try {
    await serve(command, io, settings, store.log, store.transcripts, false);
  } finally {
    await store.close();
  }
}

async function servePostgres(command: McpCommand, url: string, io: McpIo): Promise<void> {
  const processId = `mcp-${hostname()}-${process.pid}-${randomBytes(3).toString('hex')}`;
  const db = await PgTeamDatabase.open({ url, env: io.env, processId });
  try {
    const settings = await db.loadSettings(command.teamId, TeamSettings);
    const store = await db.openStore(command.teamId, { lead: false, agentTypes: [] });
    try {
      await serve(command, io, settings, store.log, store.transcripts, true);
    } finally {
      await store.close();
    }
  } finally {
    await db.end();
  }
}

async function serve(
  command: McpCommand,
  io: McpIo,
  settings: TeamSettings,
  log: TeamLog,
  transcripts: TranscriptStore,
  shared: boolean,
): Promise<void> {
  if (settings.mcp !== true) {
    throw new TeamError(
      'INVALID_ARGUMENT',
      `team ${command.teamId} was started without --mcp: it has no member for an MCP client`,
    );
  }
  const team = await openTeam({
    ...reviewTeamSetup(settings, {
      cwd: io.cwd,
      paceMs: 0,
      report: reportTool(settings.report, () => {}),
    }),
    teamId: command.teamId,
    log,
    transcripts,
    ...(shared ? { externalMembers: { serve: [command.member] } } : {}),
  });
  try {
    const serving = await serveStdio({ team, member: command.member, cwd: settings.dir });
    io.stderr.write(
      `teamwire-example: serving ${command.member} of team ${command.teamId} over stdio\n`,
    );
    await serving.closed;
  } finally {
    await team.dispose();
  }
}
