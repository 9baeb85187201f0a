import {
  type AssistantMessage,
  type ChatMessage,
  INTERRUPTED_TOOL_RESULT,
  TERMINATED_TOOL_RESULT,
  type ToolCall,
} from '@teamwire/core';
import { xmlFormat } from '@teamwire/protocol';
import { describe, expect, it } from 'vitest';
import { MAX_STALLED_WAITS } from './policy-lead-common.js';
import { createPolicyModel, type PolicyOptions, SUMMARY_SUBJECT } from './policy-model.js';
import { failedCalls } from './test-support.js';

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

/** A task-claim prompt as core words it (a resume after an interrupt or a takeover starts the same). */
const claimPrompt = (
  taskId: string,
  subject: string,
  description: string,
  note = '',
): ChatMessage => ({
  role: 'user',
  content: [
    {
      type: 'text',
      text: `You claimed ${taskId}: ${subject}\n\n${description}${note}\n\nWork on ${taskId} now.`,
    },
  ],
  source: { kind: 'task-claim', taskId },
});
const reviewA = () =>
  claimPrompt(
    'task-1',
    'Review a',
    'Review the folder a (path: a): files, lines; send the findings to the lead.',
  );

/** The answers of a small world to a reviewer's calls: folder `a` and a board that takes every update. */
function reviewerWorld(call: { name: string; input: unknown }): unknown {
  const input = call.input as { path?: string; taskId?: string; action?: string };
  switch (call.name) {
    case 'list_files':
      return { files: [{ path: 'a/index.ts', lines: 3 }], total: 1 };
    case 'search_text':
      return { matches: [], total: 0 };
    case 'read_file':
      return { path: input.path, text: 'export const a = 1;\n', totalLines: 3 };
    case 'send_message':
      return { messageId: 'm1', status: 'queued' };
    case 'task_update':
      return task(
        input.taskId ?? '?',
        'Review a',
        input.action === 'complete' ? 'completed' : 'pending',
      );
    default:
      throw new Error(`unexpected call ${call.name}`);
  }
}

/** What a world answers a call with: a result, a tool error, or a cut (the turn ends there). */
type Answer = unknown;
/** The turn is cut off at this call (an interrupt, a kill): its result is `text`, nothing follows. */
const cut = (text: string) => ({ cutOff: text });

/**
 * Runs the policy to the end of its turn against `world`, appending each answer and the results
 * it gets; returns every call it made. A `cut` answer ends the turn there, as core ends a turn
 * that was interrupted or killed. Fails past `limit` steps: a policy that loops never ends.
 */
async function runTurnOf(
  role: PolicyOptions['role'],
  messages: ChatMessage[],
  world: (call: { name: string; input: unknown }) => Answer,
  limit = 50,
): Promise<{ calls: ToolCall[]; text: string; steps: number }> {
  const calls: ToolCall[] = [];
  for (let step = 0; step < limit; step++) {
    const answer = await nextStep(role, messages);
    messages.push(answer);
    if (answer.toolCalls.length === 0) {
      const text = answer.content.map((c) => (c.type === 'text' ? c.text : '')).join('');
      return { calls, text, steps: step + 1 };
    }
    let stopped = false;
    for (const call of answer.toolCalls) {
      calls.push(call);
      const result = stopped ? cut(INTERRUPTED_TOOL_RESULT) : world(call);
      const cutOff = (result as { cutOff?: string } | null)?.cutOff;
      const failed = cutOff !== undefined || (result as { error?: unknown } | null)?.error;
      messages.push({
        role: 'tool',
        toolCallId: call.id,
        toolName: call.name,
        content: [{ type: 'text', text: cutOff ?? JSON.stringify(result) }],
        ...(failed ? { isError: true } : {}),
      });
      if (cutOff !== undefined) stopped = true;
    }
    if (stopped) return { calls, text: '', steps: step + 1 };
  }
  throw new Error(`the ${role} policy did not end its turn in ${limit} steps`);
}

const count = (calls: readonly ToolCall[], name: string) =>
  calls.filter((c) => c.name === name).length;

