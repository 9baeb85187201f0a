import assert from 'node:assert/strict';
import type { TeamErrorCode } from '../../errors.js';
import { TeamError } from '../../errors.js';
import type { TeamLog } from '../../ports/team-log.js';
import type { TeamRecord } from '../../records.js';
import type { ConformanceTestApi } from './api.js';
import { conformanceRecord, conformanceRecords, jsonCopy } from './api.js';

/** One log under test, fresh and empty, with how to reach its durable data again. */
export interface TeamLogConformanceSubject {
  /** The log under test, fresh and empty. */
  log: TeamLog;
  /**
   * Returns a new log over the same durable data. Called only after `log.close()` resolved.
   * Leave it out for stores without durable data; the reopen tests are then skipped.
   */
  reopen?: () => Promise<TeamLog>;
  /** Releases what the subject holds (temporary folders, connections). Runs after every test. */
  cleanup?: () => Promise<void>;
}

/** How the suite obtains a fresh subject for every test. */
export interface TeamLogConformanceOptions {
  /** Returns a fresh subject; called once per test. */
  create: () => Promise<TeamLogConformanceSubject>;
}

async function collect<T>(iterable: AsyncIterable<T>): Promise<T[]> {
  const out: T[] = [];
  for await (const item of iterable) out.push(item);
  return out;
}

async function rejectsWithCode(promise: Promise<unknown>, code: TeamErrorCode): Promise<void> {
  await assert.rejects(promise, (error: unknown) => {
    assert.ok(TeamError.isInstance(error), `expected a TeamError ${code}, got ${String(error)}`);
    assert.equal(error.code, code);
    return true;
  });
}

/**
 * The behaviour every {@link TeamLog} implementation must show: contiguous seq enforcement,
 * atomic batches, call-order writes under concurrency, validated JSON-equal copies on read,
 * durable-only notifications, refusal after close and survival across a reopen.
 *
 * Register it inside a test file: `defineTeamLogConformance({ describe, it }, { create })`.
 */
