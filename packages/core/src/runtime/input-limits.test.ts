import { describe, expect, it } from 'vitest';
import { TeamError } from '../errors.js';
import {
  AGENT_TYPE_MAX,
  MEMBER_DESCRIPTION_MAX,
  MEMBER_ERROR_MAX,
  MEMBER_NAME_MAX,
  MESSAGE_SUMMARY_MAX,
  TASK_BLOCKED_BY_MAX,
  TASK_DESCRIPTION_MAX,
  TASK_PAGE_MAX,
  TASK_SUBJECT_MAX,
  TASK_WRITE_SCOPES_MAX,
  textLength,
  WAIT_TIMEOUT_MAX_MS,
  WAIT_TIMEOUT_MIN_MS,
  WRITE_SCOPE_MAX,
} from '../limits.js';
import { createScriptedModel } from '../testing/scripted-model.js';
import { toolInputJsonSchema } from './agent-loop.js';
import { createAgentRegistry } from './agents.js';
import {
  SendMessageToolInput,
  ShutdownTeammateToolInput,
  spawnTeammateToolInput,
  TaskCreateToolInput,
  TaskListToolInput,
  TaskUpdateToolInput,
  WaitForTeamToolInput,
} from './team-tools.js';
import { notedLead, openHarness, spawnIdle } from './test-harness.js';

const TEN_MB = 'x'.repeat(10_000_000);
const EMOJI = '😀';

async function codeAndField(action: () => Promise<unknown>) {
  try {
    await action();
  } catch (error) {
    if (TeamError.isInstance(error)) return { code: error.code, field: error.details?.field };
    throw error;
  }
  return undefined;
}

describe('input limits through the TeamService', () => {
  it('refuses oversized summaries, descriptions and write scopes before writing anything', async () => {
    const h = await openHarness({
      scripts: { lead: notedLead, bob: () => ({ text: 'ok' }) },
      idleClaim: false,
    });
    await spawnIdle(h, 'bob');
    const lead = h.service.lead;
    await h.service.createTask(lead, { subject: 'T', description: 't' });
    const before = h.log.records().length;
    const refused = [
      () => h.service.sendMessage(lead, { to: 'bob', text: 'hi', summary: TEN_MB }),
      () =>
        h.service.spawnTeammate(lead, {
          name: 'carol',
          description: TEN_MB,
          prompt: 'hi',
          agentType: 'worker',
        }),
      () => h.service.createTask(lead, { subject: 'S', description: 'd', writeScopes: [TEN_MB] }),
      () =>
        h.service.createTask(lead, {
          subject: 'S',
          description: 'd',
          writeScopes: Array.from({ length: 1_000 }, (_, i) => `src/${i}`),
        }),
      () =>
        h.service.updateTask(lead, {
          taskId: 'task-1',
          action: { type: 'edit', writeScopes: [`src/${TEN_MB}`] },
        }),
      () =>
        h.service.updateTask(lead, {
          taskId: 'task-1',
          action: {
            type: 'set_dependencies',
            blockedBy: Array.from({ length: TASK_BLOCKED_BY_MAX + 1 }, (_, i) => `task-${i + 2}`),
          },
        }),
    ];
    const results = [];
    for (const call of refused) results.push(await codeAndField(call));
    expect(results).toEqual([
      { code: 'INVALID_ARGUMENT', field: 'summary' },
      { code: 'INVALID_ARGUMENT', field: 'description' },
      { code: 'INVALID_ARGUMENT', field: 'writeScopes[0]' },
      { code: 'INVALID_ARGUMENT', field: 'writeScopes' },
      { code: 'INVALID_ARGUMENT', field: 'writeScopes[0]' },
      { code: 'INVALID_ARGUMENT', field: 'blockedBy' },
    ]);
    // Nothing was written, so no later record can carry the oversized values either.
    expect(h.log.records()).toHaveLength(before);
    expect(h.service.listMembers(lead).map((m) => m.name)).toEqual(['lead', 'bob']);
    const task = h.service.getTask(lead, { taskId: 'task-1' });
    expect(task).toMatchObject({ revision: 1, writeScopes: [], blockedBy: [] });
    await h.service.updateTask(lead, { taskId: 'task-1', action: { type: 'claim' } });
    expect(JSON.stringify(h.log.records().at(-1)).length).toBeLessThan(1_000);
  });

  it('records a long start failure shortened to fit the member record', async () => {
    const why = `disk on fire: ${'x'.repeat(50_000)}`;
    const h = await openHarness({
      scripts: { lead: notedLead },
      wrap: (m) => ({
        log: m.log,
        transcripts: {
          ...m.transcripts,
          append: (o) => m.transcripts.append(o),
          load: async (o) => {
            if (o.memberId !== 'team-1') throw new TeamError('STORAGE_IO', why);
            return m.transcripts.load(o);
          },
        },
      }),
    });
    await expect(
      h.service.spawnTeammate(h.service.lead, {
        name: 'bob',
        description: 'b',
        prompt: 'p',
        agentType: 'worker',
      }),
    ).rejects.toMatchObject({ code: 'STORAGE_IO', message: why });
    const bob = h.service.listMembers(h.service.lead).find((m) => m.name === 'bob');
    expect(bob?.phase).toBe('failed');
    expect(textLength(bob?.error ?? '')).toBe(MEMBER_ERROR_MAX);
    expect(bob?.error?.startsWith('disk on fire: xxx')).toBe(true);
  });
});

