import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { INTERRUPTED_TOOL_RESULT } from '../chat.js';
import { TeamError } from '../errors.js';
import type { ScriptedStep } from '../testing/scripted-model.js';
import { defineTool } from './agents.js';
import { deferred, describeMessage, notedLead, openHarness, spawnIdle } from './test-harness.js';

function gatedTool(name = 'slow') {
  const started = deferred();
  const gate = deferred<string>();
  const tool = defineTool({
    name,
    description: 'Takes a while.',
    inputSchema: z.object({ label: z.string().optional() }),
    async execute() {
      started.resolve();
      return gate.promise;
    },
  });
  return { tool, started, gate };
}

describe('interrupting a turn', () => {
  it('answers the cut-off tool call and the ones after it as interrupted and keeps the inbox', async () => {
    const slow = gatedTool();
    const h = await openHarness({
      scripts: {
        lead: notedLead,
        bob: [
          { text: 'Hello.' },
          { text: 'On it.', toolCalls: [{ name: 'slow' }, { name: 'whoami' }] },
          { text: 'Back again.' },
          { text: 'All good.' },
        ],
      },
      workerTools: [slow.tool],
    });
    await spawnIdle(h, 'bob');
    await h.service.sendMessage(h.service.lead, { to: 'bob', text: 'Do the slow thing.' });
    await slow.started.promise;
    const quiet = await h.service.sendMessage(h.service.lead, {
      to: 'bob',
      text: 'Also, later: check the logs.',
      delivery: 'quiet',
    });
    expect(await h.service.interrupt(h.service.lead, { target: 'bob' })).toEqual({
      interrupted: true,
    });
    await h.service.idle();

    expect(h.transcript('bob')).toEqual([
      'user: [message from lead]\nHi bob.',
      'assistant: Hello.',
      'user: [message from lead]\nDo the slow thing.',
      'assistant: On it. -> slow {} -> whoami {}',
      `tool slow (error): ${INTERRUPTED_TOOL_RESULT}`,
      `tool whoami (error): ${INTERRUPTED_TOOL_RESULT}`,
    ]);
    // The quiet message was neither lost nor delivered; the interrupted turn made no more calls.
    expect(h.model.calls('bob')).toBe(2);
    expect(h.refs.has('bob')).toBe(false);
    const bobId = h.memberId('bob');
    expect(h.service.listMembers(h.service.lead).find((m) => m.name === 'bob')?.status).toBe(
      'idle',
    );
    const turnEnds = h.sink.events.filter((e) => e.agent === 'bob' && e.event.type === 'turn.end');
    expect(turnEnds.at(-1)?.event).toMatchObject({ stopReason: 'interrupted' });

    // The next wakeup message starts a turn that delivers the kept mail first (lead FIFO).
    slow.gate.resolve('late result');
    await h.service.sendMessage(h.service.lead, { to: 'bob', text: 'Status?' });
    await h.service.idle();
    expect(h.transcript('bob').slice(6)).toEqual([
      'user: [message from lead]\nAlso, later: check the logs.',
      'assistant: Back again.',
      'user: [message from lead]\nStatus?',
      'assistant: All good.',
    ]);
    expect(h.sink.errors()).toEqual([]);
    expect(
      h.log
        .records()
        .filter((r) => r.type === 'message.delivered' && r.messageId === quiet.messageId),
    ).toHaveLength(1);
    expect(bobId).toBeTruthy();
  });

  it('drops a model call cut off mid-stream without recording anything of it', async () => {
    const inFlight = deferred();
    const h = await openHarness({
      scripts: {
        lead: notedLead,
        bob: ({ call }) => {
          if (call === 1) return { text: 'Hello.' };
          inFlight.resolve();
          return { text: 'never finished', gate: new Promise(() => {}) };
        },
      },
    });
    await spawnIdle(h, 'bob');
    await h.service.sendMessage(h.service.lead, { to: 'bob', text: 'Think hard.' });
    await inFlight.promise;
    expect((await h.service.interrupt(h.service.lead, { target: 'bob' })).interrupted).toBe(true);
    await h.service.idle();
    expect(h.transcript('bob')).toEqual([
      'user: [message from lead]\nHi bob.',
      'assistant: Hello.',
      'user: [message from lead]\nThink hard.',
    ]);
    expect((await h.service.interrupt(h.service.lead, { target: 'bob' })).interrupted).toBe(false);
    expect(h.sink.errors()).toEqual([]);
  });
});

