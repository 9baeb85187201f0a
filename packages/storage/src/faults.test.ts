import { readFile, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { conformanceRecords } from '@teamwire/core/testing';
import { describe, expect, it } from 'vitest';
import { readTeamLog } from './inspect.js';
import type { OpenJsonlTeamStoreOptions } from './team-store.js';
import { openJsonlTeamStore } from './team-store.js';
import type { FaultPlan } from './test-support.js';
import {
  caught,
  eachTestInTempDir,
  gate,
  instrumentedFs,
  readAll,
  systemError,
} from './test-support.js';
import { TRANSCRIPT_JOURNAL_FILE } from './transcript-journal.js';

const TEAM = '01JTEAMFAULTS0000000000000';
const ALICE = '01JALICE0000000000000000AA';

let dir: string;
eachTestInTempDir((path) => {
  dir = path;
});

const logPath = () => join(dir, 'log.jsonl');
const records = (from: number, count: number) => conformanceRecords(TEAM, from, count);

function open(extra: Partial<OpenJsonlTeamStoreOptions> = {}) {
  return openJsonlTeamStore({ teamId: TEAM, dir, durability: 'fsync', ...extra });
}

/** Fails the log's writes or syncs once `armed` is set. */
function faultyLog(kind: 'write' | 'datasync', code: string, options: { failTruncate?: boolean }) {
  const state = { armed: false };
  const isLog = (path: string) => path.endsWith('log.jsonl');
  const plan: FaultPlan = {
    write: (path, length) =>
      state.armed && kind === 'write' && isLog(path)
        ? { partial: Math.floor(length / 2), error: systemError(code) }
        : undefined,
    datasync: (path) =>
      state.armed && kind === 'datasync' && isLog(path) ? systemError(code) : undefined,
    truncate: (path) =>
      state.armed && options.failTruncate && isLog(path) ? systemError('EIO') : undefined,
  };
  return { ...instrumentedFs(plan), state };
}

describe('a failed write', () => {
  for (const [kind, code] of [
    ['write', 'ENOSPC'],
    ['datasync', 'EIO'],
  ] as const) {
    it(`(${kind} fails with ${code}) rejects the append, cuts the file back and closes the log`, async () => {
      const { fs, state } = faultyLog(kind, code, {});
      const store = await open({ fs });
      await store.log.append({ records: records(1, 3) });
      const goodSize = (await stat(logPath())).size;
      const seen: number[] = [];
      store.log.subscribe({ listener: (record) => seen.push(record.seq) });

      state.armed = true;
      const failing = store.log.append({ records: records(4, 2) });
      const queued = store.log.append({ records: records(6, 1) });
      const error = await caught(failing);
      expect(error.code).toBe('STORAGE_IO');
      expect(error.message).toContain(logPath());
      expect(error.details).toMatchObject({ path: logPath(), errno: code });
      expect((error.cause as { code?: string }).code).toBe(code);
      // Issued in the same tick, it shared the failed group write.
      expect(await caught(queued)).toBe(error);

      // Later appends are refused with the failure attached, so the caller knows to reopen.
      const later = await caught(store.log.append({ records: records(4, 1) }));
      expect(later.code).toBe('STORE_CLOSED');
      expect(later.cause).toBe(error);
      expect(store.log.lastSeq()).toBe(3);
      expect(seen).toEqual([]);
      expect((await stat(logPath())).size).toBe(goodSize);
      await store.close();

      const reopened = await open();
      expect(reopened.recovered).toMatchObject({ records: 3, tornBytes: 0 });
      await reopened.log.append({ records: records(4, 1) });
      expect(await readAll(reopened.log)).toEqual([1, 2, 3, 4]);
      await reopened.close();
    });
  }

  it('refuses appends queued behind a failed sync with STORE_CLOSED, the failure attached', async () => {
    const held = gate();
    let fail = false;
    const { fs, counts } = instrumentedFs({
      datasync: async () => {
        if (!fail) return undefined;
        await held.promise;
        return systemError('EIO');
      },
    });
    const store = await open({ fs });
    const writesBefore = counts.writes;
    fail = true;
    const first = caught(store.log.append({ records: records(1, 1) }));
    while (counts.writes === writesBefore) await new Promise((resolve) => setImmediate(resolve));
    const behind = caught(store.log.append({ records: records(2, 1) }));
    held.open();
    const error = await first;
    expect(error.code).toBe('STORAGE_IO');
    const refused = await behind;
    expect(refused.code).toBe('STORE_CLOSED');
    expect(refused.cause).toBe(error);
    expect(refused.message).toContain('reopen the team');
    await store.close();
    const reopened = await open();
    expect(reopened.recovered.records).toBe(0);
    await reopened.close();
  });

  it('leaves a foldable log even when cutting the torn bytes back fails too', async () => {
    const { fs, state } = faultyLog('write', 'ENOSPC', { failTruncate: true });
    const store = await open({ fs });
    await store.log.append({ records: records(1, 2) });
    state.armed = true;
    const error = await caught(store.log.append({ records: records(3, 1) }));
    expect(error.code).toBe('STORAGE_IO');
    expect(error.details?.truncateFailed).toContain('EIO');
    await store.close();
    expect((await readTeamLog(dir)).tornBytes).toBeGreaterThan(0);

    const reopened = await open();
    expect(reopened.recovered.tornBytes).toBeGreaterThan(0);
    expect(await readAll(reopened.log)).toEqual([1, 2]);
    await reopened.log.append({ records: records(3, 1) });
    await reopened.close();
    expect((await readTeamLog(dir)).records.map((r) => r.seq)).toEqual([1, 2, 3]);
  });

  it('stops the transcript store after a failed transcript write', async () => {
    const state = { armed: false };
    const { fs } = instrumentedFs({
      write: (path) =>
        state.armed && path.includes('transcripts') ? { error: systemError('ENOSPC') } : undefined,
    });
    const store = await open({ fs });
    const entry = (at: number) => ({
      schemaVersion: 1 as const,
      at,
      message: { role: 'user' as const, content: [{ type: 'text' as const, text: `m${at}` }] },
    });
    await store.transcripts.append({ memberId: ALICE, entries: [entry(1)] });
    state.armed = true;
    const error = await caught(store.transcripts.append({ memberId: ALICE, entries: [entry(2)] }));
    expect(error.code).toBe('STORAGE_IO');
    state.armed = false;
    const other = await caught(store.transcripts.append({ memberId: 'bob', entries: [entry(3)] }));
    expect(other.code).toBe('STORE_CLOSED');
    expect(other.cause).toBe(error);
    // The log is a separate file and keeps working.
    await store.log.append({ records: records(1, 1) });
    await store.close();
    // The append's journal line was durable before its member file was written: reopening
    // restores it from the journal, as it restores an append a kill interrupted there.
    const reopened = await open();
    expect(reopened.recovered.transcriptJournal).toMatchObject({ batches: 2, rewritten: [ALICE] });
    expect(await reopened.transcripts.load({ memberId: ALICE })).toEqual([entry(1), entry(2)]);
    await reopened.close();
  });

  it('keeps nothing of a transcript append whose journal write failed', async () => {
    const state = { armed: false };
    const { fs } = instrumentedFs({
      write: (path) =>
        state.armed && path.endsWith(TRANSCRIPT_JOURNAL_FILE)
          ? { error: systemError('EIO') }
          : undefined,
    });
    const store = await open({ fs });
    const entry = (at: number) => ({
      schemaVersion: 1 as const,
      at,
      message: { role: 'user' as const, content: [{ type: 'text' as const, text: `m${at}` }] },
    });
    await store.transcripts.append({ memberId: ALICE, entries: [entry(1)] });
    state.armed = true;
    const error = await caught(store.transcripts.append({ memberId: ALICE, entries: [entry(2)] }));
    expect(error.code).toBe('STORAGE_IO');
    state.armed = false;
    const other = await caught(store.transcripts.append({ memberId: 'bob', entries: [entry(3)] }));
    expect(other.code).toBe('STORE_CLOSED');
    await store.close();
    const reopened = await open();
    // the first append is still in the journal (no checkpoint after a failure), and in its file
    expect(reopened.recovered.transcriptJournal).toMatchObject({ batches: 1, rewritten: [] });
    expect(await reopened.transcripts.load({ memberId: ALICE })).toEqual([entry(1)]);
    expect(await reopened.transcripts.load({ memberId: 'bob' })).toEqual([]);
    await reopened.close();
  });
});

describe('group commit', () => {
  it('lets concurrent appends share far fewer syncs than appends', async () => {
    const { fs, counts } = instrumentedFs();
    const store = await open({ fs });
    const before = { ...counts };
    const n = 64;
    await Promise.all(
      Array.from({ length: n }, (_, i) => store.log.append({ records: records(i + 1, 1) })),
    );
    const syncs = counts.datasyncs - before.datasyncs;
    const writes = counts.writes - before.writes;
    expect(syncs).toBeGreaterThanOrEqual(1);
    expect(syncs).toBeLessThanOrEqual(2);
    expect(writes).toBe(syncs);
    expect(store.log.lastSeq()).toBe(n);

    // Sequential appends each wait for their own sync.
    const sequential = counts.datasyncs;
    for (let seq = n + 1; seq <= n + 5; seq++) {
      await store.log.append({ records: records(seq, 1) });
    }
    expect(counts.datasyncs - sequential).toBe(5);
    await store.close();
  });

  it('resolves appends only after their sync, and batches the appends that queued meanwhile', async () => {
    const held = gate();
    let hold = false;
    const { fs, counts } = instrumentedFs({
      datasync: async () => {
        if (hold) await held.promise;
        return undefined;
      },
    });
    const store = await open({ fs });
    const writesBefore = counts.writes;
    hold = true;
    const resolved: number[] = [];
    const seen: number[] = [];
    store.log.subscribe({ listener: (record) => seen.push(record.seq) });
    const first = store.log.append({ records: records(1, 1) }).then(() => resolved.push(1));
    // Let the first group reach its (held) sync, then queue more behind it.
    while (counts.writes === writesBefore) await new Promise((resolve) => setImmediate(resolve));
    const rest = [2, 3, 4, 5].map((seq) =>
      store.log.append({ records: records(seq, 1) }).then(() => resolved.push(seq)),
    );
    await new Promise((resolve) => setImmediate(resolve));
    expect(resolved).toEqual([]);
    expect(seen).toEqual([]);
    expect(store.log.lastSeq()).toBe(0);
    const syncsBefore = counts.datasyncs;
    held.open();
    await Promise.all([first, ...rest]);
    expect(resolved).toEqual([1, 2, 3, 4, 5]);
    expect(seen).toEqual([1, 2, 3, 4, 5]);
    // The four queued appends went out as one write with one sync.
    expect(counts.datasyncs - syncsBefore).toBe(2);
    expect(counts.writes - writesBefore).toBe(2);
    await store.close();
  });

  it('never syncs in buffered mode, yet an append is written before it resolves', async () => {
    const { fs, counts } = instrumentedFs();
    const store = await open({ fs, durability: 'buffered' });
    await Promise.all([1, 2, 3].map((seq) => store.log.append({ records: records(seq, 1) })));
    expect(counts.datasyncs).toBe(0);
    expect(counts.dirSyncs).toBe(0);
    const text = await readFile(logPath(), 'utf8');
    expect(text.trim().split('\n')).toHaveLength(3);
    await store.close();
  });

  it('groups transcript appends per member file', async () => {
    const { fs, counts } = instrumentedFs();
    const store = await open({ fs });
    const entry = (at: number) => ({
      schemaVersion: 1 as const,
      at,
      message: { role: 'user' as const, content: [{ type: 'text' as const, text: `m${at}` }] },
    });
    const before = counts.datasyncs;
    await Promise.all(
      Array.from({ length: 30 }, (_, i) =>
        store.transcripts.append({ memberId: ALICE, entries: [entry(i)] }),
      ),
    );
    expect(counts.datasyncs - before).toBeLessThanOrEqual(2);
    expect((await store.transcripts.load({ memberId: ALICE })).map((e) => e.at)).toEqual(
      Array.from({ length: 30 }, (_, i) => i),
    );
    await store.close();
  });
});
