import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { TeamError } from '@teamwire/core';
import { createManualClock } from '@teamwire/core/testing';
import { describe, expect, it } from 'vitest';
import type { StorageFs } from './fs-seam.js';
import { nodeFs } from './fs-seam.js';
import type { ProcessProbe } from './lock.js';
import { LOCK_FILE } from './lock.js';
import { openJsonlTeamStore } from './team-store.js';

const TEAM = '01JTEAMLOCKRACE00000000000';
const DEAD_PID = 900;
const clock = createManualClock({ start: Date.UTC(2026, 0, 2) });

/** Processes 1..3 run; the stale lock's pid 900 does not. */
function probe(pid: number): ProcessProbe {
  return { self: { pid, host: 'host-a' }, isAlive: (owner) => owner.pid !== DEAD_PID };
}

/**
 * An fs that stops after its n-th operation on a lock file until the test lets it go on: it
 * freezes one opener at an exact point of the lock protocol while others run.
 */
class SteppedFs {
  private ops = 0;
  private stopAt = new Set<number>();
  private resume: (() => void) | undefined;
  private onStop: (() => void) | undefined;
  readonly fs: StorageFs;

  constructor(stops: number[]) {
    this.stopAt = new Set(stops);
    const step = async <T>(run: () => Promise<T>, path: string): Promise<T> => {
      try {
        return await run();
      } finally {
        if (basename(path).includes(LOCK_FILE) && this.stopAt.has(++this.ops)) {
          await new Promise<void>((resolve) => {
            this.resume = resolve;
            this.onStop?.();
          });
        }
      }
    };
    this.fs = {
      open: (path, flags) => step(() => nodeFs.open(path, flags), path),
      readFile: (path) => step(() => nodeFs.readFile(path), path),
      mkdir: (path, options) => nodeFs.mkdir(path, options),
      readdir: (path) => nodeFs.readdir(path),
      stat: (path) => nodeFs.stat(path),
      link: (from, to) => step(() => nodeFs.link(from, to), to),
      unlink: (path) => step(() => nodeFs.unlink(path), path),
    };
  }

  get count(): number {
    return this.ops;
  }

  /** Resolves once the opener stopped, or `done` settled (it ran out of operations first). */
  stopped(done: Promise<unknown>): Promise<void> {
    return Promise.race([
      new Promise<void>((resolve) => {
        this.onStop = resolve;
      }),
      done.then(
        () => undefined,
        () => undefined,
      ),
    ]);
  }

  /** Lets the opener run on; `last` also drops any stop still ahead. */
  go(last = false): void {
    if (last) this.stopAt.clear();
    const resume = this.resume;
    this.resume = undefined;
    resume?.();
  }
}

type Outcome = { owner: true; close: () => Promise<void> } | { owner: false; code: string };

function attempt(dir: string, pid: number, fs: StorageFs = nodeFs): Promise<Outcome> {
  return openJsonlTeamStore({
    teamId: TEAM,
    dir,
    durability: 'buffered',
    clock,
    fs,
    process: probe(pid),
    lockWaitMs: 5,
  }).then(
    (store) => ({ owner: true as const, close: () => store.close() }),
    (error: unknown) => {
      if (!TeamError.isInstance(error)) throw error;
      return { owner: false as const, code: error.code };
    },
  );
}

async function staleFolder(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'teamwire-lock-race-'));
  const stale = { pid: DEAD_PID, host: 'host-a', acquiredAt: 1, token: 'stale-token' };
  await writeFile(join(dir, LOCK_FILE), JSON.stringify(stale));
  return dir;
}

/**
 * One schedule: opener 1 is frozen after its `first`-th file operation while opener 2 opens, and
 * again after its `second`-th while opener 3 opens; then it finishes. Nobody closes, so at most
 * one of the three may own the folder.
 */
async function runSchedule(first: number, second: number) {
  const dir = await staleFolder();
  try {
    const stepped = new SteppedFs([first, second]);
    const slow = attempt(dir, 1, stepped.fs);
    await stepped.stopped(slow);
    const middle = await attempt(dir, 2);
    stepped.go();
    await stepped.stopped(slow);
    const last = await attempt(dir, 3);
    stepped.go(true);
    const outcomes = [await slow, middle, last];
    const owners = outcomes.filter((outcome) => outcome.owner);
    const onDisk = JSON.parse(await readFile(join(dir, LOCK_FILE), 'utf8')) as { pid: number };
    for (const outcome of outcomes) if (outcome.owner) await outcome.close();
    return { owners: owners.length, outcomes, onDisk: onDisk.pid, ops: stepped.count };
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

describe('stale lock takeover under every interleaving of three openers', () => {
  it('leaves exactly one owner, and the lock on disk is that owner', async () => {
    // How many file operations the frozen opener makes when nothing interferes.
    const { ops } = await runSchedule(1_000, 1_001);
    expect(ops).toBeGreaterThan(4);
    let schedules = 0;
    for (let first = 1; first <= ops; first++) {
      for (let second = first + 1; second <= ops + 1; second++) {
        const result = await runSchedule(first, second);
        schedules++;
        const where = `schedule (${first}, ${second})`;
        expect(result.owners, where).toBe(1);
        const owner = [1, 2, 3][result.outcomes.findIndex((outcome) => outcome.owner)];
        expect(result.onDisk, where).toBe(owner);
        for (const outcome of result.outcomes) {
          if (!outcome.owner) expect(outcome.code, where).toBe('TEAM_LOCKED');
        }
      }
    }
    expect(schedules).toBeGreaterThan(10);
  }, 120_000);
});
