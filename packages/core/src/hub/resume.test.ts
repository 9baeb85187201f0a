import * as fc from 'fast-check';
import { describe, expect, it, vi } from 'vitest';
import type { TeamLog } from '../ports/team-log.js';
import type { TeamRecord } from '../records.js';
import { createMemoryTeamLog } from '../testing/memory-stores.js';
import { createEventHub } from './event-hub.js';
import { delta, expectIdle, Reader, TEAM, take, taskRecord } from './test-helpers.js';
import type { EventHub, HubEvent, HubItem } from './types.js';

/** Appends a record to the log, then publishes it, as the runtime does. */
async function publishRecord(hub: EventHub, log: TeamLog, agent: string, record: TeamRecord) {
  await log.append({ records: [record] });
  hub.publish(agent, { type: 'record', record });
}

/** A compact view of what a subscription handed out. */
function summary(items: readonly HubItem[]): string[] {
  return items.map((item) => {
    switch (item.type) {
      case 'event':
        if (item.event.type === 'record') return `${item.seq}:record#${item.event.record.seq}`;
        if (item.event.type === 'model.text-delta') return `${item.seq}:${item.event.text}`;
        return `${item.seq}:${item.event.type}`;
      case 'gap':
        return `gap(${item.reason},${item.lost})`;
      case 'reset':
        return `reset(${item.reason})`;
      case 'presence':
        return `${item.seq}:${item.agent}:${item.state}`;
      default:
        return item.type;
    }
  });
}

