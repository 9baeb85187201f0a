import { randomUUID } from 'node:crypto';
import { basename, join } from 'node:path';
import type { BackoffPolicy, Clock } from '@teamwire/core';
import { backoffDelay, TeamError } from '@teamwire/core';
import { z } from 'zod';
import type { StorageFs } from './fs-seam.js';
import { errnoCode, ioError, syncDirectory, writeFully } from './fs-seam.js';
import type { ProcessIdentity } from './process-identity.js';
import { currentIdentity, isProcessAlive } from './process-identity.js';

/** Name of the owner lock file inside a team folder. */
export const LOCK_FILE = 'owner.lock';

/** The version of the lock file's format written by this code. */
export const LOCK_FORMAT_VERSION = 1;

/**
 * The content of `owner.lock` (and of the claim files used to break a stale one): who holds it,
 * and since when. A lock without `version` was written before versioning, by pid alone.
 */
export const LockFile = z.strictObject({
  /** {@link LOCK_FORMAT_VERSION}; absent in locks written before the format was versioned. */
  version: z.literal(LOCK_FORMAT_VERSION).optional(),
  /** The holder's process id, meaningful only on `host`. */
  pid: z.number().int().positive(),
  /** The holder's host name; liveness is checked only for holders on this host. */
  host: z.string(),
  /** Linux: start time of the holder in clock ticks after boot; with `pid`, one process. */
  startTime: z.number().int().nonnegative().optional(),
  /** Linux: the boot the holder ran in. */
  bootId: z.string().max(64).optional(),
  /** Milliseconds since the Unix epoch. */
  acquiredAt: z.number(),
  /** Random per acquisition, so a release never removes someone else's lock. */
  token: z.string().min(1).max(64),
});
export type LockFile = z.infer<typeof LockFile>;

/** The owner of a team folder, as reported in `TEAM_LOCKED` and after a stale-lock takeover. */
export interface LockOwner extends ProcessIdentity {
  /** When the lock was taken, in milliseconds since the Unix epoch. */
  acquiredAt: number;
}

/**
 * Who this process is and whether the holder of a lock still runs. The default reads the real
 * process (`/proc` on Linux); tests substitute one to stand in for a second process or a dead
 * owner.
 */
export interface ProcessProbe {
  /** This process, as recorded in the locks it takes. */
  readonly self: ProcessIdentity;
  /** True when the process named by `owner` still runs (called only for owners on this host). */
  isAlive(owner: ProcessIdentity): boolean;
}

/**
 * This process. A zombie, a recycled pid (another start time) and a lock from an earlier boot are
 * all dead; see `isProcessAlive`.
 */
export const currentProcess: ProcessProbe = {
  get self() {
    self ??= currentIdentity();
    return self;
  },
  isAlive(owner) {
    return isProcessAlive(owner, this.self);
  },
};
let self: ProcessIdentity | undefined;

/** A held lock; `release` removes the file only while it is still this holder's. */
export interface OwnerLock {
  owner: LockOwner;
  /** Set when a lock left by a dead process on this host was taken over. */
  takenOverFrom?: LockOwner;
  /** Resolves when `owner.lock` still holds this lock; `TEAM_LOCKED` otherwise. */
  verify(): Promise<void>;
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
  const owner: LockOwner = { pid: file.pid, host: file.host, acquiredAt: file.acquiredAt };
  if (file.startTime !== undefined) owner.startTime = file.startTime;
  if (file.bootId !== undefined) owner.bootId = file.bootId;
  return owner;
}

/** The lock names this very process (not an earlier one that had its pid). */
function isSelf(owner: ProcessIdentity, probe: ProcessProbe): boolean {
  const me = probe.self;
  const differs = <K extends 'startTime' | 'bootId'>(key: K) =>
    owner[key] !== undefined && me[key] !== undefined && owner[key] !== me[key];
  return (
    owner.host === me.host && owner.pid === me.pid && !differs('startTime') && !differs('bootId')
  );
}

/** A holder this process can prove dead: same host, and the probe says it no longer runs. */
function isDead(owner: ProcessIdentity, probe: ProcessProbe): boolean {
  return owner.host === probe.self.host && !isSelf(owner, probe) && !probe.isAlive(owner);
}

