import { spawn, spawnSync } from 'node:child_process';
import { once } from 'node:events';
import { readdir, readFile, writeFile } from 'node:fs/promises';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { setImmediate as setImmediatePromise } from 'node:timers/promises';
import { conformanceRecords, createManualClock } from '@teamwire/core/testing';
import { describe, expect, it } from 'vitest';
import type { ProcessProbe } from './lock.js';
import { currentProcess, LOCK_FILE } from './lock.js';
import { isProcessAlive, parseProcStat } from './process-identity.js';
import { openJsonlTeamStore } from './team-store.js';
import { caught, eachTestInTempDir } from './test-support.js';

const TEAM = '01JTEAMLOCKS00000000000000';

let dir: string;
eachTestInTempDir((path) => {
  dir = path;
});

/** A process on `hostname` with `pid`, which sees only `alive` pids as running. */
function probe(pid: number, alive: number[], host = 'host-a'): ProcessProbe {
  return { self: { pid, host }, isAlive: (owner) => alive.includes(owner.pid) };
}

const clock = createManualClock({ start: Date.UTC(2026, 0, 2, 3, 4, 5) });
const open = (process?: ProcessProbe) =>
  openJsonlTeamStore({
    teamId: TEAM,
    dir,
    durability: 'buffered',
    clock,
    process,
  });

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
    expect(currentProcess.isAlive(currentProcess.self)).toBe(true);
    expect(currentProcess.isAlive({ pid: exited, host: hostname() })).toBe(false);
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

describe('owner liveness on Linux', () => {
  const linux = process.platform === 'linux';

  it.runIf(linux)('treats a zombie owner as dead, though kill(pid, 0) still finds it', async () => {
    // The background `sleep` exits after its parent exec'd into a `sleep` that never reaps it. (A
    // `sleep 0` could exit before the exec, and the shell would reap it: no zombie.)
    const shell = spawn('sh', ['-c', 'sleep 1 & echo $!; exec sleep 30'], {
      stdio: ['ignore', 'pipe', 'ignore'],
    });
    try {
      const [line] = await once(shell.stdout, 'data');
      const pid = Number(String(line).trim());
      while (!(await readFile(`/proc/${pid}/stat`, 'utf8')).includes(') Z '))
        await setImmediatePromise();
      expect(() => process.kill(pid, 0)).not.toThrow();
      expect(currentProcess.isAlive({ pid, host: hostname() })).toBe(false);
      // A lock it left is taken over at once.
      await writeFile(
        lockPath(),
        JSON.stringify({ pid, host: hostname(), acquiredAt: 5, token: 'z' }),
      );
      const heir = await open();
      expect(heir.recovered.staleLock?.pid).toBe(pid);
      await heir.close();
    } finally {
      shell.kill('SIGKILL');
    }
  });

  it.runIf(linux)('tells a recycled pid from its owner by the start time', async () => {
    const me = currentProcess.self;
    expect(me.startTime).toBeTypeOf('number');
    // This pid runs, but started at another time: not the process that wrote the lock.
    const recycled = { ...me, pid: process.ppid, startTime: 1 };
    expect(currentProcess.isAlive(recycled)).toBe(false);
    await writeFile(lockPath(), JSON.stringify({ ...recycled, acquiredAt: 5, token: 'old' }));
    const heir = await open();
    expect(heir.recovered.staleLock).toMatchObject({ pid: process.ppid, startTime: 1 });
    await heir.close();
    // The same pid with its real start time is alive, and its lock is respected.
    const parentStat = parseProcStat(await readFile(`/proc/${process.ppid}/stat`, 'utf8'));
    const live = { pid: process.ppid, host: me.host, startTime: parentStat?.startTime };
    await writeFile(lockPath(), JSON.stringify({ ...live, acquiredAt: 5, token: 'live' }));
    expect((await caught(open())).code).toBe('TEAM_LOCKED');
    // An earlier process that had this very pid (a container restarted, say) is not this one.
    await writeFile(lockPath(), JSON.stringify({ ...me, startTime: 1, acquiredAt: 5, token: 'x' }));
    const reborn = await open();
    expect(reborn.recovered.staleLock).toMatchObject({ pid: process.pid, startTime: 1 });
    await reborn.close();
  });

  it('treats a lock from an earlier boot as dead', () => {
    const me = currentProcess.self;
    const probe: ProcessProbe = {
      self: { ...me, bootId: 'boot-b' },
      isAlive: (owner) => isProcessAlive(owner, { ...me, bootId: 'boot-b' }),
    };
    expect(probe.isAlive({ pid: process.pid, host: me.host, bootId: 'boot-a' })).toBe(false);
  });

  it('parses /proc stat lines whose command name holds spaces and parentheses', () => {
    const fields = Array.from({ length: 50 }, (_, i) => String(i + 4));
    fields[5] = String(0x404); // flags, with PF_EXITING
    fields[18] = '987654'; // starttime
    expect(parseProcStat(`42 (a) b (c) S ${fields.join(' ')}`)).toEqual({
      state: 'S',
      exiting: true,
      startTime: 987654,
    });
    expect(parseProcStat('garbage')).toBeUndefined();
  });
});
