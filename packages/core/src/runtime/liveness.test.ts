import { describe, expect, it } from 'vitest';
import { contentText, textContent } from '../content.js';
import type { ScriptedCallContext, ScriptedStep } from '../testing/scripted-model.js';
import { deferred, notedLead, openHarness, spawnIdle } from './test-harness.js';

/** The text of the last user message of a request (the prompt that started or fed the turn). */
function lastUserText(context: ScriptedCallContext): string {
  const users = context.request.messages.filter((m) => m.role === 'user');
  const last = users[users.length - 1];
  return last === undefined ? '' : contentText(last.content);
}

/** True when the request ends with a tool result: the model answers it and ends the turn. */
function afterTool(context: ScriptedCallContext): boolean {
  return context.request.messages[context.request.messages.length - 1]?.role === 'tool';
}

function modelCalls(h: { model: { calls(agent: string): number } }, agent: string): number {
  return h.model.calls(agent);
}

describe('liveness: a member keeps going after interventions', () => {
  it('resumes the task it owns on the turn after an interrupt, and claims no other task first', async () => {
    const gate = deferred();
    const working = deferred();
    const prompts: string[] = [];
    const h = await openHarness({
      idleClaim: true,
      scripts: {
        lead: notedLead,
        bob: async (context): Promise<ScriptedStep> => {
          const text = lastUserText(context);
          if (context.call === 1) return { text: 'Ready.' };
          if (afterTool(context)) return { text: 'Done.' };
          prompts.push(text.split('\n').slice(0, 3).join(' '));
          if (context.call === 2) {
            working.resolve();
            return { text: 'Working on it', gate: gate.promise };
          }
          const taskId = /You claimed (task-\d+)/.exec(text)?.[1];
          if (taskId !== undefined) {
            return {
              toolCalls: [{ name: 'task_update', input: { taskId, action: 'complete' } }],
            };
          }
          return { text: 'Done.' };
        },
      },
    });
    await spawnIdle(h, 'bob');
    await h.service.createTask(h.service.lead, { subject: 'One', description: 'one' });
    await h.service.createTask(h.service.lead, { subject: 'Two', description: 'two' });
    await working.promise;
    expect(h.service.getTask(h.service.lead, { taskId: 'task-1' }).ownerId).toBe(h.memberId('bob'));
    await expect(h.service.interrupt(h.service.lead, { target: 'bob' })).resolves.toEqual({
      interrupted: true,
    });
    gate.resolve();
    await h.service.idle();
    // The interrupted task comes back first, as a resumption; only then does bob claim task-2.
    expect(prompts[0]).toMatch(/^You claimed task-1/);
    expect(prompts[1]).toMatch(/^You claimed task-1.*You are resuming task-1/);
    expect(prompts.findIndex((p) => /^You claimed task-2/.test(p))).toBe(2);
    const tasks = h.service.listTasks(h.service.lead).tasks.map((t) => [t.id, t.status]);
    expect(tasks).toEqual([
      ['task-1', 'completed'],
      ['task-2', 'completed'],
    ]);
    expect(h.sink.errors()).toEqual([]);
  });

  it('shows a member claiming a task as running while its claim is being written, so a wait does not find the team stalled', async () => {
    const claimSeen = deferred();
    const release = deferred();
    let bobId = '';
    const h = await openHarness({
      idleClaim: true,
      scripts: {
        lead: notedLead,
        bob: (context): ScriptedStep => {
          const taskId = /You claimed (task-\d+)/.exec(lastUserText(context))?.[1];
          if (taskId !== undefined && !afterTool(context)) {
            return { toolCalls: [{ name: 'task_update', input: { taskId, action: 'complete' } }] };
          }
          return { text: context.call === 1 ? 'Ready.' : 'Done.' };
        },
      },
      // bob's claim is held in the log until the test lets it through
      wrap: ({ log, transcripts }) => ({
        transcripts,
        log: {
          specificationVersion: 'v1',
          teamId: log.teamId,
          append: async (options) => {
            const claim = options.records.some(
              (r) =>
                r.type === 'task' && r.task.status === 'in_progress' && r.task.ownerId === bobId,
            );
            if (claim) {
              claimSeen.resolve();
              await release.promise;
            }
            return log.append(options);
          },
          read: (options) => log.read(options),
          subscribe: (options) => log.subscribe(options),
          lastSeq: () => log.lastSeq(),
          close: () => log.close(),
        },
      }),
    });
    await spawnIdle(h, 'bob');
    bobId = h.memberId('bob');
    await h.service.createTask(h.service.lead, { subject: 'One', description: 'one' });
    await claimSeen.promise;
    const bob = h.service.listMembers(h.service.lead).find((m) => m.name === 'bob');
    expect(bob?.status).toBe('running');
    expect(h.service.progress(h.service.lead)).toMatchObject({
      progressing: true,
      working: ['bob'],
    });
    release.resolve();
    await h.service.idle();
    expect(h.service.getTask(h.service.lead, { taskId: 'task-1' }).status).toBe('completed');
    expect(h.sink.errors()).toEqual([]);
  });

  it('does not claim a task it released itself again, so a task it declines cannot make it spin', async () => {
    const h = await openHarness({
      idleClaim: true,
      scripts: {
        lead: notedLead,
        bob: (context): ScriptedStep => {
          const text = lastUserText(context);
          if (afterTool(context)) return { text: 'Done.' };
          const taskId = /You claimed (task-\d+)/.exec(text)?.[1];
          if (taskId === 'task-1') {
            return { toolCalls: [{ name: 'task_update', input: { taskId, action: 'release' } }] };
          }
          if (taskId !== undefined) {
            return { toolCalls: [{ name: 'task_update', input: { taskId, action: 'complete' } }] };
          }
          return { text: context.call === 1 ? 'Ready.' : 'Done.' };
        },
      },
    });
    await spawnIdle(h, 'bob');
    await h.service.createTask(h.service.lead, { subject: 'Not mine', description: 'odd' });
    await h.service.createTask(h.service.lead, { subject: 'Mine', description: 'fine' });
    await h.service.idle();
    // Another interval passes: a parked bob looks at the board again and still leaves task-1.
    h.clock.advance(5_000);
    await h.service.idle();
    const tasks = h.service.listTasks(h.service.lead).tasks.map((t) => [t.id, t.status, t.ownerId]);
    expect(tasks).toEqual([
      ['task-1', 'pending', undefined],
      ['task-2', 'completed', h.memberId('bob')],
    ]);
    // spawn prompt, claim+release of task-1, claim+complete of task-2: each one turn of two calls.
    expect(modelCalls(h, 'bob')).toBe(5);
  });

  it('ends a turn that repeats one failing call, tells the lead, and waits for mail before acting again', async () => {
    const h = await openHarness({
      idleClaim: true,
      scripts: {
        lead: notedLead,
        bob: (context): ScriptedStep => {
          const text = lastUserText(context);
          if (context.call === 1) return { text: 'Ready.' };
          if (/try something else/.test(text)) return { text: 'OK, leaving it.' };
          // A model that keeps releasing a task it does not own, reading nothing from the error.
          return {
            toolCalls: [{ name: 'task_update', input: { taskId: 'task-1', action: 'release' } }],
          };
        },
      },
    });
    await h.service.createTask(h.service.lead, { subject: 'Odd', description: 'odd' });
    await h.service.updateTask(h.service.lead, { taskId: 'task-1', action: { type: 'claim' } });
    await spawnIdle(h, 'bob');
    await h.service.sendMessage(h.service.lead, {
      to: 'bob',
      content: textContent('Release task-1, please.'),
    });
    await h.service.idle();
    const ends = h.sink.events.filter((e) => e.agent === 'bob' && e.event.type === 'turn.end');
    expect(ends.map((e) => (e.event as { stopReason: string }).stopReason)).toEqual([
      'end_turn',
      'repeated_failure',
    ]);
    // The spawn prompt's call, then exactly three failing releases.
    expect(modelCalls(h, 'bob')).toBe(4);
    const leadLines = h.transcript('lead').join('\n');
    expect(leadLines).toMatch(
      /bob stopped: its call to task_update .* failed the same way 3 times in a row/,
    );
    // Board changes and intervals do not restart the loop; mail does.
    await h.service.createTask(h.service.lead, { subject: 'Other', description: 'other' });
    h.clock.advance(5_000);
    await h.service.idle();
    expect(modelCalls(h, 'bob')).toBe(4);
    await h.service.sendMessage(h.service.lead, {
      to: 'bob',
      content: textContent('Stop that and try something else.'),
    });
    await h.service.idle();
    expect(modelCalls(h, 'bob')).toBeGreaterThan(4);
    expect(h.sink.errors()).toEqual([]);
  });

  it('refuses a repeated-failure bound that is not a positive integer', async () => {
    await expect(
      openHarness({ scripts: { lead: notedLead }, maxRepeatedFailures: 0 }),
    ).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
  });
});
