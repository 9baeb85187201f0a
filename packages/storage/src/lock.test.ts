import { spawnSync } from 'node:child_process';
import { readdir, readFile, writeFile } from 'node:fs/promises';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { TeamError } from '@teamwire/core';
import { conformanceRecords, createManualClock } from '@teamwire/core/testing';
import { describe, expect, it } from 'vitest';
import type { ProcessProbe } from './lock.js';
import { currentProcess, LOCK_FILE } from './lock.js';
import { openJsonlTeamStore } from './team-store.js';
import { eachTestInTempDir } from './test-support.js';

const TEAM = '01JTEAMLOCKS00000000000000';

let dir: string;
eachTestInTempDir((path) => {
  dir = path;
});

/** A process on `hostname` with `pid`, which sees only `alive` pids as running. */
function probe(pid: number, alive: number[], hostname = 'host-a'): ProcessProbe {
  return { pid, hostname, isAlive: (other) => alive.includes(other) };
}

const clock = createManualClock({ start: Date.UTC(2026, 0, 2, 3, 4, 5) });
const open = (process?: ProcessProbe) =>
  openJsonlTeamStore({
    teamId: TEAM,
    dir,
    durability: 'buffered',
    clock,
    ...(process ? { process } : {}),
  });

async function caught(promise: Promise<unknown>): Promise<TeamError> {
  try {
    await promise;
  } catch (error) {
    if (TeamError.isInstance(error)) return error;
    throw error;
  }
  throw new Error('expected a TeamError');
}

const lockPath = () => join(dir, LOCK_FILE);

describe('owner lock', () => {
  it('writes pid, host and time into the lock and removes it on close', async () => {
    const store = await open(probe(111, [111]));
    expect(JSON.parse(await readFile(lockPath(), 'utf8'))).toMatchObject({
      pid: 111,
      host: 'host-a',
      acquiredAt: Date.UTC(2026, 0, 2, 3, 4, 5),
    });
    await store.close();
    expect(await readdir(dir)).not.toContain(LOCK_FILE);
    // No temporary lock files are left behind either.
    expect((await readdir(dir)).filter((name) => name.startsWith('.'))).toEqual([]);
  });

  it('refuses a second owner with TEAM_LOCKED naming the first', async () => {
    const first = await open(probe(111, [111, 222]));
    const error = await caught(open(probe(222, [111, 222])));
    expect(error.code).toBe('TEAM_LOCKED');
    expect(error.message).toContain('pid 111 on host host-a since 2026-01-02T03:04:05.000Z');
    expect(error.message).toContain(lockPath());
    expect(error.details).toMatchObject({ dir, owner: { pid: 111, host: 'host-a' } });
    // The refused open changed nothing: the owner keeps working.
    await first.log.append({ records: conformanceRecords(TEAM, 1, 1) });
    await first.close();
    const second = await open(probe(222, [111, 222]));
    expect(second.log.lastSeq()).toBe(1);
    await second.close();
  });

  it('refuses a second open in the same process', async () => {
    const first = await open();
    const error = await caught(open());
    expect(error.code).toBe('TEAM_LOCKED');
    expect(error.message).toContain(`pid ${process.pid}`);
    expect(error.message).toContain('this process');
    await first.close();
  });

  it('takes over a lock left by a dead pid on this host, and reports it', async () => {
    // A killed owner: its lock stays behind and its pid is gone.
    const crashed = await open(probe(333, [333]));
    const heir = await open(probe(444, [444]));
    expect(heir.recovered.staleLock).toEqual({
      pid: 333,
      host: 'host-a',
      acquiredAt: Date.UTC(2026, 0, 2, 3, 4, 5),
    });
    expect(JSON.parse(await readFile(lockPath(), 'utf8'))).toMatchObject({ pid: 444 });
    // Closing the old store's files does not remove the heir's lock.
    await crashed.close();
    expect(JSON.parse(await readFile(lockPath(), 'utf8'))).toMatchObject({ pid: 444 });
    await heir.close();
    expect(await readdir(dir)).not.toContain(LOCK_FILE);
  });

  it('does not take over a lock of another host, even with a pid unknown here', async () => {
    const remote = await open(probe(555, [555], 'host-b'));
    const error = await caught(open(probe(666, [666], 'host-a')));
    expect(error.code).toBe('TEAM_LOCKED');
    expect(error.message).toContain('host host-b');
    await remote.close();
  });

  it('probes real processes: a stale lock of an exited child is taken over', async () => {
    const exited = spawnSync(process.execPath, ['-e', '']).pid;
    expect(currentProcess.isAlive(process.pid)).toBe(true);
    expect(currentProcess.isAlive(exited)).toBe(false);
    const store = await open();
    await store.close();
    const stale = { pid: exited, host: hostname(), acquiredAt: 5, token: 'dead' };
    await writeFile(lockPath(), JSON.stringify(stale));
    const heir = await open();
    expect(heir.recovered.staleLock).toEqual({ pid: exited, host: hostname(), acquiredAt: 5 });
    await heir.close();
  });

  it('refuses an unreadable lock, telling the user how to clear it', async () => {
    const store = await open();
    await store.close();
    await writeFile(lockPath(), 'garbage');
    const error = await caught(open());
    expect(error.code).toBe('TEAM_LOCKED');
    expect(error.message).toContain('unreadable lock file');
    expect(error.message).toContain('delete it');
  });

  it('releases the lock once both the log and the transcripts are closed', async () => {
    const store = await open();
    await store.log.close();
    expect(await readdir(dir)).toContain(LOCK_FILE);
    await store.transcripts.close();
    await store.close();
    expect(await readdir(dir)).not.toContain(LOCK_FILE);
  });

  it('releases the lock when opening fails', async () => {
    const store = await open();
    await store.close();
    await writeFile(join(dir, 'log.jsonl'), 'not json\n');
    expect((await caught(open())).code).toBe('CORRUPT_LOG');
    expect(await readdir(dir)).not.toContain(LOCK_FILE);
  });

  it('does not remove a lock that is no longer its own', async () => {
    const store = await open(probe(777, [777]));
    const foreign = { pid: 888, host: 'host-a', acquiredAt: 1, token: 'someone-else' };
    await writeFile(lockPath(), JSON.stringify(foreign));
    await store.close();
    expect(JSON.parse(await readFile(lockPath(), 'utf8'))).toEqual(foreign);
  });
});
