import { describe, expect, it } from 'vitest';
import { TRANSCRIPT_SCHEMA_VERSION } from '../records.js';
import { foldTeam, TeamState } from '../state/index.js';
import { createManualClock } from '../testing/manual-clock.js';
import type { MemoryTeamLog, MemoryTranscriptStore } from '../testing/memory-stores.js';
import { createMemoryTeamLog, createMemoryTranscriptStore } from '../testing/memory-stores.js';
import type { CrashableStores } from './test-harness.js';
import {
  crashableStores,
  deferred,
  describeMessage,
  describeTranscript,
  messageIdsIn,
  notedLead,
  openHarness,
  spawnIdle,
  TEAM_ID,
} from './test-harness.js';

function memoryStores(): { log: MemoryTeamLog; transcripts: MemoryTranscriptStore } {
  return {
    log: createMemoryTeamLog({ teamId: TEAM_ID }),
    transcripts: createMemoryTranscriptStore(),
  };
}

const ready = ({ call }: { call: number }) => ({ text: call === 1 ? 'Ready.' : `reply ${call}` });

describe('recovery on the in-memory stores', () => {
  it('redelivers pending mail once and acknowledges a message the transcript already holds', async () => {
    const memory = memoryStores();
    let crashOn: string | undefined;
    let stores: CrashableStores | undefined;
    const hold = deferred();
    const a = await openHarness({
      memory,
      // The "process" dies right after bob's transcript durably holds `crashOn`, before the log
      // records its delivery.
      wrap: (m) => {
        stores = crashableStores(m.log, m.transcripts, ({ entries }) =>
          entries.some(
            (e) =>
              e.message.source?.kind === 'team-message' && e.message.source.messageId === crashOn,
          ),
        );
        return stores;
      },
      scripts: { lead: notedLead, bob: [{ text: 'Ready.', gate: hold.promise }] },
    });
    await a.service.spawnTeammate(a.service.lead, {
      name: 'bob',
      description: 'helps',
      prompt: 'Hi bob.',
      agentType: 'worker',
    });
    const first = await a.service.sendMessage(a.service.lead, { to: 'bob', text: 'first' });
    const second = await a.service.sendMessage(a.service.lead, { to: 'bob', text: 'second' });
    crashOn = first.messageId;
    hold.resolve();
    await stores?.crashed;

    const bobId = a.memberId('bob');
    const crashedLog = foldTeam(memory.log.records(), { teamId: TEAM_ID });
    expect(crashedLog.pendingMail.filter((m) => m.targetId === bobId).map((m) => m.id)).toEqual([
      first.messageId,
      second.messageId,
    ]);
    expect(messageIdsIn(memory.transcripts.raw(bobId)).slice(1)).toEqual([first.messageId]);

    // A new process opens the same stores; the old service is simply dropped.
    const b = await openHarness({
      memory,
      scripts: { lead: notedLead, bob: ({ call }) => ({ text: `resumed ${call}` }) },
      ids: 'b',
    });
    await b.service.idle();
    expect(b.sink.errors()).toEqual([]);
    expect(describeTranscript(memory.transcripts.raw(bobId))).toEqual([
      'user: [message from lead]\nHi bob.',
      'assistant: Ready.',
      'user: [message from lead]\nfirst',
      'assistant: resumed 1',
      'user: [message from lead]\nsecond',
      'assistant: resumed 2',
    ]);
    // The held message was acknowledged (not written again) and answered; each message was
    // delivered exactly once.
    const firstRequest = b.model.requests('bob')[0];
    expect(firstRequest?.messages.map(describeMessage).slice(-1)).toEqual([
      'user: [message from lead]\nfirst',
    ]);
    const deliveredIds = memory.log
      .records()
      .flatMap((r) => (r.type === 'message.delivered' ? [r.messageId] : []));
    expect(deliveredIds.filter((id) => id === first.messageId)).toHaveLength(1);
    expect(deliveredIds.filter((id) => id === second.messageId)).toHaveLength(1);
    expect(foldTeam(memory.log.records(), { teamId: TEAM_ID }).pendingMail).toEqual([]);
  });

  it('revives a stopped teammate once, however many wakes arrive together', async () => {
    const memory = memoryStores();
    const a = await openHarness({ memory, scripts: { lead: notedLead, bob: ready } });
    await spawnIdle(a, 'bob');
    const bobId = a.memberId('bob');

    let stores: CrashableStores | undefined;
    const b = await openHarness({
      memory,
      wrap: (m) => {
        stores = crashableStores(m.log, m.transcripts);
        return stores;
      },
      scripts: { lead: notedLead, bob: ({ call }) => ({ text: `b${call}` }) },
      ids: 'b',
    });
    await b.service.idle();
    // Nothing woke bob at open: his transcript was read once, to see that the lead heard of his
    // last reply, and no runner started.
    expect(stores?.loads.get(bobId)).toBe(1);
    expect(b.model.requests('bob')).toHaveLength(0);
    expect(b.service.listMembers(b.service.lead).find((m) => m.name === 'bob')?.status).toBe(
      'inactive',
    );
    const sent = await Promise.all(
      [1, 2, 3, 4, 5].map((i) =>
        b.service.sendMessage(b.service.lead, { to: 'bob', text: `m${i}` }),
      ),
    );
    expect(sent.map((s) => s.status)).toEqual([
      'queued',
      'accepted',
      'accepted',
      'accepted',
      'accepted',
    ]);
    await b.service.idle();
    expect(stores?.loads.get(bobId)).toBe(2);
    const ids = messageIdsIn(memory.transcripts.raw(bobId));
    expect(ids.slice(1)).toEqual(sent.map((s) => s.messageId));
    expect(b.sink.errors()).toEqual([]);
  });

  it('settles members a crash left provisioning', async () => {
    const clock = createManualClock();
    const state = new TeamState({ teamId: TEAM_ID, clock });
    const log = createMemoryTeamLog({ teamId: TEAM_ID });
    const transcripts = createMemoryTranscriptStore();
    const records = [
      ...state.createLead({ id: TEAM_ID, agentType: 'lead', provider: 'scripted:scripted-1' }),
      state.spawnMember(TEAM_ID, {
        id: 'm-started',
        name: 'started',
        description: 'got going',
        agentType: 'worker',
        provider: 'scripted:scripted-1',
        context: 'fresh',
      }),
      state.spawnMember(TEAM_ID, {
        id: 'm-never',
        name: 'never',
        description: 'never ran',
        agentType: 'worker',
        provider: 'scripted:scripted-1',
        context: 'fresh',
      }),
    ];
    await log.append({ records });
    await transcripts.append({
      memberId: 'm-started',
      entries: [
        {
          schemaVersion: TRANSCRIPT_SCHEMA_VERSION,
          at: clock.now(),
          message: { role: 'user', content: [{ type: 'text', text: 'seed' }] },
        },
      ],
    });
    const h = await openHarness({
      memory: { log, transcripts },
      scripts: { lead: notedLead },
      clock,
    });
    await h.service.idle();
    const members = h.service.listMembers(h.service.lead);
    expect(members.map((m) => [m.name, m.phase, m.status, m.error])).toEqual([
      ['lead', 'active', 'idle', undefined],
      ['started', 'active', 'inactive', undefined],
      ['never', 'failed', 'failed', 'interrupted while provisioning'],
    ]);
  });

  it('resumes in-progress tasks and, with idle-claim, revives just enough teammates for ready tasks', async () => {
    const memory = memoryStores();
    const names = ['alice', 'bob', 'carol', 'dave'];
    const a = await openHarness({
      memory,
      scripts: { lead: notedLead, ...Object.fromEntries(names.map((n) => [n, ready])) },
      idleClaim: false,
    });
    for (const name of names) await spawnIdle(a, name);
    for (const subject of ['One', 'Two', 'Three']) {
      await a.service.createTask(a.service.lead, { subject, description: subject.toLowerCase() });
    }
    await a.service.updateTask(a.service.lead, {
      taskId: 'task-1',
      action: { type: 'reassign', ownerId: a.memberId('alice') },
    });
    // alice reads the assignment notice and stays idle with task-1 in progress.
    await a.service.idle();

    let stores: CrashableStores | undefined;
    const b = await openHarness({
      memory,
      wrap: (m) => {
        stores = crashableStores(m.log, m.transcripts);
        return stores;
      },
      scripts: {
        lead: notedLead,
        ...Object.fromEntries(names.map((n) => [n, () => ({ text: `${n} on it` })])),
      },
      ids: 'b',
    });
    await b.service.idle();
    expect(b.sink.errors()).toEqual([]);
    const revived = names.filter((n) => b.model.requests(n).length > 0);
    // alice resumes task-1; two more teammates take task-2 and task-3; dave stays asleep.
    expect(revived).toEqual(['alice', 'bob', 'carol']);
    const turns = b.sink.events.flatMap((e) =>
      e.event.type === 'turn.start' ? [`${e.agent}:${e.event.reason}:${e.event.taskId ?? ''}`] : [],
    );
    expect(turns.filter((t) => !t.startsWith('lead'))).toEqual([
      'alice:task-claim:task-1',
      'bob:task-claim:task-2',
      'carol:task-claim:task-3',
    ]);
    const owners = b.service
      .listTasks(b.service.lead)
      .tasks.map((t) => [
        t.id,
        t.status,
        t.ownerId &&
          b.service.listMembers(b.service.lead).find((m) => m.memberId === t.ownerId)?.name,
      ]);
    expect(owners).toEqual([
      ['task-1', 'in_progress', 'alice'],
      ['task-2', 'in_progress', 'bob'],
      ['task-3', 'in_progress', 'carol'],
    ]);
    expect(b.transcript('alice').slice(-2)).toEqual([
      'claim task-1: You claimed task-1: One\none\nOther open tasks: task-2 Two; task-3 Three',
      'assistant: alice on it',
    ]);
  });

  it('does not revive retired members that still have undelivered mail', async () => {
    const memory = memoryStores();
    const a = await openHarness({
      memory,
      scripts: { lead: notedLead, bob: ready },
      limits: { maxPendingPerMember: 5 },
    });
    await spawnIdle(a, 'bob');
    await a.service.sendMessage(a.service.lead, { to: 'bob', text: 'later', delivery: 'quiet' });
    await a.service.shutdown(a.service.lead, { target: 'bob' });
    await a.service.idle();
    let stores: CrashableStores | undefined;
    const b = await openHarness({
      memory,
      wrap: (m) => {
        stores = crashableStores(m.log, m.transcripts);
        return stores;
      },
      scripts: { lead: notedLead },
      ids: 'b',
    });
    await b.service.idle();
    expect(stores?.loads.has(a.memberId('bob'))).toBe(false);
    expect(b.service.listMembers(b.service.lead).find((m) => m.name === 'bob')?.status).toBe(
      'retired',
    );
  });

  it('tells the lead of a reply whose idle notice its process never wrote, once, whoever reopens', async () => {
    const memory = memoryStores();
    let stores: CrashableStores | undefined;
    // The "process" dies right after bob's reply is durable, before its idle notice is.
    const a = await openHarness({
      memory,
      wrap: (m) => {
        stores = crashableStores(m.log, m.transcripts, ({ entries }) =>
          entries.some(
            (e) =>
              e.message.role === 'assistant' &&
              e.message.toolCalls.length === 0 &&
              !e.message.source &&
              e.at >= 0 &&
              describeMessage(e.message) === 'assistant: Ready.',
          ),
        );
        return stores;
      },
      scripts: { lead: notedLead, bob: [{ text: 'Ready.' }] },
    });
    await a.service.spawnTeammate(a.service.lead, {
      name: 'bob',
      description: 'helps',
      prompt: 'Hi bob.',
      agentType: 'worker',
    });
    await stores?.crashed;
    const bobId = a.memberId('bob');
    const notices = () =>
      memory.log
        .records()
        .flatMap((r) =>
          r.type === 'message.queued' &&
          r.message.kind === 'idle_notification' &&
          r.message.senderId === bobId
            ? [r.message]
            : [],
        );
    expect(notices()).toEqual([]);

    const b = await openHarness({ memory, scripts: { lead: notedLead, bob: ready }, ids: 'b' });
    await b.service.idle();
    expect(b.sink.errors()).toEqual([]);
    expect(notices()).toHaveLength(1);
    expect(JSON.stringify(notices()[0]?.content)).toContain('Ready.');
    // bob was not asked again: the notice comes from his transcript, not from a new turn
    expect(b.model.requests('bob')).toHaveLength(0);
    await b.service.dispose();

    const c = await openHarness({ memory, scripts: { lead: notedLead, bob: ready }, ids: 'c' });
    await c.service.idle();
    expect(notices()).toHaveLength(1);
    await c.service.dispose();
  });

  it('does not repeat an idle notice its process wrote when the team reopens', async () => {
    const memory = memoryStores();
    const a = await openHarness({ memory, scripts: { lead: notedLead, bob: ready } });
    await spawnIdle(a, 'bob');
    const bobId = a.memberId('bob');
    const count = () =>
      memory.log
        .records()
        .filter(
          (r) =>
            r.type === 'message.queued' &&
            r.message.kind === 'idle_notification' &&
            r.message.senderId === bobId,
        ).length;
    expect(count()).toBe(1);
    await a.service.dispose();

    const b = await openHarness({ memory, scripts: { lead: notedLead, bob: ready }, ids: 'b' });
    await b.service.idle();
    expect(b.sink.errors()).toEqual([]);
    expect(count()).toBe(1);
    await b.service.dispose();
  });
});

