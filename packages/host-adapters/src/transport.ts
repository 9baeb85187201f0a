import { type Clock, TeamError } from '@teamwire/core';
import {
  abortedError,
  codeForStatus,
  protocolError,
  providerError,
  readProviderError,
} from './provider-errors.js';
import { createSseParser, type SseEvent } from './sse.js';

/** How failed calls are retried. Only failures before any event was received are retried. */
export interface RetryOptions {
  /** Retries after the first attempt. Default 3. */
  maxRetries?: number;
  /** Backoff before the first retry, doubled per retry. Default 500 ms. */
  initialDelayMs?: number;
  /** Upper bound of the computed backoff. Default 8000 ms. */
  maxDelayMs?: number;
  /**
   * The longest `retry-after` the adapter waits for. A provider asking for more fails the call at
   * once (with `details.retryAfterMs`), so the caller can decide instead of blocking. Default 60 s.
   */
  maxRetryAfterMs?: number;
}

/** Sleeps `ms`; resolves early when `signal` aborts. */
export type SleepFunction = (ms: number, signal?: AbortSignal) => Promise<void>;

/** Network behaviour shared by the HTTP adapters. Every field has a production default. */
export interface TransportOptions {
  /** The fetch implementation. Default: the global `fetch` of Node 20. */
  fetch?: typeof globalThis.fetch;
  /** Retry policy, or `false` to never retry. */
  retry?: RetryOptions | false;
  /**
   * Time source for the idle timer and, when `sleep` is not given, for backoff sleeps. Inject
   * `createManualClock()` from `@teamwire/core/testing` so tests never wait on real time.
   */
  clock?: Clock;
  /** Overrides how the adapter waits between retries. */
  sleep?: SleepFunction;
  /** Random source in [0, 1) for backoff jitter. Default `Math.random`. */
  random?: () => number;
  /**
   * Longest silence tolerated while waiting for response headers or the next stream bytes, after
   * which the call fails with MODEL_UNAVAILABLE instead of hanging. `0` disables. Default 10 min.
   */
  idleTimeoutMs?: number;
}

const DEFAULT_RETRY: Required<RetryOptions> = {
  maxRetries: 3,
  initialDelayMs: 500,
  maxDelayMs: 8000,
  maxRetryAfterMs: 60_000,
};
const DEFAULT_IDLE_TIMEOUT_MS = 600_000;

/** One streaming POST. */
export interface EventStreamRequest {
  /** Provider name used in error messages and details. */
  provider: string;
  url: string;
  headers: Record<string, string>;
  body: unknown;
  signal: AbortSignal | undefined;
}

/** Statuses worth another attempt: timeouts, conflicts, rate limits and server errors. */
export function isRetryableStatus(status: number): boolean {
  return status === 408 || status === 409 || status === 429 || status >= 500;
}

/**
 * The wait a provider asked for, in ms: `retry-after-ms` (OpenAI), `retry-after` as seconds or as
 * an HTTP date. `undefined` when absent or unreadable.
 */
export function parseRetryAfter(headers: Headers, now: number): number | undefined {
  const ms = headers.get('retry-after-ms');
  if (ms !== null && ms.trim() !== '') {
    const value = Number(ms);
    if (Number.isFinite(value) && value >= 0) return value;
  }
  const after = headers.get('retry-after');
  if (after === null || after.trim() === '') return undefined;
  const seconds = Number(after);
  if (Number.isFinite(seconds)) return seconds >= 0 ? seconds * 1000 : undefined;
  const date = Date.parse(after);
  if (Number.isNaN(date)) return undefined;
  return Math.max(0, date - now);
}

/** Exponential backoff with equal jitter: half the step is fixed, half random. */
export function backoffDelay(
  retry: Required<RetryOptions>,
  attempt: number,
  random: () => number,
): number {
  const step = Math.min(retry.maxDelayMs, retry.initialDelayMs * 2 ** attempt);
  return step / 2 + (random() * step) / 2;
}

function sleepWith(clock: Clock | undefined): SleepFunction {
  return (ms, signal) =>
    new Promise<void>((resolve) => {
      if (signal?.aborted) {
        resolve();
        return;
      }
      let cancel: () => void;
      const done = () => {
        signal?.removeEventListener('abort', onAbort);
        resolve();
      };
      const onAbort = () => {
        cancel();
        done();
      };
      if (clock) {
        cancel = clock.setTimer(ms, done);
      } else {
        // A referenced timer: an unreferenced one could let the process exit mid-retry.
        const handle = setTimeout(done, ms);
        cancel = () => clearTimeout(handle);
      }
      signal?.addEventListener('abort', onAbort, { once: true });
    });
}

function describe(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  const cause = error.cause as { code?: unknown; message?: unknown } | undefined;
  const code = typeof cause?.code === 'string' ? ` (${cause.code})` : '';
  const inner = typeof cause?.message === 'string' ? `: ${cause.message}` : '';
  return `${error.message}${inner}${code}`;
}

/**
 * POSTs `body` as JSON and yields the Server-Sent Events of the response.
 *
 * Retries network failures and retryable statuses before the response starts, honouring
 * `retry-after`; maps error responses to TeamErrors keeping the provider's message; throws
 * ABORTED as soon as the caller's signal fires; throws MODEL_PROTOCOL when the stream stops
 * inside an event. Stopping the iteration early closes the connection.
 */
