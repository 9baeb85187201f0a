import { expect, it } from 'vitest';
import { startExample, waitForLine } from './run-example.js';

it('dashboard.ts: the printed URL and token open the snapshot of the running team', async () => {
  const example = startExample('dashboard.ts');
  try {
    const [, url] = await waitForLine(
      example,
      /^dashboard: (http:\/\/127\.0\.0\.1:\d+\/\?token=\S+)$/m,
    );
    await waitForLine(example, /^team idle; Ctrl-C to stop$/m);
    const page = new URL(url ?? '');
    const token = page.searchParams.get('token') ?? '';
    const snapshotUrl = new URL('/api/snapshot', page);

    expect((await fetch(snapshotUrl)).status).toBe(401); // no token, no team
    const answer = await fetch(snapshotUrl, { headers: { Authorization: `Bearer ${token}` } });
    expect(answer.status).toBe(200);
    // biome-ignore lint/suspicious/noExplicitAny: the snapshot's fields are checked one by one
    const snapshot: any = await answer.json();
    expect(snapshot).toMatchObject({ version: 1, teamId: 'dashboard-1', readOnly: false });
    expect(snapshot.statuses).toEqual({ lead: 'idle', ada: 'idle' });
    // biome-ignore lint/suspicious/noExplicitAny: records as the snapshot carries them
    const tasks = snapshot.records.filter((r: any) => r.type === 'task').map((r: any) => r.task);
    expect(tasks.at(-1)).toMatchObject({ id: 'task-1', subject: 'Parser', status: 'completed' });
  } finally {
    example.child.kill('SIGTERM');
  }
  const run = await example.done;
  expect(run.stderr).toBe('');
  expect(run.code).toBe(0);
  expect(run.stdout.trim().split('\n').at(-1)).toBe('stopped');
});
