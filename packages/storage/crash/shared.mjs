// Helpers shared by the crash test's parent (run.mjs) and child (child.mjs).

export {
  CRASH_WINDOW_TOKENS,
  createRng,
  parseArgs,
  UsageError,
} from '../../../scripts/crash-support.mjs';

/** The agent types of the scripted team. */
export const LEAD_TYPE = 'lead';
export const WORKER_TYPE = 'worker';

/** How many active teammates the child keeps (it spawns more when a spawn was cut by a kill). */
export const TEAMMATES = 4;

/** The log moves to a new segment every 16 KiB, so a run crosses many segments. */
export const CRASH_SEGMENT_BYTES = 16 * 1024;

/** Snapshots every 40 records (two kept), so kills land around them. */
export const CRASH_SNAPSHOTS = { everyRecords: 40, everyBytes: 16 * 1024, keep: 2 };

/** Where the child may kill itself on purpose (see `killingFs` in child.mjs). */
export const KILL_POINTS = [
  'snapshot',
  'segment',
  'segment-write',
  'journal-write',
  'journal-synced',
];