describe('the offline reviewer policy resumes a task from its transcript', () => {
  it('after a takeover, a second claim of a task whose findings it sent completes it without sending them again', async () => {
    // the first turn: the whole review and the findings; the process was killed during the
    // completion, which a revival finds without a result (core repairs it as terminated)
    const messages: ChatMessage[] = [reviewA()];
    const first = await runTurnOf('reviewer', messages, (call) =>
      call.name === 'task_update' ? cut(TERMINATED_TOOL_RESULT) : reviewerWorld(call),
    );
    expect(count(first.calls, 'send_message')).toBe(1);

    // the member revived in another process is told of its task again
    messages.push(reviewA());
    const second = await runTurnOf('reviewer', messages, reviewerWorld);
    expect(second.calls.map((c) => [c.name, c.input])).toEqual([
      ['task_update', { taskId: 'task-1', action: 'complete' }],
    ]);
    expect(callNames(messages).filter((n) => n === 'send_message')).toHaveLength(1);
  });

  it('after an interrupt, the resume prompt continues from the reads it has, with no read or message twice', async () => {
    // listed and searched; the read of the largest file was cut off by the interrupt
    const messages: ChatMessage[] = [reviewA()];
    const first = await runTurnOf('reviewer', messages, (call) =>
      call.name === 'read_file' ? cut(INTERRUPTED_TOOL_RESULT) : reviewerWorld(call),
    );
    expect(first.calls.map((c) => c.name)).toEqual([
      'list_files',
      'search_text',
      'search_text',
      'read_file',
    ]);
    messages.push(
      claimPrompt(
        'task-1',
        'Review a',
        'Review the folder a (path: a): files, lines; send the findings to the lead.',
        '\n\nYour work on this task was interrupted; resume it where you stopped.',
      ),
    );
    const resumed = await runTurnOf('reviewer', messages, reviewerWorld);
    expect(resumed.calls.map((c) => c.name)).toEqual(['read_file', 'send_message', 'task_update']);
    const all = callNames(messages);
    expect(all.filter((n) => n === 'list_files')).toHaveLength(1);
    expect(all.filter((n) => n === 'search_text')).toHaveLength(2);
    expect(all.filter((n) => n === 'send_message')).toHaveLength(1);
  });

  it('reviews a task reopened after it completed it, from the start', async () => {
    const messages: ChatMessage[] = [reviewA()];
    const first = await runTurnOf('reviewer', messages, reviewerWorld);
    expect(count(first.calls, 'task_update')).toBe(1);
    messages.push(reviewA());
    const again = await runTurnOf('reviewer', messages, reviewerWorld);
    expect(again.calls.map((c) => c.name)).toEqual(first.calls.map((c) => c.name));
  });
});

/** The name of every tool call in `messages`, in order. */
function callNames(messages: readonly ChatMessage[]): string[] {
  return messages.flatMap((m) => (m.role === 'assistant' ? m.toolCalls.map((c) => c.name) : []));
}

describe('the offline reviewer policy given a task that names no folder', () => {
  const operatorTask = () =>
    claimPrompt('task-9', 'Check the licence headers', 'Every file needs one.');

  it('tells the lead and completes it in one step, then ends its turn', async () => {
    const messages: ChatMessage[] = [operatorTask()];
    const turn = await runTurnOf('reviewer', messages, (call) =>
      call.name === 'task_update'
        ? task('task-9', 'Check the licence headers', 'completed', 'reviewer-1')
        : { messageId: 'm1', status: 'queued' },
    );
    expect(turn.calls.map((c) => [c.name, (c.input as { to?: string }).to])).toEqual([
      ['send_message', 'lead'],
      ['task_update', undefined],
    ]);
    expect(turn.calls[1]?.input).toEqual({ taskId: 'task-9', action: 'complete' });
    expect((turn.calls[0]?.input as { message?: string } | undefined)?.message).toContain(
      'task-9 ("Check the licence headers") names no folder to review',
    );
  });

  it('makes no call again when the task cannot be changed', async () => {
    const messages: ChatMessage[] = [operatorTask()];
    const turn = await runTurnOf('reviewer', messages, (call) =>
      call.name === 'task_update'
        ? { error: { code: 'NOT_ALLOWED_TO_CHANGE_STATUS', message: 'not yours' } }
        : { messageId: 'm1', status: 'queued' },
    );
    expect(turn.calls.map((c) => c.name)).toEqual(['send_message', 'task_update']);
    expect(turn.text).toContain('Could not close task-9');
  });
});

