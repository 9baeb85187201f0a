import { createHash } from 'node:crypto';
import { Backoff, TeamError } from '@teamwire/core';
import pg from 'pg';

/** How long to wait between attempts while PostgreSQL cannot be reached. */
export interface ReconnectOptions {
  /** The first wait after a lost connection, in ms. Default 50. */
  initialDelayMs?: number | undefined;
  /** Waits double up to this many ms. Default 2000. */
  maxDelayMs?: number | undefined;
}

/** The reconnect policy with its defaults filled in. */
export interface RetryPolicy {
  readonly initialDelayMs: number;
  readonly maxDelayMs: number;
}

/** Each wait spread by a quarter either way, so processes do not retry in lockstep. */
const RECONNECT_JITTER = [0.75, 1.25] as const;

/**
 * Doubling waits between attempts under `policy` (core's {@link Backoff}), jittered. The backoff
 * is made at the first wait: every statement starts one, and almost all of them never wait.
 */
export function reconnectBackoff(policy: RetryPolicy): Pick<Backoff, 'next' | 'reset'> {
  let backoff: Backoff | undefined;
  return {
    next: () => {
      backoff ??= new Backoff({ ...policy, jitter: RECONNECT_JITTER });
      return backoff.next();
    },
    reset: () => backoff?.reset(),
  };
}

/** Waits `ms`, or less when `signal` is aborted first. Never rejects. */
export function sleep(ms: number, signal: AbortSignal): Promise<void> {
  if (signal.aborted) return Promise.resolve();
  return new Promise((resolve) => {
    const done = () => {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal.addEventListener('abort', done, { once: true });
  });
}

/** The SQLSTATE of a PostgreSQL error (e.g. `23505`), if `error` carries one. */
export function sqlState(error: unknown): string | undefined {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' && /^[0-9A-Z]{5}$/.test(code) ? code : undefined;
}

/** The constraint a PostgreSQL constraint violation names. */
export function violatedConstraint(error: unknown): string | undefined {
  const constraint = (error as { constraint?: unknown } | null)?.constraint;
  return typeof constraint === 'string' ? constraint : undefined;
}

/** `23505`: a unique or primary key constraint refused the write. */
export function isUniqueViolation(error: unknown): boolean {
  return sqlState(error) === '23505';
}

const TRANSIENT_ERRNO = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ECONNABORTED',
  'EPIPE',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'EHOSTDOWN',
  'ENETUNREACH',
  'ENETDOWN',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EADDRNOTAVAIL',
]);

const TRANSIENT_SQLSTATE = new Set([
  '57P01', // admin_shutdown: the backend was terminated (pg_terminate_backend, fast shutdown)
  '57P02', // crash_shutdown
  '57P03', // cannot_connect_now: the server is starting or shutting down
  '53300', // too_many_connections
  '40001', // serialization_failure
  '40P01', // deadlock_detected
]);

/** Errors node-postgres raises without a code when a connection dies or cannot be made. */
const TRANSIENT_MESSAGE =
  /Connection terminated|not queryable|timeout exceeded when trying to connect|connection timeout|terminating connection/i;

/**
 * True for a failure that a later attempt may not meet: a lost or refused connection, a backend
 * terminated by the server, a server starting up, a serialization failure. Everything else (a
 * constraint, bad SQL, missing privileges) fails the same way again.
 */
export function isTransient(error: unknown): boolean {
  if (error instanceof ConnectError) return isTransient(error.cause);
  if (error instanceof AggregateError) return error.errors.some(isTransient);
  const state = sqlState(error);
  if (state !== undefined) return state.startsWith('08') || TRANSIENT_SQLSTATE.has(state);
  const code = (error as { code?: unknown } | null)?.code;
  if (typeof code === 'string' && TRANSIENT_ERRNO.has(code)) return true;
  return error instanceof Error && TRANSIENT_MESSAGE.test(error.message);
}

