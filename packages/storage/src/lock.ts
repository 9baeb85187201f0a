import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import { join } from 'node:path';
import type { Clock } from '@teamwire/core';
import { TeamError } from '@teamwire/core';
import { z } from 'zod';
import type { StorageFs } from './fs-seam.js';
import { errnoCode, ioError, syncDirectory, writeFully } from './fs-seam.js';

/** Name of the owner lock file inside a team folder. */
export const LOCK_FILE = 'owner.lock';

/** The content of `owner.lock`: who owns the team folder, and since when. */
export const LockFile = z.object({
  pid: z.number().int().positive(),
  host: z.string(),
  /** Milliseconds since the Unix epoch. */
  acquiredAt: z.number(),
  /** Random per acquisition, so a release never removes someone else's lock. */
  token: z.string().min(1),
});
export type LockFile = z.infer<typeof LockFile>;

/** The owner of a team folder, as reported in `TEAM_LOCKED` and after a stale-lock takeover. */
export interface LockOwner {
  pid: number;
  host: string;
  acquiredAt: number;
}

/**
 * Who this process is and whether another process is alive. The default reads the real process;
 * tests substitute one to stand in for a second process or a dead owner.
 */
export interface ProcessProbe {
  pid: number;
  hostname: string;
  /** True when a process with this pid runs on this host (signal 0 probe). */
  isAlive(pid: number): boolean;
}

/** This process, probed with `process.kill(pid, 0)`. */
export const currentProcess: ProcessProbe = {
  pid: process.pid,
  hostname: hostname(),
  isAlive(pid) {
    try {
      process.kill(pid, 0);
      return true;
    } catch (error) {
      // EPERM: the process exists but belongs to another user.
      return errnoCode(error) === 'EPERM';
    }
  },
};

/** A held lock; `release` removes the file only while it is still this holder's. */
export interface OwnerLock {
  owner: LockOwner;
  /** Set when a lock left by a dead process on this host was taken over. */
  takenOverFrom?: LockOwner;
  release(): Promise<void>;
}

type LockState =
  | { kind: 'missing' }
  | { kind: 'unreadable'; reason: string }
  | { kind: 'held'; file: LockFile };

async function readLock(fs: StorageFs, path: string): Promise<LockState> {
  let text: string;
  try {
    text = Buffer.from(await fs.readFile(path)).toString('utf8');
  } catch (error) {
    if (errnoCode(error) === 'ENOENT') return { kind: 'missing' };
    throw ioError('reading', path, error);
  }
  try {
    const parsed = LockFile.safeParse(JSON.parse(text));
    if (parsed.success) return { kind: 'held', file: parsed.data };
    return { kind: 'unreadable', reason: 'unexpected content' };
  } catch {
    return { kind: 'unreadable', reason: 'not JSON' };
  }
}

function ownerOf(file: LockFile): LockOwner {
  return { pid: file.pid, host: file.host, acquiredAt: file.acquiredAt };
}

function lockedError(dir: string, lockPath: string, owner: LockOwner, probe: ProcessProbe) {
  const self = owner.host === probe.hostname && owner.pid === probe.pid;
  const since = new Date(owner.acquiredAt).toISOString();
  return new TeamError(
    'TEAM_LOCKED',
    `team folder ${dir} is owned by pid ${owner.pid} on host ${owner.host} since ${since}` +
      (self
        ? ' (this process: close the store it already opened first)'
        : `; stop that process first, or delete ${lockPath} if it is certainly not running`),
    { details: { dir, lockPath, owner } },
  );
}

const LINK_UNSUPPORTED = new Set(['EPERM', 'ENOTSUP', 'EOPNOTSUPP', 'ENOSYS', 'EINVAL']);

/**
 * Takes the single-owner lock of a team folder. The lock content is written to a private file
 * first and then hard-linked into place, so `owner.lock` never exists half-written even if the
 * process is killed mid-way. A lock whose pid is dead on this host is taken over; any other lock
 * is refused with `TEAM_LOCKED` naming its owner.
 */
