import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { TERMINATED_TOOL_RESULT } from '../chat.js';
import { TeamError } from '../errors.js';
import { WAIT_OPEN_TASKS_MAX } from '../limits.js';
import { defaultTeamPolicy } from '../policy/index.js';
import type { TeamPolicy } from '../ports/team-policy.js';
import type { WireFormat } from '../ports/wire-format.js';
import { createManualClock, createSequentialIds } from '../testing/manual-clock.js';
import { createMemoryTeamLog, createMemoryTranscriptStore } from '../testing/memory-stores.js';
import { type AgentScript, createScriptedModel } from '../testing/scripted-model.js';
import { createSimpleFormat } from '../testing/simple-format.js';
import { createAgentRegistry, defineTool } from './agents.js';
import { type OpenTeamOptions, openTeam } from './open-team.js';
import type { CrashableStores } from './test-harness.js';
import {
  continuesTurn,
  crashableStores,
  createRecordingSink,
  deferred,
  notedLead,
  openHarness,
  spawnIdle,
  TEAM_ID,
} from './test-harness.js';

const ok = () => ({ text: 'ok' });

describe('tasks through the service', () => {
  it('pages with a cursor and filters by status, owner and readiness', async () => {
    const h = await openHarness({ scripts: { lead: notedLead }, idleClaim: false });
    const lead = h.service.lead;
    for (let i = 1; i <= 7; i++) {
      await h.service.createTask(lead, {
        subject: `T${i}`,
        description: `t${i}`,
        ...(i === 7 ? { blockedBy: ['task-6'] } : {}),
      });
    }
    await h.service.updateTask(lead, { taskId: 'task-2', action: { type: 'claim' } });
    const first = h.service.listTasks(lead, { limit: 3 });
    expect(first.tasks.map((t) => t.id)).toEqual(['task-1', 'task-2', 'task-3']);
    expect(first.nextCursor).toBe('task-3');
    const second = h.service.listTasks(lead, { limit: 3, cursor: first.nextCursor });
    expect(second.tasks.map((t) => t.id)).toEqual(['task-4', 'task-5', 'task-6']);
    const third = h.service.listTasks(lead, { limit: 3, cursor: second.nextCursor });
    expect(third).toEqual({ tasks: [expect.objectContaining({ id: 'task-7' })] });
    expect(h.service.listTasks(lead, { ownerId: lead.memberId }).tasks.map((t) => t.id)).toEqual([
      'task-2',
    ]);
    expect(h.service.listTasks(lead, { ready: true }).tasks).toHaveLength(5);
    expect(h.service.listTasks(lead, { status: 'in_progress' }).tasks).toHaveLength(1);
    for (const limit of [0, 101, 2.5]) {
      expect(() => h.service.listTasks(lead, { limit })).toThrow(
        expect.objectContaining({ code: 'INVALID_ARGUMENT' }),
      );
    }
    expect(() => h.service.listTasks(lead, { cursor: 'nope' })).toThrow(
      expect.objectContaining({ code: 'INVALID_ARGUMENT' }),
    );
    await expect(
      h.service.updateTask(lead, {
        taskId: 'task-1',
        expectedRevision: 7,
        action: { type: 'complete' },
      }),
    ).rejects.toMatchObject({ code: 'REVISION_MISMATCH' });
  });

  it('a reassign sends the new owner a task assignment, which wakes it', async () => {
    const h = await openHarness({ scripts: { lead: notedLead, bob: ok }, idleClaim: false });
    await spawnIdle(h, 'bob');
    await h.service.createTask(h.service.lead, { subject: 'Fix it', description: 'the bug' });
    await h.service.updateTask(h.service.lead, {
      taskId: 'task-1',
      action: { type: 'reassign', ownerId: h.memberId('bob') },
    });
    await h.service.idle();
    expect(h.transcript('bob').slice(-2)).toEqual([
      'user: [task assignment from lead]\nlead assigned you task-1: Fix it',
      'assistant: ok',
    ]);
    const notice = h.log
      .records()
      .find((r) => r.type === 'message.queued' && r.message.kind === 'task_assignment');
    expect(notice?.type === 'message.queued' && notice.message.taskId).toBe('task-1');
  });
});

