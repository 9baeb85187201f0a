import { TASK_ID_PATTERN } from './limits.js';
import type { TaskActionType } from './state/index.js';

/**
 * Rules the state defines by type only, as values for schemas and parsers. Each is defined once,
 * here or in `limits.ts`, and imported wherever it is restated (tool schemas, page cursors, texts).
 */

/** Every task action `updateTask` takes, in the order the `task_update` tool lists them. */
export const TASK_ACTION_TYPES = [
  'claim',
  'release',
  'complete',
  'reopen',
  'edit',
  'set_dependencies',
  'reassign',
  'delete',
] as const satisfies readonly TaskActionType[];

// Fails to compile when the state gains an action this list lacks.
const _everyAction: Record<TaskActionType, true> = Object.fromEntries(
  TASK_ACTION_TYPES.map((type) => [type, true]),
) as Record<(typeof TASK_ACTION_TYPES)[number], true>;
void _everyAction;

/** The number of a task id (`task-12` -> 12), or `undefined` when `id` is not a task id. */
export function taskNumber(id: string): number | undefined {
  return TASK_ID_PATTERN.test(id) ? Number(id.slice(5)) : undefined;
}
