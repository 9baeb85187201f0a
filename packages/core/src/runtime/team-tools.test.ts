import { describe, expect, it } from 'vitest';
import { notedLead, openHarness, spawnIdle } from './test-harness.js';

describe('team tools', () => {
  it('give a teammate the roster and the board as compact JSON', async () => {
    const h = await openHarness({
      scripts: {
        lead: notedLead,
        bob: [
          { text: 'Hi.' },
          {
            toolCalls: [
              { name: 'list_members' },
              {
                name: 'task_create',
                input: {
                  subject: 'B',
                  description: 'b',
                  blockedBy: ['task-1'],
                  writeScopes: ['src/b/'],
                },
              },
              { name: 'task_update', input: { taskId: 'task-1', action: 'claim' } },
              { name: 'task_list', input: { owner: 'bob' } },
              { name: 'task_list', input: { unowned: true, limit: 1 } },
              {
                name: 'task_list',
                input: { status: ['pending', 'in_progress'], cursor: 'task-1' },
              },
              { name: 'task_get', input: { taskId: 'task-2' } },
              {
                name: 'task_update',
                input: { taskId: 'task-2', action: 'edit', subject: 'B2', expectedRevision: 1 },
              },
              { name: 'task_update', input: { taskId: 'task-2', action: 'set_dependencies' } },
              { name: 'send_message', input: { to: 'lead', message: 'FYI', delivery: 'quiet' } },
            ],
          },
          { text: 'Done.' },
        ],
      },
      idleClaim: false,
    });
    await spawnIdle(h, 'bob');
    await h.service.createTask(h.service.lead, { subject: 'A', description: 'a' });
    await h.service.sendMessage(h.service.lead, { to: 'bob', text: 'Look around.' });
    await h.service.idle();
    const results = h.transcript('bob').filter((line) => line.startsWith('tool '));
    expect(results).toEqual([
      'tool list_members: [{"name":"lead","description":"Leads the team","agentType":"lead","status":"idle"},{"name":"bob","description":"bob helps","agentType":"worker","status":"running"}]',
      'tool task_create: {"id":"task-2","subject":"B","status":"pending","blockedBy":["task-1"],"ready":false,"revision":1}',
      'tool task_update: {"id":"task-1","subject":"A","status":"in_progress","owner":"bob","revision":2}',
      'tool task_list: {"tasks":[{"id":"task-1","subject":"A","status":"in_progress","owner":"bob","revision":2}]}',
      'tool task_list: {"tasks":[{"id":"task-2","subject":"B","status":"pending","blockedBy":["task-1"],"ready":false,"revision":1}]}',
      'tool task_list: {"tasks":[{"id":"task-2","subject":"B","status":"pending","blockedBy":["task-1"],"ready":false,"revision":1}]}',
      'tool task_get: {"id":"task-2","subject":"B","status":"pending","blockedBy":["task-1"],"ready":false,"revision":1,"description":"b","creator":"bob","writeScopes":["src/b"]}',
      'tool task_update: {"id":"task-2","subject":"B2","status":"pending","blockedBy":["task-1"],"ready":false,"revision":2}',
      'tool task_update (error): {"error":{"code":"INVALID_ARGUMENT","message":"set_dependencies needs blockedBy (may be [])"}}',
      'tool send_message: {"messageId":"id-000004","status":"accepted"}',
    ]);
    // The quiet message waits in the lead's inbox for its next turn.
    expect(h.transcript('lead').some((line) => line.includes('FYI'))).toBe(true);
  });
});
