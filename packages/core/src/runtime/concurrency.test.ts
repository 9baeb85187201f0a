import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import type { TeamError } from '../errors.js';
import type { AgentRef } from './agents.js';
import { defineTool } from './agents.js';
import type { Harness } from './test-harness.js';
import { deferred, messageIdsIn, notedLead, openHarness, spawnIdle } from './test-harness.js';

/** Spawns teammates that call `whoami` on their first turn, so their credentials are captured. */
async function spawnWithRefs(h: Harness, names: readonly string[]): Promise<AgentRef[]> {
  for (const name of names) await spawnIdle(h, name);
  return names.map((name) => {
    const ref = h.refs.get(name);
    if (ref === undefined) throw new Error(`no credential captured for ${name}`);
    return ref;
  });
}

const whoamiThenIdle =
  () =>
  ({ call }: { call: number }) =>
    call === 1 ? { toolCalls: [{ name: 'whoami' }] } : { text: `turn ${call}` };

describe('concurrent sends', () => {
  it('50 concurrent sends to one target are logged in call order and delivered in that order', async () => {
    const names = ['alice', 'carol'];
    const h = await openHarness({
      scripts: {
        lead: notedLead,
        alice: whoamiThenIdle(),
        carol: whoamiThenIdle(),
        // bob reads a message per turn; every other one arrives while it works and is spliced.
        bob: ({ call }) =>
          call % 2 === 0 ? { toolCalls: [{ name: 'list_members' }] } : { text: `read ${call}` },
      },
    });
    const [alice, carol] = await spawnWithRefs(h, names);
    await spawnIdle(h, 'bob');
    const senders = [h.service.lead, alice as AgentRef, carol as AgentRef];
    const before = h.log.records().length;
    const results = await Promise.all(
      Array.from({ length: 50 }, (_, i) =>
        h.service.sendMessage(senders[i % 3] as AgentRef, { to: 'bob', text: `message ${i}` }),
      ),
    );
    const queued = h.log
      .records()
      .slice(before)
      .filter((r) => r.type === 'message.queued' && r.message.targetId === h.memberId('bob'));
    expect(queued.map((r) => (r.type === 'message.queued' ? r.message.id : ''))).toEqual(
      results.map((r) => r.messageId),
    );
    expect(queued.map((r) => (r.type === 'message.queued' ? r.message.content : []))).toEqual(
      Array.from({ length: 50 }, (_, i) => [{ type: 'text', text: `message ${i}` }]),
    );
    const seqs = h.log.records().map((r) => r.seq);
    expect(seqs).toEqual(seqs.map((_, i) => i + 1));

    await h.service.idle();
    expect(h.sink.errors()).toEqual([]);
    // Each message reached bob's transcript exactly once, FIFO within each sender's tier.
    const delivered = messageIdsIn(h.transcripts.raw(h.memberId('bob'))).slice(1);
    expect([...delivered].sort()).toEqual(results.map((r) => r.messageId).sort());
    for (let s = 0; s < 3; s++) {
      const fromSender = results.filter((_, i) => i % 3 === s).map((r) => r.messageId);
      expect(delivered.filter((id) => fromSender.includes(id))).toEqual(fromSender);
    }
  });
});