describe('waitForChange', () => {
  it('is edge-triggered, times out on the injected clock and can be aborted', async () => {
    const h = await openHarness({ scripts: { lead: notedLead }, idleClaim: false });
    const lead = h.service.lead;
    await h.service.createTask(lead, { subject: 'Before', description: 'b' });
    const waiting = h.service.waitForChange(lead, { timeoutMs: 10_000 });
    await h.service.createTask(lead, { subject: 'After', description: 'a' });
    const result = await waiting;
    expect(result.changed).toBe(true);
    expect(result.records.map((r) => (r.type === 'task' ? r.task.subject : r.type))).toEqual([
      'After',
    ]);

    const timingOut = h.service.waitForChange(lead, { timeoutMs: 60_000 });
    h.clock.advance(59_999);
    h.clock.advance(1);
    expect(await timingOut).toEqual({ changed: false, records: [] });

    const controller = new AbortController();
    const aborted = h.service.waitForChange(lead, { timeoutMs: 60_000, signal: controller.signal });
    controller.abort();
    await expect(aborted).rejects.toMatchObject({ code: 'ABORTED' });
    expect(h.clock.pendingTimers()).toBe(0);

    for (const timeoutMs of [9_999, 3_600_001]) {
      await expect(h.service.waitForChange(lead, { timeoutMs })).rejects.toMatchObject({
        code: 'INVALID_ARGUMENT',
      });
    }
  });

  it('wait_for_team returns at once when no teammate is working, else waits for a change', async () => {
    const gate = deferred<string>();
    const started = deferred();
    const slow = defineTool({
      name: 'slow',
      description: 'slow',
      inputSchema: z.object({}),
      async execute() {
        started.resolve();
        return gate.promise;
      },
    });
    const h = await openHarness({
      scripts: {
        lead: waitingLead,
        bob: [{ text: 'hi' }, { toolCalls: [{ name: 'slow' }] }, { text: 'done' }],
      },
      workerTools: [slow],
      idleClaim: false,
    });
    expect((await h.service.promptLead('wait')).text).toBe('done waiting');
    expect(h.transcript('lead')[2]).toBe(
      'tool wait_for_team: {"noProgress":"no other member is working, about to, or waiting for a process","members":[],"openTasks":[]}',
    );
    await spawnIdle(h, 'bob');
    await h.service.sendMessage(h.service.lead, { to: 'bob', text: 'work' });
    await started.promise;
    const turn = h.service.promptLead('wait for bob');
    await h.sink.waitFor((agent, e) => agent === 'lead' && e.type === 'tool.call', 2);
    gate.resolve('done');
    expect((await turn).text).toBe('done waiting');
    await h.service.idle();
    const waited = h.transcript('lead').filter((l) => l.startsWith('tool wait_for_team'));
    expect(waited).toEqual([
      'tool wait_for_team: {"noProgress":"no other member is working, about to, or waiting for a process","members":[],"openTasks":[]}',
      'tool wait_for_team: {"changed":true,"changes":["idle notification bob -> lead"],"members":["bob: running"]}',
    ]);
  });
});

/** A lead that answers every host prompt with one `wait_for_team`, then says it is done. */
const waitingLead: AgentScript = ({ request }) => {
  const last = request.messages.at(-1);
  if (last?.role === 'user' && last.source?.kind === 'host') {
    return { toolCalls: [{ name: 'wait_for_team', input: { timeoutMs: 10_000 } }] };
  }
  return { text: continuesTurn(request.messages) ? 'done waiting' : 'Noted.' };
};

