import {
  type AssistantMessage,
  type ChatMessage,
  INTERRUPTED_TOOL_RESULT,
  TERMINATED_TOOL_RESULT,
  type ToolCall,
} from '@teamwire/core';
import { xmlFormat } from '@teamwire/protocol';
import { describe, expect, it } from 'vitest';
import { createPolicyModel, type PolicyOptions, SUMMARY_SUBJECT } from './policy-model.js';

/** The policy's next answer to a conversation. */
async function nextStep(
  role: PolicyOptions['role'],
  messages: ChatMessage[],
): Promise<AssistantMessage> {
  const model = createPolicyModel({ role, format: xmlFormat, teammates: 1 });
  let message: AssistantMessage | undefined;
  for await (const event of model.stream({ system: [], messages, tools: [] })) {
    if (event.type === 'finish') message = event.message;
  }
  if (!message) throw new Error('the policy finished without a message');
  return message;
}

/** A conversation builder: each step is the model's tool calls and the results they got. */
function conversation(start: ChatMessage) {
  const messages: ChatMessage[] = [start];
  let n = 0;
  return {
    messages,
    step(calls: { name: string; input: unknown; result: unknown; isError?: boolean }[]) {
      const toolCalls: ToolCall[] = calls.map((c) => ({
        id: `call_${++n}`,
        name: c.name,
        input: c.input,
      }));
      messages.push({ role: 'assistant', content: [], toolCalls, stopReason: 'tool_calls' });
      calls.forEach((c, i) => {
        const call = toolCalls[i] as ToolCall;
        messages.push({
          role: 'tool',
          toolCallId: call.id,
          toolName: call.name,
          content: [
            {
              type: 'text',
              text: typeof c.result === 'string' ? c.result : JSON.stringify(c.result),
            },
          ],
          ...(c.isError ? { isError: true } : {}),
        });
      });
      return this;
    },
  };
}

/** The lead's turn as the host starts it. */
const leadConversation = () =>
  conversation({
    role: 'user',
    content: [{ type: 'text', text: 'review this codebase' }],
    source: { kind: 'host' },
  });

/** A reviewer's turn started by claiming the review of folder `a`. */
const claimConversation = () =>
  conversation({
    role: 'user',
    content: [{ type: 'text', text: 'Claimed task-1: Review a (path: a)' }],
    source: { kind: 'task-claim', taskId: 'task-1' },
  });

const files = {
  files: [
    { path: 'a/index.ts', lines: 3 },
    { path: 'b/index.ts', lines: 4 },
  ],
  total: 2,
};
const reviewer = { name: 'reviewer-1', status: 'idle' };
const task = (id: string, subject: string, status = 'pending', owner?: string) => ({
  id,
  subject,
  status,
  ...(owner ? { owner } : {}),
});
const board = [
  task('task-1', 'Review a'),
  task('task-2', 'Review b'),
  task('task-3', SUMMARY_SUBJECT, 'pending', 'lead'),
];

/** A lead that read the team, spawned its reviewer, created the board and waited once. */
function leadAfterPlanning() {
  return leadConversation()
    .step([
      { name: 'list_files', input: { path: '.' }, result: files },
      { name: 'list_members', input: {}, result: [{ name: 'lead', status: 'running' }] },
      { name: 'task_list', input: {}, result: { tasks: [] } },
    ])
    .step([{ name: 'spawn_teammate', input: { name: 'reviewer-1' }, result: { ok: true } }])
    .step([
      { name: 'task_create', input: {}, result: board[0] },
      { name: 'task_create', input: {}, result: board[1] },
    ])
    .step([{ name: 'task_create', input: {}, result: task('task-3', SUMMARY_SUBJECT) }])
    .step([{ name: 'task_update', input: {}, result: board[2] }])
    .step([{ name: 'wait_for_team', input: {}, result: { noProgress: undefined } }]);
}

const names = (m: AssistantMessage) => m.toolCalls.map((c) => c.name);

