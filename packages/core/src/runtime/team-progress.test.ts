import { describe, expect, it } from 'vitest';
import type { Member } from '../records.js';
import { createManualClock } from '../testing/manual-clock.js';
import { ChangeWaiters } from './change-waiters.js';
import { teamProgress } from './team-progress.js';

const member = (id: string, name: string): Member =>
  ({
    id,
    name,
    description: name,
    agentType: 'worker',
    provider: 'scripted:scripted-1',
    context: 'fresh',
    phase: 'active',
  }) as Member;

describe('teamProgress', () => {
  const lead = member('lead', 'lead');
  const person = member('op', 'operator');
  const alice = member('a', 'alice');

  it('does not count a connected client with nothing of the team to do', () => {
    const progress = teamProgress({
      members: [lead, person, alice],
      selfId: 'lead',
      statusOf: (m) => (m.id === 'op' ? 'running' : 'idle'),
      pending: () => [],
      isClient: (m) => m.id === 'op',
      ownsTask: () => false,
    });
    expect(progress.progressing).toBe(false);
  });

  it('counts a client that works on a task it owns', () => {
    const progress = teamProgress({
      members: [lead, person, alice],
      selfId: 'lead',
      statusOf: () => 'idle',
      pending: () => [],
      isClient: (m) => m.id === 'op',
      ownsTask: (id) => id === 'op',
    });
    expect(progress).toMatchObject({ progressing: true, working: ['operator'] });
  });
});

describe('ChangeWaiters.recheck', () => {
  it('ends a wait that asked untilNoProgress once the team stalls, and only that one', async () => {
    const clock = createManualClock();
    const waiters = new ChangeWaiters(clock, () => false);
    let stalled: string | undefined;
    const asked = waiters.wait({ timeoutMs: 60_000, untilNoProgress: true }, () => stalled);
    const plain = waiters.wait({ timeoutMs: 60_000 }, () => stalled);
    let settled = false;
    void asked.then(() => {
      settled = true;
    });
    waiters.recheck();
    await Promise.resolve();
    expect(settled).toBe(false);
    stalled = 'no other member is working';
    waiters.recheck();
    await expect(asked).resolves.toEqual({
      changed: false,
      records: [],
      noProgress: 'no other member is working',
    });
    clock.advance(60_000);
    await expect(plain).resolves.toEqual({ changed: false, records: [] });
  });
});