describe('racing claims', () => {
  const TEN = Array.from({ length: 10 }, (_, i) => `mate-${i}`);

  it('10 members claiming one task at once produce exactly one owner', async () => {
    const scripts = Object.fromEntries(TEN.map((name) => [name, whoamiThenIdle()]));
    const h = await openHarness({
      scripts: { lead: notedLead, ...scripts },
      limits: { maxMembers: 10 },
      idleClaim: false,
    });
    const refs = await spawnWithRefs(h, TEN);
    const task = await h.service.createTask(h.service.lead, { subject: 'One', description: '1' });
    const outcomes = await Promise.allSettled(
      refs.map((ref) => h.service.updateTask(ref, { taskId: task.id, action: { type: 'claim' } })),
    );
    const won = outcomes.filter((o) => o.status === 'fulfilled');
    const lost = outcomes.filter((o) => o.status === 'rejected');
    expect(won).toHaveLength(1);
    expect(lost.map((o) => (o.status === 'rejected' ? (o.reason as TeamError).code : ''))).toEqual(
      Array(9).fill('TASK_OWNED'),
    );
    const winner = refs[outcomes.findIndex((o) => o.status === 'fulfilled')] as AgentRef;
    expect(h.service.getTask(h.service.lead, { taskId: task.id })).toMatchObject({
      status: 'in_progress',
      ownerId: winner.memberId,
      revision: 2,
    });
    const claims = h.log
      .records()
      .filter((r) => r.type === 'task' && r.task.id === task.id && r.task.status === 'in_progress');
    expect(claims).toHaveLength(1);
  });

  it('10 parked teammates idle-claiming one new task produce exactly one owner', async () => {
    const scripts = Object.fromEntries(
      TEN.map((name) => [
        name,
        ({ call }: { call: number }) => ({ text: call === 1 ? 'Ready.' : `working ${name}` }),
      ]),
    );
    const h = await openHarness({
      scripts: { lead: notedLead, ...scripts },
      limits: { maxMembers: 10 },
    });
    for (const name of TEN) await spawnIdle(h, name);
    await h.service.createTask(h.service.lead, { subject: 'One', description: '1' });
    await h.service.idle();
    const task = h.service.getTask(h.service.lead, { taskId: 'task-1' });
    expect(task.status).toBe('in_progress');
    const claimTurns = h.sink.events.filter(
      (e) => e.event.type === 'turn.start' && e.event.reason === 'task-claim',
    );
    expect(claimTurns).toHaveLength(1);
    expect(h.memberId(claimTurns[0]?.agent ?? '')).toBe(task.ownerId);
    expect(TEN.reduce((n, name) => n + h.model.calls(name), 0)).toBe(11);
  });
});

describe('shutdown priority', () => {
  it('a shutdown queued behind 1,000 peer messages is handled at the next step boundary', async () => {
    const started = deferred();
    const gate = deferred<string>();
    const slow = defineTool({
      name: 'slow',
      description: 'Takes a while.',
      inputSchema: z.object({}),
      async execute() {
        started.resolve();
        return gate.promise;
      },
    });
    const h = await openHarness({
      scripts: {
        lead: notedLead,
        alice: whoamiThenIdle(),
        bob: [{ text: 'Hello.' }, { toolCalls: [{ name: 'slow' }] }],
      },
      workerTools: [slow],
      limits: { maxPendingPerMember: 2_000 },
      idleClaim: false,
    });
    const [alice] = await spawnWithRefs(h, ['alice']);
    await spawnIdle(h, 'bob');
    await h.service.createTask(h.service.lead, { subject: 'Held', description: 'by bob' });
    const bobRef = { memberId: h.memberId('bob'), name: 'bob' };
    expect(bobRef.memberId).toBeTruthy();
    await h.service.sendMessage(h.service.lead, { to: 'bob', text: 'Work.' });
    await started.promise;
    await h.service.updateTask(h.service.lead, {
      taskId: 'task-1',
      action: { type: 'reassign', ownerId: h.memberId('bob') },
    });
    for (let i = 0; i < 1_000; i++) {
      await h.service.sendMessage(alice as AgentRef, { to: 'bob', text: `peer ${i}` });
    }
    await h.service.shutdown(h.service.lead, { target: 'bob', reason: 'Stop now.' });
    gate.resolve('done');
    await h.service.idle();

    // No further model call: the step boundary saw the shutdown and ended the turn.
    expect(h.model.calls('bob')).toBe(2);
    expect(h.transcript('bob').slice(-3)).toEqual([
      'assistant: -> slow {}',
      'tool slow: done',
      'user: [shutdown request from lead]\nStop now.',
    ]);
    const bob = h.service.listMembers(h.service.lead).find((m) => m.name === 'bob');
    expect(bob).toMatchObject({ phase: 'retired', status: 'retired' });
    // Its task went back to the board; the peer mail is left undelivered, never lost silently.
    expect(h.service.getTask(h.service.lead, { taskId: 'task-1' })).toMatchObject({
      status: 'pending',
    });
    expect(
      h.log
        .records()
        .filter((r) => r.type === 'message.delivered' && r.targetId === bobRef.memberId),
    ).toHaveLength(3);
    // A retired member's credential and name are refused from now on.
    await expect(
      h.service.sendMessage(alice as AgentRef, { to: 'bob', text: 'hello?' }),
    ).rejects.toMatchObject({ code: 'INVALID_PHASE' });
  });
});
