import { describe, expect, it } from 'vitest';
import { missingLines, missingWork, runExitCode } from './run-summary.js';

describe('the summary of a finished run', () => {
  const open = [
    { id: 'task-3', subject: 'Review docs', status: 'pending' },
    { id: 'task-4', subject: 'Review tools', status: 'in_progress', owner: 'reviewer-2' },
  ];

  it('names every open task and a report not written', () => {
    expect(missingWork({ openTasks: open, reportWritten: false, reportPath: '/r.md' })).toEqual([
      'task-3 "Review docs" is pending',
      'task-4 "Review tools" is in_progress (reviewer-2)',
      'the report /r.md was not written',
    ]);
    expect(missingWork({ openTasks: [], reportWritten: true, reportPath: '/r.md' })).toEqual([]);
  });

  it('exits 1 when work is missing, 0 only when none is', () => {
    const missing = ['task-3 "Review docs" is pending'];
    expect(runExitCode({ interrupted: false, missing })).toBe(1);
    expect(runExitCode({ interrupted: false, missing: [] })).toBe(0);
    expect(runExitCode({ interrupted: true, missing: [] })).toBe(130);
    expect(runExitCode({ interrupted: false, missing: [], problem: 'every worker exited' })).toBe(
      1,
    );
  });

  it('lists the missing work in the summary, except after Ctrl-C', () => {
    const missing = ['task-3 "Review docs" is pending'];
    expect(missingLines({ interrupted: false, missing })).toEqual([
      '  work missing (1):',
      '    - task-3 "Review docs" is pending',
    ]);
    expect(missingLines({ interrupted: true, missing })).toEqual([]);
  });
});
