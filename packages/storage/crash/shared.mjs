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