/** A board that takes every call: `task_list`, `task_create`, `task_update` (reassign, complete). */
function boardAnswer(tasks: ReturnType<typeof task>[], call: { name: string; input: unknown }) {
  const input = call.input as { subject?: string; taskId?: string; action?: string };
  if (call.name === 'task_list') return { tasks: tasks.map((t) => ({ ...t })) };
  if (call.name === 'task_create') {
    const created = task(`task-${tasks.length + 1}`, input.subject ?? '');
    tasks.push(created);
    return { ...created };
  }
  const found = tasks.find((t) => t.id === input.taskId);
  if (!found) return { error: { code: 'TASK_NOT_FOUND' } };
  if (input.action === 'reassign') Object.assign(found, { owner: 'lead' });
  if (input.action === 'complete') found.status = 'completed';
  return { ...found };
}

/**
 * A small world for the review lead: folders `a`, `b` and `c`, one reviewer, a board that takes
 * every call, and a `wait_for_team` that always finds nobody working; `onWait` may move the
 * board on at each wait.
 */
function leadWorld(
  onWait: (tasks: ReturnType<typeof task>[], waits: number) => void = () => {},
  reviewerStatus = 'idle',
) {
  const tasks: ReturnType<typeof task>[] = [];
  let waits = 0;
  const world = (call: { name: string; input: unknown }): unknown => {
    switch (call.name) {
      case 'list_files':
        return {
          files: ['a', 'b', 'c'].map((d) => ({ path: `${d}/index.ts`, lines: 3 })),
          total: 3,
        };
      case 'list_members':
        return [
          { name: 'lead', status: 'running' },
          { name: 'reviewer-1', status: 'idle' },
        ];
      case 'task_list':
      case 'task_create':
      case 'task_update':
        return boardAnswer(tasks, call);
      case 'wait_for_team':
        onWait(tasks, ++waits);
        return {
          noProgress: 'no other member is running or provisioning',
          members: [`reviewer-1: ${reviewerStatus}`],
        };
      case 'write_report':
        return { path: 'team-report.md', bytes: 1 };
      case 'spawn_teammate':
      case 'send_message':
      case 'shutdown_teammate':
        return { messageId: 'm1', status: 'queued' };
      default:
        throw new Error(`unexpected call ${call.name}`);
    }
  };
  return { world, tasks, waits: () => waits };
}

