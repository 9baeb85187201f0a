import type { TeamRecord } from '@teamwire/core';
import { conformanceRecord } from '@teamwire/core/testing';
import type pg from 'pg';
import { afterEach, beforeEach, expect, it } from 'vitest';
import { describePg, eventually, Scratch } from './test-support.js';

const TEAM = '01JTEAMLOSTCONNECTION00000';

/** What the faulty pool does to a statement. */
type Fault = 'none' | 'refuse-connect' | 'lose-answer';

/**
 * A pool that injects faults: `refuse-connect` fails to connect (the statement is never sent);
 * `lose-answer` runs the statement and then reports a dead connection, as if it broke after
 * COMMIT but before the answer arrived.
 */
function faultyPool(real: pg.Pool, fault: (sql: string) => Fault): pg.Pool {
  const connect = async () => {
    const client = await real.connect();
    return new Proxy(client, {
      get(target, property) {
        if (property === 'query') {
          return async (sql: string | pg.QueryConfig, values?: unknown[]) => {
            const text = typeof sql === 'string' ? sql : sql.text;
            const result = await target.query(sql as string, values);
            if (fault(text) === 'lose-answer')
              throw new Error('Connection terminated unexpectedly');
            return result;
          };
        }
        const value = Reflect.get(target, property, target);
        return typeof value === 'function' ? value.bind(target) : value;
      },
    });
  };
  return new Proxy(real, {
    get(target, property) {
      if (property === 'connect') {
        return async () => {
          // The statement is not known yet: every connect of a refusing phase fails.
          if (fault('') === 'refuse-connect') {
            throw Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), {
              code: 'ECONNREFUSED',
            });
          }
          return connect();
        };
      }
      const value = Reflect.get(target, property, target);
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
}

function userEntry(text: string, messageId?: string) {
  return {
    schemaVersion: 1 as const,
    at: 1,
    message: {
      role: 'user' as const,
      content: [{ type: 'text' as const, text }],
      ...(messageId
        ? {
            source: {
              kind: 'team-message' as const,
              messageId,
              senderId: 'lead-id',
              senderName: 'lead',
            },
          }
        : {}),
    },
  };
}

describePg('appends over a connection that breaks', () => {
  let scratch: Scratch;
  beforeEach(() => {
    scratch = new Scratch();
  });
  afterEach(async () => {
    await scratch.cleanup();
  });

  it('resolves a log append whose answer was lost after it committed, writing it once', async () => {
    let lose = 0;
    const pool = faultyPool(scratch.pool(), (sql) =>
      sql.includes('INSERT INTO') && sql.includes('team_log') && lose-- > 0
        ? 'lose-answer'
        : 'none',
    );
    const store = await scratch.open(TEAM, { pool });
    lose = 1;
    await store.log.append({ records: [conformanceRecord(TEAM, 1)] });
    lose = 3;
    await store.log.append({ records: [conformanceRecord(TEAM, 2), conformanceRecord(TEAM, 3)] });
    expect(store.log.lastSeq()).toBe(3);
    const rows = await scratch.sql(
      `SELECT seq FROM "${scratch.schema}".team_log WHERE team_id = $1 ORDER BY seq`,
      [TEAM],
    );
    expect(rows.rows).toEqual([{ seq: '1' }, { seq: '2' }, { seq: '3' }]);
  });

  it('retries a log append while the server refuses connections', async () => {
    let refuse = 0;
    const pool = faultyPool(scratch.pool(), () => (refuse-- > 0 ? 'refuse-connect' : 'none'));
    const store = await scratch.open(TEAM, { pool });
    refuse = 4;
    const records: TeamRecord[] = [conformanceRecord(TEAM, 1)];
    await store.log.append({ records });
    expect(store.log.lastSeq()).toBe(1);
  });

  it('resolves a transcript append whose answer was lost, without calling it a duplicate', async () => {
    let lose = 0;
    const pool = faultyPool(scratch.pool(), (sql) =>
      sql.includes('INSERT INTO') && sql.includes('transcript') && lose-- > 0
        ? 'lose-answer'
        : 'none',
    );
    const store = await scratch.open(TEAM, { pool });
    lose = 2;
    await store.transcripts.append({
      memberId: 'm1',
      entries: [userEntry('hello', 'msg-1'), userEntry('part two', 'msg-1')],
    });
    expect(await store.transcripts.load({ memberId: 'm1' })).toHaveLength(2);
    const rows = await scratch.sql(
      `SELECT idx, message_id, message_part FROM "${scratch.schema}".transcript ORDER BY idx`,
    );
    expect(rows.rows).toEqual([
      { idx: '1', message_id: 'msg-1', message_part: 0 },
      { idx: '2', message_id: 'msg-1', message_part: 1 },
    ]);
  });

  it('rejects an append still waiting for the server with STORE_CLOSED when the store closes', async () => {
    let refuse = false;
    let refused = 0;
    const pool = faultyPool(scratch.pool(), () => {
      if (!refuse) return 'none';
      refused++;
      return 'refuse-connect';
    });
    const store = await scratch.open(TEAM, { pool });
    refuse = true;
    // Settle both as they reject (during close), so no rejection goes unhandled meanwhile.
    const pending = store.log.append({ records: [conformanceRecord(TEAM, 1)] }).catch((e) => e);
    const transcript = store.transcripts
      .append({ memberId: 'm1', entries: [userEntry('hi')] })
      .catch((e) => e);
    // both are retrying: the server refused them at least once each
    await eventually(() => refused >= 2, 'the appends trying to connect');
    await store.close();
    expect(await pending).toMatchObject({
      code: 'STORE_CLOSED',
      details: { outcome: 'not-written' },
    });
    expect(await transcript).toMatchObject({
      code: 'STORE_CLOSED',
      details: { outcome: 'not-written' },
    });
  });

  it('keeps transcript appends exactly once across terminated backends', async () => {
    const store = await scratch.open(TEAM);
    await store.transcripts.append({ memberId: 'm1', entries: [userEntry('first', 'msg-0')] });
    const appends: Promise<void>[] = [];
    for (let i = 1; i <= 30; i++) {
      appends.push(
        store.transcripts.append({ memberId: 'm1', entries: [userEntry(`n${i}`, `msg-${i}`)] }),
      );
    }
    for (let round = 0; round < 5; round++) {
      await scratch.sql(
        `SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = $1`,
        [`teamwire:${store.processId}`],
      );
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
    await Promise.all(appends);
    const loaded = await store.transcripts.load({ memberId: 'm1' });
    expect(loaded.map((entry) => entry.message.content[0])).toEqual(
      ['first', ...Array.from({ length: 30 }, (_, i) => `n${i + 1}`)].map((text) => ({
        type: 'text',
        text,
      })),
    );
  });
});
