import { describe, expect, it, vi } from 'vitest';
import { TeamError } from '../errors.js';
import type { TeamRecord } from '../records.js';
import { createManualClock, createSequentialIds } from '../testing/manual-clock.js';
import { createMemorySharedTeam } from '../testing/memory-shared.js';
import type { MemoryTeamLog, MemoryTranscriptStore } from '../testing/memory-stores.js';
import { createMemoryTeamLog, createMemoryTranscriptStore } from '../testing/memory-stores.js';
import { createScriptedModel } from '../testing/scripted-model.js';
import { createSimpleFormat } from '../testing/simple-format.js';
import { createAgentRegistry } from './agents.js';
import { openTeam } from './open-team.js';
import { type Harness, notedLead, openHarness, spawnIdle, TEAM_ID } from './test-harness.js';

async function spawnOutside(h: Harness, name: string, prompt = `Hi ${name}.`) {
  await h.service.spawnTeammate(h.service.lead, {
    name,
    description: `${name} works outside`,
    prompt,
    agentType: 'outside',
  });
  return h.service.externalMember(name);
}

async function codeOf(promise: Promise<unknown> | (() => unknown)): Promise<string> {
  try {
    await (typeof promise === 'function' ? promise() : promise);
  } catch (error) {
    if (TeamError.isInstance(error)) return error.code;
    throw error;
  }
  throw new Error('expected a TeamError');
}

function records(log: MemoryTeamLog): readonly TeamRecord[] {
  return log.records();
}

function delivered(log: MemoryTeamLog, messageId: string): number {
  return records(log).filter((r) => r.type === 'message.delivered' && r.messageId === messageId)
    .length;
}

