import type { TeamError } from '@teamwire/core';
import type pg from 'pg';
import type { RetryPolicy, SqlValue } from './connection.js';
import { execute, isTransient, reconnectBackoff, sleep } from './connection.js';
import { storageError } from './errors.js';

/** How {@link query} retries. */
export interface RetryOptions {
  /** The backoff between attempts. */
  policy: RetryPolicy;
  /** Aborted when the store closes: the query then stops retrying with `stopped()`. */
  stop: AbortSignal;
  /** The error a stopped query rejects with. */
  stopped: () => TeamError;
  /** What the query does, for the `STORAGE_IO` message of a failure a retry would not change. */
  action: string;
  /** The caller's signal: aborting it rejects with its reason. */
  signal?: AbortSignal | undefined;
}

/**
 * Runs a statement that only reads (or is safe to repeat), retrying with backoff while the
 * database cannot be reached, until it answers or the store closes.
 */
export async function query<R extends pg.QueryResultRow>(
  pool: pg.Pool,
  text: string,
  values: readonly SqlValue[],
  options: RetryOptions,
): Promise<pg.QueryResult<R>> {
  const { stop, signal } = options;
  // made at the first wait, as the backoff is: almost every query is answered at once
  let wake: AbortSignal | undefined;
  const backoff = reconnectBackoff(options.policy);
  for (;;) {
    signal?.throwIfAborted();
    try {
      return await execute<R>(pool, text, values);
    } catch (error) {
      if (!isTransient(error)) throw storageError(options.action, error);
    }
    if (stop.aborted) throw options.stopped();
    wake ??= signal ? AbortSignal.any([stop, signal]) : stop;
    await sleep(backoff.next(), wake);
    signal?.throwIfAborted();
    if (stop.aborted) throw options.stopped();
  }
}