describe('wait_for_team finding nobody working', () => {
  it('lists the board as it is now, open tasks only, at most WAIT_OPEN_TASKS_MAX of them', async () => {
    const h = await openHarness({
      scripts: {
        lead: waitingLead,
      },
      idleClaim: false,
    });
    const lead = h.service.lead;
    await h.service.createTask(lead, { subject: 'Done already', description: 'd' });
    await h.service.updateTask(lead, { taskId: 'task-1', action: { type: 'claim' } });
    await h.service.updateTask(lead, { taskId: 'task-1', action: { type: 'complete' } });
    await h.service.createTask(lead, { subject: 'Mine', description: 'm' });
    await h.service.updateTask(lead, { taskId: 'task-2', action: { type: 'claim' } });
    await h.service.createTask(lead, {
      subject: 'After mine',
      description: 'a',
      blockedBy: ['task-2'],
    });
    await h.service.promptLead('wait');
    const first = JSON.parse(
      (h.transcript('lead')[2] as string).slice('tool wait_for_team: '.length),
    ) as { openTasks: string[] };
    expect(first.openTasks).toEqual([
      'task-2 "Mine": in_progress, lead',
      'task-3 "After mine": pending, blocked',
    ]);

    for (let i = 0; i < WAIT_OPEN_TASKS_MAX; i++) {
      await h.service.createTask(lead, { subject: `Open ${i}`, description: 'o' });
    }
    await h.service.promptLead('wait again');
    const waited = h.transcript('lead').filter((l) => l.startsWith('tool wait_for_team'));
    const second = JSON.parse((waited[1] as string).slice('tool wait_for_team: '.length)) as {
      openTasks: string[];
    };
    expect(second.openTasks).toHaveLength(WAIT_OPEN_TASKS_MAX + 1);
    expect(second.openTasks[2]).toBe('task-4 "Open 0": pending, ready');
    expect(second.openTasks.at(-1)).toBe('and 2 more open task(s): task_list shows them');
  });
});

describe('idle notifications', () => {
  it('are coalesced: the lead never holds more than one undelivered notice per teammate', async () => {
    const hold = deferred();
    const h = await openHarness({
      scripts: {
        lead: [{ text: 'thinking', gate: hold.promise }, { text: 'read it' }],
        bob: ({ call }) => ({ text: `turn ${call}` }),
      },
      idleClaim: false,
    });
    await h.service.spawnTeammate(h.service.lead, {
      name: 'bob',
      description: 'b',
      prompt: 'hello',
      agentType: 'worker',
    });
    const leadTurn = h.service.promptLead('busy');
    for (const text of ['a', 'b', 'c']) {
      await h.service.sendMessage(h.service.lead, { to: 'bob', text });
    }
    // bob ran four turns (prompt, a, b, c) and parked again, while the lead was busy.
    await h.sink.waitUntil((events) => {
      const bob = events.filter((e) => e.agent === 'bob').map((e) => e.event);
      const fourth = bob.findIndex(
        (e, i) =>
          e.type === 'turn.end' &&
          bob.slice(0, i + 1).filter((x) => x.type === 'turn.end').length === 4,
      );
      return (
        fourth !== -1 && bob.slice(fourth).some((e) => e.type === 'status' && e.status === 'idle')
      );
    });
    const bobId = h.memberId('bob');
    const notices = h.log
      .records()
      .filter((r) => r.type === 'message.queued' && r.message.kind === 'idle_notification');
    expect(notices).toHaveLength(1);
    expect(notices[0]?.type === 'message.queued' && notices[0].message.senderId).toBe(bobId);
    hold.resolve();
    await leadTurn;
    await h.service.idle();
    expect(h.transcript('lead').slice(-2)).toEqual([
      'user: [idle notification from bob]\nturn 1',
      'assistant: read it',
    ]);
  });
});

