import type { Task, TaskStatus } from './records.js';

/*
 * When a task may be claimed, as a pure function of the task and its blockers' statuses. It
 * imports only types, so the dashboard's page bundles it and marks ready tasks by the same rule
 * as the task board.
 */

/**
 * Whether `task` may be claimed now (`ready` of a task view): `pending`, without an owner, and
 * every task it is blocked by `completed`. `statusOf` gives a blocker's status; a blocker it does
 * not know (`undefined`) is not completed.
 */
export function isTaskReady(
  task: Pick<Task, 'status' | 'ownerId' | 'blockedBy'>,
  statusOf: (taskId: string) => TaskStatus | undefined,
): boolean {
  if (task.status !== 'pending' || task.ownerId !== undefined) return false;
  for (const blocker of task.blockedBy) {
    if (statusOf(blocker) !== 'completed') return false;
  }
  return true;
}
