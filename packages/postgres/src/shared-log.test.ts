import type { TeamLog, TeamRecord } from '@teamwire/core';
import { foldTeam, TeamError } from '@teamwire/core';
import { conformanceRecord } from '@teamwire/core/testing';
import { afterEach, beforeEach, expect, it } from 'vitest';
import { describePg, eventually, Scratch } from './test-support.js';

const TEAM = '01JTEAMSHARED0000000000000';

/** A member record at `seq` (members fold without further context), marked with its writer. */
function member(seq: number, writer = 'a'): TeamRecord {
  const base = conformanceRecord(TEAM, 1);
  if (base.type !== 'member') throw new Error('expected a member record');
  return {
    ...base,
    seq,
    at: base.at + seq,
    member: {
      ...base.member,
      id: `member-${writer}-${seq}`,
      name: `worker-${writer}-${seq}`,
      phase: 'provisioning',
    },
  };
}

async function collect(log: TeamLog, fromSeq = 1): Promise<TeamRecord[]> {
  const out: TeamRecord[] = [];
  for await (const record of log.read({ fromSeq })) out.push(record);
  return out;
}

async function code(promise: Promise<unknown>): Promise<string> {
  try {
    await promise;
    return 'resolved';
  } catch (error) {
    if (TeamError.isInstance(error)) return error.code;
    throw error;
  }
}

