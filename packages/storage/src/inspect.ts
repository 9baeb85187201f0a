import { basename, join, resolve } from 'node:path';
import type { TeamRecord } from '@teamwire/core';
import { TeamError } from '@teamwire/core';
import type { StorageFileHandle, StorageFs } from './fs-seam.js';
import { errnoCode, ioError, nodeFs } from './fs-seam.js';
import { scanJsonl } from './jsonl-lines.js';
import { checkLogLine } from './jsonl-team-log.js';
import type { LockOwner } from './lock.js';
import { readLockOwner } from './lock.js';
import { DEFAULT_TEAMS_ROOT, LOG_FILE } from './team-store.js';

/** A team folder found under a root. */
export interface TeamListing {
  /** The folder's name, which is the team id the store opens it under. */
  teamId: string;
  /** The team folder, as an absolute path. */
  dir: string;
  /** Size of `log.jsonl` in bytes. */
  logBytes: number;
  /** The owner named by the folder's lock file, if one is present (it may be stale). */
  owner?: LockOwner;
}

/**
 * Lists the team folders under `root` (default `.teamwire/teams`): every sub-folder holding a
 * `log.jsonl`, sorted by team id. A missing root is an empty list. Nothing is locked or changed.
 */
export async function listTeams(
  root: string = DEFAULT_TEAMS_ROOT,
  options: { fs?: StorageFs } = {},
): Promise<TeamListing[]> {
  const fs = options.fs ?? nodeFs;
  const absolute = resolve(root);
  let names: string[];
  try {
    names = await fs.readdir(absolute);
  } catch (error) {
    const code = errnoCode(error);
    if (code === 'ENOENT' || code === 'ENOTDIR') return [];
    throw ioError('listing', absolute, error);
  }
  const teams: TeamListing[] = [];
  for (const name of [...names].sort()) {
    if (name.startsWith('.')) continue;
    const dir = join(absolute, name);
    let logBytes: number;
    try {
      const stat = await fs.stat(join(dir, LOG_FILE));
      if (!stat.isFile()) continue;
      logBytes = stat.size;
    } catch (error) {
      const code = errnoCode(error);
      if (code === 'ENOENT' || code === 'ENOTDIR') continue;
      throw ioError('reading', join(dir, LOG_FILE), error);
    }
    const owner = await readLockOwner(fs, dir);
    teams.push({ teamId: name, dir, logBytes, ...(owner ? { owner } : {}) });
  }
  return teams;
}

/** A read-only look at a team log. */
export interface TeamLogSnapshot {
  /** From the records; the folder name when the log is empty. */
  teamId: string;
  /** The absolute path of the `log.jsonl` that was read. */
  path: string;
  /** Every whole record of the log, validated, in seq order. */
  records: TeamRecord[];
  /** Bytes of a torn final line that the owner's next open will cut away (left in place here). */
  tornBytes: number;
}

/**
 * Reads and validates a team's `log.jsonl` without taking the lock or repairing anything, for
 * inspection tools; safe while the owner is running (a half-written final line shows up as
 * `tornBytes`). Fails like opening does: `CORRUPT_LOG` or `UNSUPPORTED_SCHEMA_VERSION` naming the
 * line, `TEAM_NOT_FOUND` when there is no log.
 */
export async function readTeamLog(
  dir: string,
  options: { fs?: StorageFs } = {},
): Promise<TeamLogSnapshot> {
  const fs = options.fs ?? nodeFs;
  const path = join(resolve(dir), LOG_FILE);
  let handle: StorageFileHandle;
  try {
    handle = await fs.open(path, 'r');
  } catch (error) {
    if (errnoCode(error) === 'ENOENT') {
      throw new TeamError('TEAM_NOT_FOUND', `no team log at ${path}`, { details: { path } });
    }
    throw ioError('opening', path, error);
  }
  const records: TeamRecord[] = [];
  let teamId: string | undefined;
  try {
    const outcome = await scanJsonl(handle, path, (value, line) => {
      const record = checkLogLine(value, line, teamId);
      teamId ??= record.teamId;
      records.push(record);
    });
    return {
      teamId: teamId ?? basename(resolve(dir)),
      path,
      records,
      tornBytes: outcome.tornBytes,
    };
  } finally {
    await handle.close().catch(() => undefined);
  }
}
