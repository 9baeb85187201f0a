import { expect, it } from 'vitest';
import { runExample } from './run-example.js';

it('external-mcp-member.ts: an MCP client takes alice, does the task and reports to the lead', async () => {
  const run = await runExample('external-mcp-member.ts');
  expect(run.stderr).toBe('');
  expect(run.code).toBe(0);
  const [config, ...rest] = run.stdout.trim().split('\n');
  expect(config).toMatch(
    /^claude mcp add --transport http teamwire-alice http:\/\/127\.0\.0\.1:\d+\/mcp --header 'Authorization: Bearer tw1\.alice\.[\w-]+'$/,
  );
  expect(rest).toEqual([
    'alice read message from lead: <teammate-message teammate_id="lead">',
    'Take task-1, then tell me.',
    '</teammate-message>',
    "alice's inbox after the ack: 0 messages",
    'lead read: <teammate-message teammate_id="alice" color="blue">',
    'task-1 is done.',
    '</teammate-message>',
    'task-1: completed',
  ]);
});
