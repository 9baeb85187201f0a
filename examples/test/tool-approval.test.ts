import { expect, it } from 'vitest';
import { runExample } from './run-example.js';

const ASKED = 'pending: ada wants deploy {"env":"production","version":"1.4.0"}';

it('tool-approval.ts: ada parks on deploy; approved by the host, it runs once', async () => {
  const run = await runExample('tool-approval.ts');
  expect(run.stderr).toBe('');
  expect(run.code).toBe(0);
  expect(run.stdout.trim().split('\n')).toEqual([
    ASKED,
    'approved by the host',
    'deploy ran 1 time(s): 1.4.0 to production',
    'approval approved, started: true',
    'ada read: deployed 1.4.0 to production',
    // one call that asked, one after the call's result
    'model calls: ada 2',
  ]);
});

it('tool-approval.ts reject: the call never runs, ada reads the rejection', async () => {
  const byArg = await runExample('tool-approval.ts', ['reject']);
  const byEnv = await runExample('tool-approval.ts', [], { DEPLOY_DECISION: 'rejected' });
  for (const run of [byArg, byEnv]) {
    expect(run.stderr).toBe('');
    expect(run.code).toBe(0);
    expect(run.stdout.trim().split('\n')).toEqual([
      ASKED,
      'rejected by the host',
      'deploy ran 0 time(s)',
      'approval rejected, started: false',
      expect.stringMatching(
        /^ada read: \{"error":\{"code":"APPROVAL_REJECTED",.*freeze until Monday/,
      ),
      'model calls: ada 2',
    ]);
  }
});
