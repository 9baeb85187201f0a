import { describe, expect, it } from 'vitest';
import { createManualClock } from '../testing/manual-clock.js';
import { createEventHub } from './event-hub.js';
import { delta, expectIdle, TEAM, take } from './test-helpers.js';
import type { HubItem } from './types.js';

function presence(items: readonly HubItem[]): string[] {
  return items.flatMap((item) =>
    item.type === 'presence'
      ? [`${item.agent}:${item.state}${item.status ? `:${item.status}` : ''}`]
      : [],
  );
}

describe('event hub presence', () => {
  it('started precedes the first event, stopped follows the runner, and again on return', async () => {
    const hub = createEventHub({ teamId: TEAM });
    const sub = hub.subscribe({ presence: true });
    hub.publish('alice', delta('1'));
    hub.publish('alice', delta('2'));
    hub.agentStopped('alice');
    hub.agentStopped('alice'); // already stopped: nothing
    hub.agentStopped('nobody'); // unknown: nothing
    hub.publish('alice', delta('3'));
    const items = await take(sub, 7);
    expect(items.map((item) => ('seq' in item ? `${item.type}@${item.seq}` : item.type))).toEqual([
      'presence.snapshot',
      'presence@1',
      'event@2',
      'event@3',
      'presence@4',
      'presence@5',
      'event@6',
    ]);
    expect(presence(items)).toEqual(['alice:started', 'alice:stopped', 'alice:started']);
    await expectIdle(sub);
  });

  it('a terminal status stops the agent after that event, and never starts a stopped one', async () => {
    const hub = createEventHub({ teamId: TEAM });
    const sub = hub.subscribe({ presence: true });
    hub.publish('alice', { type: 'status', status: 'running' });
    hub.publish('alice', { type: 'status', status: 'idle' });
    hub.publish('alice', { type: 'status', status: 'failed' });
    hub.publish('bob', { type: 'status', status: 'inactive' });
    hub.publish('carol', delta('x'));
    hub.publish('carol', { type: 'status', status: 'retired' });
    const items = await take(sub, 11);
    expect(presence(items)).toEqual([
      'alice:started',
      'alice:stopped:failed',
      'carol:started',
      'carol:stopped:retired',
    ]);
    const failed = items.findIndex(
      (i) => i.type === 'event' && i.event.type === 'status' && i.event.status === 'failed',
    );
    expect(items[failed + 1]).toMatchObject({ type: 'presence', agent: 'alice', state: 'stopped' });
    expect(hub.activeAgents()).toEqual([]);
    expect(hub.knownAgents().map((a) => [a.name, a.active, a.events])).toEqual([
      ['alice', false, 3],
      ['bob', false, 1],
      ['carol', false, 2],
    ]);
    await expectIdle(sub);
  });

  it('a new presence subscriber first receives the currently active agents', async () => {
    const clock = createManualClock({ start: 100 });
    const hub = createEventHub({ teamId: TEAM, clock });
    hub.publish('alice', delta('a'));
    clock.advance(5);
    hub.publish('bob', delta('b'));
    hub.publish('carol', delta('c'));
    hub.agentStopped('bob');
    hub.publish('alice', delta('a2'));

    expect(hub.activeAgents()).toEqual(['alice', 'carol']);
    expect(hub.isActive('alice')).toBe(true);
    expect(hub.isActive('bob')).toBe(false);
    expect(hub.isActive('nobody')).toBe(false);
    expect(hub.knownAgents()).toEqual([
      { name: 'alice', active: true, startedSeq: 1, lastSeq: 8, lastAt: 105, events: 2 },
      { name: 'bob', active: false, startedSeq: 3, lastSeq: 7, lastAt: 105, events: 1 },
      { name: 'carol', active: true, startedSeq: 5, lastSeq: 6, lastAt: 105, events: 1 },
    ]);

    // Presence only: the snapshot, then live transitions, no agent events.
    const watcher = hub.subscribe({ presence: true, events: false });
    const [snapshot] = await take(watcher, 1);
    expect(snapshot).toEqual({
      type: 'presence.snapshot',
      teamId: TEAM,
      active: [
        { name: 'alice', active: true, startedSeq: 1, lastSeq: 8, lastAt: 105, events: 2 },
        { name: 'carol', active: true, startedSeq: 5, lastSeq: 6, lastAt: 105, events: 1 },
      ],
    });
    hub.publish('bob', delta('back'));
    hub.publish('alice', delta('more'));
    hub.agentStopped('carol');
    expect(presence(await take(watcher, 2))).toEqual(['bob:started', 'carol:stopped']);
    await expectIdle(watcher);

    // Filtered by agent: the snapshot and the transitions of that agent only.
    const bobOnly = hub.subscribe({ presence: true, agent: 'bob' });
    hub.agentStopped('bob');
    hub.agentStopped('alice');
    const items = await take(bobOnly, 4);
    expect(items[0]).toMatchObject({ type: 'presence.snapshot', active: [{ name: 'bob' }] });
    expect(items.slice(1).map((i) => i.type)).toEqual(['event', 'event', 'presence']);
    expect(presence(items)).toEqual(['bob:stopped']);
    await expectIdle(bobOnly);
  });

  it('listeners receive presence only when they ask for it', () => {
    const hub = createEventHub({ teamId: TEAM });
    const plain: string[] = [];
    const withPresence: string[] = [];
    hub.listen((item) => plain.push(item.type));
    hub.listen((item) => withPresence.push(item.type), { presence: true, events: false });
    hub.publish('alice', delta('a'));
    hub.agentStopped('alice');
    expect(plain).toEqual(['event']);
    expect(withPresence).toEqual(['presence', 'presence']);
  });
});