function lockedError(dir: string, lockPath: string, owner: LockOwner, probe: ProcessProbe) {
  const since = new Date(owner.acquiredAt).toISOString();
  return new TeamError(
    'TEAM_LOCKED',
    `team folder ${dir} is owned by pid ${owner.pid} on host ${owner.host} since ${since}` +
      (isSelf(owner, probe)
        ? ' (this process: close the store it already opened first)'
        : `; stop that process first, or delete ${lockPath} if it is certainly not running`),
    { details: { dir, lockPath, owner } },
  );
}

function busyError(dir: string, lockPath: string) {
  return new TeamError(
    'TEAM_LOCKED',
    `team folder ${dir}: the lock ${lockPath} kept changing while opening; another process is opening the team`,
    { details: { dir, lockPath } },
  );
}

const LINK_UNSUPPORTED = new Set(['EPERM', 'ENOTSUP', 'EOPNOTSUPP', 'ENOSYS', 'EINVAL']);
/** How long an opener waits, by default, for another that is breaking the same stale lock. */
export const DEFAULT_LOCK_WAIT_MS = 2_000;
/** Nested claims: a claim whose holder died while breaking a lock is itself broken by a claim. */
const MAX_CLAIM_DEPTH = 4;

interface LockContext {
  fs: StorageFs;
  dir: string;
  probe: ProcessProbe;
  clock: Clock;
  sync: boolean;
  /** See `DEFAULT_LOCK_WAIT_MS`. */
  waitMs?: number | undefined;
}

/**
 * Takes the single-owner lock of a team folder.
 *
 * A lock is created whole or not at all: its content is written to a private file that is then
 * hard-linked into place. A lock whose holder is dead on this host (exited, a zombie, or its pid
 * now names another process) is stale and is broken, but only by the one process that holds the
 * **claim** on that stale lock: an exclusive file named by the stale lock's token. Under the
 * claim, the breaker reads the lock again and removes it only if it is still the stale one; since
 * no one else can remove that lock while the claim is held, no step ever removes a lock other
 * than the stale one it judged. Then it competes for the free lock like anyone else.
 */