describe('agent types', () => {
  it('are refused by the registry when longer than a member record may store', () => {
    const model = createScriptedModel();
    expect(() =>
      createAgentRegistry([{ type: 'x'.repeat(AGENT_TYPE_MAX + 1), systemPrompt: '', model }]),
    ).toThrow(expect.objectContaining({ code: 'INVALID_ARGUMENT' }));
    const type = EMOJI.repeat(AGENT_TYPE_MAX);
    expect(createAgentRegistry([{ type, systemPrompt: '', model }]).types()).toEqual([type]);
  });
});

describe('the team tools and the state agree on every limit', () => {
  it('the tool schemas carry the state constants', () => {
    const props = (schema: Parameters<typeof toolInputJsonSchema>[0]) =>
      toolInputJsonSchema(schema).properties as Record<string, Record<string, unknown>>;
    const create = props(TaskCreateToolInput);
    const update = props(TaskUpdateToolInput);
    for (const p of [create, update]) {
      expect(p.subject).toMatchObject({ minLength: 1, maxLength: TASK_SUBJECT_MAX });
      expect(p.description).toMatchObject({ minLength: 1, maxLength: TASK_DESCRIPTION_MAX });
      expect(p.blockedBy).toMatchObject({ maxItems: TASK_BLOCKED_BY_MAX });
      expect(p.writeScopes).toMatchObject({
        maxItems: TASK_WRITE_SCOPES_MAX,
        items: { maxLength: WRITE_SCOPE_MAX },
      });
    }
    expect(props(SendMessageToolInput).summary).toMatchObject({ maxLength: MESSAGE_SUMMARY_MAX });
    expect(props(SendMessageToolInput).to).toMatchObject({ maxLength: MEMBER_NAME_MAX });
    const spawn = props(spawnTeammateToolInput(['worker']));
    expect(spawn.description).toMatchObject({ maxLength: MEMBER_DESCRIPTION_MAX });
    expect(spawn.name).toMatchObject({ maxLength: MEMBER_NAME_MAX });
    expect(props(TaskListToolInput).limit).toMatchObject({ maximum: TASK_PAGE_MAX });
    expect(props(WaitForTeamToolInput).timeoutMs).toMatchObject({
      minimum: WAIT_TIMEOUT_MIN_MS,
      maximum: WAIT_TIMEOUT_MAX_MS,
    });
    // A shutdown reason is message content: bounded by maxMessageBytes in the state, not here.
    expect(props(ShutdownTeammateToolInput).reason).not.toHaveProperty('maxLength');
  });

  it('what a tool schema accepts at its limit, emoji included, the state accepts too', async () => {
    const h = await openHarness({
      scripts: {
        lead: notedLead,
        bob: [
          { text: 'Hi.' },
          {
            toolCalls: [
              {
                name: 'task_create',
                input: {
                  subject: EMOJI.repeat(TASK_SUBJECT_MAX),
                  description: EMOJI.repeat(TASK_DESCRIPTION_MAX),
                  // each exactly WRITE_SCOPE_MAX code points: `07/` and then emoji
                  writeScopes: Array.from(
                    { length: TASK_WRITE_SCOPES_MAX },
                    (_, i) => `${String(i).padStart(2, '0')}/${EMOJI.repeat(WRITE_SCOPE_MAX - 3)}`,
                  ),
                },
              },
              {
                name: 'send_message',
                input: { to: 'lead', message: 'fyi', summary: EMOJI.repeat(MESSAGE_SUMMARY_MAX) },
              },
              {
                name: 'send_message',
                input: {
                  to: 'lead',
                  message: 'fyi',
                  summary: EMOJI.repeat(MESSAGE_SUMMARY_MAX + 1),
                },
              },
            ],
          },
          { text: 'Done.' },
        ],
      },
      idleClaim: false,
    });
    await spawnIdle(h, 'bob');
    await h.service.sendMessage(h.service.lead, { to: 'bob', text: 'Go.' });
    await h.service.idle();
    const results = h.transcript('bob').filter((line) => line.startsWith('tool '));
    expect(results[0]).toMatch(/^tool task_create: \{"id":"task-1"/);
    expect(results[1]).toMatch(/^tool send_message: \{"messageId"/);
    // One over the limit is refused by the schema, before the service is called.
    expect(results[2]).toMatch(
      /^tool send_message \(error\): \{"error":\{"code":"INVALID_ARGUMENT"/,
    );
    const task = h.service.getTask(h.service.lead, { taskId: 'task-1' });
    expect(textLength(task.subject)).toBe(TASK_SUBJECT_MAX);
    expect(task.writeScopes).toHaveLength(TASK_WRITE_SCOPES_MAX);
  });
});
