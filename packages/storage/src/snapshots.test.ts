import { appendFile, mkdir, readdir, readFile, stat, truncate, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { TeamLogSnapshots, TeamRecord } from '@teamwire/core';
import { loadTeamState, TeamState } from '@teamwire/core';
import { randomTeamRecords } from '@teamwire/core/testing';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { StorageFs } from './fs-seam.js';
import { nodeFs } from './fs-seam.js';
import { readTeamLog, readTeamState, verifyTeam } from './inspect.js';
import { SNAPSHOTS_DIR, snapshotFileName } from './snapshot-files.js';
import type { OpenJsonlTeamStoreOptions } from './team-store.js';
import { openJsonlTeamStore } from './team-store.js';
import { caught, eachTestInTempDir } from './test-support.js';

const TEAM = '01JTEAMSNAPSHOTS0000000000';

let dir: string;
eachTestInTempDir((path) => {
  dir = path;
});

type Layout = Pick<OpenJsonlTeamStoreOptions, 'segmentBytes' | 'snapshots' | 'retention'>;

const open = (layout: Layout = {}, where = dir) =>
  openJsonlTeamStore({ teamId: TEAM, dir: where, durability: 'buffered', ...layout });

/** Appends `records` in batches of up to `batch`, snapshotting after the seqs in `at`. */
async function write(
  records: readonly TeamRecord[],
  options: { layout?: Layout; at?: readonly number[]; batch?: number; where?: string } = {},
) {
  const store = await open(options.layout, options.where);
  const state = new TeamState({ teamId: TEAM });
  const at = new Set(options.at ?? []);
  const batch = options.batch ?? 7;
  for (let i = 0; i < records.length; ) {
    const next = records.slice(i, i + batch);
    const cut = next.findIndex((record) => at.has(record.seq));
    const chunk = cut === -1 ? next : next.slice(0, cut + 1);
    await store.log.append({ records: chunk });
    for (const record of chunk) state.apply(record);
    i += chunk.length;
    const snapshots = store.log.snapshots;
    if (snapshots !== undefined && at.has(state.lastSeq)) {
      await snapshots.write(state.snapshot());
      await snapshots.prune({ keep: snapshots.policy.keep });
    }
  }
  await store.close();
}

/** The state a full strict fold of `records` gives, as comparable JSON. */
function fullFold(records: readonly TeamRecord[]): string {
  return canonical(TeamState.fromRecords(records, { teamId: TEAM }));
}

function canonical(state: TeamState): string {
  const snapshot = state.snapshot();
  return JSON.stringify({
    ...snapshot,
    delivered: String(snapshot.delivered).split('\n').sort(),
    tombstones: String(snapshot.tombstones).split('\n').sort(),
  });
}

async function snapshotFiles(): Promise<string[]> {
  return (await readdir(join(dir, SNAPSHOTS_DIR))).sort();
}

describe('snapshots of the folded state', () => {
  it('opens from the newest snapshot: validates and folds only the records after it', async () => {
    const records = randomTeamRecords(TEAM, 300, 1);
    await write(records, { at: [120, 250] });
    const store = await open();
    expect(store.recovered).toMatchObject({ snapshotSeq: 250, records: 50, lastSeq: 300 });
    const loaded = await loadTeamState(store.log, { teamId: TEAM });
    expect(loaded.snapshotSeq).toBe(250);
    expect(canonical(loaded.state)).toBe(fullFold(records));
    await store.close();
  });

  it('gives the state of a full strict fold at any snapshot point and segment size (property)', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 1, max: 1_000_000 }),
        fc.integer({ min: 20, max: 400 }),
        fc.array(fc.double({ min: 0, max: 1, noNaN: true }), { maxLength: 4 }),
        fc.constantFrom(4096, 8192, 1 << 20),
        fc.integer({ min: 1, max: 40 }),
        async (seed, count, cuts, segmentBytes, batch) => {
          const where = join(dir, `case-${seed}-${count}`);
          await mkdir(where);
          const records = randomTeamRecords(TEAM, count, seed);
          const at = cuts.map((cut) => Math.max(1, Math.ceil(cut * count)));
          await write(records, { layout: { segmentBytes }, at, batch, where });
          const store = await open({ segmentBytes }, where);
          const loaded = await loadTeamState(store.log, { teamId: TEAM });
          expect(canonical(loaded.state)).toBe(fullFold(records));
          expect(loaded.snapshotSeq).toBe(at.length === 0 ? 0 : Math.max(...at));
          const read: number[] = [];
          for await (const record of store.log.read({ fromSeq: 1 })) read.push(record.seq);
          expect(read).toEqual(records.map((record) => record.seq));
          await store.close();
          expect((await verifyTeam(where, { teamId: TEAM })).ok).toBe(true);
        },
      ),
      { numRuns: 25, seed: 18 },
    );
  });

  it('skips a torn snapshot for the one before it', async () => {
    const records = randomTeamRecords(TEAM, 200, 2);
    await write(records, { at: [80, 160] });
    const newest = join(dir, SNAPSHOTS_DIR, snapshotFileName(160));
    await truncate(newest, (await stat(newest)).size - 10);
    const store = await open();
    expect(store.recovered).toMatchObject({ snapshotSeq: 80, snapshotsSkipped: 1, records: 120 });
    const loaded = await loadTeamState(store.log, { teamId: TEAM });
    expect(canonical(loaded.state)).toBe(fullFold(records));
    await store.close();
    const verified = await verifyTeam(dir, { teamId: TEAM });
    expect(verified.snapshots.map((s) => [s.seq, s.status])).toEqual([
      [160, 'invalid'],
      [80, 'matches'],
    ]);
  });

  it('never trusts a snapshot whose state was altered, or that belongs to another log', async () => {
    const records = randomTeamRecords(TEAM, 200, 3);
    await write(records, { at: [50, 150] });
    // flip one byte of the newest state: its checksum gives it away
    const newest = join(dir, SNAPSHOTS_DIR, snapshotFileName(150));
    const bytes = await readFile(newest);
    const at = bytes.indexOf(0x0a) + 20;
    bytes[at] = bytes[at] === 0x61 ? 0x62 : 0x61;
    await writeFile(newest, bytes);
    // the older one is another history's: its record line is not this log's
    const other = join(dir, 'other');
    await mkdir(other);
    await write(randomTeamRecords(TEAM, 60, 99), { at: [50], where: other });
    await writeFile(
      join(dir, SNAPSHOTS_DIR, snapshotFileName(50)),
      await readFile(join(other, SNAPSHOTS_DIR, snapshotFileName(50))),
    );
    const store = await open();
    expect(store.recovered).toMatchObject({ snapshotSeq: 0, snapshotsSkipped: 2, records: 200 });
    const loaded = await loadTeamState(store.log, { teamId: TEAM });
    expect(loaded.snapshotSeq).toBe(0);
    expect(canonical(loaded.state)).toBe(fullFold(records));
    await store.close();
  });

  it('falls back when the core refuses a snapshot whose envelope is intact', async () => {
    const records = randomTeamRecords(TEAM, 200, 4);
    await write(records, { at: [70, 140] });
    // rewrite the newest with an inconsistent state and a matching checksum
    const store = await open();
    const state = TeamState.fromRecords(records.slice(0, 140), { teamId: TEAM });
    const broken = { ...state.snapshot(), nextTaskNumber: 999_999 };
    await store.log.snapshots?.write(broken);
    await store.close();
    const reopened = await open();
    expect(reopened.recovered.snapshotSeq).toBe(140);
    const loaded = await loadTeamState(reopened.log, { teamId: TEAM });
    expect(loaded).toMatchObject({ snapshotSeq: 70, rejected: 1 });
    expect(canonical(loaded.state)).toBe(fullFold(records));
    await reopened.close();
    const verified = await verifyTeam(dir, { teamId: TEAM });
    expect(verified.snapshots.find((s) => s.seq === 140)?.status).toBe('invalid');
  });

  it('reports a snapshot whose state differs from the full fold', async () => {
    const records = randomTeamRecords(TEAM, 120, 5);
    await write(records, { at: [60] });
    const store = await open();
    // a consistent state, but not this log's state at seq 60: the state at seq 59, relabelled
    const earlier = TeamState.fromRecords(records.slice(0, 59), { teamId: TEAM }).snapshot();
    await store.log.snapshots?.write({ ...earlier, seq: 100 });
    await store.close();
    const verified = await verifyTeam(dir, { teamId: TEAM });
    expect(verified.ok).toBe(false);
    expect(verified.snapshots.find((s) => s.seq === 100)).toMatchObject({ status: 'differs' });
    expect(verified.snapshots.find((s) => s.seq === 60)).toMatchObject({ status: 'matches' });
  });

  it('counts the bytes of log it writes and the bytes each snapshot takes, for core to decide when one is due', async () => {
    const records = randomTeamRecords(TEAM, 60, 13);
    const store = await open({ snapshots: { everyRecords: 10, everyBytes: 1 << 30 } });
    const snapshots = store.log.snapshots as TeamLogSnapshots;
    expect(snapshots.policy).toEqual({ everyRecords: 10, everyBytes: 1 << 30, keep: 2 });
    const state = new TeamState({ teamId: TEAM });
    let bytes = snapshots.logBytes();
    for (const record of records) {
      await store.log.append({ records: [record] });
      state.apply(record);
      const after = snapshots.logBytes();
      // the line and its newline
      expect(after - bytes).toBe(Buffer.byteLength(JSON.stringify(record)) + 1);
      bytes = after;
    }
    const written = await snapshots.write(state.snapshot());
    const [file] = await snapshotFiles();
    const text = await readFile(join(dir, SNAPSHOTS_DIR, file as string), 'utf8');
    const stateLine = text.slice(text.indexOf('\n') + 1, -1);
    expect(written.bytes).toBe(Buffer.byteLength(stateLine));
    const listed = [];
    for await (const stored of snapshots.list()) listed.push(stored);
    expect(listed).toMatchObject([{ seq: 60, bytes: written.bytes, anchored: true }]);
    await store.close();
    expect((await caught(snapshots.write(state.snapshot()))).code).toBe('STORE_CLOSED');
  });

  it('keeps the newest snapshots only, and a torn write of one is replaced', async () => {
    const records = randomTeamRecords(TEAM, 100, 6);
    await write(records, { at: [10, 20, 30, 40], layout: { snapshots: { keep: 2 } } });
    expect(await snapshotFiles()).toEqual([snapshotFileName(30), snapshotFileName(40)]);
  });

  it('refuses bad options with INVALID_ARGUMENT, touching nothing', async () => {
    for (const layout of [
      { segmentBytes: 10 },
      { snapshots: { everyRecords: 0 } },
      { snapshots: { keep: 1.5 } },
      { retention: 'sometimes' },
      { retention: 'delete', snapshots: false },
    ] as Layout[]) {
      const error = await caught(open(layout));
      expect(error.code).toBe('INVALID_ARGUMENT');
    }
    expect(await readdir(dir)).toEqual([]);
  });
});

