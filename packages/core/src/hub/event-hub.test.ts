import * as fc from 'fast-check';
import { describe, expect, it, vi } from 'vitest';
import { TeamError } from '../errors.js';
import { createManualClock } from '../testing/manual-clock.js';
import { createEventHub } from './event-hub.js';
import {
  delta,
  events,
  expectIdle,
  Reader,
  seqs,
  TEAM,
  take,
  texts,
  turn,
} from './test-helpers.js';

describe('createEventHub: publishing', () => {
  it('stamps every event with a per-team seq, the clock time, the team and the agent', async () => {
    const clock = createManualClock({ start: 5_000 });
    const hub = createEventHub({ teamId: TEAM, clock });
    const sub = hub.subscribe();
    hub.publish('alice', delta('hi'));
    clock.advance(10);
    hub.publish('bob', delta('yo'));
    const items = await take(sub, 2);
    expect(items).toEqual([
      { type: 'event', seq: 2, at: 5_000, teamId: TEAM, agent: 'alice', event: delta('hi') },
      { type: 'event', seq: 4, at: 5_010, teamId: TEAM, agent: 'bob', event: delta('yo') },
    ]);
    // seq 1 and 3 are the presence transitions that started alice and bob.
    expect(hub.lastSeq()).toBe(4);
    await expectIdle(sub);
  });

  it('never throws to the publisher: bad input, a throwing listener and a throwing onError', () => {
    const onError = vi.fn(() => {
      throw new Error('the error sink is broken too');
    });
    const hub = createEventHub({ teamId: TEAM, onError });
    const seen: number[] = [];
    hub.listen(() => {
      throw new Error('listener bug');
    });
    hub.listen((item) => {
      if (item.type === 'event') seen.push(item.seq);
    });
    expect(() => hub.publish('alice', delta('a'))).not.toThrow();
    expect(() => hub.publish('', delta('a'))).not.toThrow();
    expect(() => hub.publish('alice', undefined as never)).not.toThrow();
    expect(() => hub.publish('alice', delta('b'))).not.toThrow();
    // The second listener is unaffected by the first; both good events arrived.
    expect(seen).toEqual([2, 3]);
    expect(onError).toHaveBeenCalledTimes(4);
    const codes = onError.mock.calls.map(([error]: unknown[]) =>
      TeamError.isInstance(error) ? error.code : 'other',
    );
    expect(codes.filter((code) => code === 'INVALID_ARGUMENT')).toHaveLength(2);
  });

  it('a consumer that throws in its loop ends only its own subscription', async () => {
    const hub = createEventHub({ teamId: TEAM });
    const failing = hub.subscribe();
    const healthy = hub.subscribe();
    const consumer = (async () => {
      for await (const item of failing) {
        if (item.type === 'event') throw new Error('render bug');
      }
    })();
    hub.publish('alice', delta('1'));
    await expect(consumer).rejects.toThrow('render bug');
    expect(failing.closed).toBe(true);
    hub.publish('alice', delta('2'));
    expect(texts(await take(healthy, 2))).toEqual(['1', '2']);
    expect(hub.subscriberCount()).toBe(1);
  });

  it('refuses invalid options with INVALID_ARGUMENT', () => {
    const code = (fn: () => unknown) => {
      try {
        fn();
      } catch (error) {
        return TeamError.isInstance(error) ? error.code : 'not a TeamError';
      }
      return 'no error';
    };
    expect(code(() => createEventHub({ teamId: '' }))).toBe('INVALID_ARGUMENT');
    expect(code(() => createEventHub({ teamId: TEAM, historySize: 0 }))).toBe('INVALID_ARGUMENT');
    expect(code(() => createEventHub({ teamId: TEAM, bufferSize: 1.5 }))).toBe('INVALID_ARGUMENT');
    expect(code(() => createEventHub({ teamId: TEAM, resumeWindow: -1 }))).toBe('INVALID_ARGUMENT');
    const hub = createEventHub({ teamId: TEAM });
    expect(code(() => hub.subscribe({ fromSeq: 1, afterSeq: 0 }))).toBe('INVALID_ARGUMENT');
    expect(code(() => hub.subscribe({ afterSeq: -1 }))).toBe('INVALID_ARGUMENT');
    expect(code(() => hub.subscribe({ agent: '' }))).toBe('INVALID_ARGUMENT');
    expect(code(() => hub.acquireDisplayName(' '))).toBe('INVALID_ARGUMENT');
    hub.close();
    expect(code(() => hub.subscribe())).toBe('DISPOSED');
  });
});