describe('the offline lead policy when the team stalls', () => {
  it('wraps up after a bounded number of waits that find nobody working, and says what is missing', async () => {
    const { world, tasks, waits } = leadWorld();
    const lead = leadConversation().messages;
    const turn = await runTurnOf('lead', lead, world, 100);

    // a few waits, one nudge, then the report of what the team did and the summary task
    expect(waits()).toBe(MAX_STALLED_WAITS);
    expect(count(turn.calls, 'send_message')).toBe(1);
    expect(turn.steps).toBeLessThanOrEqual(16);
    const report = turn.calls.find((c) => c.name === 'write_report');
    expect((report?.input as { markdown?: string } | undefined)?.markdown).toContain(
      '| a | - | - | - | - | not reviewed |',
    );
    expect(tasks.find((t) => t.subject === SUMMARY_SUBJECT)?.status).toBe('completed');
    expect(count(turn.calls, 'shutdown_teammate')).toBe(1);
    expect(turn.text).toContain('The review stopped short: 3 task(s) are not done');
    expect(turn.text).toContain('task-1 "Review a" (pending)');
  });

  it('reads the board again before nudging anyone: the work may have been finished just before the wait', async () => {
    // the lead read the board with every review open; the reviewers finished them all before
    // its wait, which then found nobody working
    const { world, waits } = leadWorld((tasks, n) => {
      if (n === 1)
        for (const t of tasks) if (t.subject.startsWith('Review ')) t.status = 'completed';
    });
    const turn = await runTurnOf('lead', leadConversation().messages, world, 100);
    expect(waits()).toBe(1);
    expect(count(turn.calls, 'send_message')).toBe(0);
    expect(turn.calls.find((c) => c.name === 'write_report')).toBeDefined();
    expect(turn.text).toBe('The review is complete; the report is in team-report.md.');
  });

  it('keeps waiting while the board moves on, however slowly', async () => {
    // one review task completes at every other wait, each wait finding nobody working
    const { world, waits } = leadWorld((tasks, n) => {
      const next = tasks.find((t) => t.subject.startsWith('Review ') && t.status !== 'completed');
      if (next && n % 2 === 0) next.status = 'completed';
    });
    const turn = await runTurnOf('lead', leadConversation().messages, world, 100);
    expect(waits()).toBeGreaterThan(MAX_STALLED_WAITS);
    expect(turn.text).toBe('The review is complete; the report is in team-report.md.');
    const report = turn.calls.find((c) => c.name === 'write_report');
    expect(report).toBeDefined();
  });

  it('waits for a task it did not plan before the report, and for one added after it, before shutting the team down', async () => {
    // the operator adds a task at the first wait, a reviewer finishes it at the third; the
    // operator adds another once the report is written, finished at the next wait
    const { world, tasks } = leadWorld((tasks, n) => {
      if (n === 1) {
        for (const t of tasks) if (t.subject.startsWith('Review ')) t.status = 'completed';
        tasks.push({
          ...task(`task-${tasks.length + 1}`, 'Operator check 1'),
          status: 'in_progress',
          owner: 'reviewer-1',
        });
      }
      const open = tasks.find((t) => t.subject.startsWith('Operator') && t.status !== 'completed');
      if (open && (n === 3 || n === 5)) open.status = 'completed';
    });
    const seen: string[] = [];
    const observed = (call: { name: string; input: unknown }): unknown => {
      const answer = world(call);
      const operator = tasks.filter((t) => t.subject.startsWith('Operator'));
      seen.push(`${call.name} ${operator.map((t) => t.status).join(',')}`);
      if (
        call.name === 'task_update' &&
        tasks.find((t) => t.subject === SUMMARY_SUBJECT)?.status === 'completed' &&
        operator.length === 1
      ) {
        tasks.push({
          ...task(`task-${tasks.length + 1}`, 'Operator check 2'),
          status: 'in_progress',
          owner: 'reviewer-1',
        });
      }
      return answer;
    };
    const turn = await runTurnOf('lead', leadConversation().messages, observed, 100);
    expect(seen.find((c) => c.startsWith('write_report'))).toBe('write_report completed');
    expect(seen.filter((c) => c.startsWith('shutdown_teammate'))).toEqual([
      'shutdown_teammate completed,completed',
    ]);
    expect(turn.text).toBe('The review is complete; the report is in team-report.md.');
  });

  it('spawns one more reviewer when every reviewer it had is gone and work is left', async () => {
    // reviewer-1 was shut down by the operator before it finished anything
    const spawnedNames: string[] = [];
    const { world, tasks } = leadWorld((tasks) => {
      // a reviewer spawned since finishes every review by the next wait
      if (spawnedNames.length > 0) {
        for (const t of tasks) if (t.subject.startsWith('Review ')) t.status = 'completed';
      }
    }, 'retired');
    const observed = (call: { name: string; input: unknown }): unknown => {
      if (call.name === 'list_members') {
        return [
          { name: 'lead', status: 'running' },
          { name: 'reviewer-1', status: 'retired', agentType: 'reviewer' },
          ...spawnedNames.map((name) => ({ name, status: 'idle', agentType: 'reviewer' })),
        ];
      }
      if (call.name === 'spawn_teammate') {
        spawnedNames.push((call.input as { name: string }).name);
        return { name: spawnedNames.at(-1) };
      }
      return world(call);
    };
    const turn = await runTurnOf('lead', leadConversation().messages, observed, 100);
    expect(spawnedNames).toEqual(['reviewer-2']);
    expect(tasks.every((t) => t.status === 'completed')).toBe(true);
    expect(turn.text).toBe('The review is complete; the report is in team-report.md.');
  });

  it('does not count a wait that cannot see its reviewer (inactive here: it may run in another process)', async () => {
    // a reviewer in another process, shown inactive; a folder done at every fifth wait
    const { world, waits } = leadWorld((tasks, n) => {
      const next = tasks.find((t) => t.subject.startsWith('Review ') && t.status !== 'completed');
      if (next && n % 5 === 0) next.status = 'completed';
    }, 'inactive');
    const turn = await runTurnOf('lead', leadConversation().messages, world, 100);
    expect(waits()).toBe(15);
    expect(turn.text).toBe('The review is complete; the report is in team-report.md.');
    // nor is a reviewer it cannot see nudged at every wait
    expect(count(turn.calls, 'send_message')).toBe(0);
  });
});