describe('mail during a turn', () => {
  it('is spliced in after the tool results, before the next model call, highest priority first', async () => {
    const slow = gatedTool();
    const h = await openHarness({
      scripts: {
        lead: notedLead,
        alice: [{ text: 'Hi.' }, { toolCalls: [{ name: 'whoami' }] }, { text: 'ok' }],
        bob: [{ text: 'Hello.' }, { toolCalls: [{ name: 'slow' }] }, { text: 'Read both.' }],
      },
      workerTools: [slow.tool],
    });
    await spawnIdle(h, 'alice');
    await spawnIdle(h, 'bob');
    // alice's credential, captured by her whoami call.
    await h.service.sendMessage(h.service.lead, { to: 'alice', text: 'Say who you are.' });
    await h.service.idle();
    const alice = h.refs.get('alice');
    expect(alice).toBeDefined();

    await h.service.sendMessage(h.service.lead, { to: 'bob', text: 'Go.' });
    await slow.started.promise;
    await h.service.sendMessage(alice!, { to: 'bob', text: 'peer note', delivery: 'quiet' });
    await h.service.sendMessage(h.service.lead, { to: 'bob', text: 'lead note' });
    slow.gate.resolve('slow done');
    await h.service.idle();

    const third = h.model.requests('bob')[2];
    expect(third?.messages.slice(-4).map(describeMessage)).toEqual([
      'assistant: -> slow {}',
      'tool slow: slow done',
      'user: [message from lead]\nlead note',
      'user: [message from alice]\npeer note',
    ]);
    expect(h.model.calls('bob')).toBe(3);
  });

  it('quiet mail does not wake an idle agent; it waits for the next turn', async () => {
    const h = await openHarness({
      scripts: {
        lead: notedLead,
        bob: ({ call }) => ({ text: call === 1 ? 'Hello.' : `ack ${call}` }),
      },
    });
    await spawnIdle(h, 'bob');
    const quiet = await h.service.sendMessage(h.service.lead, {
      to: 'bob',
      text: 'FYI',
      delivery: 'quiet',
    });
    expect(quiet.status).toBe('accepted');
    await h.service.idle();
    expect(h.model.calls('bob')).toBe(1);
    expect(h.service.listMembers(h.service.lead).find((m) => m.name === 'bob')?.status).toBe(
      'idle',
    );
    expect(h.transcript('bob')).toHaveLength(2);

    // A wakeup message starts a turn; the policy picks the oldest lead message first.
    await h.service.sendMessage(h.service.lead, { to: 'bob', text: 'Now act.' });
    await h.service.idle();
    expect(h.transcript('bob').slice(2)).toEqual([
      'user: [message from lead]\nFYI',
      'assistant: ack 2',
      'user: [message from lead]\nNow act.',
      'assistant: ack 3',
    ]);
  });
});