describe('createEventHub: a slow subscriber', () => {
  it('never slows the publisher and receives a gap with the exact number lost', async () => {
    const hub = createEventHub({ teamId: TEAM, bufferSize: 8 });
    const stalled = hub.subscribe();
    const fast = hub.subscribe();
    const roomy = hub.subscribe({ bufferSize: 20_000 });
    const fastSeen: number[] = [];
    const fastDone = (async () => {
      for await (const item of fast) {
        if (item.type === 'event') fastSeen.push(item.seq);
        if (fastSeen.length === 10_000) break;
      }
    })();

    for (let i = 0; i < 10_000; i++) {
      hub.publish('alice', delta(String(i)));
      // The publisher's cost for the stalled subscriber is bounded: its queue never grows.
      expect(stalled.buffered).toBeLessThanOrEqual(8);
      // The publisher yields now and then (as agents do, awaiting the model); the consumer that
      // reads keeps up within the same 8-item bound.
      if (i % 8 === 7) await turn();
    }
    expect(stalled.buffered).toBe(8);
    expect(stalled.lost).toBe(9_992);

    const items = await take(stalled, 9);
    expect(items[0]).toEqual({ type: 'gap', reason: 'overflow', lost: 9_992 });
    expect(texts(items.slice(1))).toEqual(Array.from({ length: 8 }, (_, i) => String(9_992 + i)));
    await expectIdle(stalled);

    expect(roomy.buffered).toBe(10_000);
    expect(roomy.lost).toBe(0);
    roomy.close();
    await fastDone;
    // Seq 1 started alice; every one of her 10 000 events reached the consumer that kept up.
    expect(fastSeen).toEqual(Array.from({ length: 10_000 }, (_, i) => i + 2));
  });

  it('reports each run of losses where it happened, and the counts add up', async () => {
    const hub = createEventHub({ teamId: TEAM, bufferSize: 2 });
    const sub = hub.subscribe();
    for (let i = 1; i <= 5; i++) hub.publish('alice', delta(String(i)));
    expect(await take(sub, 2)).toMatchObject([
      { type: 'gap', lost: 3 },
      { type: 'event', event: { text: '4' } },
    ]);
    for (let i = 6; i <= 8; i++) hub.publish('alice', delta(String(i)));
    // Queue was [5]; 6, 7, 8 arrive: 5 and 6 are dropped.
    expect(await take(sub, 3)).toMatchObject([
      { type: 'gap', lost: 2 },
      { type: 'event', event: { text: '7' } },
      { type: 'event', event: { text: '8' } },
    ]);
    expect(sub.lost).toBe(5);
    await expectIdle(sub);
  });

  it('subscribers that share the live events each keep their own bound and count', async () => {
    const hub = createEventHub({ teamId: TEAM, bufferSize: 4 });
    const wide = hub.subscribe();
    const narrow = hub.subscribe({ bufferSize: 2 });
    const early = hub.subscribe();
    for (let i = 1; i <= 3; i++) hub.publish('alice', delta(String(i)));
    early.close();
    const frozen = { lost: early.lost, buffered: early.buffered };
    for (let i = 4; i <= 10; i++) hub.publish('alice', delta(String(i)));
    // Closed before the overflow: nothing more is counted against it, and it holds nothing.
    expect(frozen).toEqual({ lost: 0, buffered: 0 });
    expect({ lost: early.lost, buffered: early.buffered }).toEqual(frozen);
    expect({ lost: wide.lost, buffered: wide.buffered }).toEqual({ lost: 6, buffered: 4 });
    expect({ lost: narrow.lost, buffered: narrow.buffered }).toEqual({ lost: 8, buffered: 2 });
    expect(await take(wide, 5)).toMatchObject([
      { type: 'gap', reason: 'overflow', lost: 6 },
      ...['7', '8', '9', '10'].map((text) => ({ type: 'event', event: { text } })),
    ]);
    expect(await take(narrow, 3)).toMatchObject([
      { type: 'gap', reason: 'overflow', lost: 8 },
      { type: 'event', event: { text: '9' } },
      { type: 'event', event: { text: '10' } },
    ]);
    hub.publish('alice', delta('11'));
    expect(texts(await take(wide, 1))).toEqual(['11']);
    expect(texts(await take(narrow, 1))).toEqual(['11']);
    expect({ wide: wide.lost, narrow: narrow.lost }).toEqual({ wide: 6, narrow: 8 });
    await expectIdle(wide);
    await expectIdle(narrow);
  });

  it('keeps presence transitions over agent events when it must drop', async () => {
    const hub = createEventHub({ teamId: TEAM, bufferSize: 2 });
    const sub = hub.subscribe({ presence: true });
    hub.publish('alice', delta('1')); // [started, 1]
    hub.publish('alice', delta('2')); // [started, 2]   (1 dropped)
    hub.agentStopped('alice'); //        [started, stopped] (2 dropped)
    const items = await take(sub, 4);
    expect(items).toMatchObject([
      { type: 'presence.snapshot', active: [] },
      { type: 'gap', reason: 'overflow', lost: 2 },
      { type: 'presence', agent: 'alice', state: 'started', seq: 1 },
      { type: 'presence', agent: 'alice', state: 'stopped', seq: 4 },
    ]);
    await expectIdle(sub);
  });
});

