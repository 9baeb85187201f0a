import { backoffDelay, TeamError } from '@teamwire/core';
import { createManualClock } from '@teamwire/core/testing';
import { describe, expect, it, vi } from 'vitest';
import { createAiSdkModel } from './ai-sdk.js';
import { createOpenAICompatible } from './openai-compatible.js';
import {
  type AttemptResult,
  abortableSleep,
  DEFAULT_RETRY,
  parseRetryAfter,
  retryBackoff,
  withRetries,
} from './retry.js';
import { scriptedModel } from './testing/ai-sdk-model.js';
import {
  caught,
  collect,
  finishOf,
  openAiSse,
  readChunks,
  recordingSleep,
  simpleRequest,
  streamFailure,
} from './testing/fixtures.js';
import { useLoopbackServer } from './testing/loopback-server.js';

/** The manual clock's start: 2026-01-01T00:00:00Z. */
const START = Date.UTC(2026, 0, 1);
/** RFC 9110 IMF-fixdate 30 s after {@link START}. */
const IN_30_S = 'Thu, 01 Jan 2026 00:00:30 GMT';
/** Two hours after {@link START}: past the default `maxRetryAfterMs` of 60 s. */
const IN_2_H = 'Thu, 01 Jan 2026 02:00:00 GMT';

const headers =
  (values: Record<string, string>) =>
  (name: string): string | undefined =>
    values[name];

/** Lets pending promise callbacks run (the manual clock fires timers synchronously). */
const settle = () => new Promise<void>((resolve) => setImmediate(resolve));

describe('parseRetryAfter', () => {
  it('reads delta-seconds, an HTTP date and retry-after-ms', () => {
    expect(parseRetryAfter(headers({ 'retry-after': '3' }), START)).toBe(3000);
    expect(parseRetryAfter(headers({ 'retry-after': ' 0 ' }), START)).toBe(0);
    expect(parseRetryAfter(headers({ 'retry-after': IN_30_S }), START)).toBe(30_000);
    // The obsolete forms RFC 9110 still asks recipients to accept.
    expect(
      parseRetryAfter(headers({ 'retry-after': 'Thursday, 01-Jan-26 00:00:30 GMT' }), START),
    ).toBe(30_000);
    // asctime carries no zone but means GMT, whatever the local time zone.
    expect(parseRetryAfter(headers({ 'retry-after': 'Thu Jan  1 00:00:30 2026' }), START)).toBe(
      30_000,
    );
    expect(parseRetryAfter(headers({ 'retry-after-ms': '1500', 'retry-after': '9' }), START)).toBe(
      1500,
    );
  });

  it('treats a date in the past as no wait, and ignores what it cannot read', () => {
    expect(
      parseRetryAfter(headers({ 'retry-after': 'Wed, 21 Oct 2015 07:28:00 GMT' }), START),
    ).toBe(0);
    expect(parseRetryAfter(headers({ 'retry-after': '-5' }), START)).toBeUndefined();
    expect(parseRetryAfter(headers({ 'retry-after': 'soon' }), START)).toBeUndefined();
    expect(parseRetryAfter(headers({ 'retry-after-ms': 'x', 'retry-after': '2' }), START)).toBe(
      2000,
    );
    expect(parseRetryAfter(headers({}), START)).toBeUndefined();
  });
});

describe('retryBackoff', () => {
  it('doubles from 500 ms up to 8 s, half fixed and half from the injected random', () => {
    const policy = retryBackoff(DEFAULT_RETRY);
    const at = (random: number) =>
      [0, 1, 2, 3, 4, 5].map((n) => backoffDelay(policy, n, () => random));
    expect(at(0)).toEqual([250, 500, 1000, 2000, 4000, 4000]);
    expect(at(1)).toEqual([500, 1000, 2000, 4000, 8000, 8000]);
  });
});

describe('abortableSleep', () => {
  it('waits on the injected clock and cancels its timer when aborted', async () => {
    const clock = createManualClock({ start: START });
    let woke = false;
    const sleeping = abortableSleep(1000, undefined, clock).then(() => {
      woke = true;
    });
    clock.advance(999);
    await settle();
    expect(woke).toBe(false);
    clock.advance(1);
    await sleeping;

    const controller = new AbortController();
    const aborted = abortableSleep(1000, controller.signal, clock);
    expect(clock.pendingTimers()).toBe(1);
    controller.abort();
    await aborted;
    expect(clock.pendingTimers()).toBe(0);

    await abortableSleep(1000, controller.signal, clock);
    expect(clock.pendingTimers()).toBe(0);
  });
});

