import { describe, expect, it } from 'vitest';
import type { Task } from '../records.js';
import {
  CLAIM_PROMPT_MAX_LISTED_TASKS,
  formatAssignmentNotice,
  formatIdleNotice,
  formatTaskClaimPrompt,
  idleFallbackLine,
} from './texts.js';

function task(n: number, patch: Partial<Task> = {}): Task {
  return {
    id: `task-${n}`,
    revision: 1,
    subject: `Subject ${n}`,
    description: `Description ${n}`,
    status: 'pending',
    creatorId: 'lead-id',
    blockedBy: [],
    writeScopes: [],
    ...patch,
  };
}

describe('idle notice', () => {
  it('is the text, or the fallback line when blank', () => {
    expect(idleFallbackLine('bob')).toBe('bob is idle and ready for the next instruction.');
    expect(formatIdleNotice({ from: 'bob', text: ' Done. ' })).toBe(' Done. ');
    expect(formatIdleNotice({ from: 'bob' })).toBe(idleFallbackLine('bob'));
    expect(formatIdleNotice({ from: 'bob', text: '\n\t' })).toBe(idleFallbackLine('bob'));
  });
});

describe('formatTaskClaimPrompt', () => {
  it('gives the task in full, then the whole open board in id order', () => {
    const claimed = task(2, {
      status: 'in_progress',
      ownerId: 'me',
      subject: 'Write\nthe parser',
      description: 'Parse envelopes.\nKeep it strict.',
      writeScopes: ['src/parser/'],
    });
    const prompt = formatTaskClaimPrompt({
      task: claimed,
      openTasks: [
        task(10, { blockedBy: ['task-2', 'task-1'] }),
        claimed,
        task(3, { status: 'in_progress', ownerId: 'other' }),
        task(4, { ownerId: 'other' }),
        task(5, { status: 'completed' }),
        task(6, { status: 'deleted' }),
      ],
    });
    expect(prompt).toBe(
      [
        'You claimed task-2: Write the parser',
        '',
        'Parse envelopes.\nKeep it strict.',
        '',
        'Write scopes (advisory): src/parser/',
        '',
        'Open tasks on the board (4):',
        '- task-2 [in progress, yours] Write the parser',
        '- task-3 [in progress, owned by another member] Subject 3',
        '- task-4 [pending, owned by another member] Subject 4',
        '- task-10 [pending, unowned] Subject 10 (blocked by task-2)',
        '',
        'Work on task-2 now. When it is done, mark it completed, then claim the next open task ' +
          'that is pending, unowned and not blocked (lowest id first), and keep going until none ' +
          'is left. Message the lead when you are finished or stuck.',
      ].join('\n'),
    );
  });

  it('lists the claimed task even when the caller left it out', () => {
    const claimed = task(7, { status: 'in_progress', ownerId: 'me' });
    expect(formatTaskClaimPrompt({ task: claimed, openTasks: [] })).toContain(
      '- task-7 [in progress, yours] Subject 7',
    );
  });

  it(`summarises a board of more than ${CLAIM_PROMPT_MAX_LISTED_TASKS} open tasks`, () => {
    const board = Array.from({ length: 60 }, (_, i) => task(i + 1));
    const prompt = formatTaskClaimPrompt({ task: board[0] as Task, openTasks: board });
    expect(prompt).toContain('Open tasks on the board (60):');
    expect(prompt).toContain(`- task-${CLAIM_PROMPT_MAX_LISTED_TASKS} [`);
    expect(prompt).not.toContain(`- task-${CLAIM_PROMPT_MAX_LISTED_TASKS + 1} [`);
    expect(prompt).toContain('- ... and 10 more (list the task board to see them)');
  });
});

describe('formatAssignmentNotice', () => {
  it('names the assigner, the task and its description', () => {
    expect(formatAssignmentNotice({ task: task(3), assignedBy: 'lead' })).toBe(
      'lead assigned you task-3: Subject 3\n\nDescription 3\n\n' +
        'Start it when you are free and mark it in progress, mark it completed when it is done, ' +
        'and message lead if you are blocked.',
    );
  });
});
