import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { hostname } from 'node:os';
import path from 'node:path';
import { TeamError } from '@teamwire/core';
import {
  DEFAULT_SCHEMA,
  openPostgresTeamStore,
  type PlacementRuns,
  type PostgresTeamStore,
} from '@teamwire/postgres';
import { LOG_FILE, listTeams, SEGMENTS_DIR } from '@teamwire/storage';
import { type OptionSpec, type ParsedValues, stringOption, usageError } from './args.js';

/*
 * Where a team is kept: a JSONL folder (`--dir`, @teamwire/storage) or PostgreSQL (`--store`,
 * @teamwire/postgres). Paths are resolved against the caller's working directory, never against
 * where this package is installed.
 */

/** The options every command that reads a team takes. */
export const SOURCE_OPTIONS = {
  dir: { type: 'string' },
  store: { type: 'string' },
  schema: { type: 'string' },
  team: { type: 'string' },
} as const satisfies OptionSpec;

/** The help lines of {@link SOURCE_OPTIONS}. */
export const SOURCE_HELP = `  --dir <path>          the team's JSONL state: a state folder (holding teams/<id>), a
                        folder of teams (holding <id>), or the team folder itself
  --store <url>         the team is kept in PostgreSQL: postgres://[user[:password]@]host[:port]/db
  --schema <name>       the store's SQL schema (with --store; default ${DEFAULT_SCHEMA})
  --team <id>           the team (with --dir pointing at a team folder, its name by default)`;

/** A team kept in a JSONL folder. */
export interface JsonlSource {
  kind: 'jsonl';
  teamId: string;
  /** The team folder, absolute. */
  teamDir: string;
}

/** A team kept in PostgreSQL. */
export interface PostgresSource {
  kind: 'postgres';
  teamId: string;
  url: string;
  schema: string;
}

/** Where a command finds its team. */
export type TeamSource = JsonlSource | PostgresSource;

/** A folder that holds a team log of @teamwire/storage (its first segment or its segments). */
function holdsLog(dir: string): boolean {
  return existsSync(path.join(dir, LOG_FILE)) || existsSync(path.join(dir, SEGMENTS_DIR));
}

/** Reads `--dir` / `--store` / `--schema` / `--team`; usage errors for a wrong combination. */
export async function teamSource(values: ParsedValues, cwd: string): Promise<TeamSource> {
  const dir = stringOption(values, 'dir');
  const store = stringOption(values, 'store');
  const schema = stringOption(values, 'schema');
  const team = stringOption(values, 'team');
  if (dir !== undefined && store !== undefined) {
    throw usageError('give --dir (a JSONL folder) or --store (PostgreSQL), not both');
  }
  if (dir === undefined && store === undefined) {
    throw usageError('--dir <state folder> or --store postgres://… is required');
  }
  if (team === '') throw usageError('--team needs a team id');
  if (store !== undefined) {
    if (!/^postgres(ql)?:\/\//.test(store)) {
      throw usageError('--store must be a postgres:// or postgresql:// URL');
    }
    if (team === undefined) throw usageError('--team is required with --store');
    return { kind: 'postgres', teamId: team, url: store, schema: schema ?? DEFAULT_SCHEMA };
  }
  if (schema !== undefined) throw usageError('--schema goes with --store');
  if (dir === '') throw usageError('--dir needs a path');
  const root = path.resolve(cwd, dir as string);
  if (team === undefined) {
    if (holdsLog(root)) return { kind: 'jsonl', teamId: path.basename(root), teamDir: root };
    const found = await knownTeams(root);
    throw usageError(
      `--team is required: ${root} is not a team folder${found ? ` (teams there: ${found})` : ''}`,
    );
  }
  if (team.includes('/') || team.includes('\\') || team === '.' || team === '..') {
    throw usageError('--team must be a team id, not a path');
  }
  for (const candidate of [path.join(root, 'teams', team), path.join(root, team)]) {
    if (holdsLog(candidate)) return { kind: 'jsonl', teamId: team, teamDir: candidate };
  }
  if (holdsLog(root) && path.basename(root) === team) {
    return { kind: 'jsonl', teamId: team, teamDir: root };
  }
  const found = await knownTeams(root);
  throw new TeamError(
    'TEAM_NOT_FOUND',
    `no team ${team} in ${root} (looked for ${path.join('teams', team)}, ${team} and the folder itself)${found ? `; teams there: ${found}` : ''}`,
    { details: { dir: root, teamId: team } },
  );
}

/** The team ids under a state folder or a folder of teams, for a hint (at most ten). */
async function knownTeams(root: string): Promise<string> {
  const ids: string[] = [];
  for (const under of [path.join(root, 'teams'), root]) {
    try {
      for (const listing of await listTeams(under)) ids.push(listing.teamId);
    } catch {
      // only a hint
    }
  }
  const shown = ids.slice(0, 10).join(', ');
  return ids.length > 10 ? `${shown}, …` : shown;
}

/** A PostgreSQL URL without its password, for messages. */
export function redactUrl(url: string): string {
  try {
    const parsed = new URL(url);
    if (parsed.password !== '') parsed.password = '***';
    return parsed.toString();
  } catch {
    return 'the --store URL';
  }
}

/** A process id for the store's rows and heartbeat: `<role>-<host>-<pid>-<random>`. */
export function processIdFor(role: string): string {
  return `${role}-${hostname()}-${process.pid}-${randomBytes(3).toString('hex')}`.slice(0, 200);
}

/**
 * Opens a team kept in PostgreSQL; `TEAM_NOT_FOUND` (the store closed again) when its log is
 * empty, so a mistyped id never starts a new team.
 */
export async function openPostgresTeam(
  source: PostgresSource,
  options: { runs: PlacementRuns; processId: string },
): Promise<PostgresTeamStore> {
  const store = await openPostgresTeamStore({
    teamId: source.teamId,
    connectionString: source.url,
    schema: source.schema,
    runs: options.runs,
    processId: options.processId,
  });
  if (store.log.lastSeq() === 0) {
    await store.close();
    throw new TeamError(
      'TEAM_NOT_FOUND',
      `no team ${source.teamId} in ${redactUrl(source.url)} (schema ${source.schema})`,
      { details: { teamId: source.teamId } },
    );
  }
  return store;
}
