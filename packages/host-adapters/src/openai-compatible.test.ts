import { type ModelRequest, TeamError } from '@teamwire/core';
import { createManualClock } from '@teamwire/core/testing';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { createOpenAICompatible, toOpenAIMessages } from './openai-compatible.js';
import {
  caught,
  collect,
  deltaText,
  finishOf,
  openAiSse,
  readChunks,
  rechunkingFetch,
  recordingSleep,
  simpleRequest,
  splitBytes,
} from './testing/fixtures.js';
import { type LoopbackServer, startLoopbackServer } from './testing/loopback-server.js';

const JSON_HEADERS = { 'content-type': 'application/json' };

let server: LoopbackServer;
beforeAll(async () => {
  server = await startLoopbackServer();
});
afterAll(async () => {
  await server.close();
});
afterEach(() => {
  server.reset();
  vi.unstubAllEnvs();
});

function adapter(overrides: Partial<Parameters<typeof createOpenAICompatible>[0]> = {}) {
  return createOpenAICompatible({
    baseURL: server.baseURL,
    apiKey: 'sk-test',
    model: 'gpt-4.1-mini',
    ...overrides,
  });
}

const scenario = (name: string) => readChunks(`scenarios/openai-chat/${name}.chunks.txt`);

const conversation: ModelRequest = {
  system: [{ text: 'You are on team alpha.', cacheable: true }, { text: 'You are "researcher".' }],
  messages: [
    { role: 'user', content: [{ type: 'text', text: 'Find the weather.' }] },
    {
      role: 'assistant',
      content: [
        { type: 'thinking', thinking: 'Use the tool.' },
        { type: 'text', text: 'Looking it up.' },
      ],
      toolCalls: [
        { id: 'call_1', name: 'weather', input: { city: 'Zürich' } },
        { id: 'call_2', name: 'weather', input: { city: '東京' } },
      ],
    },
    {
      role: 'tool',
      toolCallId: 'call_1',
      toolName: 'weather',
      content: [{ type: 'text', text: '12°C' }],
    },
    {
      role: 'tool',
      toolCallId: 'call_2',
      toolName: 'weather',
      content: [{ type: 'text', text: 'unavailable' }],
      isError: true,
    },
  ],
  tools: [
    {
      name: 'weather',
      description: 'Current weather for a city.',
      inputSchema: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
    },
  ],
  promptCacheKey: 'team-alpha:researcher',
  maxOutputTokens: 512,
};

describe('createOpenAICompatible: request', () => {
  it('sends the chat completions body, headers and prompt cache key', async () => {
    server.reply({ body: [openAiSse(scenario('text-cached'))] });
    await collect(adapter({ headers: { 'x-title': 'teamwire' } }).stream(conversation));
    const [request] = server.requests;
    expect(request?.method).toBe('POST');
    expect(request?.path).toBe('/v1/chat/completions');
    expect(request?.headers.authorization).toBe('Bearer sk-test');
    expect(request?.headers['x-title']).toBe('teamwire');
    expect(request?.headers.accept).toBe('text/event-stream');
    expect(request?.body).toEqual({
      model: 'gpt-4.1-mini',
      stream: true,
      stream_options: { include_usage: true },
      prompt_cache_key: 'team-alpha:researcher',
      max_tokens: 512,
      messages: [
        { role: 'system', content: 'You are on team alpha.\n\nYou are "researcher".' },
        { role: 'user', content: 'Find the weather.' },
        {
          role: 'assistant',
          content: 'Looking it up.',
          tool_calls: [
            {
              id: 'call_1',
              type: 'function',
              function: { name: 'weather', arguments: '{"city":"Zürich"}' },
            },
            {
              id: 'call_2',
              type: 'function',
              function: { name: 'weather', arguments: '{"city":"東京"}' },
            },
          ],
        },
        { role: 'tool', tool_call_id: 'call_1', content: '12°C' },
        { role: 'tool', tool_call_id: 'call_2', content: 'unavailable' },
      ],
      tools: [
        {
          type: 'function',
          function: {
            name: 'weather',
            description: 'Current weather for a city.',
            parameters: {
              type: 'object',
              properties: { city: { type: 'string' } },
              required: ['city'],
            },
          },
        },
      ],
    });
  });

  it('honours the body switches: no cache key, no usage, reasoning passback, extra fields', async () => {
    server.reply({ body: [openAiSse(scenario('text-cached'))] });
    await collect(
      adapter({
        apiKey: '',
        sendPromptCacheKey: false,
        includeUsage: false,
        sendReasoning: true,
        maxTokensParam: 'max_completion_tokens',
        temperature: 0.2,
        extraBody: { top_p: 0.9 },
      }).stream(conversation),
    );
    const [request] = server.requests;
    expect(request?.headers.authorization).toBeUndefined();
    expect(request?.body.prompt_cache_key).toBeUndefined();
    expect(request?.body.stream_options).toBeUndefined();
    expect(request?.body.max_completion_tokens).toBe(512);
    expect(request?.body.max_tokens).toBeUndefined();
    expect(request?.body.temperature).toBe(0.2);
    expect(request?.body.top_p).toBe(0.9);
    const messages = request?.body.messages as Record<string, unknown>[];
    expect(messages[2]?.reasoning_content).toBe('Use the tool.');
  });

  it('sends null content for a tool-only assistant message and keeps raw arguments raw', () => {
    const messages = toOpenAIMessages({
      system: [],
      messages: [
        {
          role: 'assistant',
          content: [],
          toolCalls: [{ id: 'c', name: 'broken', input: '{"unterminated' }],
        },
      ],
    });
    expect(messages).toEqual([
      {
        role: 'assistant',
        content: null,
        tool_calls: [
          { id: 'c', type: 'function', function: { name: 'broken', arguments: '{"unterminated' } },
        ],
      },
    ]);
  });

  it('falls back to OPENAI_BASE_URL and OPENAI_API_KEY', async () => {
    vi.stubEnv('OPENAI_BASE_URL', server.baseURL);
    vi.stubEnv('OPENAI_API_KEY', 'sk-from-env');
    server.reply({ body: [openAiSse(scenario('text-cached'))] });
    const model = createOpenAICompatible({ model: 'local-model' });
    expect(model.provider).toBe('openai-compatible');
    expect(model.modelId).toBe('local-model');
    await collect(model.stream(simpleRequest()));
    expect(server.requests[0]?.headers.authorization).toBe('Bearer sk-from-env');
    expect(server.requests[0]?.body.model).toBe('local-model');
  });
});