describe('createEventHub: history then live', () => {
  it('a late subscriber gets the ring, then live events, with nothing missed or repeated', async () => {
    const hub = createEventHub({ teamId: TEAM, historySize: 3 });
    for (let i = 1; i <= 5; i++) hub.publish('alice', delta(String(i)));
    const sub = hub.subscribe({ agent: 'alice' });
    hub.publish('alice', delta('6'));
    hub.publish('bob', delta('not for alice watchers'));
    hub.publish('alice', delta('7'));
    expect(texts(await take(sub, 5))).toEqual(['3', '4', '5', '6', '7']);
    await expectIdle(sub);
  });

  it('the ring outlives the agent', async () => {
    const hub = createEventHub({ teamId: TEAM });
    hub.publish('alice', delta('done'));
    hub.publish('alice', { type: 'status', status: 'retired' });
    hub.agentStopped('alice');
    expect(hub.isActive('alice')).toBe(false);
    expect(hub.history('alice').map((item) => item.event.type)).toEqual([
      'model.text-delta',
      'status',
    ]);
    const sub = hub.subscribe({ agent: 'alice' });
    expect(events(await take(sub, 2))).toHaveLength(2);
    await expectIdle(sub);
  });

  it('keeps order under concurrent publishers and subscribers joining mid-stream', async () => {
    const hub = createEventHub({ teamId: TEAM, historySize: 10_000, bufferSize: 10_000 });
    const agents = ['alice', 'bob', 'carol'];
    const received: number[][] = [];
    const joinedAt: number[] = [];
    const subscriptions: Promise<void>[] = [];
    const total = agents.length * 200;

    const publisher = async (agent: string) => {
      for (let i = 0; i < 200; i++) {
        hub.publish(agent, delta(`${agent}-${i}`));
        // Yield in different patterns so the three publishers interleave unevenly.
        if (i % (agent.length - 2) === 0) await turn();
        else await Promise.resolve();
      }
    };
    const joiner = async () => {
      for (let k = 0; k < 6; k++) {
        for (let t = 0; t < 17; t++) await Promise.resolve();
        await turn();
        const sub = hub.subscribe();
        joinedAt.push(hub.lastSeq());
        const mine: number[] = [];
        received.push(mine);
        subscriptions.push(
          (async () => {
            for await (const item of sub) {
              expect(item.type).toBe('event');
              if (item.type === 'event') mine.push(item.seq);
              if (mine.length === total) break;
            }
          })(),
        );
      }
    };
    await Promise.all([...agents.map(publisher), joiner()]);
    await Promise.all(subscriptions);

    const all = agents.flatMap((agent) => hub.history(agent).map((item) => item.seq));
    all.sort((a, b) => a - b);
    expect(all).toHaveLength(total);
    expect(received).toHaveLength(6);
    // They really joined mid-stream: each got some history and some live events.
    for (const seq of joinedAt) {
      expect(seq).toBeGreaterThan(0);
      expect(seq).toBeLessThan(all.at(-1)!);
    }
    for (const mine of received) expect(mine).toEqual(all);
  });

  it('property: every fresh subscriber sees each event exactly once or counted in a gap', async () => {
    type Op =
      | { op: 'publish'; agent: number }
      | { op: 'subscribe' }
      | { op: 'pull'; sub: number; count: number }
      | { op: 'close'; sub: number }
      | { op: 'stop'; agent: number };
    const op = fc.oneof(
      { arbitrary: fc.record({ op: fc.constant('publish'), agent: fc.nat(2) }), weight: 6 },
      { arbitrary: fc.record({ op: fc.constant('subscribe') }), weight: 1 },
      {
        arbitrary: fc.record({ op: fc.constant('pull'), sub: fc.nat(5), count: fc.nat(6) }),
        weight: 3,
      },
      { arbitrary: fc.record({ op: fc.constant('close'), sub: fc.nat(5) }), weight: 1 },
      { arbitrary: fc.record({ op: fc.constant('stop'), agent: fc.nat(2) }), weight: 1 },
    ) as fc.Arbitrary<Op>;

    await fc.assert(
      fc.asyncProperty(
        fc.array(op, { maxLength: 80 }),
        fc.integer({ min: 1, max: 4 }),
        async (ops, bufferSize) => {
          const hub = createEventHub({ teamId: TEAM, historySize: 1_000, bufferSize });
          const published: number[] = [];
          hub.listen((item) => {
            if (item.type === 'event') published.push(item.seq);
          });
          const subs: { reader: Reader; startedAt: number; drained?: boolean }[] = [];
          for (const step of ops) {
            if (step.op === 'publish') hub.publish(`agent-${step.agent}`, delta('x'));
            else if (step.op === 'stop') hub.agentStopped(`agent-${step.agent}`);
            else if (step.op === 'subscribe') {
              subs.push({ reader: new Reader(hub.subscribe()), startedAt: published.length });
            } else {
              const entry = subs[step.sub];
              if (entry === undefined) continue;
              if (step.op === 'close') entry.reader.subscription.close();
              else await entry.reader.read(step.count);
            }
          }
          for (const entry of subs) {
            if (entry.reader.subscription.closed) continue;
            await entry.reader.drain();
            entry.drained = true;
          }
          for (const entry of subs) {
            const got = seqs(entry.reader.items);
            // Strictly increasing: nothing repeated, nothing out of order.
            for (let i = 1; i < got.length; i++) expect(got[i]!).toBeGreaterThan(got[i - 1]!);
            // Every item is a published event; history came first and covered all before it.
            const allPublished = new Set(published);
            for (const seq of got) expect(allPublished.has(seq)).toBe(true);
            const history = Math.min(entry.startedAt, got.length);
            expect(got.slice(0, history)).toEqual(published.slice(0, history));
            if (entry.drained) {
              // Drained to the end: received + lost is exactly everything published.
              const lost = entry.reader.items.reduce(
                (n, item) => n + (item.type === 'gap' ? item.lost : 0),
                0,
              );
              expect(got.length + lost).toBe(published.length);
            }
          }
          hub.close();
        },
      ),
      { numRuns: 150 },
    );
  });
});