describe('the offline fix lead when a wait finds nobody working', () => {
  it('reads the board again before nudging anyone: the folder may have been finished just before the wait', async () => {
    let waits = 0;
    const { world, tasks } = fixLeadWorld((tasks, fixers) => {
      // the folder was done before the wait, which finds its reviewer idle
      waits++;
      for (const t of tasks) if (t.subject.startsWith('Fix ')) t.status = 'completed';
      return {
        noProgress: 'no other member is working, about to, or waiting for a process',
        members: fixers.map((n) => `${n}: idle`),
      };
    });
    const lead = leadConversation().messages;
    const turn = await runTurnOf('fix-lead', lead, world, 100);
    expect(waits).toBe(1);
    expect(count(turn.calls, 'send_message')).toBe(0);
    expect(tasks.every((t) => t.status === 'completed')).toBe(true);
    expect(failedCalls(lead)).toEqual([]);
    expect(turn.text).toBe('The fix is complete; the report is written.');
  });
});

/**
 * A small world for the fix lead: folder `a`, a board that takes every call, its fixers idle,
 * every merge clean; `wait` answers `wait_for_team` (it may move the board on).
 */
function fixLeadWorld(wait: (tasks: ReturnType<typeof task>[], fixers: string[]) => unknown) {
  const tasks: ReturnType<typeof task>[] = [];
  const fixers: string[] = [];
  const world = (call: { name: string; input: unknown }): unknown => {
    const named = call.input as { name: string; member: string };
    switch (call.name) {
      case 'list_files':
        return { files: [{ path: 'a/x.ts', lines: 1 }], total: 1 };
      case 'list_members':
        return [
          { name: 'lead', status: 'running' },
          ...fixers.map((name) => ({ name, status: 'idle' })),
        ];
      case 'task_list':
      case 'task_create':
      case 'task_update':
        return boardAnswer(tasks, call);
      case 'spawn_teammate':
        fixers.push(named.name);
        return { name: named.name };
      case 'wait_for_team':
        return wait(tasks, fixers);
      case 'merge_branch':
        return {
          member: named.member,
          branch: `teamwire/t/${named.member}`,
          into: 'teamwire-fix/t',
          exists: true,
          merged: true,
          conflicts: [],
          commits: [{ commit: 'a'.repeat(40), subject: 'Add review notes for a' }],
          files: ['a/REVIEW.md'],
        };
      case 'write_report':
        return { path: 'team-report.md', bytes: 1 };
      case 'shutdown_teammate':
        return { messageId: 'm1', status: 'queued' };
      default:
        throw new Error(`unexpected call ${call.name}`);
    }
  };
  return { world, tasks };
}

describe('the offline fix lead given a task it did not plan', () => {
  it('notes it in the report and completes it, so that it does not hold the team up', async () => {
    const { world, tasks } = fixLeadWorld((tasks, fixers) => {
      // the folder is done, and the operator added a task of their own
      for (const t of tasks) if (t.subject.startsWith('Fix ')) t.status = 'completed';
      tasks.push(task(`task-${tasks.length + 1}`, 'Check the licence headers'));
      return { changed: true, changes: [], members: fixers.map((n) => `${n}: idle`) };
    });
    const lead = leadConversation().messages;
    const turn = await runTurnOf('fix-lead', lead, world, 100);

    expect(tasks.map((t) => [t.subject, t.status])).toEqual([
      ['Fix a', 'completed'],
      ['Merge the branches and write the report', 'completed'],
      ['Check the licence headers', 'completed'],
    ]);
    const report = turn.calls.find((c) => c.name === 'write_report');
    const markdown = (report?.input as { markdown?: string } | undefined)?.markdown;
    expect(markdown).toContain('## Tasks outside the plan');
    expect(markdown).toContain('- task-3 "Check the licence headers"');
    expect(failedCalls(lead)).toEqual([]);
    expect(turn.text).toBe('The fix is complete; the report is written.');
  });
});
