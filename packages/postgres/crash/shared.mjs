// Helpers shared by the PostgreSQL crash test's driver (run.mjs), workers (worker.mjs) and checks
// (checks.mjs).

export { createRng, parseArgs, UsageError } from '../../../scripts/crash-support.mjs';

/** The agent types of the scripted team. */
export const LEAD_TYPE = 'lead';
export const WORKER_TYPE = 'worker';
/**
 * The constrained agent type: its members require {@link GPU_CAPABILITY}, which only the workers
 * of the capable slots declare, so they may only ever run in those workers.
 */
export const GPU_TYPE = 'gpu-worker';
/** The capability a {@link GPU_TYPE} member requires. */
export const GPU_CAPABILITY = 'label:gpu';
/** What each agent type of the scripted team requires of the process that runs its members. */
export const AGENT_REQUIRES = { [GPU_TYPE]: [GPU_CAPABILITY] };

/** How many slots are capable (slots 0 to n-1) unless --capable says otherwise: half, rounded up. */
export function defaultCapableSlots(workers) {
  return Math.ceil(workers / 2);
}

/** The database the crash test uses unless --url or TEAMWIRE_PG_URL says otherwise. */
export const DEFAULT_PG_URL = 'postgres://postgres@127.0.0.1:5432/test';

/** Every worker's processId starts with this, then its slot: `crash-<slot>-<pid>`. */
export const PROCESS_PREFIX = 'crash-';

/**
 * The capabilities of the worker process `processId` (`crash-<slot>-<pid>`) when the slots below
 * `capableSlots` are capable: every incarnation of a slot, a joiner included, has the same ones.
 * Any other process (the driver's) has none.
 */
export function capabilitiesOf(processId, capableSlots) {
  const id = String(processId);
  if (!id.startsWith(PROCESS_PREFIX)) return [];
  const match = /^(\d+)-\d+$/.exec(id.slice(PROCESS_PREFIX.length));
  return match !== null && Number(match[1]) < capableSlots ? [GPU_CAPABILITY] : [];
}

/**
 * Runtime `error` event codes a worker may report under chaos without it being a bug: a member
 * taken over by another process, a service that broke or was disposed, a database unreachable.
 */
export const EXPECTED_ERROR_CODES = new Set([
  'FENCED',
  'STORE_CLOSED',
  'DISPOSED',
  'STORE_UNAVAILABLE',
]);

/** The exit code of a worker whose team service broke (STORE_CLOSED): allowed, but listed. */
export const EXIT_SERVICE_BROKE = 3;
/** The exit code of a worker that hit something it cannot explain (a bug): fails the test. */
export const EXIT_FATAL = 2;
