/** Bounds and value sets shared by the record schemas, their fast path and the team tools. */

/** Member names are at most this many characters. */
export const MEMBER_NAME_MAX = 64;
/** Task ids: `task-1`, `task-2`, ... numbered per team. */
export const TASK_ID_PATTERN = /^task-[1-9][0-9]*$/;
/** A task subject is one line of at most this many characters. */
export const TASK_SUBJECT_MAX = 200;
/** A task description holds at most this many characters. */
export const TASK_DESCRIPTION_MAX = 16384;

/** A member's lifecycle; see the fold rules for the moves allowed between them. */
export const MEMBER_PHASES = ['provisioning', 'active', 'failed', 'retired'] as const;
/** How a member's conversation starts. */
export const MEMBER_CONTEXTS = ['fresh', 'fork'] as const;
export const TASK_STATUSES = ['pending', 'in_progress', 'completed', 'deleted'] as const;
export const MESSAGE_KINDS = [
  'message',
  'idle_notification',
  'shutdown_request',
  'task_assignment',
] as const;
export const MESSAGE_DELIVERIES = ['quiet', 'wakeup'] as const;