export async function* postEventStream(
  transport: TransportOptions,
  request: EventStreamRequest,
): AsyncGenerator<SseEvent, void, undefined> {
  const { provider, signal: callerSignal } = request;
  const fetchImpl = transport.fetch ?? globalThis.fetch;
  const retry = transport.retry === false ? undefined : { ...DEFAULT_RETRY, ...transport.retry };
  const maxRetries = retry?.maxRetries ?? 0;
  const random = transport.random ?? Math.random;
  const sleep = transport.sleep ?? sleepWith(transport.clock);
  const now = () => transport.clock?.now() ?? Date.now();
  const idleTimeoutMs = transport.idleTimeoutMs ?? DEFAULT_IDLE_TIMEOUT_MS;
  const setTimer =
    transport.clock?.setTimer.bind(transport.clock) ??
    ((ms: number, callback: () => void) => {
      const handle = setTimeout(callback, ms);
      handle.unref?.();
      return () => clearTimeout(handle);
    });

  const idle = new AbortController();
  const signal = callerSignal ? AbortSignal.any([callerSignal, idle.signal]) : idle.signal;
  let disarm = () => {};
  const arm = () => {
    disarm();
    if (idleTimeoutMs > 0 && Number.isFinite(idleTimeoutMs)) {
      disarm = setTimer(idleTimeoutMs, () => {
        idle.abort(
          new TeamError(
            'MODEL_UNAVAILABLE',
            `${provider}: no data received for ${idleTimeoutMs} ms`,
            {
              details: { provider, idleTimeoutMs },
            },
          ),
        );
      });
    }
  };
  /** The error a failure really is when the caller or the idle timer caused it. */
  const stopped = (): TeamError | undefined => {
    if (callerSignal?.aborted) return abortedError(provider, callerSignal);
    if (idle.signal.aborted) return idle.signal.reason as TeamError;
    return undefined;
  };

  const open = async (): Promise<Response> => {
    const body = JSON.stringify(request.body);
    for (let attempt = 0; ; attempt++) {
      const halted = stopped();
      if (halted) throw halted;
      arm();
      let response: Response;
      try {
        response = await fetchImpl(request.url, {
          method: 'POST',
          headers: request.headers,
          body,
          signal,
        });
      } catch (error) {
        const cause = stopped();
        if (cause) throw cause;
        const failure = new TeamError(
          'MODEL_UNAVAILABLE',
          `${provider}: network error: ${describe(error)}`,
          { cause: error, details: { provider, attempts: attempt + 1 } },
        );
        if (!retry || attempt >= maxRetries) throw failure;
        disarm();
        await sleep(backoffDelay(retry, attempt, random), callerSignal);
        continue;
      }
      if (response.ok) return response;

      const { status, headers } = response;
      let text = '';
      try {
        text = await response.text();
      } catch {
        const cause = stopped();
        if (cause) throw cause;
      }
      const retryAfterMs = parseRetryAfter(headers, now());
      const requestId = headers.get('request-id') ?? headers.get('x-request-id');
      const failure = providerError(provider, codeForStatus(status), readProviderError(text), {
        status,
        attempts: attempt + 1,
        ...(retryAfterMs === undefined ? {} : { retryAfterMs }),
        ...(requestId === null ? {} : { requestId }),
      });
      const retryable = isRetryableStatus(status) && headers.get('x-should-retry') !== 'false';
      if (!retryable || !retry || attempt >= maxRetries) throw failure;
      if (retryAfterMs !== undefined && retryAfterMs > retry.maxRetryAfterMs) throw failure;
      disarm();
      await sleep(retryAfterMs ?? backoffDelay(retry, attempt, random), callerSignal);
    }
  };

  try {
    const response = await open();
    const contentType = response.headers.get('content-type') ?? '';
    if (contentType.includes('application/json')) {
      const text = await response.text().catch(() => '');
      const info = readProviderError(text);
      throw protocolError(
        provider,
        `expected an event stream, got JSON${info ? `: ${info.message}` : ''}`,
        { status: response.status },
      );
    }
    if (!response.body) throw protocolError(provider, 'the response has no body');
    const reader = response.body.getReader();
    const onAbort = () => {
      reader.cancel(signal.reason).catch(() => {});
    };
    signal.addEventListener('abort', onAbort, { once: true });
    const parser = createSseParser();
    try {
      for (;;) {
        arm();
        let chunk: { done: true; value?: undefined } | { done: false; value: Uint8Array };
        try {
          chunk = await reader.read();
        } catch (error) {
          throw (
            stopped() ??
            new TeamError(
              'MODEL_UNAVAILABLE',
              `${provider}: stream interrupted: ${describe(error)}`,
              {
                cause: error,
                details: { provider },
              },
            )
          );
        }
        disarm();
        const halted = stopped();
        if (halted) throw halted;
        if (chunk.done) break;
        for (const event of parser.push(chunk.value)) {
          // An abort while the consumer held an event stops the rest of the chunk too.
          const halted = stopped();
          if (halted) throw halted;
          yield event;
        }
      }
      const end = parser.end();
      for (const event of end.events) yield event;
      if (end.incomplete)
        throw protocolError(provider, 'the stream ended in the middle of an event');
    } finally {
      signal.removeEventListener('abort', onAbort);
      reader.cancel().catch(() => {});
    }
  } finally {
    disarm();
  }
}