export function defineTeamLogConformance(
  test: ConformanceTestApi,
  options: TeamLogConformanceOptions,
): void {
  const { describe, it } = test;

  const withLog =
    (body: (subject: TeamLogConformanceSubject, opened: TeamLog[]) => Promise<void>) =>
    async () => {
      const subject = await options.create();
      const opened: TeamLog[] = [subject.log];
      try {
        await body(subject, opened);
      } finally {
        for (const log of opened) await log.close().catch(() => undefined);
        await subject.cleanup?.();
      }
    };

  describe('TeamLog conformance', () => {
    it(
      'starts empty',
      withLog(async ({ log }) => {
        assert.equal(log.specificationVersion, 'v1');
        assert.equal(typeof log.teamId, 'string');
        assert.ok(log.teamId.length > 0);
        assert.equal(log.lastSeq(), 0);
        assert.deepEqual(await collect(log.read()), []);
      }),
    );

    it(
      'reads appended records back as equal copies, in order',
      withLog(async ({ log }) => {
        const records = conformanceRecords(log.teamId, 1, 8);
        await log.append({ records: records.slice(0, 3) });
        await log.append({ records: records.slice(3) });
        assert.equal(log.lastSeq(), 8);
        assert.deepEqual(await collect(log.read()), jsonCopy(records));
      }),
    );

    it(
      'reads from a given seq',
      withLog(async ({ log }) => {
        const records = conformanceRecords(log.teamId, 1, 6);
        await log.append({ records });
        const seqs = async (fromSeq?: number) =>
          (await collect(log.read(fromSeq === undefined ? {} : { fromSeq }))).map((r) => r.seq);
        assert.deepEqual(await seqs(), [1, 2, 3, 4, 5, 6]);
        assert.deepEqual(await seqs(1), [1, 2, 3, 4, 5, 6]);
        assert.deepEqual(await seqs(4), [4, 5, 6]);
        assert.deepEqual(await seqs(6), [6]);
        assert.deepEqual(await seqs(7), []);
        assert.deepEqual(await seqs(100), []);
      }),
    );

    it(
      'accepts many small appends and one large batch',
      withLog(async ({ log }) => {
        for (let seq = 1; seq <= 40; seq++) {
          await log.append({ records: [conformanceRecord(log.teamId, seq)] });
        }
        await log.append({ records: conformanceRecords(log.teamId, 41, 400) });
        assert.equal(log.lastSeq(), 440);
        const read = await collect(log.read());
        assert.equal(read.length, 440);
        read.forEach((record, i) => {
          assert.equal(record.seq, i + 1);
        });
        assert.deepEqual(
          (await collect(log.read({ fromSeq: 300 }))).map((r) => r.seq),
          Array.from({ length: 141 }, (_, i) => 300 + i),
        );
      }),
    );

    it(
      'writes concurrent appends in call order',
      withLog(async ({ log }) => {
        const pending: Promise<void>[] = [];
        for (let seq = 1; seq <= 30; seq += 2) {
          pending.push(log.append({ records: conformanceRecords(log.teamId, seq, 2) }));
        }
        await Promise.all(pending);
        assert.equal(log.lastSeq(), 30);
        assert.deepEqual(
          (await collect(log.read())).map((r) => r.seq),
          Array.from({ length: 30 }, (_, i) => i + 1),
        );
      }),
    );

    it(
      'refuses a seq gap, a repeat and a first seq other than 1 (LOG_INVARIANT)',
      withLog(async ({ log }) => {
        await rejectsWithCode(
          log.append({ records: [conformanceRecord(log.teamId, 2)] }),
          'LOG_INVARIANT',
        );
        assert.equal(log.lastSeq(), 0);
        await log.append({ records: conformanceRecords(log.teamId, 1, 2) });
        await rejectsWithCode(
          log.append({ records: [conformanceRecord(log.teamId, 2)] }),
          'LOG_INVARIANT',
        );
        await rejectsWithCode(
          log.append({ records: [conformanceRecord(log.teamId, 4)] }),
          'LOG_INVARIANT',
        );
        assert.equal(log.lastSeq(), 2);
        await log.append({ records: [conformanceRecord(log.teamId, 3)] });
        assert.deepEqual(
          (await collect(log.read())).map((r) => r.seq),
          [1, 2, 3],
        );
      }),
    );

    it(
      'refuses a whole batch when one record is out of order or invalid',
      withLog(async ({ log }) => {
        await log.append({ records: [conformanceRecord(log.teamId, 1)] });
        const gap = [
          conformanceRecord(log.teamId, 2),
          conformanceRecord(log.teamId, 3),
          conformanceRecord(log.teamId, 5),
        ];
        await rejectsWithCode(log.append({ records: gap }), 'LOG_INVARIANT');
        const broken = conformanceRecord(log.teamId, 3);
        const invalid = [
          conformanceRecord(log.teamId, 2),
          { ...broken, type: 'task', task: { id: 'not-a-task-id' } } as unknown as TeamRecord,
        ];
        await rejectsWithCode(log.append({ records: invalid }), 'INVALID_RECORD');
        assert.equal(log.lastSeq(), 1);
        assert.deepEqual(
          (await collect(log.read())).map((r) => r.seq),
          [1],
        );
        await log.append({ records: conformanceRecords(log.teamId, 2, 2) });
        assert.equal(log.lastSeq(), 3);
      }),
    );

    it(
      'refuses a record with a newer schemaVersion (UNSUPPORTED_SCHEMA_VERSION)',
      withLog(async ({ log }) => {
        const future = { ...conformanceRecord(log.teamId, 1), schemaVersion: 99 };
        await rejectsWithCode(
          log.append({ records: [future as unknown as TeamRecord] }),
          'UNSUPPORTED_SCHEMA_VERSION',
        );
        assert.equal(log.lastSeq(), 0);
      }),
    );

    it(
      'a refused concurrent append does not disturb its neighbours',
      withLog(async ({ log }) => {
        const first = log.append({ records: [conformanceRecord(log.teamId, 1)] });
        const wrong = log.append({ records: [conformanceRecord(log.teamId, 3)] });
        const second = log.append({ records: [conformanceRecord(log.teamId, 2)] });
        await rejectsWithCode(wrong, 'LOG_INVARIANT');
        await Promise.all([first, second]);
        assert.deepEqual(
          (await collect(log.read())).map((r) => r.seq),
          [1, 2],
        );
      }),
    );

    it(
      'keeps its own copy: changing an appended record afterwards changes nothing',
      withLog(async ({ log }) => {
        const record = conformanceRecord(log.teamId, 1);
        const expected = jsonCopy(record);
        await log.append({ records: [record] });
        if (record.type === 'member') record.member.name = 'changed-afterwards';
        assert.deepEqual(await collect(log.read()), [expected]);
      }),
    );

    it(
      'resolves an empty append without writing',
      withLog(async ({ log }) => {
        await log.append({ records: [] });
        assert.equal(log.lastSeq(), 0);
        await log.append({ records: [conformanceRecord(log.teamId, 1)] });
        assert.equal(log.lastSeq(), 1);
      }),
    );

    it(
      'notifies subscribers of every durable record in order, until they unsubscribe',
      withLog(async ({ log }) => {
        await log.append({ records: [conformanceRecord(log.teamId, 1)] });
        const first: number[] = [];
        const second: TeamRecord[] = [];
        const stopFirst = log.subscribe({ listener: (record) => first.push(record.seq) });
        const stopSecond = log.subscribe({ listener: (record) => second.push(record) });
        const records = conformanceRecords(log.teamId, 2, 4);
        await Promise.all([
          log.append({ records: records.slice(0, 2) }),
          log.append({ records: records.slice(2) }),
        ]);
        assert.deepEqual(first, [2, 3, 4, 5]);
        assert.deepEqual(second, jsonCopy(records));
        stopFirst();
        await log.append({ records: [conformanceRecord(log.teamId, 6)] });
        assert.deepEqual(first, [2, 3, 4, 5]);
        assert.deepEqual(
          second.map((r) => r.seq),
          [2, 3, 4, 5, 6],
        );
        stopSecond();
        await rejectsWithCode(
          log.append({ records: [conformanceRecord(log.teamId, 9)] }),
          'LOG_INVARIANT',
        );
        assert.equal(second.length, 5);
      }),
    );

    it(
      'stops a read when its signal is aborted',
      withLog(async ({ log }) => {
        await log.append({ records: conformanceRecords(log.teamId, 1, 5) });
        const controller = new AbortController();
        controller.abort();
        await assert.rejects(collect(log.read({ signal: controller.signal })));
        const live = new AbortController();
        const seen: number[] = [];
        await assert.rejects(
          (async () => {
            for await (const record of log.read({ signal: live.signal })) {
              seen.push(record.seq);
              if (record.seq === 2) live.abort();
            }
          })(),
        );
        assert.deepEqual(seen, [1, 2]);
      }),
    );

    it(
      'refuses appends after close with STORE_CLOSED; close is idempotent',
      withLog(async ({ log }) => {
        await log.append({ records: [conformanceRecord(log.teamId, 1)] });
        await log.close();
        await log.close();
        await rejectsWithCode(
          log.append({ records: [conformanceRecord(log.teamId, 2)] }),
          'STORE_CLOSED',
        );
      }),
    );

    it(
      'keeps every record across a reopen and continues at lastSeq + 1',
      withLog(async (subject, opened) => {
        if (!subject.reopen) return;
        const { log } = subject;
        const records = conformanceRecords(log.teamId, 1, 7);
        await log.append({ records });
        await log.close();
        const again = await subject.reopen();
        opened.push(again);
        assert.equal(again.teamId, log.teamId);
        assert.equal(again.lastSeq(), 7);
        assert.deepEqual(await collect(again.read()), jsonCopy(records));
        await rejectsWithCode(
          again.append({ records: [conformanceRecord(log.teamId, 7)] }),
          'LOG_INVARIANT',
        );
        await again.append({ records: [conformanceRecord(log.teamId, 8)] });
        assert.equal(again.lastSeq(), 8);
        await again.close();
        const third = await subject.reopen();
        opened.push(third);
        assert.deepEqual(
          (await collect(third.read({ fromSeq: 7 }))).map((r) => r.seq),
          [7, 8],
        );
      }),
    );
  });
}