describe('spawning', () => {
  it('a forked teammate starts from the consistent prefix of the lead conversation', async () => {
    const h = await openHarness({
      scripts: {
        lead: [
          { text: 'We build a parser.' },
          {
            text: 'Spawning.',
            toolCalls: [
              {
                name: 'spawn_teammate',
                input: {
                  name: 'bob',
                  description: 'b',
                  prompt: 'Take the lexer.',
                  context: 'fork',
                },
              },
            ],
          },
          { text: 'Spawned.' },
          { text: 'Noted.' },
        ],
        bob: [{ text: 'Lexer it is.' }],
      },
      idleClaim: false,
    });
    await h.service.promptLead('Plan the parser.');
    await h.service.promptLead('Get help.');
    await h.service.idle();
    expect(h.transcript('bob')).toEqual([
      'host: Plan the parser.',
      'assistant: We build a parser.',
      'host: Get help.',
      'user: [message from lead]\nTake the lexer.',
      'assistant: Lexer it is.',
    ]);
    const bob = h.service.listMembers(h.service.lead).find((m) => m.name === 'bob');
    expect(bob).toMatchObject({
      context: 'fork',
      provider: 'scripted:scripted-1',
      agentType: 'worker',
    });
    // The copies carry no team-message source of the lead's mail.
    expect(h.transcripts.raw(bob?.memberId ?? '')[0]?.message).not.toHaveProperty(
      'source.messageId',
    );
  });

  it('refuses an unknown agent type before writing, and marks a teammate that cannot start failed', async () => {
    const h = await openHarness({
      scripts: { lead: notedLead },
      wrap: (m) => ({
        log: m.log,
        transcripts: {
          ...m.transcripts,
          append: (o) => m.transcripts.append(o),
          load: async (o) => {
            if (o.memberId !== 'team-1') throw new TeamError('STORAGE_IO', 'disk on fire');
            return m.transcripts.load(o);
          },
        },
      }),
    });
    const before = h.log.records().length;
    await expect(
      h.service.spawnTeammate(h.service.lead, {
        name: 'bob',
        description: 'b',
        prompt: 'p',
        agentType: 'nope',
      }),
    ).rejects.toMatchObject({ code: 'UNKNOWN_AGENT_TYPE' });
    expect(h.log.records()).toHaveLength(before);
    await expect(
      h.service.spawnTeammate(h.service.lead, {
        name: 'bob',
        description: 'b',
        prompt: 'p',
        agentType: 'worker',
      }),
    ).rejects.toMatchObject({ code: 'STORAGE_IO' });
    expect(h.service.listMembers(h.service.lead).find((m) => m.name === 'bob')).toMatchObject({
      phase: 'failed',
      status: 'failed',
      error: 'disk on fire',
    });
  });

  it('checks agent definitions when the registry is built', () => {
    const model = createScriptedModel();
    expect(() =>
      createAgentRegistry([
        { type: 'a', systemPrompt: '', model },
        { type: 'a', systemPrompt: '', model },
      ]),
    ).toThrow(expect.objectContaining({ code: 'INVALID_ARGUMENT' }));
    const registry = createAgentRegistry([{ type: 'a', systemPrompt: '', model }]);
    expect(() => registry.get('b')).toThrow(
      expect.objectContaining({ code: 'UNKNOWN_AGENT_TYPE' }),
    );
    expect(registry.types()).toEqual(['a']);
  });
});

describe('the lead', () => {
  it('keeps running after a failed turn: the host prompt rejects and the next one works', async () => {
    const h = await openHarness({ scripts: { lead: [{ text: 'first' }] } });
    expect((await h.service.promptLead('one')).text).toBe('first');
    await expect(h.service.promptLead('two')).rejects.toMatchObject({ code: 'MODEL_UNAVAILABLE' });
    h.model.setScript('lead', [{ text: 'first' }, { text: 'unused' }, { text: 'third' }]);
    expect((await h.service.promptLead('three')).text).toBe('third');
    await h.service.idle();
    expect(h.service.membership(h.service.lead)).toMatchObject({ isLead: true, status: 'idle' });
  });

  it('publishes every appended record and status changes under the acting agent', async () => {
    const h = await openHarness({ scripts: { lead: notedLead, bob: ok }, idleClaim: false });
    await spawnIdle(h, 'bob');
    const recordEvents = h.sink.events.filter((e) => e.event.type === 'record');
    expect(recordEvents.map((e) => (e.event.type === 'record' ? e.event.record.seq : 0))).toEqual(
      h.log.records().map((r) => r.seq),
    );
    const byAgent = recordEvents.map(
      (e) => `${e.agent}:${e.event.type === 'record' ? e.event.record.type : ''}`,
    );
    expect(byAgent).toContain('bob:message.delivered');
    expect(byAgent).toContain('bob:message.queued');
    const bobStatus = h.sink.events
      .filter((e) => e.agent === 'bob' && e.event.type === 'status')
      .map((e) => (e.event.type === 'status' ? e.event.status : ''));
    expect(bobStatus).toEqual(['running', 'idle']);
  });
});

