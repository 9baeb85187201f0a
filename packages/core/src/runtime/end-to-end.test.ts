import { describe, expect, it } from 'vitest';
import { foldTeam } from '../state/index.js';
import type { ScriptedStep, ScriptedStepFunction } from '../testing/scripted-model.js';
import type { Harness } from './test-harness.js';
import { continuesTurn, lastMessage, openHarness, TEAM_ID } from './test-harness.js';

const TEAMMATES = ['alice', 'bob', 'carol'] as const;

/** Who a teammate tells when it finishes a task. */
const TELL: Record<string, string> = {
  'task-1': 'bob',
  'task-2': 'carol',
  'task-3': 'alice',
  'task-4': 'lead',
};

function worker(): ScriptedStepFunction {
  return ({ request }) => {
    const last = lastMessage(request.messages);
    if (last?.role === 'user' && last.source?.kind === 'task-claim') {
      const taskId = last.source.taskId;
      return {
        toolCalls: [
          { name: 'task_update', input: { taskId, action: 'complete' } },
          {
            name: 'send_message',
            input: { to: TELL[taskId], message: `${taskId} is done.` },
          },
        ],
      };
    }
    if (continuesTurn(request.messages)) return { text: 'Finished my task.' };
    return { text: 'Noted.' };
  };
}

function leadScript(h: () => Harness): ScriptedStepFunction {
  let shutdownSent = false;
  return ({ request, call }): ScriptedStep => {
    const { service } = h();
    if (call === 1) {
      return {
        toolCalls: TEAMMATES.map((name) => ({
          name: 'spawn_teammate',
          input: {
            name,
            description: `${name} builds things`,
            prompt: `Hi ${name}, claim tasks as they become ready.`,
          },
        })),
      };
    }
    if (call === 2) {
      return {
        toolCalls: [
          { name: 'task_create', input: { subject: 'Design API', description: 'Write the API.' } },
          {
            name: 'task_create',
            input: { subject: 'Server', description: 'Build the server.', blockedBy: ['task-1'] },
          },
          {
            name: 'task_create',
            input: { subject: 'Client', description: 'Build the client.', blockedBy: ['task-1'] },
          },
          {
            name: 'task_create',
            input: {
              subject: 'Integrate',
              description: 'Wire it together.',
              blockedBy: ['task-2', 'task-3'],
            },
          },
        ],
      };
    }
    if (!continuesTurn(request.messages)) return { text: 'Noted.' };
    const members = service.listMembers(service.lead).filter((m) => !m.isLead);
    if (members.every((m) => m.status === 'retired')) return { text: 'All done.' };
    const tasks = service.listTasks(service.lead).tasks;
    if (!shutdownSent && tasks.every((t) => t.status === 'completed')) {
      shutdownSent = true;
      return {
        toolCalls: TEAMMATES.map((name) => ({
          name: 'shutdown_teammate',
          input: { name, reason: 'Work is complete.' },
        })),
      };
    }
    return { toolCalls: [{ name: 'wait_for_team', input: {} }] };
  };
}