describe('event hub cursor resume', () => {
  it('replays evicted records from the team log and counts the lost deltas in place', async () => {
    const log = createMemoryTeamLog({ teamId: TEAM });
    const hub = createEventHub({ teamId: TEAM, historySize: 3, log });
    hub.publish('lead', delta('a')); //                     seq 2 (1 started lead)
    await publishRecord(hub, log, 'lead', taskRecord(1)); // seq 3
    hub.publish('lead', delta('b')); //                     seq 4
    // A client reads up to seq 4 and drops off.
    const first = hub.subscribe();
    expect(summary(await take(first, 3))).toEqual(['2:a', '3:record#1', '4:b']);
    first.close();
    const cursor = 4;

    await publishRecord(hub, log, 'lead', taskRecord(2)); // seq 5
    hub.publish('lead', delta('c')); //                     seq 6
    hub.publish('lead', delta('d')); //                     seq 7
    await publishRecord(hub, log, 'lead', taskRecord(3)); // seq 8
    hub.publish('lead', delta('e')); //                     seq 9
    await publishRecord(hub, log, 'lead', taskRecord(4)); // seq 10
    hub.publish('lead', delta('f')); //                     seq 11
    // The ring now holds only seq 9, 10, 11.
    expect(hub.history('lead').map((item) => item.seq)).toEqual([9, 10, 11]);

    const resumed = hub.subscribe({ afterSeq: cursor });
    hub.publish('lead', delta('g')); // seq 12, live, while the log replay is still to come
    const items = await take(resumed, 7);
    expect(summary(items)).toEqual([
      '5:record#2',
      'gap(evicted,2)',
      '8:record#3',
      '9:e',
      '10:record#4',
      '11:f',
      '12:g',
    ]);
    // Replayed records keep their hub seq, time and agent; the payload is the logged record.
    const replayed = items[0];
    expect(replayed).toMatchObject({ type: 'event', seq: 5, agent: 'lead', teamId: TEAM });
    expect(replayed?.type === 'event' && replayed.event).toEqual({
      type: 'record',
      record: taskRecord(2),
    });
    await expectIdle(resumed);

    // fromSeq is the inclusive spelling of the same cursor. Since seq 12 pushed seq 9 out of the
    // ring, that delta is now a counted gap too.
    const inclusive = hub.subscribe({ fromSeq: cursor + 1 });
    expect(summary(await take(inclusive, 7))).toEqual([
      '5:record#2',
      'gap(evicted,2)',
      '8:record#3',
      'gap(evicted,1)',
      '10:record#4',
      '11:f',
      '12:g',
    ]);
    await expectIdle(inclusive);
  });

  it('merges several agents in seq order and respects an agent filter', async () => {
    const log = createMemoryTeamLog({ teamId: TEAM });
    const hub = createEventHub({ teamId: TEAM, historySize: 2, log });
    await publishRecord(hub, log, 'lead', taskRecord(1)); // 1 started, 2
    hub.publish('alice', delta('a1')); //                    3 started, 4
    await publishRecord(hub, log, 'alice', taskRecord(2)); // 5
    hub.publish('lead', delta('l1')); //                     6
    hub.publish('alice', delta('a2')); //                    7
    hub.publish('lead', delta('l2')); //                     8
    hub.publish('alice', delta('a3')); //                    9

    const all = hub.subscribe({ afterSeq: 1 });
    expect(summary(await take(all, 7))).toEqual([
      '2:record#1',
      'gap(evicted,1)',
      '5:record#2',
      '6:l1',
      '7:a2',
      '8:l2',
      '9:a3',
    ]);
    await expectIdle(all);

    const alice = hub.subscribe({ afterSeq: 0, agent: 'alice' });
    expect(summary(await take(alice, 4))).toEqual(['gap(evicted,1)', '5:record#2', '7:a2', '9:a3']);
    await expectIdle(alice);
  });

  it('without a log, evicted records are counted as lost too', async () => {
    const hub = createEventHub({ teamId: TEAM, historySize: 1 });
    hub.publish('lead', { type: 'record', record: taskRecord(1) }); // 2
    hub.publish('lead', delta('x')); //                                3
    hub.publish('lead', delta('y')); //                                4
    const sub = hub.subscribe({ afterSeq: 1 });
    expect(summary(await take(sub, 2))).toEqual(['gap(evicted,2)', '4:y']);
    await expectIdle(sub);
  });

  it('a record the log cannot return, or a failing log, becomes a counted gap', async () => {
    const onError = vi.fn();
    const log = createMemoryTeamLog({ teamId: TEAM });
    await log.append({ records: [taskRecord(1)] });
    const hub = createEventHub({ teamId: TEAM, historySize: 1, log, onError });
    hub.publish('lead', { type: 'record', record: taskRecord(1) }); // 2
    hub.publish('lead', { type: 'record', record: taskRecord(7) }); // 3: never appended
    hub.publish('lead', delta('z')); //                                4
    const sub = hub.subscribe({ afterSeq: 1 });
    expect(summary(await take(sub, 3))).toEqual(['2:record#1', 'gap(evicted,1)', '4:z']);
    await expectIdle(sub);
    expect(onError).not.toHaveBeenCalled();

    const broken: TeamLog = {
      ...log,
      read: () => ({
        [Symbol.asyncIterator]: () => ({
          next: () => Promise.reject(new Error('disk gone')),
        }),
      }),
    };
    const hub2 = createEventHub({ teamId: TEAM, historySize: 1, log: broken, onError });
    hub2.publish('lead', { type: 'record', record: taskRecord(1) });
    hub2.publish('lead', delta('z'));
    const sub2 = hub2.subscribe({ afterSeq: 0 });
    expect(summary(await take(sub2, 2))).toEqual(['gap(evicted,1)', '3:z']);
    expect(onError).toHaveBeenCalledWith(expect.objectContaining({ message: 'disk gone' }));
  });

  it('closing while the log replay is pending ends cleanly', async () => {
    let release = () => {};
    const gate = new Promise<void>((resolve) => {
      release = resolve;
    });
    const log = createMemoryTeamLog({ teamId: TEAM });
    await log.append({ records: [taskRecord(1)] });
    const slow: TeamLog = {
      ...log,
      read: (options) =>
        (async function* () {
          await gate;
          yield* log.read(options);
        })(),
    };
    const onError = vi.fn();
    const hub = createEventHub({ teamId: TEAM, historySize: 1, log: slow, onError });
    hub.publish('lead', { type: 'record', record: taskRecord(1) });
    hub.publish('lead', delta('z'));
    const sub = hub.subscribe({ afterSeq: 0 });
    const pending = sub.next();
    sub.close();
    release();
    expect(await pending).toEqual({ done: true, value: undefined });
    expect(hub.subscriberCount()).toBe(0);
    expect(onError).not.toHaveBeenCalled();
  });

  it('a cursor the hub cannot honour yields a reset, then the rings', async () => {
    const hub = createEventHub({ teamId: TEAM, historySize: 2, resumeWindow: 2 });
    for (let i = 1; i <= 6; i++) hub.publish('lead', delta(String(i))); // seqs 2..7
    // From a previous incarnation of the hub (seqs restarted) or simply bogus.
    const future = hub.subscribe({ afterSeq: 99 });
    expect(summary(await take(future, 3))).toEqual(['reset(unknown-cursor)', '6:5', '7:6']);
    await expectIdle(future);
    // Too old: seq 2 and 3 fell out of the resume window as well as the ring.
    const old = hub.subscribe({ afterSeq: 2 });
    expect(summary(await take(old, 3))).toEqual(['reset(cursor-expired)', '6:5', '7:6']);
    await expectIdle(old);
    // Within the window: exact.
    const recent = hub.subscribe({ afterSeq: 3 });
    expect(summary(await take(recent, 3))).toEqual(['gap(evicted,2)', '6:5', '7:6']);
    await expectIdle(recent);
    // Caught up: nothing, and no reset.
    const current = hub.subscribe({ afterSeq: 7 });
    await expectIdle(current);
  });

  it('a cursor from another epoch (a restarted hub) yields a reset, then the rings', async () => {
    const hub = createEventHub({ teamId: TEAM, epoch: 'now', historySize: 3 });
    expect(hub.epoch).toBe('now');
    for (let i = 1; i <= 4; i++) hub.publish('lead', delta(String(i))); // seqs 2..5
    // the old cursor is below this hub's latest seq, so without the epoch it would be misread
    const stale = hub.subscribe({ afterSeq: 3, epoch: 'before' });
    expect(summary(await take(stale, 4))).toEqual(['reset(hub-restarted)', '3:2', '4:3', '5:4']);
    await expectIdle(stale);
    const same = hub.subscribe({ afterSeq: 3, epoch: 'now' });
    expect(summary(await take(same, 2))).toEqual(['4:3', '5:4']);
    await expectIdle(same);
    // an epoch without a cursor changes nothing: a fresh subscriber gets the rings
    const fresh = hub.subscribe({ epoch: 'before' });
    expect(summary(await take(fresh, 3))).toEqual(['3:2', '4:3', '5:4']);
    await expectIdle(fresh);
  });

  it('refuses an epoch that could not travel in an SSE id', () => {
    for (const epoch of ['', 'a:b', 'new\nline', 'x'.repeat(65)]) {
      expect(() => createEventHub({ teamId: TEAM, epoch })).toThrow(/epoch must be/);
    }
    const generated = [createEventHub({ teamId: TEAM }), createEventHub({ teamId: TEAM })];
    expect(generated[0]?.epoch).toMatch(/^[0-9a-f]{16}$/);
    expect(generated[0]?.epoch).not.toBe(generated[1]?.epoch);
  });

  it('property: a resume from any cursor hands out every later event once, or counts it', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.record({ agent: fc.nat(2), record: fc.boolean() }), { maxLength: 40 }),
        fc.integer({ min: 1, max: 5 }),
        async (script, historySize) => {
          const log = createMemoryTeamLog({ teamId: TEAM });
          const hub = createEventHub({ teamId: TEAM, historySize, resumeWindow: 100, log });
          const published: HubEvent[] = [];
          hub.listen((item) => {
            if (item.type === 'event') published.push(item);
          });
          for (const step of script) {
            const agent = `agent-${step.agent}`;
            if (step.record) {
              await publishRecord(hub, log, agent, taskRecord(log.lastSeq() + 1));
            } else hub.publish(agent, delta('x'));
          }
          for (let cursor = 0; cursor <= hub.lastSeq(); cursor++) {
            const expected = published.filter((item) => item.seq > cursor);
            const reader = new Reader(hub.subscribe({ afterSeq: cursor }));
            const items = await reader.drain();
            const delivered = items.filter((item) => item.type === 'event');
            const lost = items.reduce((n, i) => n + (i.type === 'gap' ? i.lost : 0), 0);
            expect(items.some((item) => item.type === 'reset')).toBe(false);
            expect(delivered.length + lost).toBe(expected.length);
            // Delivered items are exactly the published ones, in order (subsequence).
            let k = 0;
            for (const item of delivered) {
              while (k < expected.length && expected[k]!.seq !== item.seq) k++;
              expect(expected[k]).toEqual(item);
              k++;
            }
            // Records are durable: none is ever lost.
            const records = expected.filter((i) => i.type === 'event' && i.event.type === 'record');
            for (const record of records) expect(delivered).toContainEqual(record);
          }
        },
      ),
      { numRuns: 60 },
    );
  });
});
