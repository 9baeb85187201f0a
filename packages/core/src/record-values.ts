/**
 * The values records are made of, shared by the zod schemas (`records.ts`) and the fast path that
 * mirrors them (`record-copy.ts`). Both import this module and neither imports the other's
 * values, so the fast path depends on nothing but these lists and the bounds in `limits.ts`.
 */

/** The schema version this code writes and the newest it reads. */
export const SCHEMA_VERSION = 1 as const;

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

/** A member workspace's `path` (absolute) has 1 to this many characters. */
export const WORKSPACE_PATH_MAX = 4096;
/** A member workspace's `branch` has 1 to this many characters. */
export const WORKSPACE_BRANCH_MAX = 255;
/** A member workspace's `base` (a commit id) has 1 to this many characters. */
export const WORKSPACE_BASE_MAX = 64;