describe('dispose and storage failure', () => {
  it('aborts in-flight turns, writes nothing half, and refuses later calls', async () => {
    const started = deferred();
    const slow = defineTool({
      name: 'slow',
      description: 'slow',
      inputSchema: z.object({}),
      async execute() {
        started.resolve();
        return new Promise(() => {});
      },
    });
    const h = await openHarness({
      scripts: { lead: notedLead, bob: [{ text: 'hi' }, { toolCalls: [{ name: 'slow' }] }] },
      workerTools: [slow],
      idleClaim: false,
    });
    await spawnIdle(h, 'bob');
    await h.service.sendMessage(h.service.lead, { to: 'bob', text: 'go' });
    await started.promise;
    const bobId = h.memberId('bob');
    const seq = h.log.lastSeq();
    await h.service.dispose();
    await h.service.dispose();
    expect(h.log.lastSeq()).toBe(seq);
    await expect(
      h.service.sendMessage(h.service.lead, { to: 'bob', text: 'x' }),
    ).rejects.toMatchObject({
      code: 'DISPOSED',
    });
    await expect(h.service.promptLead('x')).rejects.toMatchObject({ code: 'DISPOSED' });
    expect(() => h.service.listMembers(h.service.lead)).toThrow(
      expect.objectContaining({ code: 'DISPOSED' }),
    );
    // The open tool call is answered on the next load, as a process termination.
    const loaded = await h.transcripts.load({ memberId: bobId });
    expect(loaded.at(-1)?.message).toMatchObject({
      role: 'tool',
      content: [{ type: 'text', text: TERMINATED_TOOL_RESULT }],
    });
    expect(h.clock.pendingTimers()).toBe(0);
  });

  it('is bounded by disposeTimeoutMs when an append never settles', async () => {
    let stores: CrashableStores | undefined;
    const h = await openHarness({
      scripts: { lead: notedLead },
      wrap: (m) => {
        stores = crashableStores(m.log, m.transcripts);
        return stores;
      },
    });
    stores?.crash();
    const hanging = h.service.createTask(h.service.lead, { subject: 's', description: 'd' });
    let disposed = false;
    const disposing = h.service.dispose().then(() => {
      disposed = true;
    });
    await Promise.resolve();
    expect(disposed).toBe(false);
    h.clock.advance(10_000);
    await disposing;
    expect(disposed).toBe(true);
    void hanging;
  });

  it('turns itself off with STORE_CLOSED when the log refuses an append', async () => {
    let fail = false;
    const h = await openHarness({
      scripts: { lead: notedLead },
      wrap: (m) => ({
        transcripts: m.transcripts,
        log: {
          ...m.log,
          append: (o) =>
            fail ? Promise.reject(new TeamError('STORAGE_IO', 'disk full')) : m.log.append(o),
          read: (o) => m.log.read(o),
          subscribe: (o) => m.log.subscribe(o),
          lastSeq: () => m.log.lastSeq(),
          close: () => m.log.close(),
        },
      }),
    });
    fail = true;
    const error = await h.service
      .createTask(h.service.lead, { subject: 's', description: 'd' })
      .catch((e: unknown) => e);
    expect(error).toMatchObject({ code: 'STORE_CLOSED' });
    expect((error as TeamError).cause).toMatchObject({ code: 'STORAGE_IO' });
    fail = false;
    await expect(
      h.service.createTask(h.service.lead, { subject: 's', description: 'd' }),
    ).rejects.toMatchObject({ code: 'STORE_CLOSED' });
    await expect(h.service.idle()).rejects.toMatchObject({ code: 'STORE_CLOSED' });
  });
});