describe('a scripted team, end to end', () => {
  it('spawns three teammates, runs a task DAG to completion and shuts them down', async () => {
    let harness: Harness | undefined;
    const h = await openHarness({
      scripts: {
        lead: leadScript(() => harness as Harness),
        alice: worker(),
        bob: worker(),
        carol: worker(),
      },
    });
    harness = h;
    const outcome = await h.service.promptLead('Build the feature with a team of three.');
    await h.service.idle();
    expect(h.sink.errors()).toEqual([]);
    expect(outcome.stopReason).toBe('end_turn');

    const names = new Map(h.service.listMembers(h.service.lead).map((m) => [m.memberId, m.name]));
    const board = h.service.listTasks(h.service.lead, {
      status: ['pending', 'in_progress', 'completed', 'deleted'],
    });
    expect(
      board.tasks.map((t) => [t.id, t.status, names.get(t.ownerId ?? ''), t.blockedBy.join(',')]),
    ).toEqual([
      ['task-1', 'completed', 'alice', ''],
      ['task-2', 'completed', 'bob', 'task-1'],
      ['task-3', 'completed', 'carol', 'task-1'],
      ['task-4', 'completed', 'alice', 'task-2,task-3'],
    ]);
    expect(
      h.service.listMembers(h.service.lead).map((m) => `${m.name}:${m.phase}:${m.status}`),
    ).toEqual([
      'lead:active:idle',
      'alice:retired:retired',
      'bob:retired:retired',
      'carol:retired:retired',
    ]);

    const spawn = (name: string) =>
      `-> spawn_teammate {"name":"${name}","description":"${name} builds things","prompt":"Hi ${name}, claim tasks as they become ready."}`;
    const shutdown = (name: string) =>
      `-> shutdown_teammate {"name":"${name}","reason":"Work is complete."}`;
    expect(h.transcript('lead')).toEqual([
      'host: Build the feature with a team of three.',
      `assistant: ${spawn('alice')} ${spawn('bob')} ${spawn('carol')}`,
      'tool spawn_teammate: {"memberId":"id-000001","name":"alice","messageId":"id-000002"}',
      'tool spawn_teammate: {"memberId":"id-000003","name":"bob","messageId":"id-000004"}',
      'tool spawn_teammate: {"memberId":"id-000005","name":"carol","messageId":"id-000006"}',
      'user: [idle notification from alice]\nNoted.',
      'user: [idle notification from bob]\nNoted.',
      'assistant: -> task_create {"subject":"Design API","description":"Write the API."} -> task_create {"subject":"Server","description":"Build the server.","blockedBy":["task-1"]} -> task_create {"subject":"Client","description":"Build the client.","blockedBy":["task-1"]} -> task_create {"subject":"Integrate","description":"Wire it together.","blockedBy":["task-2","task-3"]}',
      'tool task_create: {"id":"task-1","subject":"Design API","status":"pending","ready":true,"revision":1}',
      'tool task_create: {"id":"task-2","subject":"Server","status":"pending","blockedBy":["task-1"],"ready":false,"revision":1}',
      'tool task_create: {"id":"task-3","subject":"Client","status":"pending","blockedBy":["task-1"],"ready":false,"revision":1}',
      'tool task_create: {"id":"task-4","subject":"Integrate","status":"pending","blockedBy":["task-2","task-3"],"ready":false,"revision":1}',
      'user: [idle notification from carol]\nNoted.',
      'assistant: -> wait_for_team {}',
      'tool wait_for_team: {"changed":true,"changes":["task-4 in_progress (alice)"],"members":["alice: running","bob: running","carol: running"]}',
      'user: [idle notification from alice]\nFinished my task.',
      'assistant: -> wait_for_team {}',
      'tool wait_for_team: {"changed":true,"changes":["message alice -> lead"],"members":["alice: running","bob: idle","carol: idle"]}',
      'user: [idle notification from bob]\nFinished my task.',
      'user: [idle notification from carol]\nFinished my task.',
      'user: [message from alice]\ntask-4 is done.',
      `assistant: ${shutdown('alice')} ${shutdown('bob')} ${shutdown('carol')}`,
      'tool shutdown_teammate: {"messageId":"id-000011","status":"accepted"}',
      'tool shutdown_teammate: {"messageId":"id-000012","status":"accepted"}',
      'tool shutdown_teammate: {"messageId":"id-000013","status":"accepted"}',
      'user: [idle notification from alice]\nFinished my task.',
      'assistant: All done.',
    ]);
    const done = (
      taskId: string,
      subject: string,
      blockedBy: string,
      to: string,
      messageId: string,
    ) => [
      `assistant: -> task_update {"taskId":"${taskId}","action":"complete"} -> send_message {"to":"${to}","message":"${taskId} is done."}`,
      `tool task_update: {"id":"${taskId}","subject":"${subject}","status":"completed","owner":"${names.get(board.tasks.find((t) => t.id === taskId)?.ownerId ?? '')}",${blockedBy}"revision":3}`,
      `tool send_message: {"messageId":"${messageId}","status":"accepted"}`,
    ];
    expect(h.transcript('alice')).toEqual([
      'user: [message from lead]\nHi alice, claim tasks as they become ready.',
      'assistant: Noted.',
      'claim task-1: You claimed task-1: Design API\nWrite the API.',
      ...done('task-1', 'Design API', '', 'bob', 'id-000007'),
      'assistant: Finished my task.',
      'claim task-4: You claimed task-4: Integrate\nWire it together.',
      ...done('task-4', 'Integrate', '"blockedBy":["task-2","task-3"],', 'lead', 'id-000010'),
      'user: [message from carol]\ntask-3 is done.',
      'assistant: Finished my task.',
      'user: [shutdown request from lead]\nWork is complete.',
    ]);
    expect(h.transcript('bob')).toEqual([
      'user: [message from lead]\nHi bob, claim tasks as they become ready.',
      'assistant: Noted.',
      'claim task-2: You claimed task-2: Server\nBuild the server.\nOther open tasks: task-3 Client; task-4 Integrate',
      ...done('task-2', 'Server', '"blockedBy":["task-1"],', 'carol', 'id-000008'),
      'user: [message from alice]\ntask-1 is done.',
      'assistant: Finished my task.',
      'user: [shutdown request from lead]\nWork is complete.',
    ]);
    expect(h.transcript('carol')).toEqual([
      'user: [message from lead]\nHi carol, claim tasks as they become ready.',
      'assistant: Noted.',
      'claim task-3: You claimed task-3: Client\nBuild the client.\nOther open tasks: task-2 Server; task-4 Integrate',
      ...done('task-3', 'Client', '"blockedBy":["task-1"],', 'alice', 'id-000009'),
      'user: [message from bob]\ntask-2 is done.',
      'assistant: Finished my task.',
      'user: [shutdown request from lead]\nWork is complete.',
    ]);

    // Every message was delivered exactly once, and the log folds to the same team.
    const folded = foldTeam(h.log.records(), { teamId: TEAM_ID });
    expect(folded.pendingMail).toEqual([]);
    const queued = h.log.records().filter((r) => r.type === 'message.queued');
    const delivered = h.log.records().filter((r) => r.type === 'message.delivered');
    expect(delivered.map((r) => r.messageId).sort()).toEqual(
      queued.map((r) => r.message.id).sort(),
    );
    expect(folded.tasks.map((t) => t.status)).toEqual([
      'completed',
      'completed',
      'completed',
      'completed',
    ]);
    expect(folded.roster.map((m) => m.phase)).toEqual(['active', 'retired', 'retired', 'retired']);
    // Teammates got the team context after the shared, cacheable prefix.
    const first = h.model.requests('bob')[0];
    expect(first?.system[0]).toEqual({ text: 'You are a worker.', cacheable: true });
    expect(first?.system[1]?.text).toContain('You are bob, a teammate in a team led by lead.');
  });
});
