import { describe, expect, it } from 'vitest';
import { runExample } from './run-example.js';

describe('a2a-two-teams.ts', () => {
  it("team A's lead gets team B's answer over A2A, from another process, offline", async () => {
    const run = await runExample('a2a-two-teams.ts');
    expect(run.stderr).toBe('');
    expect(run.code).toBe(0);
    // exactly one answer came back, once, from team B's lead
    expect(run.stdout.trim().split('\n')).toEqual([
      'reviewer (team B over A2A): Reviewed: ship it.',
    ]);
  });
});
