import { describe, expect, it } from 'vitest';
import { createEventHub } from './event-hub.js';
import { delta, memberRecord, TEAM } from './test-helpers.js';

describe('event hub display names', () => {
  it('hands out the bare type, then "#2", "#3", … and recycles the lowest free name', () => {
    const hub = createEventHub({ teamId: TEAM });
    const a = hub.acquireDisplayName('explore');
    const b = hub.acquireDisplayName('explore');
    const c = hub.acquireDisplayName('explore');
    const other = hub.acquireDisplayName('review');
    expect([a.name, b.name, c.name, other.name]).toEqual([
      'explore',
      'explore #2',
      'explore #3',
      'review',
    ]);
    b.release();
    expect(hub.acquireDisplayName('explore').name).toBe('explore #2');
    a.release();
    const again = hub.acquireDisplayName('explore');
    expect(again.name).toBe('explore');
    expect(hub.acquireDisplayName('explore').name).toBe('explore #4');
  });

  it('a second release does not free the name from its next holder', () => {
    const hub = createEventHub({ teamId: TEAM });
    const first = hub.acquireDisplayName('explore');
    first.release();
    const second = hub.acquireDisplayName('explore');
    expect(second.name).toBe('explore');
    hub.publish(second.name, delta('working'));
    first.release();
    expect(hub.isActive('explore')).toBe(true);
    expect(hub.acquireDisplayName('explore').name).toBe('explore #2');
  });

  it('avoids team member names and names of active agents', () => {
    const hub = createEventHub({ teamId: TEAM });
    hub.publish('lead', { type: 'record', record: memberRecord(1, 'explore') });
    hub.publish('review', delta('an agent publishing under this name'));
    expect(hub.acquireDisplayName('explore').name).toBe('explore #2');
    expect(hub.acquireDisplayName('review').name).toBe('review #2');
    hub.agentStopped('review');
    expect(hub.acquireDisplayName('review').name).toBe('review');
  });

  it('release marks the subagent stopped; its history stays under the name', async () => {
    const hub = createEventHub({ teamId: TEAM });
    const watcher = hub.subscribe({ presence: true, events: false });
    const lease = hub.acquireDisplayName('explore');
    hub.publish(lease.name, delta('looking'));
    expect(hub.activeAgents()).toEqual(['explore']);
    lease.release();
    lease.release();
    expect(hub.activeAgents()).toEqual([]);
    expect(hub.history('explore')).toHaveLength(1);
    const items = [];
    for (let i = 0; i < 3; i++) items.push((await watcher.next()).value);
    expect(items).toMatchObject([
      { type: 'presence.snapshot', active: [] },
      { type: 'presence', agent: 'explore', state: 'started' },
      { type: 'presence', agent: 'explore', state: 'stopped' },
    ]);
  });
});
