import { describe, expect, it } from 'vitest';
import { TeamState } from './state/index.js';
import { isTaskReady } from './task-readiness.js';
import { randomTeamRecords } from './testing/random-team.js';

describe('isTaskReady', () => {
  const statuses = new Map([
    ['task-1', 'completed' as const],
    ['task-2', 'in_progress' as const],
  ]);
  const statusOf = (id: string) => statuses.get(id);

  it('is true for a pending, unowned task whose blockers are all completed', () => {
    expect(isTaskReady({ status: 'pending', blockedBy: [] }, statusOf)).toBe(true);
    expect(isTaskReady({ status: 'pending', blockedBy: ['task-1'] }, statusOf)).toBe(true);
  });

  it('is false when a blocker is not completed or not known', () => {
    expect(isTaskReady({ status: 'pending', blockedBy: ['task-1', 'task-2'] }, statusOf)).toBe(
      false,
    );
    expect(isTaskReady({ status: 'pending', blockedBy: ['task-9'] }, statusOf)).toBe(false);
  });

  it('is false for an owned task, and for any status but pending', () => {
    expect(isTaskReady({ status: 'pending', ownerId: 'm1', blockedBy: [] }, statusOf)).toBe(false);
    for (const status of ['in_progress', 'completed', 'deleted'] as const) {
      expect(isTaskReady({ status, blockedBy: [] }, statusOf)).toBe(false);
    }
  });

  it("agrees with the task board's ready on random team histories", () => {
    const seen = new Set<boolean>();
    for (let seed = 1; seed <= 8; seed++) {
      const records = randomTeamRecords('team-r', 300, seed);
      const state = TeamState.fromRecords(records, { teamId: 'team-r' });
      const tasks = state.listTasks({ status: ['pending', 'in_progress', 'completed', 'deleted'] });
      const byId = new Map(tasks.map((task) => [task.id, task.status]));
      expect(tasks.length).toBeGreaterThan(0);
      for (const task of tasks) {
        expect(
          isTaskReady(task, (id) => byId.get(id)),
          `${task.id} of seed ${seed}`,
        ).toBe(task.ready);
        seen.add(task.ready);
      }
    }
    // the histories hold both ready and unready tasks, so the comparison can tell them apart
    expect([...seen].sort()).toEqual([false, true]);
  });
});
