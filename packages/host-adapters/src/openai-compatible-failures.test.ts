import { TeamError } from '@teamwire/core';
import { createManualClock } from '@teamwire/core/testing';
import { describe, expect, it, vi } from 'vitest';
import { openAiAdapter } from './testing/adapters.js';
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

const JSON_HEADERS = { 'content-type': 'application/json' };

const server = useLoopbackServer();
const adapter = openAiAdapter.bind(undefined, server);

const scenario = (name: string) => readChunks(`scenarios/openai-chat/${name}.chunks.txt`);

describe('createOpenAICompatible: failures', () => {
  it('retries a 429 after its retry-after, then succeeds', async () => {
    server.reply(
      {
        status: 429,
        headers: { ...JSON_HEADERS, 'retry-after': '2' },
        body: ['{"error":{"message":"Rate limit reached for requests","type":"requests"}}'],
      },
      { body: [openAiSse(scenario('text-cached'))] },
    );
    const { sleep, calls } = recordingSleep();
    const finish = finishOf(await collect(adapter({ sleep }).stream(simpleRequest())));
    expect(finish.message.content).toEqual([{ type: 'text', text: 'Hello, team — ready ✅' }]);
    expect(calls).toEqual([2000]);
    expect(server.requests).toHaveLength(2);
  });

  it('gives up after the retries with MODEL_UNAVAILABLE, backing off with jitter', async () => {
    const failure = {
      status: 500,
      headers: JSON_HEADERS,
      body: ['{"error":{"message":"The server had an error while processing your request"}}'],
    };
    server.reply(failure, failure, failure, failure);
    const { sleep, calls } = recordingSleep();
    const error = await streamFailure(adapter({ sleep, random: () => 0.5 }));
    expect(TeamError.hasCode(error, 'MODEL_UNAVAILABLE')).toBe(true);
    expect((error as TeamError).message).toContain(
      'The server had an error while processing your request',
    );
    expect((error as TeamError).details).toMatchObject({ status: 500, attempts: 4 });
    // 500 * 2^n, half fixed and half jittered (random 0.5 -> 75 %).
    expect(calls).toEqual([375, 750, 1500]);
    expect(server.requests).toHaveLength(4);
  });

  it('maps 401 to MODEL_AUTH at once, keeping the provider message', async () => {
    server.reply({
      status: 401,
      headers: JSON_HEADERS,
      body: [
        '{"error":{"message":"Incorrect API key provided: sk-test.","type":"invalid_request_error","code":"invalid_api_key"}}',
      ],
    });
    const { sleep, calls } = recordingSleep();
    const error = await streamFailure(adapter({ sleep }));
    expect(TeamError.hasCode(error, 'MODEL_AUTH')).toBe(true);
    expect((error as TeamError).message).toContain('Incorrect API key provided');
    expect((error as TeamError).details).toMatchObject({
      status: 401,
      providerMessage: 'Incorrect API key provided: sk-test.',
    });
    expect(calls).toEqual([]);
    expect(server.requests).toHaveLength(1);
  });

  it('maps 400 to MODEL_BAD_REQUEST and plain-text errors keep their text', async () => {
    server.reply({
      status: 404,
      headers: { 'content-type': 'text/plain' },
      body: ['model "nope" not found, try pulling it first'],
    });
    const error = await streamFailure(adapter());
    expect(TeamError.hasCode(error, 'MODEL_BAD_REQUEST')).toBe(true);
    expect((error as TeamError).message).toContain('model "nope" not found');
  });

  it.each([
    [
      'OpenAI',
      '{"error":{"message":"This model\'s maximum context length is 128000 tokens. However, your messages resulted in 130412 tokens. Please reduce the length of the messages.","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}',
    ],
    [
      'llama.cpp',
      '{"error":{"code":400,"message":"the request exceeds the available context size, try increasing it","type":"exceed_context_size_error"}}',
    ],
    [
      'Gemini',
      '[{"error":{"code":400,"message":"The input token count (1196265) exceeds the maximum number of tokens allowed (1048576).","status":"INVALID_ARGUMENT"}}]',
    ],
  ])('maps a context-window refusal from %s to MODEL_CONTEXT_OVERFLOW at once', async (_, body) => {
    server.reply({ status: 400, headers: JSON_HEADERS, body: [body] });
    const { sleep, calls } = recordingSleep();
    const error = await streamFailure(adapter({ sleep }));
    expect(TeamError.hasCode(error, 'MODEL_CONTEXT_OVERFLOW')).toBe(true);
    expect((error as TeamError).details).toMatchObject({ status: 400, attempts: 1 });
    expect(calls).toEqual([]);
    expect(server.requests).toHaveLength(1);
  });

  it('keeps any other 400 a MODEL_BAD_REQUEST', async () => {
    server.reply({
      status: 400,
      headers: JSON_HEADERS,
      body: [
        '{"error":{"message":"Invalid schema for function \'weather\': invalid tool schema.","type":"invalid_request_error","param":"tools[0].function.parameters","code":"invalid_function_parameters"}}',
      ],
    });
    const error = await streamFailure(adapter());
    expect(TeamError.hasCode(error, 'MODEL_BAD_REQUEST')).toBe(true);
    expect((error as TeamError).details).toMatchObject({
      status: 400,
      providerErrorCode: 'invalid_function_parameters',
    });
  });

  it('maps a context-window refusal inside the stream to MODEL_CONTEXT_OVERFLOW', async () => {
    const refusal =
      '{"error":{"message":"This endpoint\'s maximum context length is 200000 tokens. However, you requested about 250123 tokens (250123 of text input).","code":400}}';
    server.reply({ body: [openAiSse([refusal], { done: false })] });
    const error = await streamFailure(adapter());
    expect(TeamError.hasCode(error, 'MODEL_CONTEXT_OVERFLOW')).toBe(true);
    expect((error as TeamError).details).toMatchObject({ inStream: true });
    expect(server.requests).toHaveLength(1);
  });

  it('fails at once with MODEL_RATE_LIMITED when retry-after exceeds the limit', async () => {
    server.reply({
      status: 429,
      headers: { ...JSON_HEADERS, 'retry-after': '3600' },
      body: ['{"error":{"message":"daily quota exhausted"}}'],
    });
    const { sleep, calls } = recordingSleep();
    const error = await streamFailure(adapter({ sleep }));
    expect(TeamError.hasCode(error, 'MODEL_RATE_LIMITED')).toBe(true);
    expect((error as TeamError).details).toMatchObject({ retryAfterMs: 3_600_000 });
    expect(calls).toEqual([]);
  });

  it('retries a connection reset before the response', async () => {
    server.reply({ reset: true }, { body: [openAiSse(scenario('text-cached'))] });
    const { sleep, calls } = recordingSleep();
    const finish = finishOf(
      await collect(adapter({ sleep, random: () => 0 }).stream(simpleRequest())),
    );
    expect(finish.message.content).toEqual([{ type: 'text', text: 'Hello, team — ready ✅' }]);
    expect(calls).toEqual([250]);
  });

  it('reports a stream cut mid-event as MODEL_PROTOCOL', async () => {
    const whole = openAiSse(scenario('text-cached'));
    server.reply({ body: [whole.slice(0, whole.indexOf('ready') + 3)] });
    const error = await streamFailure(adapter());
    expect(TeamError.hasCode(error, 'MODEL_PROTOCOL')).toBe(true);
    expect((error as TeamError).message).toContain('middle of an event');
  });

  it('reports a stream that ends between events without a finish as MODEL_PROTOCOL', async () => {
    server.reply({ body: [openAiSse(scenario('text-cached').slice(0, 3), { done: false })] });
    const error = await streamFailure(adapter());
    expect(TeamError.hasCode(error, 'MODEL_PROTOCOL')).toBe(true);
    expect((error as TeamError).message).toContain('before a finish reason');
  });

  it('reports a connection reset mid-stream as MODEL_UNAVAILABLE', async () => {
    const whole = openAiSse(scenario('text-cached'));
    server.reply({ body: [whole.slice(0, 200)], after: 'destroy' });
    const error = await streamFailure(adapter());
    expect(TeamError.hasCode(error, 'MODEL_UNAVAILABLE')).toBe(true);
    expect((error as TeamError).message).toContain('stream interrupted');
  });

  it('reports a malformed chunk as MODEL_PROTOCOL', async () => {
    server.reply({
      body: [
        `${openAiSse(scenario('text-cached').slice(0, 2), { done: false })}data: {"choices": [\n\n`,
      ],
      after: 'hang',
    });
    const error = await streamFailure(adapter());
    expect(TeamError.hasCode(error, 'MODEL_PROTOCOL')).toBe(true);
    expect((error as TeamError).details).toMatchObject({ chunk: '{"choices": [' });
    await server.requests[0]?.closed;
  });

  it('maps an error object inside the stream, keeping its message', async () => {
    server.reply({ body: [openAiSse(scenario('error-in-stream'), { done: false })] });
    const error = await streamFailure(adapter());
    expect(TeamError.hasCode(error, 'MODEL_UNAVAILABLE')).toBe(true);
    expect((error as TeamError).message).toContain('Upstream provider overloaded');
  });

  it('refuses a JSON answer where an event stream was expected', async () => {
    server.reply({ headers: JSON_HEADERS, body: ['{"id":"x","choices":[]}'] });
    const error = await streamFailure(adapter());
    expect(TeamError.hasCode(error, 'MODEL_PROTOCOL')).toBe(true);
  });

  it('aborts mid-stream at once: ABORTED, and the connection closes', async () => {
    const chunks = scenario('text-cached');
    server.reply({ body: [openAiSse(chunks.slice(0, 2), { done: false })], after: 'hang' });
    const controller = new AbortController();
    const iterator = adapter()
      .stream(simpleRequest({ signal: controller.signal }))
      [Symbol.asyncIterator]();
    expect(await iterator.next()).toEqual({
      value: { type: 'text-delta', text: 'Hello' },
      done: false,
    });
    const pending = iterator.next();
    controller.abort();
    const error = await caught(() => pending);
    expect(TeamError.hasCode(error, 'ABORTED')).toBe(true);
    await server.requests[0]?.closed;
  });

  it('aborts while the consumer holds an event: buffered events are not delivered', async () => {
    server.reply({ body: [openAiSse(scenario('text-cached'), { done: false })], after: 'hang' });
    const controller = new AbortController();
    const iterator = adapter()
      .stream(simpleRequest({ signal: controller.signal }))
      [Symbol.asyncIterator]();
    expect((await iterator.next()).value).toEqual({ type: 'text-delta', text: 'Hello' });
    controller.abort();
    const error = await caught(() => iterator.next());
    expect(TeamError.hasCode(error, 'ABORTED')).toBe(true);
    await server.requests[0]?.closed;
  });

  it('aborts before the request is sent', async () => {
    const controller = new AbortController();
    controller.abort();
    const error = await streamFailure(adapter(), simpleRequest({ signal: controller.signal }));
    expect(TeamError.hasCode(error, 'ABORTED')).toBe(true);
    expect(server.requests).toHaveLength(0);
  });

  it('aborts during a retry backoff', async () => {
    server.reply({ status: 503, headers: JSON_HEADERS, body: ['{"error":{"message":"busy"}}'] });
    const clock = createManualClock();
    const controller = new AbortController();
    const run = streamFailure(
      adapter({ clock, idleTimeoutMs: 0 }),
      simpleRequest({ signal: controller.signal }),
    );
    await vi.waitFor(() => expect(clock.pendingTimers()).toBe(1));
    controller.abort();
    expect(TeamError.hasCode(await run, 'ABORTED')).toBe(true);
    expect(server.requests).toHaveLength(1);
  });

  it('fails a silent stream after the idle timeout instead of hanging', async () => {
    const clock = createManualClock();
    server.reply({
      body: [openAiSse(scenario('text-cached').slice(0, 2), { done: false })],
      after: 'hang',
    });
    const iterator = adapter({ clock, idleTimeoutMs: 30_000 })
      .stream(simpleRequest())
      [Symbol.asyncIterator]();
    expect((await iterator.next()).value).toEqual({ type: 'text-delta', text: 'Hello' });
    const pending = iterator.next();
    await vi.waitFor(() => expect(clock.pendingTimers()).toBe(1));
    clock.advance(30_000);
    const error = await caught(() => pending);
    expect(TeamError.hasCode(error, 'MODEL_UNAVAILABLE')).toBe(true);
    expect((error as TeamError).message).toContain('no data received for 30000 ms');
    await server.requests[0]?.closed;
  });
});