describePg('a log shared by many processes', () => {
  let scratch: Scratch;
  beforeEach(() => {
    scratch = new Scratch();
  });
  afterEach(async () => {
    await scratch.cleanup();
  });

  it('lets exactly one of two racing appends of the same seq win; the other gets SEQ_CONFLICT', async () => {
    const a = await scratch.open(TEAM);
    const b = await scratch.open(TEAM);
    expect(a.log.shared).toBeDefined();
    for (let seq = 1; seq <= 20; seq++) {
      const outcomes = await Promise.all([
        code(a.log.append({ records: [member(seq, 'a')] })),
        code(b.log.append({ records: [member(seq, 'b')] })),
      ]);
      expect(outcomes.sort()).toEqual(['SEQ_CONFLICT', 'resolved']);
    }
    const records = await collect(b.log);
    expect(records.map((r) => r.seq)).toEqual(Array.from({ length: 20 }, (_, i) => i + 1));
    expect(() => foldTeam(records, { teamId: TEAM })).not.toThrow();
    expect(await collect(a.log)).toEqual(records);
  });

  it('reports a seq taken by another process as SEQ_CONFLICT, a seq this store wrote as LOG_INVARIANT', async () => {
    const a = await scratch.open(TEAM);
    await a.log.append({ records: [member(1)] });
    const b = await scratch.open(TEAM);
    await b.log.append({ records: [member(2, 'b')] });
    // A has not seen seq 2: it lost a race.
    const conflict = a.log.append({ records: [member(2)] });
    await expect(conflict).rejects.toMatchObject({ code: 'SEQ_CONFLICT', details: { seq: 2 } });
    // A caught up by reading; appending after what it read works.
    expect((await collect(a.log, 2)).map((r) => r.seq)).toEqual([2]);
    expect(a.log.lastSeq()).toBe(2);
    await a.log.append({ records: [member(3)] });
    // Repeating a seq A wrote itself is the caller's mistake.
    expect(await code(a.log.append({ records: [member(3)] }))).toBe('LOG_INVARIANT');
    // A gap is refused whoever wrote what came before.
    expect(await code(b.log.append({ records: [member(5, 'b')] }))).toBe('LOG_INVARIANT');
    expect((await collect(b.log)).map((r) => r.seq)).toEqual([1, 2, 3]);
  });

  it('refuses queued appends that continue one refused for a lost race', async () => {
    const a = await scratch.open(TEAM);
    await a.log.append({ records: [member(1)] });
    const b = await scratch.open(TEAM);
    await b.log.append({ records: [member(2, 'b')] });
    // A pipelines seq 2 and seq 3 on top of it; seq 3 must not land after B's seq 2.
    const second = a.log.append({ records: [member(2)] });
    const third = a.log.append({ records: [member(3)] });
    expect(await code(second)).toBe('SEQ_CONFLICT');
    expect(await code(third)).toBe('SEQ_CONFLICT');
    const records = await collect(a.log);
    expect(records.map((r) => r.seq)).toEqual([1, 2]);
    expect(records[1]).toEqual(member(2, 'b'));
  });

  it('feeds subscribers every record of every process, in order, each once', async () => {
    const a = await scratch.open(TEAM);
    const b = await scratch.open(TEAM);
    const seen: string[] = [];
    a.log.subscribe({
      listener: (record) =>
        seen.push(`${record.seq}:${record.type === 'member' && record.member.id}`),
    });
    await b.log.append({ records: [member(1, 'b')] });
    await eventually(() => seen.length === 1, 'the record of the other process');
    await a.log.append({ records: [member(2)] });
    expect(seen).toEqual(['1:member-b-1', '2:member-a-2']);
    // A record of B that A has not been told of yet still comes before A's next one.
    await b.log.append({ records: [member(3, 'b')] });
    await a.log.append({ records: [member(4)] });
    expect(seen.slice(2)).toEqual(['3:member-b-3', '4:member-a-4']);
    // Notices arrive in commit order: once A has B's next record, it has handled the notice of
    // seq 3 too, and anything that notice could have fed twice would have come before it.
    await b.log.append({ records: [member(5, 'b')] });
    await eventually(() => seen.length >= 5, 'the next record of the other process');
    expect(seen).toEqual([
      '1:member-b-1',
      '2:member-a-2',
      '3:member-b-3',
      '4:member-a-4',
      '5:member-b-5',
    ]);
    expect(a.log.lastSeq()).toBe(5);
  });

  it('rings onAppended for appends of other processes, and again after its connection is lost', async () => {
    const a = await scratch.open(TEAM);
    const b = await scratch.open(TEAM);
    let rings = 0;
    b.log.shared!.onAppended(() => {
      rings++;
    });
    await b.log.append({ records: [member(1, 'b')] });
    await a.log.append({ records: [member(2)] });
    await eventually(() => rings >= 1, 'a ring for the append of A');
    // B's own append does not ring B: its notice came before A's (notices arrive in commit
    // order), so it was handled, and skipped, before the ring for A's append.
    expect(rings).toBe(1);

    const killed = await scratch.sql<{ killed: boolean }>(
      `SELECT pg_terminate_backend(pid) AS killed FROM pg_stat_activity
        WHERE application_name = $1 AND (query ILIKE 'LISTEN%' OR query ILIKE '%pg_notify%')`,
      [`teamwire:${b.processId}`],
    );
    expect(killed.rows).toEqual([{ killed: true }]);
    await eventually(() => rings >= 2, 'a ring after reconnecting');
    // Listening again: the next append of A rings too.
    await a.log.append({ records: [member(3)] });
    await eventually(() => rings >= 3, 'a ring after LISTEN was restored');
  });

  it('looks at the log every pollMs, so a notification never sent is not waited for', async () => {
    const b = await scratch.open(TEAM, { pollMs: 50 });
    let rings = 0;
    b.log.shared!.onAppended(() => {
      rings++;
    });
    // a row written without a notification, as by a writer killed right after its commit
    await scratch.sql(
      `INSERT INTO "${scratch.schema}".team_log (team_id, seq, record, process_id, batch_id)
       VALUES ($1, 1, $2, 'gone', gen_random_uuid())`,
      [TEAM, JSON.stringify(member(1))],
    );
    await eventually(() => rings >= 1, 'a periodic ring', 5_000);
    const read: number[] = [];
    for await (const record of b.log.read()) read.push(record.seq);
    expect(read).toEqual([1]);
  });

  it('settles appends across terminated connections: every one resolves once, no row twice', async () => {
    const a = await scratch.open(TEAM);
    await a.log.append({ records: [member(1)] });
    const appends: Promise<void>[] = [];
    for (let seq = 2; seq <= 41; seq++) appends.push(a.log.append({ records: [member(seq)] }));
    // Kill every connection of A (pool and LISTEN) a few times while the appends run.
    for (let round = 0; round < 5; round++) {
      await scratch.sql(
        `SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = $1`,
        [`teamwire:${a.processId}`],
      );
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
    await Promise.all(appends);
    expect(a.log.lastSeq()).toBe(41);
    const rows = await scratch.sql<{ n: string; distinct_batches: string }>(
      `SELECT count(*) AS n, count(DISTINCT batch_id) AS distinct_batches
         FROM "${scratch.schema}".team_log WHERE team_id = $1`,
      [TEAM],
    );
    expect(rows.rows[0]).toEqual({ n: '41', distinct_batches: '41' });
    expect((await collect(a.log)).map((r) => r.seq)).toEqual(
      Array.from({ length: 41 }, (_, i) => i + 1),
    );
  });

  it('reports a row that does not decode as CORRUPT_LOG naming its seq', async () => {
    const a = await scratch.open(TEAM);
    await a.log.append({ records: [member(1), member(2), member(3)] });
    await scratch.sql(
      `UPDATE "${scratch.schema}".team_log SET record = '{"seq":2' WHERE team_id = $1 AND seq = 2`,
      [TEAM],
    );
    await expect(collect(a.log)).rejects.toMatchObject({
      code: 'CORRUPT_LOG',
      details: { seq: 2, teamId: TEAM },
    });
    await scratch.sql(
      `UPDATE "${scratch.schema}".team_log SET record = $2 WHERE team_id = $1 AND seq = 2`,
      [TEAM, JSON.stringify({ ...member(2), schemaVersion: 99 })],
    );
    await expect(collect(a.log)).rejects.toMatchObject({
      code: 'UNSUPPORTED_SCHEMA_VERSION',
      details: { seq: 2 },
    });
    await scratch.sql(`DELETE FROM "${scratch.schema}".team_log WHERE team_id = $1 AND seq = 2`, [
      TEAM,
    ]);
    await expect(collect(a.log)).rejects.toMatchObject({ code: 'CORRUPT_LOG' });
  });
});

describePg('many stores appending to one team', () => {
  let scratch: Scratch;
  beforeEach(() => {
    scratch = new Scratch();
  });
  afterEach(async () => {
    await scratch.cleanup();
  });

  it('writes none of a longer append whose first seq a shorter one took', async () => {
    const a = await scratch.open(TEAM);
    const b = await scratch.open(TEAM);
    await a.log.append({ records: [member(1)] });
    // B has not seen seq 1: its seqs 2 and 3 are free, but they follow a seq 1 of its own
    const lost = b.log.append({ records: [member(1, 'b'), member(2, 'b'), member(3, 'b')] });
    await expect(lost).rejects.toMatchObject({ code: 'SEQ_CONFLICT', details: { seq: 1 } });
    const rows = await scratch.sql<{ seq: string }>(
      `SELECT seq FROM "${scratch.schema}".team_log WHERE team_id = $1 ORDER BY seq`,
      [TEAM],
    );
    expect(rows.rows).toEqual([{ seq: '1' }]);
    expect(await collect(b.log)).toEqual([member(1)]);
  });

  it('keeps every record of eight racing stores exactly once, in one contiguous log', async () => {
    const stores = await Promise.all(Array.from({ length: 8 }, () => scratch.open(TEAM)));
    const perStore = 12;
    let refusals = 0;
    await Promise.all(
      stores.map(async (store, s) => {
        for (let k = 0; k < perStore; ) {
          const seq = store.log.lastSeq() + 1;
          try {
            await store.log.append({ records: [member(seq, `s${s}k${k}`)] });
            k++;
          } catch (error) {
            if (!TeamError.hasCode(error, 'SEQ_CONFLICT')) throw error;
            refusals++;
            // catch up before trying again: the refused seq is in the log now
            for await (const _ of store.log.read({ fromSeq: seq })) void _;
            expect(store.log.lastSeq()).toBeGreaterThanOrEqual(seq);
          }
        }
      }),
    );
    const records = await collect(stores[0]!.log);
    expect(records.map((r) => r.seq)).toEqual(
      Array.from({ length: 8 * perStore }, (_, i) => i + 1),
    );
    const writers = records.map((r) =>
      r.type === 'member' ? r.member.id.replace(/^member-/, '').replace(/-\d+$/, '') : '',
    );
    const expected = stores.flatMap((_, s) =>
      Array.from({ length: perStore }, (_, k) => `s${s}k${k}`),
    );
    expect(writers.sort()).toEqual(expected.sort());
    expect(() => foldTeam(records, { teamId: TEAM })).not.toThrow();
    // eight writers of one log race: some lost at least once
    expect(refusals).toBeGreaterThan(0);
  });
});