describe('createOpenAICompatible: streaming', () => {
  it('streams text and reads usage with cached tokens', async () => {
    server.reply({ body: [openAiSse(scenario('text-cached'))] });
    const events = await collect(adapter().stream(simpleRequest()));
    expect(events.filter((e) => e.type === 'text-delta').map((e) => e.text)).toEqual([
      'Hello',
      ', team — ',
      'ready ✅',
    ]);
    const finish = finishOf(events);
    expect(finish.message).toEqual({
      role: 'assistant',
      content: [{ type: 'text', text: 'Hello, team — ready ✅' }],
      toolCalls: [],
      usage: { inputTokens: 2048, outputTokens: 12, cacheReadTokens: 1792, reasoningTokens: 0 },
      stopReason: 'end_turn',
    });
  });

  it('streams a single tool call with argument deltas', async () => {
    server.reply({ body: [openAiSse(scenario('single-tool-call'))] });
    const events = await collect(adapter().stream(simpleRequest()));
    expect(events).toEqual([
      { type: 'tool-call-start', id: 'call_task', name: 'task_update' },
      { type: 'tool-call-delta', id: 'call_task', argsDelta: '{"taskId":' },
      { type: 'tool-call-delta', id: 'call_task', argsDelta: ' "task-3", "status": "completed"}' },
      {
        type: 'tool-call',
        toolCall: {
          id: 'call_task',
          name: 'task_update',
          input: { taskId: 'task-3', status: 'completed' },
        },
      },
      {
        type: 'finish',
        message: {
          role: 'assistant',
          content: [],
          toolCalls: [
            {
              id: 'call_task',
              name: 'task_update',
              input: { taskId: 'task-3', status: 'completed' },
            },
          ],
          usage: { inputTokens: 120, outputTokens: 18 },
          stopReason: 'tool_calls',
        },
        usage: { inputTokens: 120, outputTokens: 18 },
        stopReason: 'tool_calls',
      },
    ]);
  });

  const parallelCalls = [
    { id: 'call_zrh', name: 'weather', input: { city: 'Zürich', unit: '°C' } },
    { id: 'call_tyo', name: 'weather', input: { city: '東京', note: '👋 こんにちは' } },
  ];

  it('streams parallel tool calls with interleaved argument deltas keyed by index', async () => {
    server.reply({ body: [openAiSse(scenario('parallel-tool-calls'))] });
    const events = await collect(adapter().stream(simpleRequest()));
    expect(events.filter((e) => e.type === 'tool-call-start')).toEqual([
      { type: 'tool-call-start', id: 'call_zrh', name: 'weather' },
      { type: 'tool-call-start', id: 'call_tyo', name: 'weather' },
    ]);
    const argsOf = (id: string) =>
      events.map((e) => (e.type === 'tool-call-delta' && e.id === id ? e.argsDelta : '')).join('');
    expect(JSON.parse(argsOf('call_zrh'))).toEqual(parallelCalls[0]?.input);
    expect(JSON.parse(argsOf('call_tyo'))).toEqual(parallelCalls[1]?.input);
    const finish = finishOf(events);
    expect(finish.message.toolCalls).toEqual(parallelCalls);
    expect(finish.message.content).toEqual([{ type: 'text', text: 'Checking both cities.' }]);
    expect(finish.usage).toEqual({ inputTokens: 300, outputTokens: 41, cacheReadTokens: 256 });
    expect(finish.stopReason).toBe('tool_calls');
  });

  it('reads the same stream whatever the byte boundaries (multi-byte UTF-8 across writes)', async () => {
    const bytes = new TextEncoder().encode(openAiSse(scenario('parallel-tool-calls')));
    // The server writes 7-byte pieces and the client re-cuts every read into 1..3 byte chunks.
    for (const clientPiece of [1, 2, 3]) {
      server.reply({ body: splitBytes(bytes, 7) });
      const events = await collect(
        adapter({ fetch: rechunkingFetch(clientPiece) }).stream(simpleRequest()),
      );
      const finish = finishOf(events);
      expect(finish.message.toolCalls).toEqual(parallelCalls);
      expect(deltaText(events)).toBe('Checking both cities.');
    }
  });

  it('accepts a finished stream closed without [DONE] (some local servers)', async () => {
    server.reply({ body: [openAiSse(scenario('single-tool-call'), { done: false })] });
    const finish = finishOf(await collect(adapter().stream(simpleRequest())));
    expect(finish.message.toolCalls[0]?.name).toBe('task_update');
  });

  it('reports a stop with tool calls as tool_calls and generates missing ids', async () => {
    const chunks = [
      '{"id":"chatcmpl-9","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"name":"list_tasks","arguments":"{}"}}]}}]}',
      '{"id":"chatcmpl-9","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}',
    ];
    server.reply({ body: [openAiSse(chunks)] });
    const finish = finishOf(await collect(adapter().stream(simpleRequest())));
    expect(finish.message.toolCalls).toEqual([
      { id: 'call_chatcmpl-9_0', name: 'list_tasks', input: {} },
    ]);
    expect(finish.stopReason).toBe('tool_calls');
  });
});

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
    const error = await caught(() =>
      collect(adapter({ sleep, random: () => 0.5 }).stream(simpleRequest())),
    );
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
    const error = await caught(() => collect(adapter({ sleep }).stream(simpleRequest())));
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
    const error = await caught(() => collect(adapter().stream(simpleRequest())));
    expect(TeamError.hasCode(error, 'MODEL_BAD_REQUEST')).toBe(true);
    expect((error as TeamError).message).toContain('model "nope" not found');
  });

  it('fails at once with MODEL_RATE_LIMITED when retry-after exceeds the limit', async () => {
    server.reply({
      status: 429,
      headers: { ...JSON_HEADERS, 'retry-after': '3600' },
      body: ['{"error":{"message":"daily quota exhausted"}}'],
    });
    const { sleep, calls } = recordingSleep();
    const error = await caught(() => collect(adapter({ sleep }).stream(simpleRequest())));
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
    const error = await caught(() => collect(adapter().stream(simpleRequest())));
    expect(TeamError.hasCode(error, 'MODEL_PROTOCOL')).toBe(true);
    expect((error as TeamError).message).toContain('middle of an event');
  });

  it('reports a stream that ends between events without a finish as MODEL_PROTOCOL', async () => {
    server.reply({ body: [openAiSse(scenario('text-cached').slice(0, 3), { done: false })] });
    const error = await caught(() => collect(adapter().stream(simpleRequest())));
    expect(TeamError.hasCode(error, 'MODEL_PROTOCOL')).toBe(true);
    expect((error as TeamError).message).toContain('before a finish reason');
  });

  it('reports a connection reset mid-stream as MODEL_UNAVAILABLE', async () => {
    const whole = openAiSse(scenario('text-cached'));
    server.reply({ body: [whole.slice(0, 200)], after: 'destroy' });
    const error = await caught(() => collect(adapter().stream(simpleRequest())));
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
    const error = await caught(() => collect(adapter().stream(simpleRequest())));
    expect(TeamError.hasCode(error, 'MODEL_PROTOCOL')).toBe(true);
    expect((error as TeamError).details).toMatchObject({ chunk: '{"choices": [' });
    await server.requests[0]?.closed;
  });

  it('maps an error object inside the stream, keeping its message', async () => {
    server.reply({ body: [openAiSse(scenario('error-in-stream'), { done: false })] });
    const error = await caught(() => collect(adapter().stream(simpleRequest())));
    expect(TeamError.hasCode(error, 'MODEL_UNAVAILABLE')).toBe(true);
    expect((error as TeamError).message).toContain('Upstream provider overloaded');
  });

  it('refuses a JSON answer where an event stream was expected', async () => {
    server.reply({ headers: JSON_HEADERS, body: ['{"id":"x","choices":[]}'] });
    const error = await caught(() => collect(adapter().stream(simpleRequest())));
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
    const error = await caught(() =>
      collect(adapter().stream(simpleRequest({ signal: controller.signal }))),
    );
    expect(TeamError.hasCode(error, 'ABORTED')).toBe(true);
    expect(server.requests).toHaveLength(0);
  });

  it('aborts during a retry backoff', async () => {
    server.reply({ status: 503, headers: JSON_HEADERS, body: ['{"error":{"message":"busy"}}'] });
    const clock = createManualClock();
    const controller = new AbortController();
    const run = caught(() =>
      collect(
        adapter({ clock, idleTimeoutMs: 0 }).stream(simpleRequest({ signal: controller.signal })),
      ),
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
