import { expect, it } from 'vitest';
import { runExample } from './run-example.js';

it('in-memory.ts: the lead spawns ada, ada completes the task and mails the lead', async () => {
  const run = await runExample('in-memory.ts');
  expect(run.stderr).toBe('');
  expect(run.code).toBe(0);
  const lines = run.stdout.trim().split('\n');
  // the story in log order: spawn, the lead's prompt, the task, its claim and completion, the mail
  const story = [
    'member ada: provisioning',
    'mail lead -> ada [message]: Say hello, then work.',
    'task task-1 "Parser": pending',
    'task task-1 "Parser": in_progress (ada)',
    'task task-1 "Parser": completed (ada)',
    'mail ada -> lead [message]: task-1 is done.',
  ];
  const positions = story.map((line) => lines.indexOf(line));
  expect(positions).not.toContain(-1);
  expect([...positions].sort((a, b) => a - b)).toEqual(positions);
  expect(lines.at(-1)).toMatch(/^done: task-1 completed; model calls: lead \d+, ada 3$/);
});