describe('createEventHub: closing', () => {
  it('close() resolves a pending next() with done and detaches the subscriber', async () => {
    const hub = createEventHub({ teamId: TEAM });
    const sub = hub.subscribe();
    const held = hub.subscribe();
    hub.publish('alice', delta('queued'));
    expect(held.buffered).toBe(1);
    held.close();
    expect(held.buffered).toBe(0);
    const pending = sub.next();
    expect(hub.subscriberCount()).toBe(1);
    sub.close();
    sub.close();
    // 'queued' was still in its buffer, yet close() wins: the pending pull ends.
    expect(await pending).toEqual({ done: true, value: undefined });
    expect(hub.subscriberCount()).toBe(0);
    hub.publish('alice', delta('after'));
    expect(sub.buffered).toBe(0);
    expect((await sub.next()).done).toBe(true);
  });

  it('unsubscribing while a publish is in flight ends cleanly, for every kind of observer', async () => {
    const onError = vi.fn();
    const hub = createEventHub({ teamId: TEAM, onError });
    const victim = hub.subscribe();
    const bystander = hub.subscribe();
    const victimNext = victim.next();
    const order: string[] = [];
    let stopSelf = () => {};
    let stopLater = () => {};
    // Registered in this order; the first one, mid-dispatch, tears the others down.
    hub.listen((item) => {
      if (item.type !== 'event') return;
      order.push(`first:${item.seq}`);
      if (item.seq === 2) {
        victim.close();
        stopLater();
        stopSelf();
      }
    });
    stopSelf = hub.listen((item) => {
      if (item.type === 'event') order.push(`self:${item.seq}`);
    });
    stopLater = hub.listen((item) => {
      if (item.type === 'event') order.push(`later:${item.seq}`);
    });
    hub.publish('alice', delta('1')); // seq 2 (seq 1 started alice)
    hub.publish('alice', delta('2')); // seq 3

    // The victim's pending pull had been woken by seq 2, yet closing first wins: it ends.
    expect((await victimNext).done).toBe(true);
    expect(victim.closed).toBe(true);
    expect(order).toEqual(['first:2', 'first:3']);
    expect(texts(await take(bystander, 2))).toEqual(['1', '2']);
    expect(hub.subscriberCount()).toBe(1);
    expect(onError).not.toHaveBeenCalled();
  });

  it('a consumer leaving its loop while publishers run concurrently never disturbs them', async () => {
    const hub = createEventHub({ teamId: TEAM, bufferSize: 16 });
    const sub = hub.subscribe();
    let publishing = true;
    const publisher = (async () => {
      for (let i = 0; publishing; i++) {
        hub.publish('alice', delta(String(i)));
        if (i % 10 === 9) await turn();
        else await Promise.resolve();
      }
    })();
    let seen = 0;
    for await (const item of sub) {
      if (item.type === 'event') seen++;
      if (seen === 50) break;
    }
    expect(sub.closed).toBe(true);
    expect(hub.subscriberCount()).toBe(0);
    await turn();
    publishing = false;
    await publisher;
    expect(sub.buffered).toBe(0);
  });

  it('an AbortSignal closes the subscription, also when already aborted', async () => {
    const hub = createEventHub({ teamId: TEAM });
    const controller = new AbortController();
    const sub = hub.subscribe({ signal: controller.signal });
    const pending = sub.next();
    controller.abort();
    expect((await pending).done).toBe(true);
    expect(hub.subscriberCount()).toBe(0);
    const late = hub.subscribe({ signal: controller.signal });
    expect(late.closed).toBe(true);
    expect(hub.subscriberCount()).toBe(0);
  });

  it('a listener publishing re-entrantly cannot reorder what others receive', async () => {
    const hub = createEventHub({ teamId: TEAM });
    const sub = hub.subscribe();
    const seen: number[] = [];
    hub.listen((item) => {
      if (item.type === 'event' && item.agent === 'alice') hub.publish('echo', delta('echo'));
    });
    hub.listen((item) => {
      if (item.type === 'event') seen.push(item.seq);
    });
    hub.publish('alice', delta('1'));
    hub.publish('alice', delta('2'));
    const got = seqs(await take(sub, 4));
    expect(got).toEqual([...got].sort((a, b) => a - b));
    expect(seen).toEqual(got);
    expect(seen).toHaveLength(4);
  });

  it('hub.close() lets subscribers drain what they hold, then ends them', async () => {
    const hub = createEventHub({ teamId: TEAM });
    const sub = hub.subscribe();
    hub.publish('alice', delta('1'));
    hub.close();
    hub.publish('alice', delta('ignored'));
    expect(texts(await take(sub, 5))).toEqual(['1']);
    expect(sub.closed).toBe(true);
    expect(hub.subscriberCount()).toBe(0);
  });
});