describe('a lead turn its process stopped in', () => {
  it('is finished by the process that reopens the team, once, so the team goes on', async () => {
    const memory = memoryStores();
    let stores: CrashableStores | undefined;
    const held = deferred();
    const inTurn = deferred();
    const a = await openHarness({
      memory,
      wrap: (m) => {
        stores = crashableStores(m.log, m.transcripts);
        return stores;
      },
      scripts: {
        // the lead's turn on bob's second notice never gets its answer: the process dies in it
        lead: ({ call }) => {
          if (call < 2) return { text: 'Noted.' };
          inTurn.resolve();
          return { text: 'lost', gate: held.promise };
        },
        bob: ({ call }) => ({ text: call === 1 ? 'Ready.' : 'finished' }),
      },
    });
    await spawnIdle(a, 'bob');
    await a.service.sendMessage(a.service.lead, { to: 'bob', text: 'go' });
    await inTurn.promise;
    stores?.crash();
    const leadId = a.service.lead.memberId;
    // bob's notice is delivered and in the lead's transcript; no reply followed it
    expect(foldTeam(memory.log.records(), { teamId: TEAM_ID }).pendingMail).toEqual([]);
    expect(describeTranscript(memory.transcripts.raw(leadId)).at(-1)).toContain('finished');

    const b = await openHarness({
      memory,
      scripts: {
        lead: () => ({ text: 'All done.' }),
        bob: ({ call }) => ({ text: `b${call}` }),
      },
      ids: 'b',
    });
    await b.service.idle();
    expect(b.sink.errors()).toEqual([]);
    expect(b.model.requests('lead')).toHaveLength(1);
    expect(describeMessage(b.model.requests('lead')[0]?.messages.at(-1) as never)).toContain(
      'finished',
    );
    expect(describeTranscript(memory.transcripts.raw(leadId)).at(-1)).toBe('assistant: All done.');
    expect(b.model.requests('bob')).toHaveLength(0);

    // a lead turn that ended with a reply is not run again when the team reopens
    const c = await openHarness({
      memory,
      scripts: { lead: () => ({ text: 'again?' }), bob: ({ call }) => ({ text: `c${call}` }) },
      ids: 'c',
    });
    await c.service.idle();
    expect(c.model.requests('lead')).toHaveLength(0);
    held.resolve();
  });
});
