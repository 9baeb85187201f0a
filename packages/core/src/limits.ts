/** Bounds shared by the record schemas, their fast path and the team tools. */

/** Member names are at most this many characters. */
export const MEMBER_NAME_MAX = 64;
/** Task ids: `task-1`, `task-2`, ... numbered per team. */
export const TASK_ID_PATTERN = /^task-[1-9][0-9]*$/;
/** A task subject is one line of at most this many characters. */
export const TASK_SUBJECT_MAX = 200;
/** A task description holds at most this many characters. */
export const TASK_DESCRIPTION_MAX = 16384;