describe('external members', () => {
  it('run no model: their mail waits in the inbox until the client acknowledges it', async () => {
    const h = await openHarness({ scripts: { lead: notedLead }, external: true });
    const ext = await spawnOutside(h, 'ext', 'review the parser');
    await h.service.idle();
    expect(h.model.requests('ext')).toEqual([]);
    const info = h.service.listMembers(h.service.lead).find((m) => m.name === 'ext');
    expect(info).toMatchObject({ phase: 'active', provider: 'external', status: 'inactive' });

    const first = await h.service.readInbox(ext);
    expect(first.messages).toHaveLength(1);
    const [message] = first.messages;
    expect(message).toMatchObject({ from: 'lead', kind: 'message' });
    expect(message?.text).toContain('review the parser');
    // read again without an acknowledgement: the same message, the same rendering
    const again = await h.service.readInbox(ext);
    expect(again.messages.map((m) => [m.id, m.text])).toEqual([[message?.id, message?.text]]);
    expect(delivered(h.log, message?.id as string)).toBe(0);

    expect(await h.service.ackInbox(ext, { cursor: first.cursor as string })).toEqual({
      acknowledged: 1,
      retired: false,
    });
    expect(delivered(h.log, message?.id as string)).toBe(1);
    // a repeated acknowledgement writes nothing
    expect(await h.service.ackInbox(ext, { cursor: again.cursor as string })).toEqual({
      acknowledged: 0,
      retired: false,
    });
    expect(delivered(h.log, message?.id as string)).toBe(1);
    expect(await h.service.readInbox(ext)).toEqual({ messages: [], remaining: 0, retired: false });
    await h.service.dispose();
  });

  it('acknowledges the previous page on the next read after its cursor, page by page', async () => {
    const h = await openHarness({ scripts: { lead: notedLead }, external: true });
    const ext = await spawnOutside(h, 'ext');
    for (let i = 1; i <= 4; i++) {
      await h.service.sendMessage(h.service.lead, { to: 'ext', text: `note ${i}` });
    }
    const seen: string[] = [];
    let page = await h.service.readInbox(ext, { limit: 2 });
    expect(page.remaining).toBe(3);
    while (page.messages.length > 0) {
      for (const m of page.messages) seen.push(m.text);
      page = await h.service.readInbox(ext, { after: page.cursor, limit: 2 });
    }
    expect(seen).toHaveLength(5);
    expect(seen.slice(1).map((t) => t.match(/note \d/)?.[0])).toEqual([
      'note 1',
      'note 2',
      'note 3',
      'note 4',
    ]);
    const deliveredIds = records(h.log).filter((r) => r.type === 'message.delivered');
    expect(deliveredIds).toHaveLength(5);
    await h.service.dispose();
  });

  it('gives unacknowledged mail again after a restart, and acknowledged mail never', async () => {
    const h = await openHarness({ scripts: { lead: notedLead }, external: true });
    const ext = await spawnOutside(h, 'ext', 'first');
    await h.service.sendMessage(h.service.lead, { to: 'ext', text: 'second' });
    const page = await h.service.readInbox(ext, { limit: 1 });
    await h.service.ackInbox(ext, { cursor: page.cursor as string });
    const unacked = await h.service.readInbox(ext);
    expect(unacked.messages.map((m) => m.text)).toEqual([expect.stringContaining('second')]);
    await h.service.dispose(); // the client "crashed" before acknowledging `second`

    const memory = { log: h.log, transcripts: h.transcripts as MemoryTranscriptStore };
    const h2 = await openHarness({ scripts: { lead: notedLead }, external: true, memory });
    const ext2 = h2.service.externalMember('ext');
    const after = await h2.service.readInbox(ext2);
    expect(after.messages.map((m) => m.id)).toEqual(unacked.messages.map((m) => m.id));
    // a cursor issued before the restart still acknowledges
    expect(await h2.service.ackInbox(ext2, { cursor: unacked.cursor as string })).toEqual({
      acknowledged: 1,
      retired: false,
    });
    await h2.service.dispose();
    const h3 = await openHarness({ scripts: { lead: notedLead }, external: true, memory });
    expect((await h3.service.readInbox(h3.service.externalMember('ext'))).messages).toEqual([]);
    await h3.service.dispose();
  });

  it('refuses bad input with typed errors and writes nothing', async () => {
    const h = await openHarness({ scripts: { lead: notedLead, bob: notedLead }, external: true });
    await spawnIdle(h, 'bob');
    const ext = await spawnOutside(h, 'ext');
    const other = await spawnOutside(h, 'other');
    const page = await h.service.readInbox(other);
    const before = h.log.records().length;
    expect(await codeOf(h.service.ackInbox(ext, { cursor: page.cursor as string }))).toBe(
      'INVALID_CURSOR',
    );
    expect(await codeOf(h.service.readInbox(ext, { after: 'not a cursor!' }))).toBe(
      'INVALID_CURSOR',
    );
    expect(await codeOf(h.service.readInbox(ext, { after: 'x'.repeat(9000) }))).toBe(
      'INVALID_CURSOR',
    );
    const forged = Buffer.from(
      JSON.stringify({ v: 1, m: ext.memberId, ids: page.messages.map((m) => m.id) }),
    ).toString('base64url');
    expect(await codeOf(h.service.ackInbox(ext, { cursor: forged }))).toBe('INVALID_CURSOR');
    expect(await codeOf(h.service.readInbox(ext, { limit: 0 }))).toBe('INVALID_ARGUMENT');
    expect(await codeOf(h.service.readInbox(ext, { limit: 51 }))).toBe('INVALID_ARGUMENT');
    expect(h.log.records().length).toBe(before);
    // the mail of `other` is still pending after every refusal
    expect((await h.service.readInbox(other)).messages).toHaveLength(1);

    expect(await codeOf(() => h.service.externalMember('bob'))).toBe('NOT_EXTERNAL');
    expect(await codeOf(() => h.service.externalMember('nobody'))).toBe('UNKNOWN_MEMBER');
    expect(await codeOf(h.service.readInbox(h.service.lead))).toBe('NOT_EXTERNAL');
    expect(await codeOf(() => h.service.watchInbox(h.service.lead, () => {}))).toBe('NOT_EXTERNAL');
    await h.service.dispose();
  });

  it('refuses a cursor naming a message never queued, before and after a restart, and writes nothing', async () => {
    // snapshots after every record: the restart restores the delivered ids from one
    const log = createMemoryTeamLog({ teamId: TEAM_ID, snapshots: { everyRecords: 1 } });
    const memory = { log, transcripts: createMemoryTranscriptStore() };
    const h = await openHarness({ scripts: { lead: notedLead }, external: true, memory });
    const ext = await spawnOutside(h, 'ext');
    await h.service.sendMessage(h.service.lead, { to: 'ext', text: 'second' });
    const first = await h.service.readInbox(ext, { limit: 1 });
    await h.service.ackInbox(ext, { cursor: first.cursor as string });
    const pending = await h.service.readInbox(ext);
    const cursorOf = (ids: string[]) =>
      Buffer.from(JSON.stringify({ v: 1, m: ext.memberId, ids })).toString('base64url');
    const pendingId = pending.messages[0]?.id as string;
    // an unknown id spoils the whole cursor: the member's own pending mail stays pending
    const withUnknown = cursorOf([pendingId, 'msg-never-queued']);
    const before = h.log.records().length;
    expect(await codeOf(h.service.ackInbox(ext, { cursor: withUnknown }))).toBe('INVALID_CURSOR');
    expect(await codeOf(h.service.readInbox(ext, { after: withUnknown }))).toBe('INVALID_CURSOR');
    expect(h.log.records().length).toBe(before);
    expect(delivered(h.log, pendingId)).toBe(0);
    await h.service.dispose();
    const deliveredAt = log
      .records()
      .findIndex((r) => r.type === 'message.delivered' && r.messageId === first.messages[0]?.id);
    expect(log.storedSnapshots().at(-1)?.seq).toBeGreaterThan(deliveredAt);

    const h2 = await openHarness({ scripts: { lead: notedLead }, external: true, memory });
    const ext2 = h2.service.externalMember('ext');
    expect(await codeOf(h2.service.ackInbox(ext2, { cursor: withUnknown }))).toBe('INVALID_CURSOR');
    // the member's own delivered mail, acknowledged again after the restart: nothing to do
    expect(await h2.service.ackInbox(ext2, { cursor: first.cursor as string })).toEqual({
      acknowledged: 0,
      retired: false,
    });
    expect(h.log.records().length).toBe(before);
    expect((await h2.service.readInbox(ext2)).messages.map((m) => m.id)).toEqual([pendingId]);
    await h2.service.dispose();
  });

  it('shows a shutdown request first, and retires the member when it is acknowledged', async () => {
    const h = await openHarness({ scripts: { lead: notedLead }, external: true });
    const ext = await spawnOutside(h, 'ext');
    const task = await h.service.createTask(h.service.lead, {
      subject: 'Parse',
      description: 'Write the parser',
    });
    await h.service.updateTask(ext, { taskId: task.id, action: { type: 'claim' } });
    await h.service.shutdown(h.service.lead, { target: 'ext', reason: 'done for today' });
    const page = await h.service.readInbox(ext);
    expect(page.messages.map((m) => m.kind)).toEqual(['shutdown_request', 'message']);
    const result = await h.service.ackInbox(ext, { cursor: page.cursor as string });
    expect(result).toEqual({ acknowledged: 2, retired: true });
    const member = h.service.listMembers(h.service.lead).find((m) => m.name === 'ext');
    expect(member?.phase).toBe('retired');
    expect(h.service.getTask(h.service.lead, { taskId: task.id })).toMatchObject({
      status: 'pending',
    });
    expect(await codeOf(h.service.readInbox(ext))).toBe('NOT_A_MEMBER');
    await h.service.dispose();
  });

  it('reads only the kinds asked for, so a host can leave a shutdown request unread', async () => {
    const h = await openHarness({ scripts: { lead: notedLead }, external: true });
    const ext = await spawnOutside(h, 'ext');
    await h.service.shutdown(h.service.lead, { target: 'ext' });
    await h.service.sendMessage(h.service.lead, { to: 'ext', text: 'after' });
    const page = await h.service.readInbox(ext, { kinds: ['message', 'idle_notification'] });
    expect(page.messages.map((m) => m.kind)).toEqual(['message', 'message']);
    expect(page.remaining).toBe(0);
    expect(await h.service.ackInbox(ext, { cursor: page.cursor as string })).toEqual({
      acknowledged: 2,
      retired: false,
    });
    const rest = await h.service.readInbox(ext);
    expect(rest.messages.map((m) => m.kind)).toEqual(['shutdown_request']);
    expect(h.service.listMembers(h.service.lead).find((m) => m.name === 'ext')?.phase).toBe(
      'active',
    );
    // every kind of the record schema can be asked for, the approval kinds included
    const approvals = await h.service.readInbox(ext, {
      kinds: ['approval_request', 'approval_decision', 'gate_feedback'],
    });
    expect(approvals.messages).toEqual([]);
    for (const kinds of [[], ['nonsense'], 'message']) {
      expect(
        await codeOf(h.service.readInbox(ext, { kinds: kinds as never })),
        JSON.stringify(kinds),
      ).toBe('INVALID_ARGUMENT');
    }
    await h.service.dispose();
  });

  it('tells watchers when mail arrives, and shows presence from the calls', async () => {
    const clock = createManualClock();
    const h = await openHarness({
      scripts: { lead: notedLead },
      external: true,
      clock,
      externalMembers: { idleAfterMs: 1_000, goneAfterMs: 5_000 },
    });
    const ext = await spawnOutside(h, 'ext');
    const status = () =>
      h.service.listMembers(h.service.lead).find((m) => m.name === 'ext')?.status;
    let rang = 0;
    const stop = h.service.watchInbox(ext, () => rang++);
    const sent = await h.service.sendMessage(h.service.lead, { to: 'ext', text: 'ping' });
    expect(rang).toBe(1);
    expect(sent.status).toBe('queued'); // the client has not called in yet
    stop();
    await h.service.sendMessage(h.service.lead, { to: 'ext', text: 'pong' });
    expect(rang).toBe(1);

    await h.service.readInbox(ext);
    expect(status()).toBe('running');
    expect((await h.service.sendMessage(h.service.lead, { to: 'ext', text: 'x' })).status).toBe(
      'accepted',
    );
    clock.advance(1_000);
    expect(status()).toBe('idle');
    const statuses = h.sink.events
      .filter((e) => e.agent === 'ext' && e.event.type === 'status')
      .map((e) => (e.event as { status: string }).status);
    expect(statuses).toEqual(['running', 'idle']);
    await h.service.dispose();
  });

  it('releases the tasks of a member silent past goneAfterMs, and tells the lead', async () => {
    const clock = createManualClock();
    const h = await openHarness({
      scripts: { lead: notedLead },
      external: true,
      clock,
      externalMembers: { idleAfterMs: 1_000, goneAfterMs: 5_000 },
    });
    const ext = await spawnOutside(h, 'ext');
    const task = await h.service.createTask(h.service.lead, {
      subject: 'Parse',
      description: 'Write the parser',
    });
    await h.service.updateTask(ext, { taskId: task.id, action: { type: 'claim' } });
    // a wait in progress is not silence
    const controller = new AbortController();
    const waiting = h.service
      .waitForChange(ext, { timeoutMs: 3_600_000, signal: controller.signal })
      .catch((error: unknown) => error);
    clock.advance(60_000);
    const status = () =>
      h.service.listMembers(h.service.lead).find((m) => m.name === 'ext')?.status;
    expect(status()).toBe('idle');
    expect(h.service.getTask(ext, { taskId: task.id }).status).toBe('in_progress');
    controller.abort();
    expect(TeamError.hasCode(await waiting, 'ABORTED')).toBe(true);
    clock.advance(4_999);
    expect(h.service.getTask(ext, { taskId: task.id }).status).toBe('in_progress');
    clock.advance(1);
    await h.service.idle();
    expect(status()).toBe('inactive');
    expect(h.service.getTask(h.service.lead, { taskId: task.id })).toMatchObject({
      status: 'pending',
    });
    const notice = h.log
      .records()
      .find(
        (r) =>
          r.type === 'message.queued' &&
          r.message.kind === 'idle_notification' &&
          r.message.senderName === 'ext',
      );
    expect(JSON.stringify(notice)).toContain('went silent');
    await h.service.dispose();
  });

  it('releases, after a restart, the tasks of a member whose client never comes back', async () => {
    const clock = createManualClock();
    const options = {
      scripts: { lead: notedLead },
      external: true,
      clock,
      externalMembers: { idleAfterMs: 1_000, goneAfterMs: 5_000 },
    };
    const h = await openHarness(options);
    const ext = await spawnOutside(h, 'ext');
    const task = await h.service.createTask(h.service.lead, { subject: 'A', description: 'a' });
    await h.service.updateTask(ext, { taskId: task.id, action: { type: 'claim' } });
    await h.service.dispose();
    const memory = { log: h.log, transcripts: h.transcripts as MemoryTranscriptStore };
    const h2 = await openHarness({ ...options, memory });
    clock.advance(5_000);
    await h2.service.idle();
    expect(h2.service.getTask(h2.service.lead, { taskId: task.id }).status).toBe('pending');
    await h2.service.dispose();
  });

  it('lets a client lead the team: teammates report to its inbox', async () => {
    const model = createScriptedModel({ scripts: { bob: () => ({ text: 'bob reporting' }) } });
    const team = await openTeam({
      teamId: 't-ext',
      log: createMemoryTeamLog({ teamId: 't-ext' }),
      transcripts: createMemoryTranscriptStore(),
      format: createSimpleFormat(),
      agents: createAgentRegistry([
        { type: 'client', external: true },
        { type: 'worker', systemPrompt: 'You work.', model },
      ]),
      lead: { agentType: 'client' },
    });
    expect(await codeOf(team.promptLead('hello'))).toBe('EXTERNAL_MEMBER');
    const lead = team.externalMember('lead');
    expect(lead).toBe(team.lead);
    await team.spawnTeammate(lead, {
      name: 'bob',
      description: 'helps',
      prompt: 'Say hi.',
      agentType: 'worker',
    });
    await team.idle();
    const page = await team.readInbox(lead);
    expect(page.messages.map((m) => [m.from, m.kind])).toEqual([['bob', 'idle_notification']]);
    expect(page.messages[0]?.text).toContain('bob reporting');
    await team.dispose();
  });

  it('in a team spread over processes, is served by the process that claims it', async () => {
    const shared = createMemorySharedTeam({ teamId: 't-shared' });
    const model = createScriptedModel({ scripts: { lead: notedLead } });
    const transcripts = createMemoryTranscriptStore();
    const open = (index: number, serve: boolean | string[]) =>
      openTeam({
        teamId: 't-shared',
        log: shared.join({ runs: { lead: index === 0 } }).log,
        transcripts,
        format: createSimpleFormat(),
        agents: createAgentRegistry([
          { type: 'lead', systemPrompt: 'You lead.', model },
          { type: 'outside', external: true },
        ]),
        lead: { agentType: 'lead' },
        ids: createSequentialIds(`p${index}`),
        externalMembers: { serve },
      });
    // joined in this order, `c` would be the least-loaded willing process if it listed `ext`
    const a = await open(0, false);
    const c = await open(1, ['someone-else']);
    const b = await open(2, ['ext']);
    let rang = 0;
    await a.spawnTeammate(a.lead, {
      name: 'ext',
      description: 'outside',
      prompt: 'hello from the lead',
      agentType: 'outside',
    });
    const extId = a.listMembers(a.lead).find((m) => m.name === 'ext')?.memberId as string;
    // the one process that serves `ext` claims it
    await vi.waitUntil(() => shared.placementOf(extId) !== undefined);
    expect(shared.placementOf(extId)?.participant).toBe(2);
    expect(await codeOf(() => a.externalMember('ext'))).toBe('NOT_PLACED_HERE');
    expect(await codeOf(() => c.externalMember('ext'))).toBe('NOT_PLACED_HERE');
    const ext = b.externalMember('ext');
    b.watchInbox(ext, () => rang++);
    // mail sent in another process rings here and is read here
    await a.sendMessage(a.lead, { to: 'ext', text: 'second' });
    await vi.waitUntil(() => rang > 0);
    const page = await b.readInbox(ext);
    expect(page.messages.map((m) => m.text)).toEqual([
      expect.stringContaining('hello from the lead'),
      expect.stringContaining('second'),
    ]);
    await b.ackInbox(ext, { cursor: page.cursor as string });
    const deliveredRecords = shared.records().filter((r) => r.type === 'message.delivered');
    expect(deliveredRecords).toHaveLength(2);
    await Promise.all([a.dispose(), b.dispose(), c.dispose()]);
  });
});