describe('the segmented log', () => {
  it('moves to a new segment past segmentBytes, and reads across segments', async () => {
    const records = randomTeamRecords(TEAM, 400, 7);
    await write(records, { layout: { segmentBytes: 8192 }, batch: 5 });
    const segments = await readdir(join(dir, 'segments'));
    expect(segments.length).toBeGreaterThan(3);
    for (const name of segments) {
      expect((await stat(join(dir, 'segments', name))).size).toBeLessThanOrEqual(8192);
    }
    const inspected = await readTeamLog(dir);
    expect(inspected.records.map((r) => r.seq)).toEqual(records.map((r) => r.seq));
    const store = await open({ segmentBytes: 8192 });
    const from = 333;
    const read: number[] = [];
    for await (const record of store.log.read({ fromSeq: from })) read.push(record.seq);
    expect(read).toEqual(records.slice(from - 1).map((r) => r.seq));
    await store.close();
  });

  it('keeps call order for appends issued while the log moves to a new segment', async () => {
    const records = randomTeamRecords(TEAM, 300, 12);
    const store = await open({ segmentBytes: 4096 });
    // every append issued at once: several land while a segment is being closed and started
    await Promise.all(records.map((record) => store.log.append({ records: [record] })));
    expect(store.log.lastSeq()).toBe(300);
    await store.close();
    const inspected = await readTeamLog(dir);
    expect(inspected.segments.length).toBeGreaterThan(5);
    expect(inspected.records).toEqual(records);
  });

  it('deletes segments covered by the oldest kept snapshot under retention delete', async () => {
    const records = randomTeamRecords(TEAM, 600, 8);
    const layout: Layout = { segmentBytes: 8192, retention: 'delete' };
    await write(records, { layout, at: [200, 400, 550] });
    const store = await open(layout);
    expect(store.recovered.firstSeq).toBeGreaterThan(1);
    expect(store.recovered.firstSeq).toBeLessThanOrEqual(401);
    const error = await caught(
      (async () => {
        for await (const _ of store.log.read({ fromSeq: 1 })) break;
      })(),
    );
    expect(error.code).toBe('HISTORY_UNAVAILABLE');
    const loaded = await loadTeamState(store.log, { teamId: TEAM });
    expect(canonical(loaded.state)).toBe(fullFold(records));
    await store.close();
    expect((await caught(verifyTeam(dir, { teamId: TEAM }))).code).toBe('HISTORY_UNAVAILABLE');
    // inspection reads the state from a snapshot and the segments after it
    const reading = await readTeamState(dir, { teamId: TEAM });
    expect(reading.snapshotSeq).toBeGreaterThan(0);
    expect(canonical(reading.state)).toBe(fullFold(records));
  });

  it('archives covered segments, byte for byte, under retention archiveDir', async () => {
    const records = randomTeamRecords(TEAM, 600, 9);
    const archiveDir = join(dir, 'archive');
    const layout: Layout = { segmentBytes: 8192, retention: { archiveDir } };
    const whole = join(dir, 'whole');
    await mkdir(whole);
    await write(records, { layout: { segmentBytes: 8192 }, where: whole });
    const team = join(dir, 'team');
    await mkdir(team);
    await write(records, { layout, at: [300, 500], where: team });
    const archived = (await readdir(archiveDir)).sort();
    expect(archived.length).toBeGreaterThan(0);
    expect(await readFile(join(archiveDir, archived[0] as string))).toEqual(
      await readFile(join(whole, 'log.jsonl')),
    );
  });

  it('refuses to open when segments were removed and no snapshot covers them', async () => {
    const records = randomTeamRecords(TEAM, 300, 10);
    const layout: Layout = { segmentBytes: 8192, retention: 'delete' };
    await write(records, { layout, at: [150, 250] });
    for (const name of await snapshotFiles()) {
      await appendFile(join(dir, SNAPSHOTS_DIR, name), 'damage');
    }
    const error = await caught(open(layout));
    expect(error.code).toBe('HISTORY_UNAVAILABLE');
  });

  it('repairs a torn tail of the active segment after rotations', async () => {
    const records = randomTeamRecords(TEAM, 200, 11);
    await write(records, { layout: { segmentBytes: 8192 }, at: [100] });
    const names = (await readdir(join(dir, 'segments'))).sort();
    const active = join(dir, 'segments', names[names.length - 1] as string);
    await appendFile(active, '{"seq":201,"at":');
    const store = await open({ segmentBytes: 8192 });
    expect(store.recovered).toMatchObject({ tornBytes: 16, lastSeq: 200, snapshotSeq: 100 });
    await store.close();
  });
});

