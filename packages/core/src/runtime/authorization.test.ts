import { describe, expect, it } from 'vitest';
import type { TeamErrorCode } from '../errors.js';
import { TeamError } from '../errors.js';
import type { AgentRef } from './agents.js';
import type { TeamService } from './service-types.js';
import type { Harness } from './test-harness.js';
import { notedLead, openHarness, spawnIdle } from './test-harness.js';

const whoami = ({ call }: { call: number }) =>
  call === 1 ? { toolCalls: [{ name: 'whoami' }] } : { text: 'ok' };

async function team(): Promise<{ h: Harness; alice: AgentRef; bob: AgentRef }> {
  const h = await openHarness({
    scripts: { lead: notedLead, alice: whoami, bob: whoami },
    idleClaim: false,
  });
  await spawnIdle(h, 'alice');
  await spawnIdle(h, 'bob');
  return { h, alice: h.refs.get('alice') as AgentRef, bob: h.refs.get('bob') as AgentRef };
}

async function codeOf(action: () => unknown): Promise<TeamErrorCode | undefined> {
  try {
    await action();
  } catch (error) {
    if (TeamError.isInstance(error)) return error.code;
    throw error;
  }
  return undefined;
}

/** Every service method, called with `agent`. */
function everyMethod(service: TeamService, agent: AgentRef): (() => unknown)[] {
  return [
    () => service.membership(agent),
    () => service.listMembers(agent),
    () =>
      service.spawnTeammate(agent, {
        name: 'zed',
        description: 'z',
        prompt: 'z',
        agentType: 'worker',
      }),
    () => service.sendMessage(agent, { to: 'bob', text: 'hi' }),
    () => service.createTask(agent, { subject: 's', description: 'd' }),
    () => service.getTask(agent, { taskId: 'task-1' }),
    () => service.listTasks(agent),
    () => service.updateTask(agent, { taskId: 'task-1', action: { type: 'claim' } }),
    () => service.waitForChange(agent, { timeoutMs: 10_000 }),
    () => service.interrupt(agent, { target: 'bob' }),
    () => service.shutdown(agent, { target: 'bob' }),
  ];
}

describe('authorization', () => {
  it('a teammate cannot spawn, interrupt, shut down others or reassign', async () => {
    const { h, alice } = await team();
    await h.service.createTask(h.service.lead, { subject: 'T', description: 't' });
    const before = h.log.records().length;
    expect(
      await codeOf(() =>
        h.service.spawnTeammate(alice, {
          name: 'eve',
          description: 'e',
          prompt: 'e',
          agentType: 'worker',
        }),
      ),
    ).toBe('LEAD_ONLY');
    expect(await codeOf(() => h.service.interrupt(alice, { target: 'bob' }))).toBe('LEAD_ONLY');
    expect(await codeOf(() => h.service.shutdown(alice, { target: 'bob' }))).toBe('LEAD_ONLY');
    expect(await codeOf(() => h.service.shutdown(alice, { target: 'alice' }))).toBe('LEAD_ONLY');
    expect(
      await codeOf(() =>
        h.service.updateTask(alice, {
          taskId: 'task-1',
          action: { type: 'reassign', ownerId: h.memberId('bob') },
        }),
      ),
    ).toBe('NOT_ALLOWED_TO_REASSIGN');
    // Nothing was written by any refused call.
    expect(h.log.records()).toHaveLength(before);
    expect(h.service.membership(alice)).toMatchObject({ isLead: false, status: 'idle' });
    // The lead may do all of it.
    await h.service.updateTask(h.service.lead, {
      taskId: 'task-1',
      action: { type: 'reassign', ownerId: h.memberId('bob') },
    });
    expect(h.service.getTask(alice, { taskId: 'task-1' }).ownerId).toBe(h.memberId('bob'));
  });

  it('refuses a credential the service did not issue, even one with a real member id', async () => {
    const { h, bob } = await team();
    await h.service.createTask(h.service.lead, { subject: 'T', description: 't' });
    const forgedLead = { memberId: h.service.lead.memberId, name: 'lead' };
    const forgedBob = { ...bob };
    for (const forged of [forgedLead, forgedBob]) {
      expect(h.service.tryMembership(forged)).toBeUndefined();
      for (const call of everyMethod(h.service, forged)) {
        expect(await codeOf(call)).toBe('NOT_A_MEMBER');
      }
    }
    // A credential of another team service is not one of this service either.
    const other = await openHarness({ scripts: { lead: notedLead } });
    expect(await codeOf(() => h.service.listMembers(other.service.lead))).toBe('NOT_A_MEMBER');
    expect(await codeOf(() => other.service.listMembers(h.service.lead))).toBe('NOT_A_MEMBER');
    expect(h.service.tryMembership(h.service.lead)?.isLead).toBe(true);
  });

  it('refuses the credential of a retired member', async () => {
    const { h, alice, bob } = await team();
    await h.service.shutdown(h.service.lead, { target: 'bob' });
    await h.service.idle();
    expect(h.service.listMembers(alice).find((m) => m.name === 'bob')?.phase).toBe('retired');
    expect(h.service.tryMembership(bob)).toBeUndefined();
    for (const call of everyMethod(h.service, bob)) {
      expect(await codeOf(call)).toBe('NOT_A_MEMBER');
    }
    expect(await codeOf(() => h.service.sendMessage(alice, { to: 'bob', text: 'hi' }))).toBe(
      'INVALID_PHASE',
    );
  });

  it('refuses messages to unknown targets, to oneself, to full mailboxes and oversized ones before writing', async () => {
    const h = await openHarness({
      scripts: { lead: notedLead, bob: () => ({ text: 'ok' }) },
      limits: { maxPendingPerMember: 2, maxMessageBytes: 100 },
      idleClaim: false,
    });
    await spawnIdle(h, 'bob');
    const lead = h.service.lead;
    const before = h.log.records().length;
    expect(await codeOf(() => h.service.sendMessage(lead, { to: 'nobody', text: 'x' }))).toBe(
      'UNKNOWN_TARGET',
    );
    expect(await codeOf(() => h.service.sendMessage(lead, { to: 'lead', text: 'x' }))).toBe(
      'SELF_MESSAGE',
    );
    expect(
      await codeOf(() => h.service.sendMessage(lead, { to: 'bob', text: 'x'.repeat(200) })),
    ).toBe('MESSAGE_TOO_LARGE');
    expect(h.log.records()).toHaveLength(before);
    await h.service.sendMessage(lead, { to: 'bob', text: 'one', delivery: 'quiet' });
    await h.service.sendMessage(lead, { to: 'bob', text: 'two', delivery: 'quiet' });
    expect(await codeOf(() => h.service.sendMessage(lead, { to: 'bob', text: 'three' }))).toBe(
      'MAILBOX_FULL',
    );
    expect(h.log.records()).toHaveLength(before + 2);
    // Control kinds are never refused by the bound: a full mailbox can still be shut down.
    await h.service.shutdown(lead, { target: 'bob' });
    await h.service.idle();
    expect(h.service.listMembers(lead).find((m) => m.name === 'bob')?.phase).toBe('retired');
  });
});
