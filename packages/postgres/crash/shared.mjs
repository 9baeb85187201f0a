// Helpers shared by the PostgreSQL crash test's driver (run.mjs), workers (worker.mjs) and checks
// (checks.mjs).

export { createRng, parseArgs, UsageError } from '../../../scripts/crash-support.mjs';

/** The agent types of the scripted team. */
export const LEAD_TYPE = 'lead';
export const WORKER_TYPE = 'worker';

/** The database the crash test uses unless --url or TEAMWIRE_PG_URL says otherwise. */
export const DEFAULT_PG_URL = 'postgres://postgres@127.0.0.1:5432/test';

/** Every worker's processId starts with this, then its slot: `crash-<slot>-<pid>`. */
export const PROCESS_PREFIX = 'crash-';

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