describe('configuration and edge cases', () => {
  it('renders an empty idle notice with the protocol fallback line', async () => {
    const h = await openHarness({
      scripts: { lead: notedLead, bob: [{ toolCalls: [{ name: 'whoami' }] }, {}] },
      idleClaim: false,
    });
    await spawnIdle(h, 'bob');
    expect(h.transcript('lead')).toContain('user: [idle notification from bob]\nbob is idle.');
  });

  it("runs core's default policy when opened without one", async () => {
    const h = await openHarness({
      scripts: { lead: notedLead, bob: [{ toolCalls: [{ name: 'whoami' }] }, {}] },
      idleClaim: false,
      policy: null,
    });
    await spawnIdle(h, 'bob');
    expect(h.transcript('lead')).toContain(
      'user: [idle notification from bob]\nbob is idle and ready for the next instruction.',
    );
  });

  it('refuses a format or policy that is not a v1 port, naming the old protocol option', async () => {
    const model = createScriptedModel();
    const base = {
      teamId: 'team-x',
      log: createMemoryTeamLog({ teamId: 'team-x' }),
      transcripts: createMemoryTranscriptStore(),
      agents: createAgentRegistry([{ type: 'lead', systemPrompt: '', model }]),
      lead: { agentType: 'lead' },
    };
    const { formatMessage: _dropped, ...formatless } = createSimpleFormat();
    await expect(
      openTeam({ ...base, format: formatless as unknown as WireFormat }),
    ).rejects.toMatchObject({ code: 'INVALID_ARGUMENT', details: { missing: ['formatMessage'] } });
    await expect(
      openTeam({
        ...base,
        format: createSimpleFormat(),
        policy: { ...defaultTeamPolicy, specificationVersion: 'v2' } as unknown as TeamPolicy,
      }),
    ).rejects.toMatchObject({ code: 'INVALID_ARGUMENT', details: { option: 'policy' } });
    await expect(
      openTeam({ ...base, protocol: createSimpleFormat() } as unknown as OpenTeamOptions),
    ).rejects.toMatchObject({
      code: 'INVALID_ARGUMENT',
      message: expect.stringContaining('`format`'),
    });
  });

  it('refuses at open an agent type whose tools clash with the team tools', async () => {
    const model = createScriptedModel();
    const clash = defineTool({
      name: 'send_message',
      description: 'mine',
      inputSchema: z.object({}),
      async execute() {
        return 'x';
      },
    });
    await expect(
      openTeam({
        teamId: 'team-x',
        log: createMemoryTeamLog({ teamId: 'team-x' }),
        transcripts: createMemoryTranscriptStore(),
        format: createSimpleFormat(),
        agents: createAgentRegistry([{ type: 'lead', systemPrompt: '', model, tools: [clash] }]),
        lead: { agentType: 'lead' },
      }),
    ).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
  });

  it('keeps one idle-claim retry timer per parked teammate, none when idle-claim is off', async () => {
    for (const idleClaim of [true, false]) {
      const h = await openHarness({
        scripts: { lead: notedLead, bob: ok, carol: ok },
        idleClaim,
      });
      await spawnIdle(h, 'bob');
      await spawnIdle(h, 'carol');
      expect(h.clock.pendingTimers()).toBe(idleClaim ? 2 : 0);
      // A retry that finds nothing parks again with a fresh timer and calls no model.
      h.clock.advance(5_000);
      await h.service.idle();
      expect(h.clock.pendingTimers()).toBe(idleClaim ? 2 : 0);
      expect(h.model.calls('bob')).toBe(1);
      await h.service.dispose();
      expect(h.clock.pendingTimers()).toBe(0);
    }
  });

  it('a revival that cannot start is reported, while the message stays durable and queued', async () => {
    const memory = {
      log: createMemoryTeamLog({ teamId: TEAM_ID }),
      transcripts: createMemoryTranscriptStore(),
    };
    const a = await openHarness({ memory, scripts: { lead: notedLead, bob: ok } });
    await spawnIdle(a, 'bob');
    const model = createScriptedModel({ scripts: { lead: notedLead } });
    const sink = createRecordingSink();
    const b = await openTeam({
      teamId: TEAM_ID,
      ...memory,
      format: createSimpleFormat(),
      agents: createAgentRegistry([{ type: 'lead', systemPrompt: '', model }]),
      lead: { agentType: 'lead' },
      clock: createManualClock(),
      ids: createSequentialIds('b'),
      events: sink,
    });
    const sent = await b.sendMessage(b.lead, { to: 'bob', text: 'are you there?' });
    expect(sent.status).toBe('queued');
    expect(sink.errors()).toEqual([
      {
        agent: 'bob',
        code: 'UNKNOWN_AGENT_TYPE',
        message: expect.stringContaining('could not revive: no agent type "worker"'),
      },
    ]);
    await b.idle();
    expect(b.listMembers(b.lead).find((m) => m.name === 'bob')?.status).toBe('inactive');
  });
});