export async function acquireOwnerLock(options: {
  fs: StorageFs;
  dir: string;
  probe: ProcessProbe;
  clock: Clock;
  sync: boolean;
}): Promise<OwnerLock> {
  const { fs, dir, probe, clock, sync } = options;
  const lockPath = join(dir, LOCK_FILE);
  const file: LockFile = {
    pid: probe.pid,
    host: probe.hostname,
    acquiredAt: clock.now(),
    token: randomUUID(),
  };
  let takenOverFrom: LockOwner | undefined;
  for (let attempt = 0; attempt < 5; attempt++) {
    if (await tryCreate(fs, dir, lockPath, file, sync)) {
      if (sync) await syncDirectory(fs, dir);
      return {
        owner: ownerOf(file),
        ...(takenOverFrom ? { takenOverFrom } : {}),
        release: () => releaseLock(fs, lockPath, file.token),
      };
    }
    const state = await readLock(fs, lockPath);
    if (state.kind === 'missing') continue;
    if (state.kind === 'unreadable') {
      throw new TeamError(
        'TEAM_LOCKED',
        `team folder ${dir} has an unreadable lock file ${lockPath} (${state.reason}); delete it if no process uses the team`,
        { details: { dir, lockPath } },
      );
    }
    const owner = ownerOf(state.file);
    if (owner.host !== probe.hostname || probe.isAlive(owner.pid)) {
      throw lockedError(dir, lockPath, owner, probe);
    }
    // Stale: move it aside atomically, then make sure the file moved is the stale one we judged
    // (another process may have replaced it in between), and try again.
    const aside = join(dir, `.${LOCK_FILE}.stale-${probe.pid}-${file.token}`);
    try {
      await fs.rename(lockPath, aside);
    } catch (error) {
      if (errnoCode(error) === 'ENOENT') continue;
      throw ioError('moving stale lock', lockPath, error);
    }
    const moved = await readLock(fs, aside);
    if (moved.kind === 'held' && moved.file.token !== state.file.token) {
      await fs.link(aside, lockPath).catch(() => undefined);
      await fs.unlink(aside).catch(() => undefined);
      throw lockedError(dir, lockPath, ownerOf(moved.file), probe);
    }
    await fs.unlink(aside).catch(() => undefined);
    takenOverFrom = owner;
  }
  throw new TeamError(
    'TEAM_LOCKED',
    `team folder ${dir}: the lock ${lockPath} kept changing while opening; another process is opening the team`,
    { details: { dir, lockPath } },
  );
}

async function tryCreate(
  fs: StorageFs,
  dir: string,
  lockPath: string,
  file: LockFile,
  sync: boolean,
): Promise<boolean> {
  const content = Buffer.from(`${JSON.stringify(file)}\n`, 'utf8');
  const temp = join(dir, `.${LOCK_FILE}.${file.pid}-${file.token}.tmp`);
  try {
    const handle = await fs.open(temp, 'wx');
    try {
      await writeFully(handle, content, 0);
      if (sync) await handle.sync();
    } finally {
      await handle.close();
    }
  } catch (error) {
    throw ioError('writing lock', temp, error);
  }
  try {
    await fs.link(temp, lockPath);
    return true;
  } catch (error) {
    const code = errnoCode(error);
    if (code === 'EEXIST') return false;
    if (code && LINK_UNSUPPORTED.has(code)) return createDirectly(fs, lockPath, content, sync);
    throw ioError('creating lock', lockPath, error);
  } finally {
    await fs.unlink(temp).catch(() => undefined);
  }
}

/** For file systems without hard links: exclusive create, then write. */
async function createDirectly(
  fs: StorageFs,
  lockPath: string,
  content: Buffer,
  sync: boolean,
): Promise<boolean> {
  let handle: Awaited<ReturnType<StorageFs['open']>>;
  try {
    handle = await fs.open(lockPath, 'wx');
  } catch (error) {
    if (errnoCode(error) === 'EEXIST') return false;
    throw ioError('creating lock', lockPath, error);
  }
  try {
    await writeFully(handle, content, 0);
    if (sync) await handle.sync();
  } catch (error) {
    throw ioError('writing lock', lockPath, error);
  } finally {
    await handle.close();
  }
  return true;
}

async function releaseLock(fs: StorageFs, lockPath: string, token: string): Promise<void> {
  const state = await readLock(fs, lockPath);
  if (state.kind !== 'held' || state.file.token !== token) return;
  try {
    await fs.unlink(lockPath);
  } catch (error) {
    if (errnoCode(error) !== 'ENOENT') throw ioError('removing lock', lockPath, error);
  }
}

/** Reads the owner recorded in a team folder's lock file, if there is a readable one. */
export async function readLockOwner(fs: StorageFs, dir: string): Promise<LockOwner | undefined> {
  const state = await readLock(fs, join(dir, LOCK_FILE));
  return state.kind === 'held' ? ownerOf(state.file) : undefined;
}