/** A failure to obtain a connection: the statement never reached the server. */
export class ConnectError extends Error {
  constructor(cause: unknown) {
    super(`cannot connect: ${describeError(cause)}`, { cause });
    this.name = 'ConnectError';
  }
}

/** A short description of a driver error, for messages. */
export function describeError(error: unknown): string {
  if (error instanceof ConnectError) return describeError(error.cause);
  if (error instanceof AggregateError && error.errors.length > 0) {
    return error.errors.map(describeError).join('; ');
  }
  if (error instanceof Error) {
    const state = sqlState(error);
    return state ? `${error.message} (SQLSTATE ${state})` : error.message || error.name;
  }
  return String(error);
}

/** A value node-postgres can bind as a query parameter. */
export type SqlValue = string | number | boolean | null | readonly (string | number | null)[];

/**
 * Runs one statement on a connection of its own from `pool`. A failure to connect is thrown as
 * {@link ConnectError} (the statement was not sent); any other failure is the driver's error. A
 * client whose connection broke is discarded, not returned to the pool.
 */
export async function execute<R extends pg.QueryResultRow>(
  pool: pg.Pool,
  text: string,
  values: readonly SqlValue[] = [],
  /** A name to prepare the statement under (once per connection): for hot statements. */
  name?: string,
): Promise<pg.QueryResult<R>> {
  let client: pg.PoolClient;
  try {
    client = await pool.connect();
  } catch (error) {
    throw new ConnectError(error);
  }
  // A checked-out client has no error listener: without one a dying socket would crash the process.
  const ignore = () => {};
  client.on('error', ignore);
  try {
    const result =
      name === undefined
        ? await client.query<R>(text, values as unknown[])
        : await client.query<R>({ name, text, values: values as unknown[] });
    client.removeListener('error', ignore);
    client.release();
    return result;
  } catch (error) {
    client.removeListener('error', ignore);
    client.release(isTransient(error) ? (error as Error) : undefined);
    throw error;
  }
}

/**
 * Runs `body` inside `BEGIN … COMMIT` on one connection, rolling back when it throws. Used for
 * migrations only: every write of the store is a single statement, atomic on its own.
 */
export async function transaction<T>(
  pool: pg.Pool,
  body: (client: pg.PoolClient) => Promise<T>,
): Promise<T> {
  let client: pg.PoolClient;
  try {
    client = await pool.connect();
  } catch (error) {
    throw new ConnectError(error);
  }
  const ignore = () => {};
  client.on('error', ignore);
  let broken: Error | undefined;
  try {
    await client.query('BEGIN');
    try {
      const result = await body(client);
      await client.query('COMMIT');
      return result;
    } catch (error) {
      await client.query('ROLLBACK').catch(() => undefined);
      throw error;
    }
  } catch (error) {
    if (isTransient(error)) broken = error as Error;
    throw error;
  } finally {
    client.removeListener('error', ignore);
    client.release(broken);
  }
}

/** `host:port` of the server a pool or client configuration points at (never the password). */
export function describeServer(config: pg.ClientConfig): string {
  // A Client resolves the connection string, environment variables and defaults without connecting.
  const probe = new pg.Client(config);
  return `${probe.host}:${probe.port}`;
}

/** Wraps a failure to reach the server at open time. */
export function unavailable(server: string, error: unknown): TeamError {
  return new TeamError(
    'STORE_UNAVAILABLE',
    `cannot reach PostgreSQL at ${server}: ${describeError(error)}; check that the server runs and accepts connections`,
    { cause: error, details: { server } },
  );
}

/** A double-quoted SQL identifier. Names are validated before they get here; this is a second guard. */
export function quoteIdent(name: string): string {
  return `"${name.replaceAll('"', '""')}"`;
}

/**
 * The name a hot statement is prepared under: its kind and a hash of its text (the text names
 * the schema's tables, so each schema's statement has a name of its own on a connection).
 */
export function statementName(kind: string, sql: string): string {
  return `teamwire_${kind}_${createHash('sha256').update(sql).digest('hex').slice(0, 16)}`;
}