describe('the offline lead policy after a call whose outcome is unknown', () => {
  it('waits on a board it has read in full', async () => {
    const lead = leadAfterPlanning().step([
      { name: 'task_list', input: {}, result: { tasks: board } },
    ]);
    expect(names(await nextStep('lead', lead.messages))).toEqual(['wait_for_team']);
  });

  for (const [label, text] of [
    ['a process termination', TERMINATED_TOOL_RESULT],
    ['an interrupt', INTERRUPTED_TOOL_RESULT],
  ] as const) {
    it(`reads the team again when ${label} cut off its board read, instead of creating the tasks again`, async () => {
      const lead = leadAfterPlanning().step([
        { name: 'task_list', input: {}, result: text, isError: true },
      ]);
      const next = await nextStep('lead', lead.messages);
      expect(names(next)).toEqual(['list_files', 'list_members', 'task_list']);
    });
  }

  it('reads the board again before re-creating a task whose creation was cut off', async () => {
    const lead = leadConversation()
      .step([
        { name: 'list_files', input: { path: '.' }, result: files },
        { name: 'list_members', input: {}, result: [reviewer] },
        { name: 'task_list', input: {}, result: { tasks: [] } },
      ])
      .step([
        { name: 'task_create', input: {}, result: board[0] },
        { name: 'task_create', input: {}, result: TERMINATED_TOOL_RESULT, isError: true },
      ]);
    expect(names(await nextStep('lead', lead.messages))).toEqual([
      'list_files',
      'list_members',
      'task_list',
    ]);
    // the creation had landed: the fresh board shows it, so only the summary task is left
    lead.step([
      { name: 'list_files', input: { path: '.' }, result: files },
      { name: 'list_members', input: {}, result: [reviewer] },
      { name: 'task_list', input: {}, result: { tasks: board.slice(0, 2) } },
    ]);
    const next = await nextStep('lead', lead.messages);
    expect(next.toolCalls.map((c) => [c.name, (c.input as { subject?: string }).subject])).toEqual([
      ['task_create', SUMMARY_SUBJECT],
    ]);
  });

  it('does not stop the review when its file listing was cut off', async () => {
    const lead = leadConversation().step([
      { name: 'list_files', input: { path: '.' }, result: TERMINATED_TOOL_RESULT, isError: true },
      { name: 'list_members', input: {}, result: [reviewer] },
      { name: 'task_list', input: {}, result: { tasks: [] } },
    ]);
    expect(names(await nextStep('lead', lead.messages))).toEqual([
      'list_files',
      'list_members',
      'task_list',
    ]);
  });

  it('asks a teammate to shut down again when the first request was cut off', async () => {
    const completed = board.map((t) => ({ ...t, status: 'completed' }));
    const lead = leadConversation()
      .step([
        { name: 'list_files', input: { path: '.' }, result: files },
        { name: 'list_members', input: {}, result: [reviewer] },
        { name: 'task_list', input: {}, result: { tasks: completed } },
      ])
      .step([
        {
          name: 'shutdown_teammate',
          input: { name: 'reviewer-1' },
          result: TERMINATED_TOOL_RESULT,
          isError: true,
        },
      ])
      .step([
        { name: 'list_files', input: { path: '.' }, result: files },
        { name: 'list_members', input: {}, result: [reviewer] },
        { name: 'task_list', input: {}, result: { tasks: completed } },
      ]);
    const next = await nextStep('lead', lead.messages);
    expect(next.toolCalls.map((c) => [c.name, c.input])).toEqual([
      ['shutdown_teammate', { name: 'reviewer-1', reason: 'The review is complete.' }],
    ]);
  });
});

describe('the offline reviewer policy after a call whose outcome is unknown', () => {
  it('makes the call again rather than giving its task up', async () => {
    const review = claimConversation().step([
      { name: 'list_files', input: { path: 'a' }, result: TERMINATED_TOOL_RESULT, isError: true },
    ]);
    const next = await nextStep('reviewer', review.messages);
    expect(next.toolCalls.map((c) => [c.name, c.input])).toEqual([
      ['list_files', { path: 'a', limit: 2000 }],
    ]);
  });

  it('still gives its task up when a call really failed', async () => {
    const review = claimConversation().step([
      { name: 'list_files', input: { path: 'a' }, result: 'PATH_OUTSIDE_ROOT', isError: true },
    ]);
    const next = await nextStep('reviewer', review.messages);
    expect(next.toolCalls.map((c) => [c.name, c.input])).toEqual([
      ['task_update', { taskId: 'task-1', action: 'release' }],
    ]);
  });
});