describe('snapshot files of version 2: the parts that grow with history kept apart', () => {
  /** The newest snapshot file: its header, its state line and the bytes after it. */
  async function newestFile() {
    const name = (await snapshotFiles()).at(-1) as string;
    const path = join(dir, SNAPSHOTS_DIR, name);
    const bytes = await readFile(path);
    const headerEnd = bytes.indexOf(0x0a);
    const stateEnd = bytes.indexOf(0x0a, headerEnd + 1);
    return {
      path,
      header: JSON.parse(bytes.subarray(0, headerEnd).toString('utf8')),
      state: JSON.parse(bytes.subarray(headerEnd + 1, stateEnd).toString('utf8')),
      parts: bytes.subarray(stateEnd + 1).toString('utf8'),
    };
  }

  it('keeps tombstones and delivered ids after the state line, and reaches them after a reopen', async () => {
    const records = randomTeamRecords(TEAM, 300, 31);
    await write(records, { at: [300] });
    const file = await newestFile();
    expect(file.header.version).toBe(2);
    expect(file.state.version).toBe(4);
    expect(file.state.tombstones).toBeUndefined();
    expect(file.state.delivered).toBeUndefined();
    const { tombstones, delivered } = file.header.parts;
    expect(tombstones.bytes).toBeGreaterThan(0);
    expect(delivered.bytes).toBeGreaterThan(0);
    expect(Buffer.byteLength(file.parts)).toBe(tombstones.bytes + delivered.bytes);
    const full = TeamState.fromRecords(records, { teamId: TEAM });
    const deleted = full.listTasks({ status: 'deleted' });
    expect(deleted.length).toBeGreaterThan(0);
    const store = await open();
    const loaded = await loadTeamState(store.log, { teamId: TEAM });
    expect(loaded.snapshotSeq).toBe(300);
    const first = deleted[0]?.id as string;
    expect(loaded.state.getTask(first)).toEqual(full.getTask(first));
    expect(loaded.state.listTasks({ status: 'deleted' })).toEqual(deleted);
    expect(canonical(loaded.state)).toBe(fullFold(records));
    await store.close();
  });

  it('reads neither part on open, and each only when first needed', async () => {
    const records = randomTeamRecords(TEAM, 300, 31);
    await write(records, { at: [300] });
    const reads: number[] = [];
    const fs: StorageFs = {
      ...nodeFs,
      readRangeSync(path, position, length) {
        reads.push(length);
        return (nodeFs.readRangeSync as NonNullable<StorageFs['readRangeSync']>)(
          path,
          position,
          length,
        );
      },
    };
    const { tombstones, delivered } = (await newestFile()).header.parts;
    const store = await openJsonlTeamStore({ teamId: TEAM, dir, durability: 'buffered', fs });
    const loaded = await loadTeamState(store.log, { teamId: TEAM });
    expect(loaded.snapshotSeq).toBe(300);
    expect(reads).toEqual([]);
    const full = TeamState.fromRecords(records, { teamId: TEAM });
    expect(loaded.state.listTasks({ status: 'deleted' })).toEqual(
      full.listTasks({ status: 'deleted' }),
    );
    expect(reads).toEqual([tombstones.bytes]);
    const last = loaded.state.snapshot().deliveredLast as string;
    expect(loaded.state.wasQueued(last)).toBe(true);
    expect(reads).toEqual([tombstones.bytes, delivered.bytes]);
    await store.close();
  });

  it('refuses an altered tombstone when it is first read, and verifyTeam reports the file', async () => {
    const records = randomTeamRecords(TEAM, 300, 31);
    await write(records, { at: [300] });
    const file = await newestFile();
    const bytes = await readFile(file.path);
    // one character of the first tombstone changed: the same length, another checksum
    const at = bytes.indexOf('"status":"deleted"', bytes.length - Buffer.byteLength(file.parts));
    expect(at).toBeGreaterThan(0);
    bytes[at + 2] = 's'.charCodeAt(0) === bytes[at + 2] ? 'S'.charCodeAt(0) : 's'.charCodeAt(0);
    await writeFile(file.path, bytes);
    const store = await open();
    expect(store.recovered.snapshotSeq).toBe(300);
    const loaded = await loadTeamState(store.log, { teamId: TEAM });
    expect(loaded.snapshotSeq).toBe(300);
    const deleted = TeamState.fromRecords(records, { teamId: TEAM }).listTasks({
      status: 'deleted',
    });
    expect(() => loaded.state.getTask(deleted[0]?.id as string)).toThrow(
      expect.objectContaining({ code: 'SNAPSHOT_INVALID' }),
    );
    await store.close();
    const verified = await verifyTeam(dir, { teamId: TEAM });
    expect(verified.snapshots.find((s) => s.seq === 300)?.status).toBe('invalid');
  });

  it('still opens from a version 1 file, whose state keeps every task in `tasks`', async () => {
    const records = randomTeamRecords(TEAM, 300, 31);
    await write(records, { at: [200] });
    const file = await newestFile();
    const store0 = await open();
    const full200 = TeamState.fromRecords(records.slice(0, 200), { teamId: TEAM });
    await store0.close();
    // what an older version wrote: every task in `tasks`, the delivered ids inline
    const old = full200.snapshot();
    const { tombstones: _t, deliveredLast: _l, ...rest } = old;
    const state = JSON.stringify({ ...rest, version: 3, tasks: full200.allTasks() });
    const { sha256 } = await import('./snapshot-files.js');
    const header = {
      format: 'teamwire.snapshot',
      version: 1,
      teamId: TEAM,
      seq: 200,
      record: file.header.record,
      state: { bytes: Buffer.byteLength(state), sha256: sha256(state) },
      writtenAt: file.header.writtenAt,
    };
    await writeFile(file.path, `${JSON.stringify(header)}\n${state}\n`);
    const store = await open();
    expect(store.recovered).toMatchObject({ snapshotSeq: 200, snapshotsSkipped: 0 });
    const loaded = await loadTeamState(store.log, { teamId: TEAM });
    expect(loaded).toMatchObject({ snapshotSeq: 200, rejected: 0 });
    expect(canonical(loaded.state)).toBe(fullFold(records));
    await store.close();
  });
});