describe('withRetries', () => {
  const failure = (retryAfterMs?: number): Extract<AttemptResult<string>, { ok: false }> => ({
    ok: false,
    error: new TeamError('MODEL_UNAVAILABLE', 'busy'),
    retryable: true,
    retryAfterMs,
  });

  it('retries up to maxRetries, waiting retry-after or the jittered backoff', async () => {
    const { sleep, calls } = recordingSleep();
    let attempts = 0;
    const error = await caught(() =>
      withRetries(
        { sleep, random: () => 0.5 },
        {
          attempt: async (n) => {
            attempts++;
            return failure(n === 1 ? 2000 : undefined);
          },
        },
      ),
    );
    expect(TeamError.hasCode(error, 'MODEL_UNAVAILABLE')).toBe(true);
    expect(attempts).toBe(4);
    expect(calls).toEqual([375, 2000, 1500]);
  });

  it('fails at once for a retry-after past the cap, a final failure, or retry: false', async () => {
    const { sleep, calls } = recordingSleep();
    const once = async (result: AttemptResult<string>, retry?: false) => {
      let attempts = 0;
      await caught(() =>
        withRetries(
          { sleep, retry },
          {
            attempt: async () => {
              attempts++;
              return result;
            },
          },
        ),
      );
      return attempts;
    };
    expect(await once(failure(60_001))).toBe(1);
    expect(await once({ ...failure(), retryable: false })).toBe(1);
    expect(await once(failure(), false)).toBe(1);
    expect(calls).toEqual([]);
    // Exactly the cap is still waited for.
    let attempts = 0;
    const value = await withRetries(
      { sleep },
      {
        attempt: async () =>
          ++attempts === 1 ? failure(DEFAULT_RETRY.maxRetryAfterMs) : { ok: true, value: 'ok' },
      },
    );
    expect(value).toBe('ok');
    expect(calls).toEqual([60_000]);
  });

  it('keeps the default of a retry option passed as undefined', async () => {
    const { sleep } = recordingSleep();
    let attempts = 0;
    await caught(() =>
      withRetries(
        { sleep, retry: { maxRetries: undefined } },
        {
          attempt: async () => {
            attempts++;
            return failure();
          },
        },
      ),
    );
    expect(attempts).toBe(DEFAULT_RETRY.maxRetries + 1);
  });

  it('stops with the halting error instead of another attempt', async () => {
    const halt = new TeamError('ABORTED', 'stop');
    let halted = false;
    const { sleep } = recordingSleep();
    const error = await caught(() =>
      withRetries(
        { sleep },
        {
          halted: () => (halted ? halt : undefined),
          attempt: async () => {
            halted = true;
            return failure();
          },
        },
      ),
    );
    expect(error).toBe(halt);
  });
});

describe('the AI SDK path honours retry-after on the injected clock', () => {
  const rateLimited = (responseHeaders: Record<string, string>) => ({
    reject: Object.assign(new Error('Too Many Requests'), {
      statusCode: 429,
      isRetryable: true,
      responseHeaders,
      responseBody: '{"error":{"message":"slow down","type":"rate_limit_exceeded"}}',
    }),
  });
  const reply = [
    { type: 'text-delta' as const, id: 't', delta: 'ok' },
    {
      type: 'finish' as const,
      finishReason: 'stop' as const,
      usage: { inputTokens: 1, outputTokens: 1, totalTokens: 2 },
    },
  ];

  it('waits until an HTTP-date retry-after, and no longer', async () => {
    const clock = createManualClock({ start: START });
    const { model, calls } = scriptedModel([rateLimited({ 'retry-after': IN_30_S }), reply]);
    // With random 0.5 the backoff would be 375 ms: the wait must come from the date.
    const adapter = createAiSdkModel(model, { clock, random: () => 0.5 });
    const run = collect(adapter.stream(simpleRequest()));
    await vi.waitFor(() => expect(clock.pendingTimers()).toBe(1));
    clock.advance(29_999);
    await settle();
    expect(calls).toHaveLength(1);
    clock.advance(1);
    const finish = finishOf(await run);
    expect(finish.message.content).toEqual([{ type: 'text', text: 'ok' }]);
    expect(calls).toHaveLength(2);
  });

  it('fails at once when the date is past maxRetryAfterMs, reporting the wait', async () => {
    const clock = createManualClock({ start: START });
    const { model, calls } = scriptedModel([rateLimited({ 'retry-after': IN_2_H }), reply]);
    const error = await streamFailure(createAiSdkModel(model, { clock }));
    expect(TeamError.hasCode(error, 'MODEL_RATE_LIMITED')).toBe(true);
    expect((error as TeamError).details).toMatchObject({ retryAfterMs: 7_200_000, attempts: 1 });
    expect((error as TeamError).message).toContain('slow down');
    expect(calls).toHaveLength(1);
    expect(clock.pendingTimers()).toBe(0);
  });

  it('reads retry-after-ms and header names in any case', async () => {
    const { sleep, calls: sleeps } = recordingSleep();
    const { model } = scriptedModel([rateLimited({ 'Retry-After-Ms': '1500' }), reply]);
    await collect(createAiSdkModel(model, { sleep }).stream(simpleRequest()));
    expect(sleeps).toEqual([1500]);
  });

  it('aborts during the wait, cancelling its timer', async () => {
    const clock = createManualClock({ start: START });
    const { model, calls } = scriptedModel([rateLimited({ 'retry-after': IN_30_S }), reply]);
    const controller = new AbortController();
    const run = streamFailure(
      createAiSdkModel(model, { clock }),
      simpleRequest({ signal: controller.signal }),
    );
    await vi.waitFor(() => expect(clock.pendingTimers()).toBe(1));
    controller.abort();
    expect(TeamError.hasCode(await run, 'ABORTED')).toBe(true);
    expect(clock.pendingTimers()).toBe(0);
    expect(calls).toHaveLength(1);
  });
});

describe('the HTTP path honours the same retry-after', () => {
  const server = useLoopbackServer();

  it('waits until an HTTP-date retry-after on the injected clock', async () => {
    const clock = createManualClock({ start: START });
    server.reply(
      {
        status: 429,
        headers: { 'content-type': 'application/json', 'retry-after': IN_30_S },
        body: ['{"error":{"message":"slow down"}}'],
      },
      { body: [openAiSse(readChunks('scenarios/openai-chat/text-cached.chunks.txt'))] },
    );
    const adapter = createOpenAICompatible({
      baseURL: server.baseURL,
      apiKey: 'k',
      model: 'm',
      clock,
      idleTimeoutMs: 0,
      eventTimeoutMs: 0,
    });
    const run = collect(adapter.stream(simpleRequest()));
    await vi.waitFor(() => expect(clock.pendingTimers()).toBe(1));
    clock.advance(29_999);
    await settle();
    expect(server.requests).toHaveLength(1);
    clock.advance(1);
    finishOf(await run);
    expect(server.requests).toHaveLength(2);
  });
});
