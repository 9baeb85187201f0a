import {
  type BackoffPolicy,
  backoffDelay,
  type Clock,
  EQUAL_JITTER,
  type TeamError,
} from '@teamwire/core';

/** How failed calls are retried. Only failures before any event was received are retried. */
export interface RetryOptions {
  /** Retries after the first attempt. Default 3. */
  maxRetries?: number | undefined;
  /** Backoff before the first retry, doubled per retry. Default 500 ms. */
  initialDelayMs?: number | undefined;
  /** Upper bound of the computed backoff. Default 8000 ms. */
  maxDelayMs?: number | undefined;
  /**
   * The longest `retry-after` the adapter waits for. A provider asking for more fails the call at
   * once (with `details.retryAfterMs`), so the caller can decide instead of blocking. Default 60 s.
   */
  maxRetryAfterMs?: number | undefined;
}

/** Sleeps `ms`; resolves early when `signal` aborts. */
export type SleepFunction = (ms: number, signal?: AbortSignal) => Promise<void>;

/** The retry settings every adapter takes. Every field has a production default. */
export interface RetrySettings {
  /** Retry policy, or `false` to never retry. */
  retry?: RetryOptions | false | undefined;
  /**
   * Time source for `retry-after` dates and, when `sleep` is not given, for backoff sleeps.
   * Inject `createManualClock()` from `@teamwire/core/testing` so tests never wait on real time.
   */
  clock?: Clock | undefined;
  /** Overrides how the adapter waits between retries. */
  sleep?: SleepFunction | undefined;
  /** Random source in [0, 1) for backoff jitter. Default `Math.random`. */
  random?: (() => number) | undefined;
}

/** The defaults of {@link RetryOptions}. */
export const DEFAULT_RETRY: Readonly<Record<keyof RetryOptions, number>> = {
  maxRetries: 3,
  initialDelayMs: 500,
  maxDelayMs: 8000,
  maxRetryAfterMs: 60_000,
};

/** Statuses worth another attempt: timeouts, conflicts, rate limits and server errors. */
export function isRetryableStatus(status: number): boolean {
  return status === 408 || status === 409 || status === 429 || status >= 500;
}

/**
 * The wait a provider asked for, in ms: `retry-after-ms` (OpenAI), or `retry-after` as
 * delta-seconds or as an HTTP date (RFC 9110 §10.2.3), measured from `now`. `undefined` when
 * absent or unreadable. `header` looks a header up by its lower-case name.
 */
export function parseRetryAfter(
  header: (name: string) => string | null | undefined,
  now: number,
): number | undefined {
  const ms = header('retry-after-ms')?.trim();
  if (ms) {
    const value = Number(ms);
    if (Number.isFinite(value) && value >= 0) return value;
  }
  const after = header('retry-after')?.trim();
  if (!after) return undefined;
  const seconds = Number(after);
  if (Number.isFinite(seconds)) return seconds >= 0 ? seconds * 1000 : undefined;
  // HTTP dates are always GMT; the obsolete asctime form says so by leaving the zone out.
  const date = Date.parse(/(?:GMT|UTC|[+-]\d{4})$/i.test(after) ? after : `${after} GMT`);
  if (Number.isNaN(date)) return undefined;
  return Math.max(0, date - now);
}

/**
 * The backoff of `retry` (core's {@link backoffDelay} rule): doubling from `initialDelayMs` up to
 * `maxDelayMs`, half of each step fixed and half random.
 */
export function retryBackoff(retry: Readonly<Record<keyof RetryOptions, number>>): BackoffPolicy {
  return {
    initialDelayMs: retry.initialDelayMs,
    maxDelayMs: retry.maxDelayMs,
    jitter: EQUAL_JITTER,
  };
}

/**
 * Waits `ms` on `clock` (or a real timer), resolving early, and cancelling the timer, when
 * `signal` aborts. It never rejects: the caller decides what an abort means.
 */
export function abortableSleep(ms: number, signal?: AbortSignal, clock?: Clock): Promise<void> {
  return new Promise<void>((resolve) => {
    if (signal?.aborted) {
      resolve();
      return;
    }
    const done = () => {
      cancel();
      signal?.removeEventListener('abort', done);
      resolve();
    };
    // Without a clock the timer is referenced: an unreferenced one could let the process exit
    // in the middle of a retry.
    let cancel: () => void = () => {};
    if (clock) {
      cancel = clock.setTimer(ms, done);
    } else {
      const handle = setTimeout(done, ms);
      cancel = () => clearTimeout(handle);
    }
    signal?.addEventListener('abort', done, { once: true });
  });
}

/** The outcome of one attempt of {@link withRetries}. */
export type AttemptResult<T> =
  | { ok: true; value: T }
  | {
      ok: false;
      /** What the call fails with if this was its last attempt. */
      error: TeamError;
      /** Whether the failure is worth another attempt (status, network error, SDK flag). */
      retryable: boolean;
      /** The wait the provider asked for, from {@link parseRetryAfter}. */
      retryAfterMs?: number | undefined;
    };

/** Runs the attempts of one call. */
export interface RetryRun<T> {
  /** One attempt; `attempt` counts from 0. */
  attempt: (attempt: number) => Promise<AttemptResult<T>>;
  /** Interrupts the waits between attempts. */
  signal?: AbortSignal | undefined;
  /** The error to throw instead of another attempt (the caller aborted, a deadline passed). */
  halted?: () => TeamError | undefined;
}

/**
 * The one retry loop of the adapters: runs `attempt` until it succeeds, fails for good (not
 * retryable, out of retries, or asking for a `retry-after` longer than `maxRetryAfterMs`), or
 * the run is halted. Between attempts it waits for the provider's `retry-after`, else for the
 * jittered backoff.
 */
export async function withRetries<T>(settings: RetrySettings, run: RetryRun<T>): Promise<T> {
  const given = settings.retry === false ? undefined : (settings.retry ?? {});
  // Field by field, so an option passed as `undefined` keeps its default.
  const retry = given && {
    maxRetries: given.maxRetries ?? DEFAULT_RETRY.maxRetries,
    initialDelayMs: given.initialDelayMs ?? DEFAULT_RETRY.initialDelayMs,
    maxDelayMs: given.maxDelayMs ?? DEFAULT_RETRY.maxDelayMs,
    maxRetryAfterMs: given.maxRetryAfterMs ?? DEFAULT_RETRY.maxRetryAfterMs,
  };
  const backoff = retry && retryBackoff(retry);
  const random = settings.random ?? Math.random;
  const sleep: SleepFunction =
    settings.sleep ?? ((ms, signal) => abortableSleep(ms, signal, settings.clock));
  for (let attempt = 0; ; attempt++) {
    const halted = run.halted?.();
    if (halted) throw halted;
    const result = await run.attempt(attempt);
    if (result.ok) return result.value;
    const { error, retryable, retryAfterMs } = result;
    if (!retry || !backoff || !retryable || attempt >= retry.maxRetries) throw error;
    if (retryAfterMs !== undefined && retryAfterMs > retry.maxRetryAfterMs) throw error;
    await sleep(retryAfterMs ?? backoffDelay(backoff, attempt, random), run.signal);
  }
}