describe('opening from a snapshot', () => {
  it('reads the log from the snapshot’s own record, not from the start of its segment', async () => {
    const records = randomTeamRecords(TEAM, 400, 32);
    await write(records, { at: [390] });
    const logPath = join(dir, 'log.jsonl');
    const size = (await stat(logPath)).size;
    let read = 0;
    const fs: StorageFs = {
      ...nodeFs,
      async open(path, flags) {
        const handle = await nodeFs.open(path, flags);
        if (path !== logPath) return handle;
        return {
          ...handle,
          read: async (buffer, offset, length, position) => {
            const result = await handle.read(buffer, offset, length, position);
            read += result.bytesRead;
            return result;
          },
          write: handle.write.bind(handle),
          datasync: handle.datasync.bind(handle),
          sync: handle.sync.bind(handle),
          truncate: handle.truncate.bind(handle),
          stat: handle.stat.bind(handle),
          close: handle.close.bind(handle),
        };
      },
    };
    const store = await openJsonlTeamStore({ teamId: TEAM, dir, durability: 'buffered', fs });
    const loaded = await loadTeamState(store.log, { teamId: TEAM });
    expect(loaded.snapshotSeq).toBe(390);
    expect(canonical(loaded.state)).toBe(fullFold(records));
    // the record at 390 (to check the digest) and the ten after it, not the 389 before
    expect(read).toBeLessThan(size / 4);
    await store.close();
  });
});
