import { describe, expect, it } from 'vitest';
import { createEventHub } from '../hub/index.js';
import type { HubItem } from '../hub/types.js';
import {
  LIVE_BATCH_BYTES_MAX,
  LIVE_BATCH_EVENTS_MAX,
  LIVE_BATCHES_PER_SECOND,
  LIVE_COALESCE_MS,
  LIVE_EVENT_BYTES_MAX,
  LIVE_QUEUE_MAX,
  utf8Length,
} from '../limits.js';
import type { AgentEvent, EventSink } from '../ports/events.js';
import type { LiveChannel } from '../ports/team-log.js';
import { createManualClock } from '../testing/manual-clock.js';
import { LIVE_FORMAT_VERSION, LiveRelay, type LiveRelayOptions } from './live-relay.js';

/** A channel that records what is sent and lets the test deliver payloads by hand. */
function fakeChannel() {
  const sent: string[] = [];
  const listeners = new Set<(payload: string) => void>();
  const channel: LiveChannel = {
    send: (payload) => {
      sent.push(payload);
      return true;
    },
    listen(listener) {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
  };
  return {
    channel,
    sent,
    deliver: (payload: string) => {
      for (const listener of listeners) listener(payload);
    },
    listeners,
  };
}

function recordingSink() {
  const published: [string, AgentEvent][] = [];
  const stopped: string[] = [];
  const sink: EventSink & { agentStopped(name: string): void } = {
    publish: (agent, event) => void published.push([agent, event]),
    agentStopped: (name) => void stopped.push(name),
  };
  return { sink, published, stopped };
}

function makeRelay(overrides: Partial<LiveRelayOptions> = {}) {
  const clock = createManualClock();
  const wire = fakeChannel();
  const out = recordingSink();
  const relay = new LiveRelay({
    teamId: 'team-1',
    channel: wire.channel,
    sink: out.sink,
    clock,
    origin: 'here',
    runsHere: () => false,
    ...overrides,
  });
  return { relay, clock, wire, ...out };
}

const decode = (payload: string) =>
  JSON.parse(payload) as { v: number; t: string; o: string; e: [string, AgentEvent][] };

const batch = (events: unknown[], extra: Record<string, unknown> = {}) =>
  JSON.stringify({ v: LIVE_FORMAT_VERSION, t: 'team-1', o: 'there', e: events, ...extra });

describe('LiveRelay: sending', () => {
  it('holds events for the coalescing window, merging one member’s consecutive text deltas', () => {
    const { relay, clock, wire } = makeRelay();
    relay.offer('alice', { type: 'turn.start', reason: 'message' });
    relay.offer('alice', { type: 'model.text-delta', text: 'Hel' });
    relay.offer('bob', { type: 'model.text-delta', text: 'x' });
    relay.offer('alice', { type: 'model.text-delta', text: 'lo ' });
    relay.offer('alice', { type: 'model.text-delta', text: 'wörld' });
    relay.offer('alice', { type: 'tool.call', toolCall: { id: 'c1', name: 't', input: {} } });
    relay.offer('alice', { type: 'model.text-delta', text: 'after' });
    clock.advance(LIVE_COALESCE_MS - 1);
    expect(wire.sent).toEqual([]);
    clock.advance(1);
    expect(wire.sent).toHaveLength(1);
    const sent = decode(wire.sent[0] as string);
    expect(sent).toMatchObject({ v: 1, t: 'team-1', o: 'here' });
    expect(sent.e).toEqual([
      ['alice', { type: 'turn.start', reason: 'message' }],
      ['alice', { type: 'model.text-delta', text: 'Hello wörld' }],
      ['bob', { type: 'model.text-delta', text: 'x' }],
      ['alice', { type: 'tool.call', toolCall: { id: 'c1', name: 't', input: {} } }],
      ['alice', { type: 'model.text-delta', text: 'after' }],
    ]);
    expect(relay.stats()).toMatchObject({ sentBatches: 1, sentEvents: 5 });
  });

  it("builds batches within a channel's own payload bound, and refuses a bound too small", () => {
    const bound = LIVE_EVENT_BYTES_MAX + 1024;
    const wire = fakeChannel();
    const { relay, clock } = makeRelay({ channel: { ...wire.channel, maxPayloadBytes: bound } });
    for (let i = 0; i < 12; i++) {
      relay.offer('alice', { type: 'custom', name: `n${i}`, data: 'c'.repeat(900) });
    }
    clock.advance(LIVE_COALESCE_MS);
    expect(wire.sent.length).toBeGreaterThan(1);
    for (const payload of wire.sent) expect(utf8Length(payload)).toBeLessThanOrEqual(bound);
    const events = wire.sent.flatMap((payload) => decode(payload).e);
    expect(events).toHaveLength(12);
    expect(relay.stats().dropped.oversized).toBe(0);
    for (const tooSmall of [LIVE_EVENT_BYTES_MAX, 1.5, Number.NaN]) {
      expect(() =>
        makeRelay({ channel: { ...fakeChannel().channel, maxPayloadBytes: tooSmall } }),
      ).toThrow(expect.objectContaining({ code: 'INVALID_ARGUMENT' }));
    }
  });

  it('never sends a durable record', () => {
    const { relay, clock, wire } = makeRelay();
    relay.offer('alice', { type: 'record', record: { seq: 1 } as never });
    clock.advance(LIVE_COALESCE_MS * 10);
    expect(wire.sent).toEqual([]);
  });

  it('stops merging a delta at the event bound and drops (and counts) a single oversized event', () => {
    const { relay, clock, wire } = makeRelay();
    const piece = 'a'.repeat(1000);
    for (let i = 0; i < 10; i++) relay.offer('alice', { type: 'model.text-delta', text: piece });
    relay.offer('alice', { type: 'custom', name: 'blob', data: 'b'.repeat(LIVE_EVENT_BYTES_MAX) });
    clock.advance(LIVE_COALESCE_MS);
    const events = wire.sent.flatMap((payload) => decode(payload).e);
    const text = events.map(([, event]) => (event as { text: string }).text).join('');
    expect(text).toBe(piece.repeat(10));
    expect(events.length).toBeGreaterThan(1);
    for (const item of events) {
      expect(utf8Length(JSON.stringify(item))).toBeLessThanOrEqual(LIVE_EVENT_BYTES_MAX);
    }
    for (const payload of wire.sent) {
      expect(utf8Length(payload)).toBeLessThanOrEqual(LIVE_BATCH_BYTES_MAX);
    }
    expect(relay.stats().dropped.oversized).toBe(1);
  });

  it('cuts the long text of a tool result or a turn’s end to fit, rather than dropping the event', () => {
    const { relay, clock, wire } = makeRelay();
    const long = 'é€😀x'.repeat(LIVE_EVENT_BYTES_MAX); // 1 to 4 bytes a character, pairs too
    relay.offer('alice', {
      type: 'tool.result',
      toolCallId: 'c1',
      toolName: 'read',
      isError: false,
      text: long,
    });
    relay.offer('alice', { type: 'turn.end', stopReason: 'end_turn', steps: 1, text: long });
    relay.offer('alice', { type: 'turn.end', stopReason: 'end_turn', steps: 1, text: 'short' });
    clock.advance(LIVE_COALESCE_MS);
    const events = wire.sent.flatMap((payload) => decode(payload).e);
    expect(events).toHaveLength(3);
    for (const item of events) {
      expect(utf8Length(JSON.stringify(item))).toBeLessThanOrEqual(LIVE_EVENT_BYTES_MAX);
    }
    const [result, end, short] = events.map(([, event]) => event) as unknown as [
      { text: string; toolCallId: string },
      { text: string },
      { text: string },
    ];
    expect(result.toolCallId).toBe('c1');
    for (const cut of [result.text, end.text]) {
      expect(cut.endsWith('…')).toBe(true);
      expect(long.startsWith(cut.slice(0, -1))).toBe(true);
      // most of the room is used
      expect(utf8Length(cut)).toBeGreaterThan(LIVE_EVENT_BYTES_MAX / 2);
    }
    expect(short.text).toBe('short');
    expect(relay.stats().dropped.oversized).toBe(0);
  });

  it('sends at most LIVE_BATCHES_PER_SECOND batches in any second; the rest wait their turn', () => {
    const { relay, clock, wire } = makeRelay();
    // two of these fill a batch, so they need more batches than one second allows
    const big = { type: 'custom', name: 'blob', data: 'x'.repeat(3000) } as const;
    const offered = LIVE_BATCHES_PER_SECOND * 2 + 10;
    for (let i = 0; i < offered; i++) relay.offer('alice', big);
    expect(wire.sent).toEqual([]); // nothing goes out on the publisher's call
    clock.advance(LIVE_COALESCE_MS);
    expect(wire.sent).toHaveLength(LIVE_BATCHES_PER_SECOND);
    clock.advance(999);
    expect(wire.sent).toHaveLength(LIVE_BATCHES_PER_SECOND);
    clock.advance(1);
    expect(wire.sent.length).toBeGreaterThan(LIVE_BATCHES_PER_SECOND);
    clock.advance(10_000);
    const total = wire.sent.reduce((sum, payload) => sum + decode(payload).e.length, 0);
    expect(total).toBe(offered);
    for (const payload of wire.sent) {
      expect(utf8Length(payload)).toBeLessThanOrEqual(LIVE_BATCH_BYTES_MAX);
    }
  });

  it('drops (and counts) events past the queue bound instead of blocking', () => {
    const { relay, clock, wire } = makeRelay();
    const offered = LIVE_QUEUE_MAX + 10;
    for (let i = 0; i < offered; i++) {
      relay.offer('alice', { type: 'status', status: i % 2 === 0 ? 'running' : 'idle' });
    }
    expect(relay.stats().dropped['queue-full']).toBe(10);
    clock.advance(10_000);
    for (const payload of wire.sent) {
      expect(decode(payload).e.length).toBeLessThanOrEqual(LIVE_BATCH_EVENTS_MAX);
    }
    const total = wire.sent.reduce((sum, payload) => sum + decode(payload).e.length, 0);
    expect(total).toBe(LIVE_QUEUE_MAX);
    expect(relay.stats().sentEvents).toBe(LIVE_QUEUE_MAX);
  });

  it('counts the events of a batch the channel could not take', () => {
    const { relay, clock } = makeRelay({
      channel: { send: () => false, listen: () => () => undefined },
    });
    relay.offer('alice', { type: 'status', status: 'running' });
    relay.offer('alice', { type: 'model.text-delta', text: 'a' });
    clock.advance(LIVE_COALESCE_MS);
    expect(relay.stats()).toMatchObject({ sentBatches: 0, sentEvents: 0 });
    expect(relay.stats().dropped.unsent).toBe(2);
  });

  it('sends what it holds on close, then nothing more', () => {
    const { relay, clock, wire } = makeRelay();
    relay.offer('alice', { type: 'status', status: 'inactive' });
    relay.close();
    expect(wire.sent.map((payload) => decode(payload).e)).toEqual([
      [['alice', { type: 'status', status: 'inactive' }]],
    ]);
    relay.offer('alice', { type: 'status', status: 'running' });
    clock.advance(LIVE_COALESCE_MS * 10);
    expect(wire.sent).toHaveLength(1);
  });
});

describe('LiveRelay: receiving', () => {
  it('publishes another process’s events into the local sink, in order', () => {
    const { wire, published, relay } = makeRelay();
    wire.deliver(
      batch([
        ['bob', { type: 'turn.start', reason: 'task-claim', taskId: 'task-1' }],
        ['bob', { type: 'model.text-delta', text: 'hi' }],
      ]),
    );
    expect(published).toEqual([
      ['bob', { type: 'turn.start', reason: 'task-claim', taskId: 'task-1' }],
      ['bob', { type: 'model.text-delta', text: 'hi' }],
    ]);
    expect(relay.stats().receivedEvents).toBe(2);
  });

  it('ignores its own batches and other teams’ batches', () => {
    const { wire, published } = makeRelay();
    wire.deliver(batch([['bob', { type: 'status', status: 'idle' }]], { o: 'here' }));
    wire.deliver(batch([['bob', { type: 'status', status: 'idle' }]], { t: 'team-2' }));
    expect(published).toEqual([]);
  });

  it('drops and counts malformed, oversized and other-version payloads without throwing', () => {
    const { wire, published, relay } = makeRelay();
    wire.deliver('not json');
    wire.deliver('[1,2,3]');
    wire.deliver(batch([], { v: 2 }));
    wire.deliver(JSON.stringify({ v: 1, t: 'team-1', o: 'there' }));
    wire.deliver(
      batch([['bob', { type: 'custom', name: 'x', data: 'y'.repeat(LIVE_BATCH_BYTES_MAX) }]]),
    );
    wire.deliver(
      batch(
        Array.from({ length: LIVE_BATCH_EVENTS_MAX + 1 }, () => [
          'bob',
          { type: 'status', status: 'idle' },
        ]),
      ),
    );
    wire.deliver(
      batch([
        ['bob', { type: 'record', record: {} }],
        ['bob', { type: 'status', status: 'sleeping' }],
        ['bob', { type: 'model.text-delta', text: 7 }],
        ['', { type: 'status', status: 'idle' }],
        'bob',
        ['bob', { type: 'status', status: 'idle' }],
      ]),
    );
    expect(published).toEqual([['bob', { type: 'status', status: 'idle' }]]);
    expect(relay.stats().dropped).toEqual({
      oversized: 0,
      'queue-full': 0,
      'malformed-batch': 5,
      'unsupported-version': 1,
      'malformed-event': 5,
      unsent: 0,
    });
  });

  it('drops events of a member this process runs (a stale sender)', () => {
    const { wire, published } = makeRelay({ runsHere: (name) => name === 'alice' });
    wire.deliver(
      batch([
        ['alice', { type: 'model.text-delta', text: 'stale' }],
        ['bob', { type: 'model.text-delta', text: 'fresh' }],
      ]),
    );
    expect(published).toEqual([['bob', { type: 'model.text-delta', text: 'fresh' }]]);
  });
});

describe('LiveRelay: without a sink', () => {
  it('only sends: it does not listen, and shows no other process’s members', () => {
    const { relay, clock, wire, published } = makeRelay({ sink: undefined });
    expect(wire.listeners.size).toBe(0);
    relay.sync(new Map([['bob', { processId: 'p1', status: 'idle' }]]));
    relay.offer('alice', { type: 'status', status: 'running' });
    clock.advance(LIVE_COALESCE_MS);
    expect(wire.sent).toHaveLength(1);
    expect(published).toEqual([]);
    expect(relay.receiving).toBe(false);
  });
});

describe('LiveRelay: presence from the placement', () => {
  it('shows a member placed elsewhere, stops it when its process goes, and starts it again on the survivor', () => {
    const clock = createManualClock();
    const hub = createEventHub({ teamId: 'team-1', clock });
    const wire = fakeChannel();
    const relay = new LiveRelay({
      teamId: 'team-1',
      channel: wire.channel,
      sink: hub,
      clock,
      origin: 'here',
      runsHere: () => false,
    });
    const items: HubItem[] = [];
    hub.listen((item) => items.push(item), { presence: true });
    relay.sync(new Map([['bob', { processId: 'p1', status: 'idle' }]]));
    expect(hub.isActive('bob')).toBe(true);
    // the same status again (a relayed one, or the next view) is not repeated
    wire.deliver(batch([['bob', { type: 'status', status: 'running' }]]));
    relay.sync(new Map([['bob', { processId: 'p1', status: 'running' }]]));
    expect(items.filter((item) => item.type === 'event')).toHaveLength(2);
    // p1's lease ran out: bob is placed nowhere
    relay.sync(new Map());
    expect(hub.isActive('bob')).toBe(false);
    // p2 took it over
    relay.sync(new Map([['bob', { processId: 'p2', status: 'idle' }]]));
    expect(hub.isActive('bob')).toBe(true);
    // moved straight from p2 to p3: the run on p2 ended, the one on p3 began
    relay.sync(new Map([['bob', { processId: 'p3', status: 'idle' }]]));
    const presence = items.flatMap((item) => (item.type === 'presence' ? [item.state] : []));
    expect(presence).toEqual(['started', 'stopped', 'started', 'stopped', 'started']);
    expect(hub.isActive('bob')).toBe(true);
  });

  it('leaves a member this process runs to its runner', () => {
    const { relay, published, stopped } = makeRelay({ runsHere: (name) => name === 'alice' });
    relay.sync(new Map([['alice', { processId: 'p1', status: 'idle' }]]));
    relay.sync(new Map());
    expect(published).toEqual([]);
    expect(stopped).toEqual([]);
  });

  it('keeps a hub’s resume contract for relayed events: a reconnect after a cursor gets exactly the rest', async () => {
    const clock = createManualClock();
    const hub = createEventHub({ teamId: 'team-1', clock });
    const wire = fakeChannel();
    new LiveRelay({
      teamId: 'team-1',
      channel: wire.channel,
      sink: hub,
      clock,
      origin: 'here',
      runsHere: () => false,
    });
    wire.deliver(batch([['bob', { type: 'model.text-delta', text: 'one' }]]));
    const cursor = hub.lastSeq();
    wire.deliver(batch([['bob', { type: 'model.text-delta', text: 'two' }]]));
    wire.deliver(batch([['bob', { type: 'model.text-delta', text: 'three' }]]));
    const resumed = hub.subscribe({ afterSeq: cursor, epoch: hub.epoch });
    const texts: string[] = [];
    for await (const item of resumed) {
      if (item.type === 'event') texts.push((item.event as { text: string }).text);
      if (texts.length === 2) break;
    }
    expect(texts).toEqual(['two', 'three']);
  });
});

describe('LiveRelay: two processes', () => {
  it('carries one process’s output into the other’s hub and never back', () => {
    const clock = createManualClock();
    const listeners = new Set<(payload: string) => void>();
    const bus: LiveChannel = {
      // a broadcast that, like NOTIFY, reaches the sender too
      send: (payload) => {
        for (const listener of [...listeners]) listener(payload);
        return true;
      },
      listen(listener) {
        listeners.add(listener);
        return () => listeners.delete(listener);
      },
    };
    const hubA = createEventHub({ teamId: 'team-1', clock });
    const hubB = createEventHub({ teamId: 'team-1', clock });
    const a = new LiveRelay({
      teamId: 'team-1',
      channel: bus,
      sink: hubA,
      clock,
      origin: 'a',
      runsHere: (n) => n === 'alice',
    });
    new LiveRelay({
      teamId: 'team-1',
      channel: bus,
      sink: hubB,
      clock,
      origin: 'b',
      runsHere: (n) => n === 'bob',
    });
    a.offer('alice', { type: 'model.text-delta', text: 'hi' });
    clock.advance(LIVE_COALESCE_MS);
    expect(hubB.history('alice').map((item) => item.event)).toEqual([
      { type: 'model.text-delta', text: 'hi' },
    ]);
    expect(hubA.history('alice')).toEqual([]);
  });
});