export async function acquireOwnerLock(options: LockContext): Promise<OwnerLock> {
  const { fs, dir, probe, clock, sync } = options;
  const lockPath = join(dir, LOCK_FILE);
  const file = newLockFile(probe, clock);
  let takenOverFrom: LockOwner | undefined;
  const waitUntil = performance.now() + (options.waitMs ?? DEFAULT_LOCK_WAIT_MS);
  for (let attempt = 0; ; attempt++) {
    // A few rounds always run, so a lock broken a moment ago is still competed for.
    if (attempt >= 4 && performance.now() >= waitUntil) throw busyError(dir, lockPath);
    if (await tryCreate(fs, dir, lockPath, file, sync)) {
      if (sync) await syncDirectory(fs, dir);
      const lock: OwnerLock = {
        owner: ownerOf(file),
        verify: () => verifyLock(options, lockPath, file.token),
        release: () => releaseLock(fs, lockPath, file.token),
      };
      if (takenOverFrom) lock.takenOverFrom = takenOverFrom;
      await sweepDeadLeftovers(options, file).catch(() => undefined);
      return lock;
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
    if (!isDead(owner, probe)) throw lockedError(dir, lockPath, owner, probe);
    const outcome = await breakStale(options, lockPath, state.file.token, file, 0);
    if (outcome === 'removed') takenOverFrom = owner;
    // Another process is breaking it right now; give it a moment to finish.
    else if (outcome === 'busy') await pause(attempt);
  }
}

function newLockFile(probe: ProcessProbe, clock: Clock): LockFile {
  const me = probe.self;
  const file: LockFile = {
    version: LOCK_FORMAT_VERSION,
    pid: me.pid,
    host: me.host,
    acquiredAt: clock.now(),
    token: randomUUID(),
  };
  if (me.startTime !== undefined) file.startTime = me.startTime;
  if (me.bootId !== undefined) file.bootId = me.bootId;
  return file;
}

/** The claim on breaking the lock at `path` whose token is `token`. */
function claimPath(path: string, token: string): string {
  const name = basename(path);
  const base = name.startsWith('.') ? name : `.${name}`;
  return join(path, '..', `${base}.break-${token}`);
}

/**
 * Removes the lock at `path` if it still holds `staleToken`, under the exclusive claim on that
 * token. `busy`: a live process holds the claim. `changed`: the lock is no longer the stale one
 * (someone broke it first), or a dead claim was cleared; either way the caller looks again.
 */
async function breakStale(
  ctx: LockContext,
  path: string,
  staleToken: string,
  holder: LockFile,
  depth: number,
): Promise<'removed' | 'busy' | 'changed'> {
  if (depth >= MAX_CLAIM_DEPTH) return 'busy';
  const { fs, dir, probe, sync } = ctx;
  const claim = claimPath(path, staleToken);
  const claimFile: LockFile = { ...holder, token: randomUUID() };
  if (!(await tryCreate(fs, dir, claim, claimFile, sync))) {
    const state = await readLock(fs, claim);
    if (state.kind === 'missing') return 'changed';
    // Claims are linked into place whole, so an unreadable one was not written by this code.
    if (state.kind === 'unreadable' || !isDead(ownerOf(state.file), probe)) return 'busy';
    // The claimant died mid-break: break its claim the same way, then look again.
    const cleared = await breakStale(ctx, claim, state.file.token, holder, depth + 1);
    return cleared === 'busy' ? 'busy' : 'changed';
  }
  try {
    const state = await readLock(fs, path);
    if (state.kind !== 'held' || state.file.token !== staleToken) return 'changed';
    try {
      await fs.unlink(path);
    } catch (error) {
      if (errnoCode(error) !== 'ENOENT') throw ioError('removing stale lock', path, error);
    }
    return 'removed';
  } finally {
    await fs.unlink(claim).catch(() => undefined);
  }
}

/** Waits while another process breaks a stale lock: 1 ms doubling to 50 ms. */
const BREAK_PAUSE: BackoffPolicy = { initialDelayMs: 1, maxDelayMs: 50 };

function pause(attempt: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, backoffDelay(BREAK_PAUSE, attempt)));
}

/**
 * Clears claim and temporary files left by processes killed while opening, each only when its
 * holder is provably dead. A temporary file is used by its creator alone, so it is unlinked; a
 * claim is broken through the claim protocol, since a live process may be breaking it too.
 */
async function sweepDeadLeftovers(ctx: LockContext, holder: LockFile): Promise<void> {
  const { fs, dir, probe } = ctx;
  const prefix = `.${LOCK_FILE}.`;
  for (const name of await fs.readdir(dir)) {
    if (!name.startsWith(prefix)) continue;
    const path = join(dir, name);
    const state = await readLock(fs, path);
    if (name.endsWith('.tmp')) {
      // A process killed mid-write leaves a partial file: its name still carries the pid.
      const pid = Number(/^\.owner\.lock\.(\d+)-/.exec(name)?.[1]);
      const owner = state.kind === 'held' ? ownerOf(state.file) : { pid, host: probe.self.host };
      if (Number.isSafeInteger(owner.pid) && isDead(owner, probe)) {
        await fs.unlink(path).catch(() => undefined);
      }
    } else if (state.kind === 'held' && isDead(ownerOf(state.file), probe)) {
      await breakStale(ctx, path, state.file.token, holder, 1);
    }
  }
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

async function verifyLock(ctx: LockContext, lockPath: string, token: string): Promise<void> {
  const state = await readLock(ctx.fs, lockPath);
  if (state.kind === 'held' && state.file.token === token) return;
  if (state.kind === 'held') throw lockedError(ctx.dir, lockPath, ownerOf(state.file), ctx.probe);
  throw new TeamError(
    'TEAM_LOCKED',
    `team folder ${ctx.dir}: this process's lock ${lockPath} is gone (${state.kind}); open the team again`,
    { details: { dir: ctx.dir, lockPath } },
  );
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