describe('the offline reviewer policy after its context was compacted', () => {
  /** What core leaves of a reviewer's context: its brief, the summary, the task's prompt. */
  const compactedClaim = () => {
    const review = conversation({
      role: 'user',
      content: [{ type: 'text', text: 'You are a code reviewer on this team.' }],
      source: { kind: 'host' },
    });
    review.messages.push(
      {
        role: 'user',
        content: [{ type: 'text', text: 'Summary of the earlier conversation: ...' }],
        source: {
          kind: 'compaction',
          compactionId: 'c1',
          contextLength: 9,
          head: 1,
          replaced: 6,
          retained: [0],
          deliveredIds: [],
          reason: 'budget',
          policy: 'deterministic',
          tokensBefore: 20_000,
          tokensAfter: 4_000,
          estimated: false,
          durationMs: 1,
        },
      },
      {
        role: 'user',
        content: [{ type: 'text', text: 'Claimed task-1: Review a (path: a)' }],
        source: { kind: 'task-claim', taskId: 'task-1' },
      },
    );
    return review;
  };
  const reads = {
    list: { name: 'list_files', input: { path: 'a' }, result: files },
    file: {
      name: 'read_file',
      input: { path: 'a/index.ts', maxLines: 80 },
      result: { path: 'a/index.ts', text: 'export const a = 1;\n', totalLines: 3 },
    },
  };

  it('reads everything the summary replaced again in one call, with the file it had read', async () => {
    // the latest call was the file read: the listing and the searches went into the summary
    const review = compactedClaim().step([reads.file]);
    const next = await nextStep('reviewer', review.messages);
    expect(next.toolCalls.map((c) => [c.name, (c.input as { path: string }).path])).toEqual([
      ['list_files', 'a'],
      ['search_text', 'a'],
      ['search_text', 'a'],
      ['read_file', 'a/index.ts'],
    ]);
  });

  it('sends its findings once that one call is answered, without reading more', async () => {
    const review = compactedClaim().step([reads.file]);
    const bundle = await nextStep('reviewer', review.messages);
    const results = new Map<string, unknown>([
      ['list_files', files],
      ['read_file', reads.file.result],
    ]);
    review.step(
      bundle.toolCalls.map((c) => ({
        name: c.name,
        input: c.input,
        result: results.get(c.name) ?? { matches: [], total: 0 },
      })),
    );
    const next = await nextStep('reviewer', review.messages);
    expect(names(next)).toEqual(['send_message']);
    const message = (next.toolCalls[0]?.input as { message?: string } | undefined)?.message;
    expect(message).toContain('Review of a (task-1)');
    expect(message).toContain('files: 2, lines: 7, TODO/FIXME: 0, exported symbols: 0');
    expect(message).toContain('read the largest file a/index.ts (3 lines');
  });

  it('completes the task when only its findings message is left after the summary', async () => {
    const review = compactedClaim().step([
      { name: 'send_message', input: { to: 'lead', message: 'findings' }, result: { ok: true } },
    ]);
    const next = await nextStep('reviewer', review.messages);
    expect(next.toolCalls.map((c) => [c.name, c.input])).toEqual([
      ['task_update', { taskId: 'task-1', action: 'complete' }],
    ]);
  });

  it('ends its turn when the completed task is all that is left, its prompt summarised too', async () => {
    const review = compactedClaim();
    review.messages.pop(); // a completed task's prompt is not kept through a compaction
    review.step([
      {
        name: 'task_update',
        input: { taskId: 'task-1', action: 'complete' },
        result: task('task-1', 'Review a', 'completed', 'reviewer-1'),
      },
    ]);
    const next = await nextStep('reviewer', review.messages);
    expect(next).toMatchObject({ toolCalls: [], content: [{ text: 'Reviewed task-1.' }] });
  });

  it('keeps its usual order of reads in a context never compacted', async () => {
    const review = claimConversation().step([reads.list]);
    expect(names(await nextStep('reviewer', review.messages))).toEqual([
      'search_text',
      'search_text',
    ]);
  });
});
