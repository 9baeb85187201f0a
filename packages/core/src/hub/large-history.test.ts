import { describe, expect, it } from 'vitest';
import type { TeamLog } from '../ports/team-log.js';
import { createEventHub } from './event-hub.js';
import { delta, TEAM, taskRecord } from './test-helpers.js';
import type { HubItem, HubSubscription } from './types.js';

/**
 * More items than one call's argument list can hold: V8 throws a `RangeError` somewhere past
 * ~120 000 spread arguments, so a hub that spreads its history into a call breaks at this size.
 */
const LARGE = 200_000;

/** Reads `count` items, counting them by type without keeping them all. */
async function tally(subscription: HubSubscription, count: number) {
  const seen = { event: 0, gap: 0, lost: 0, firstSeq: 0, lastSeq: 0, ordered: true };
  for (let i = 0; i < count; i++) {
    const result = await subscription.next();
    if (result.done) break;
    const item: HubItem = result.value;
    if (item.type === 'gap') {
      seen.gap++;
      seen.lost += item.lost;
    }
    if (item.type !== 'event') continue;
    if (seen.event === 0) seen.firstSeq = item.seq;
    else if (item.seq <= seen.lastSeq) seen.ordered = false;
    seen.lastSeq = item.seq;
    seen.event++;
  }
  return seen;
}

/**
 * A team log holding task records 1..`last`, made on demand: the hub only reads it, and a real
 * store of this size would make the test about the store.
 */
function syntheticLog(last: number): { log: TeamLog; reads: number[] } {
  const reads: number[] = [];
  const log: TeamLog = {
    specificationVersion: 'v1',
    teamId: TEAM,
    append: () => Promise.reject(new Error('read-only')),
    async *read(options) {
      const from = options?.fromSeq ?? 1;
      reads.push(from);
      for (let seq = from; seq <= last; seq++) {
        if (options?.signal?.aborted) return;
        yield taskRecord(seq);
      }
    },
    subscribe: () => () => {},
    lastSeq: () => last,
    close: async () => {},
  };
  return { log, reads };
}

describe('event hub with a very large history', () => {
  it(`hands ${LARGE} retained events to a late subscriber and to a cursor resume`, async () => {
    const hub = createEventHub({ teamId: TEAM, historySize: LARGE, bufferSize: 16 });
    for (let i = 0; i < LARGE; i++) hub.publish('alice', delta(String(i)));
    // seq 1 started alice; her events are seqs 2 .. LARGE + 1.
    expect(hub.lastSeq()).toBe(LARGE + 1);

    const late = tally(hub.subscribe(), LARGE);
    expect(await late).toMatchObject({
      event: LARGE,
      gap: 0,
      firstSeq: 2,
      lastSeq: LARGE + 1,
      ordered: true,
    });

    const resumed = await tally(hub.subscribe({ afterSeq: 1_000 }), LARGE - 999);
    expect(resumed).toMatchObject({
      event: LARGE - 999,
      gap: 0,
      firstSeq: 1_001,
      lastSeq: LARGE + 1,
      ordered: true,
    });
    expect(hub.history('alice')).toHaveLength(LARGE);
  });

  it(`replays ${LARGE} evicted records from the log on resume`, async () => {
    const { log, reads } = syntheticLog(LARGE);
    const hub = createEventHub({ teamId: TEAM, historySize: 1, resumeWindow: LARGE, log });
    for (let seq = 1; seq <= LARGE; seq++) {
      hub.publish('lead', { type: 'record', record: taskRecord(seq) });
    }
    // The ring holds the last record only; every other one is remembered by position.
    expect(hub.history('lead').map((item) => item.seq)).toEqual([LARGE + 1]);

    const resumed = await tally(hub.subscribe({ afterSeq: 1 }), LARGE);
    expect(resumed).toMatchObject({
      event: LARGE,
      gap: 0,
      firstSeq: 2,
      lastSeq: LARGE + 1,
      ordered: true,
    });
    // One pass over the log, from the oldest record wanted.
    expect(reads).toEqual([1]);
  });
});
