import { type Clock, systemClock, TeamError } from '@teamwire/core';
import { MAX_ERROR_BODY_BYTES, postSameOrigin, readCappedText } from './http-guards.js';
import {
  abortedError,
  codeForFailure,
  protocolError,
  providerError,
  readProviderError,
} from './provider-errors.js';
import {
  type AttemptResult,
  isRetryableStatus,
  parseRetryAfter,
  type RetrySettings,
  withRetries,
} from './retry.js';
import { createSseParser, type SseEvent } from './sse.js';

/** Network behaviour shared by the HTTP adapters. Every field has a production default. */
export interface TransportOptions extends RetrySettings {
  /** The fetch implementation. Default: the global `fetch` of Node 20. */
  fetch?: typeof globalThis.fetch | undefined;
  /**
   * Time source for the time limits below, `retry-after` dates and, when `sleep` is not given,
   * backoff sleeps. Inject `createManualClock()` from `@teamwire/core/testing` so tests never
   * wait on real time.
   */
  clock?: Clock | undefined;
  /**
   * Longest silence tolerated while waiting for response headers or the next stream bytes, after
   * which the call fails with MODEL_UNAVAILABLE instead of hanging. `0` disables. Default 10 min.
   */
  idleTimeoutMs?: number | undefined;
  /**
   * Longest wait for the next event once the stream has started. SSE comments, keep-alive events
   * (Anthropic's `ping`) and the bytes of an unfinished event do not reset it, so a server that
   * only keeps the connection alive fails with MODEL_UNAVAILABLE. Time the caller spends holding
   * an event does not count. `0` disables. Default 10 min.
   */
  eventTimeoutMs?: number | undefined;
  /**
   * Longest a whole call may take, from the first request through retries to the end of the
   * stream, after which it fails with MODEL_UNAVAILABLE. `0` disables. Default: no deadline, since
   * a long answer that keeps streaming is not a hang.
   */
  deadlineMs?: number | undefined;
  /** The most bytes one stream event may hold (see `SseParserOptions`). Default 8 MiB. */
  maxEventBytes?: number | undefined;
}

/** Default of {@link TransportOptions.idleTimeoutMs}. */
export const DEFAULT_IDLE_TIMEOUT_MS = 600_000;
/** Default of {@link TransportOptions.eventTimeoutMs}. */
export const DEFAULT_EVENT_TIMEOUT_MS = 600_000;

/** One streaming POST. */
export interface EventStreamRequest {
  /** Provider name used in error messages and details. */
  provider: string;
  url: string;
  headers: Record<string, string>;
  body: unknown;
  signal: AbortSignal | undefined;
  /** Events that only keep the connection alive (Anthropic's `ping`): no reset of `eventTimeoutMs`. */
  isKeepAlive?: (event: SseEvent) => boolean;
}

function describe(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  const cause = error.cause as { code?: unknown; message?: unknown } | undefined;
  const code = typeof cause?.code === 'string' ? ` (${cause.code})` : '';
  const inner = typeof cause?.message === 'string' ? `: ${cause.message}` : '';
  return `${error.message}${inner}${code}`;
}

/** The time limits of a call, named after their options. */
type Limit = 'idleTimeoutMs' | 'eventTimeoutMs' | 'deadlineMs';

const EXPIRED: Record<Limit, string> = {
  idleTimeoutMs: 'no data received for',
  eventTimeoutMs: 'no event received for',
  deadlineMs: 'the call had not finished within',
};

/**
 * The time limits of one call behind a single timer set for the earliest of them, so a call holds
 * one pending timer whatever the number of limits.
 */
function createWatchdog(
  limits: Record<Limit, number>,
  clock: Clock,
  expire: (limit: Limit) => void,
) {
  const due: Record<Limit, number> = {
    idleTimeoutMs: Infinity,
    eventTimeoutMs: Infinity,
    deadlineMs: Infinity,
  };
  let cancel = () => {};
  const schedule = () => {
    cancel();
    cancel = () => {};
    let first: Limit = 'idleTimeoutMs';
    for (const limit of ['eventTimeoutMs', 'deadlineMs'] as const) {
      if (due[limit] < due[first]) first = limit;
    }
    if (due[first] === Infinity) return;
    cancel = clock.setTimer(Math.max(0, due[first] - clock.now()), () => expire(first));
  };
  return {
    /** (Re)starts `limit` from now; a limit of `0` (or not finite) never expires. */
    start(limit: Limit) {
      const ms = limits[limit];
      due[limit] = ms > 0 && Number.isFinite(ms) ? clock.now() + ms : Infinity;
      schedule();
    },
    stop(limit: Limit) {
      due[limit] = Infinity;
      schedule();
    },
    dispose: () => cancel(),
  };
}