describe('tool errors', () => {
  it('come back to the model as tool results carrying the TeamError code', async () => {
    const throwing = defineTool({
      name: 'explode',
      description: 'Throws.',
      inputSchema: z.object({ kind: z.enum(['plain', 'team']) }),
      async execute(input) {
        if (input.kind === 'team') throw new TeamError('TASK_BLOCKED', 'blocked for a reason');
        throw new Error('kaboom');
      },
    });
    const steps: ScriptedStep[] = [
      {
        toolCalls: [
          { name: 'no_such_tool' },
          { name: 'explode', input: { kind: 'nope' } },
          { name: 'explode', input: { kind: 'plain' } },
          { name: 'explode', input: { kind: 'team' } },
          { name: 'task_get', input: { taskId: 'task-9' } },
          { name: 'task_update', input: { taskId: 'task-1', action: 'reassign', owner: 'lead' } },
          { name: 'spawn_teammate', input: { name: 'x', description: 'x', prompt: 'x' } },
        ],
      },
      { text: 'I saw the errors.' },
    ];
    const h = await openHarness({
      scripts: { lead: notedLead, bob: steps },
      workerTools: [throwing],
      idleClaim: false,
    });
    await h.service.createTask(h.service.lead, { subject: 'A', description: 'a' });
    await spawnIdle(h, 'bob');
    const results = h.transcript('bob').filter((line) => line.startsWith('tool '));
    expect(results).toHaveLength(7);
    const codes = results.map((line) => /"code":"([A-Z_]+)"/.exec(line)?.[1]);
    expect(codes).toEqual([
      'UNKNOWN_TOOL',
      'INVALID_ARGUMENT',
      'TOOL_FAILED',
      'TASK_BLOCKED',
      'TASK_NOT_FOUND',
      'NOT_ALLOWED_TO_REASSIGN',
      'UNKNOWN_TOOL',
    ]);
    expect(results.every((line) => line.includes('(error)'))).toBe(true);
    expect(results[2]).toContain('kaboom');
    expect(h.transcript('bob').at(-1)).toBe('assistant: I saw the errors.');
    expect(h.sink.errors()).toEqual([]);
    // Teammates are never offered the lead's tools.
    const offered = h.model.requests('bob')[0]?.tools.map((t) => t.name);
    expect(offered).toEqual([
      'send_message',
      'list_members',
      'task_create',
      'task_list',
      'task_get',
      'task_update',
      'whoami',
      'explode',
    ]);
  });

  it('exports tool input schemas as JSON Schema', async () => {
    const h = await openHarness({ scripts: { lead: [{ text: 'Hi.' }] } });
    await h.service.promptLead('Hello');
    const tools = h.model.requests('lead')[0]?.tools ?? [];
    const send = tools.find((t) => t.name === 'send_message');
    expect(send?.inputSchema).toMatchObject({
      type: 'object',
      properties: { to: { type: 'string' }, delivery: { enum: ['quiet', 'wakeup'] } },
      required: ['to', 'message'],
    });
    expect(send?.inputSchema).not.toHaveProperty('$schema');
    const spawn = tools.find((t) => t.name === 'spawn_teammate');
    expect(spawn?.inputSchema).toMatchObject({
      properties: { agentType: { enum: ['worker', 'lead'] }, context: { enum: ['fresh', 'fork'] } },
    });
    expect(tools.map((t) => t.name)).toContain('wait_for_team');
  });
});

describe('turn limits and failures', () => {
  it('ends a turn at the step limit without failing the member', async () => {
    const h = await openHarness({
      scripts: { lead: () => ({ toolCalls: [{ name: 'list_members' }] }) },
    });
    const outcome = await h.service.promptLead('Loop.');
    expect(outcome).toEqual({ stopReason: 'step_limit', steps: 50, text: '' });
  });

  it('a teammate turn that throws stops its runner, releases its tasks and tells the lead', async () => {
    const h = await openHarness({
      scripts: {
        lead: notedLead,
        bob: [
          { toolCalls: [{ name: 'task_update', input: { taskId: 'task-1', action: 'claim' } }] },
        ],
      },
      idleClaim: false,
    });
    await h.service.createTask(h.service.lead, { subject: 'A', description: 'a' });
    await spawnIdle(h, 'bob');
    const bob = h.service.listMembers(h.service.lead).find((m) => m.name === 'bob');
    expect(bob).toMatchObject({ phase: 'active', status: 'failed' });
    expect(bob?.failure?.code).toBe('MODEL_UNAVAILABLE');
    expect(h.service.getTask(h.service.lead, { taskId: 'task-1' })).toMatchObject({
      status: 'pending',
      revision: 3,
    });
    expect(h.transcript('lead').at(-2)).toMatch(
      /^user: \[idle notification from bob\]\nbob stopped: MODEL_UNAVAILABLE: scripted model: agent "bob" made call 2/,
    );

    // New mail revives it for another try.
    h.model.setScript('bob', () => ({ text: 'Recovered.' }));
    const sent = await h.service.sendMessage(h.service.lead, { to: 'bob', text: 'Try again.' });
    expect(sent.status).toBe('queued');
    await h.service.idle();
    expect(h.service.listMembers(h.service.lead).find((m) => m.name === 'bob')?.status).toBe(
      'idle',
    );
    expect(h.transcript('bob').at(-1)).toBe('assistant: Recovered.');
  });
});