/**
 * POSTs `body` as JSON and yields the Server-Sent Events of the response.
 *
 * Retries network failures and retryable statuses before the response starts, honouring
 * `retry-after`; maps error responses to TeamErrors keeping the provider's message (reading at
 * most 64 KiB of their bodies); refuses redirects to another origin; throws ABORTED as soon as
 * the caller's signal fires, MODEL_UNAVAILABLE when a time limit runs out, and MODEL_PROTOCOL
 * when the stream stops inside an event or an event outgrows `maxEventBytes`. Stopping the
 * iteration early closes the connection.
 */
export async function* postEventStream(
  transport: TransportOptions,
  request: EventStreamRequest,
): AsyncGenerator<SseEvent, void, undefined> {
  const { provider, signal: callerSignal } = request;
  const fetchImpl = transport.fetch ?? globalThis.fetch;
  const clock = transport.clock ?? systemClock;
  const limits: Record<Limit, number> = {
    idleTimeoutMs: transport.idleTimeoutMs ?? DEFAULT_IDLE_TIMEOUT_MS,
    eventTimeoutMs: transport.eventTimeoutMs ?? DEFAULT_EVENT_TIMEOUT_MS,
    deadlineMs: transport.deadlineMs ?? 0,
  };

  const expired = new AbortController();
  const signal = callerSignal ? AbortSignal.any([callerSignal, expired.signal]) : expired.signal;
  const watchdog = createWatchdog(limits, clock, (limit) => {
    const ms = limits[limit];
    expired.abort(
      new TeamError('MODEL_UNAVAILABLE', `${provider}: ${EXPIRED[limit]} ${ms} ms`, {
        details: { provider, [limit]: ms },
      }),
    );
  });
  /** The error a failure really is when the caller or a time limit caused it. */
  const stopped = (): TeamError | undefined => {
    if (callerSignal?.aborted) return abortedError(provider, callerSignal);
    if (expired.signal.aborted) return expired.signal.reason as TeamError;
    return undefined;
  };

  const body = JSON.stringify(request.body);
  /** One request; a failure says whether it is worth another and the wait the server asked for. */
  const attempt = async (index: number): Promise<AttemptResult<Response>> => {
    watchdog.start('idleTimeoutMs');
    let response: Response;
    try {
      response = await postSameOrigin(fetchImpl, provider, request.url, {
        headers: request.headers,
        body,
        signal,
      });
    } catch (error) {
      const cause = stopped();
      if (cause) throw cause;
      if (TeamError.isInstance(error)) throw error;
      watchdog.stop('idleTimeoutMs');
      const failure = new TeamError(
        'MODEL_UNAVAILABLE',
        `${provider}: network error: ${describe(error)}`,
        { cause: error, details: { provider, attempts: index + 1 } },
      );
      return { ok: false, error: failure, retryable: true };
    }
    if (response.ok) return { ok: true, value: response };

    const { status, headers } = response;
    let text = '';
    try {
      text = await readCappedText(response, MAX_ERROR_BODY_BYTES);
    } catch {
      const cause = stopped();
      if (cause) throw cause;
    }
    watchdog.stop('idleTimeoutMs');
    const retryAfterMs = parseRetryAfter((name) => headers.get(name), clock.now());
    const requestId = headers.get('request-id') ?? headers.get('x-request-id');
    const info = readProviderError(text);
    const failure = providerError(provider, codeForFailure(status, info), info, {
      status,
      attempts: index + 1,
      ...(retryAfterMs === undefined ? {} : { retryAfterMs }),
      ...(requestId === null ? {} : { requestId }),
    });
    const retryable = isRetryableStatus(status) && headers.get('x-should-retry') !== 'false';
    return { ok: false, error: failure, retryable, retryAfterMs };
  };

  watchdog.start('deadlineMs');
  try {
    const response = await withRetries(transport, { attempt, signal, halted: stopped });
    const contentType = response.headers.get('content-type') ?? '';
    if (contentType.includes('application/json')) {
      const text = await readCappedText(response, MAX_ERROR_BODY_BYTES).catch(() => '');
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
    const parser = createSseParser({ maxEventBytes: transport.maxEventBytes });
    watchdog.start('eventTimeoutMs');
    try {
      for (;;) {
        watchdog.start('idleTimeoutMs');
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
        watchdog.stop('idleTimeoutMs');
        const halted = stopped();
        if (halted) throw halted;
        if (chunk.done) break;
        let events: SseEvent[];
        try {
          events = parser.push(chunk.value);
        } catch (error) {
          // The parser knows no provider; every other error of a call names it.
          if (!TeamError.isInstance(error)) throw error;
          throw protocolError(provider, error.message, error.details, error);
        }
        for (const event of events) {
          // An abort while the consumer held an event stops the rest of the chunk too.
          const halted = stopped();
          if (halted) throw halted;
          const meaningful = !request.isKeepAlive?.(event);
          if (meaningful) watchdog.stop('eventTimeoutMs');
          yield event;
          if (meaningful) watchdog.start('eventTimeoutMs');
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
    watchdog.dispose();
  }
}
