import { type ModelRequest, TeamError } from '@teamwire/core';
import { describe, expect, it, vi } from 'vitest';
import {
  ANTHROPIC_MAX_CACHE_BREAKPOINTS,
  createAnthropic,
  toAnthropicMessages,
} from './anthropic.js';
import { anthropicAdapter } from './testing/adapters.js';
import {
  anthropicSse,
  caught,
  collect,
  deltaText,
  finishOf,
  readChunks,
  rechunkingFetch,
  recordingSleep,
  simpleRequest,
  splitBytes,
  streamFailure,
} from './testing/fixtures.js';
import { useLoopbackServer } from './testing/loopback-server.js';

const JSON_HEADERS = { 'content-type': 'application/json' };

const server = useLoopbackServer();
const adapter = anthropicAdapter.bind(undefined, server);

const scenario = (name: string) =>
  anthropicSse(readChunks(`scenarios/anthropic-messages/${name}.chunks.txt`));
const recorded = (name: string) =>
  anthropicSse(readChunks(`provider-streams/anthropic-messages/${name}.chunks.txt`));

const conversation: ModelRequest = {
  system: [
    { text: 'Team alpha protocol: be brief.', cacheable: true },
    { text: 'You are "researcher".' },
  ],
  messages: [
    { role: 'user', content: [{ type: 'text', text: 'Find the weather.' }] },
    {
      role: 'assistant',
      content: [
        { type: 'thinking', thinking: 'Two cities.', signature: 'sig-A' },
        { type: 'thinking', thinking: 'unsigned reasoning from another provider' },
        { type: 'redacted_thinking', data: 'opaque' },
        { type: 'text', text: 'Looking both up.' },
      ],
      toolCalls: [
        { id: 'toolu_1', name: 'weather', input: { city: 'Zürich' } },
        { id: 'toolu_2', name: 'weather', input: { city: '東京' } },
      ],
    },
    {
      role: 'tool',
      toolCallId: 'toolu_1',
      toolName: 'weather',
      content: [{ type: 'text', text: '12°C' }],
    },
    {
      role: 'user',
      content: [{ type: 'text', text: '<teammate-message from="lead">hurry</teammate-message>' }],
    },
    {
      role: 'tool',
      toolCallId: 'toolu_2',
      toolName: 'weather',
      content: [{ type: 'text', text: 'unavailable' }],
      isError: true,
    },
  ],
  tools: [
    {
      name: 'weather',
      description: 'Current weather for a city.',
      inputSchema: { type: 'object', properties: { city: { type: 'string' } } },
    },
  ],
  promptCacheKey: 'team-alpha:researcher',
  maxOutputTokens: 1000,
};

describe('createAnthropic: request', () => {
  it('sends the Messages body with tool results merged and cache breakpoints on the prefix', async () => {
    server.reply({ body: [recorded('anthropic-text')] });
    await collect(adapter().stream(conversation));
    const [request] = server.requests;
    expect(request?.path).toBe('/v1/messages');
    expect(request?.headers['x-api-key']).toBe('sk-ant-test');
    expect(request?.headers['anthropic-version']).toBe('2023-06-01');
    expect(request?.headers.authorization).toBeUndefined();
    expect(request?.body).toEqual({
      model: 'claude-sonnet-4-5',
      max_tokens: 1000,
      stream: true,
      system: [
        {
          type: 'text',
          text: 'Team alpha protocol: be brief.',
          cache_control: { type: 'ephemeral' },
        },
        { type: 'text', text: 'You are "researcher".', cache_control: { type: 'ephemeral' } },
      ],
      messages: [
        { role: 'user', content: [{ type: 'text', text: 'Find the weather.' }] },
        {
          role: 'assistant',
          content: [
            { type: 'thinking', thinking: 'Two cities.', signature: 'sig-A' },
            { type: 'redacted_thinking', data: 'opaque' },
            { type: 'text', text: 'Looking both up.' },
            { type: 'tool_use', id: 'toolu_1', name: 'weather', input: { city: 'Zürich' } },
            { type: 'tool_use', id: 'toolu_2', name: 'weather', input: { city: '東京' } },
          ],
        },
        {
          role: 'user',
          content: [
            { type: 'tool_result', tool_use_id: 'toolu_1', content: '12°C' },
            {
              type: 'tool_result',
              tool_use_id: 'toolu_2',
              content: 'unavailable',
              is_error: true,
            },
            {
              type: 'text',
              text: '<teammate-message from="lead">hurry</teammate-message>',
              cache_control: { type: 'ephemeral' },
            },
          ],
        },
      ],
      tools: [
        {
          name: 'weather',
          description: 'Current weather for a city.',
          input_schema: { type: 'object', properties: { city: { type: 'string' } } },
        },
      ],
    });
    // Anthropic takes no prompt cache key: the breakpoints do that job.
    expect(JSON.stringify(request?.body)).not.toContain('team-alpha:researcher');
  });

  it('never places more than four breakpoints', () => {
    const { system, messages } = toAnthropicMessages({
      system: [1, 2, 3, 4, 5, 6].map((n) => ({ text: `block ${n}`, cacheable: true })),
      messages: [{ role: 'user', content: [{ type: 'text', text: 'hi' }] }],
    });
    const marked = [...system, ...messages.flatMap((m) => m.content)].filter(
      (block) => block.cache_control !== undefined,
    );
    expect(marked).toHaveLength(ANTHROPIC_MAX_CACHE_BREAKPOINTS);
    expect(system.map((block) => block.cache_control !== undefined)).toEqual([
      true,
      true,
      false,
      false,
      false,
      true,
    ]);
    expect(messages[0]?.content[0]?.cache_control).toEqual({ type: 'ephemeral' });
  });

  it('places no breakpoints when cache control is off, and none on thinking blocks', () => {
    const off = toAnthropicMessages(
      { system: [{ text: 's', cacheable: true }], messages: simpleRequest().messages },
      { cacheControl: false },
    );
    expect(JSON.stringify(off)).not.toContain('cache_control');
    const thinkingLast = toAnthropicMessages({
      system: [],
      messages: [
        {
          role: 'assistant',
          content: [
            { type: 'text', text: 'prefix' },
            { type: 'thinking', thinking: 't', signature: 's' },
          ],
          toolCalls: [],
        },
      ],
    });
    expect(thinkingLast.messages[0]?.content).toEqual([
      { type: 'text', text: 'prefix', cache_control: { type: 'ephemeral' } },
      { type: 'thinking', thinking: 't', signature: 's' },
    ]);
  });

  it('adds the thinking budget to max_tokens and sends the thinking config', async () => {
    server.reply({ body: [recorded('anthropic-text')] });
    await collect(
      adapter({ thinking: { budgetTokens: 2048 }, maxOutputTokens: 4096 }).stream(simpleRequest()),
    );
    expect(server.requests[0]?.body).toMatchObject({
      max_tokens: 4096 + 2048,
      thinking: { type: 'enabled', budget_tokens: 2048 },
    });
  });

  it('reads ANTHROPIC_API_KEY, and refuses to call without any key', async () => {
    vi.stubEnv('ANTHROPIC_API_KEY', 'sk-ant-env');
    server.reply({ body: [recorded('anthropic-text')] });
    await collect(createAnthropic({ baseURL: server.baseURL, model: 'm' }).stream(simpleRequest()));
    expect(server.requests[0]?.headers['x-api-key']).toBe('sk-ant-env');

    vi.stubEnv('ANTHROPIC_API_KEY', '');
    const error = await streamFailure(createAnthropic({ baseURL: server.baseURL, model: 'm' }));
    expect(TeamError.hasCode(error, 'MODEL_AUTH')).toBe(true);
    expect(server.requests).toHaveLength(1);
  });
});

describe('createAnthropic: streaming', () => {
  const parallelCalls = [
    { id: 'toolu_zrh', name: 'weather', input: { city: 'Zürich' } },
    { id: 'toolu_tyo', name: 'weather', input: { city: '東京', note: '👋' } },
  ];

  it('streams text, parallel tool_use blocks and cache read/write usage', async () => {
    server.reply({ body: [scenario('parallel-tools-cached')] });
    const events = await collect(adapter().stream(simpleRequest()));
    expect(events.slice(0, -1)).toEqual([
      { type: 'text-delta', text: 'Checking Zürich and 東京.' },
      { type: 'tool-call-start', id: 'toolu_zrh', name: 'weather' },
      { type: 'tool-call-delta', id: 'toolu_zrh', argsDelta: '{"city": "Zü' },
      { type: 'tool-call-delta', id: 'toolu_zrh', argsDelta: 'rich"}' },
      { type: 'tool-call', toolCall: parallelCalls[0] },
      { type: 'tool-call-start', id: 'toolu_tyo', name: 'weather' },
      { type: 'tool-call-delta', id: 'toolu_tyo', argsDelta: '{"city": "東京", "note": "👋"}' },
      { type: 'tool-call', toolCall: parallelCalls[1] },
    ]);
    const finish = finishOf(events);
    const usage = {
      inputTokens: 20 + 1800 + 300,
      outputTokens: 61,
      cacheReadTokens: 1800,
      cacheWriteTokens: 300,
    };
    expect(finish).toEqual({
      type: 'finish',
      usage,
      stopReason: 'tool_calls',
      message: {
        role: 'assistant',
        content: [{ type: 'text', text: 'Checking Zürich and 東京.' }],
        toolCalls: parallelCalls,
        usage,
        stopReason: 'tool_calls',
      },
    });
  });

  it('reads the same stream whatever the byte boundaries', async () => {
    const bytes = new TextEncoder().encode(scenario('parallel-tools-cached'));
    for (const clientPiece of [1, 2]) {
      server.reply({ body: splitBytes(bytes, 5) });
      const events = await collect(
        adapter({ fetch: rechunkingFetch(clientPiece) }).stream(simpleRequest()),
      );
      expect(finishOf(events).message.toolCalls).toEqual(parallelCalls);
      expect(deltaText(events)).toBe('Checking Zürich and 東京.');
    }
  });

  it('keeps thinking with its signature and passes it back on the next request', async () => {
    server.reply(
      { body: [recorded('anthropic-clear-thinking.1')] },
      { body: [recorded('anthropic-text')] },
    );
    const model = adapter({ thinking: { budgetTokens: 1024 } });
    const first = finishOf(await collect(model.stream(simpleRequest())));
    const thinking = first.message.content[0];
    expect(thinking).toMatchObject({ type: 'thinking' });
    const signature = thinking?.type === 'thinking' ? thinking.signature : undefined;
    expect(signature).toMatch(/^EvQBCkYICxgCKkAx/);

    await collect(
      model.stream(
        simpleRequest({
          messages: [
            ...simpleRequest().messages,
            first.message,
            { role: 'user', content: [{ type: 'text', text: 'And times 2?' }] },
          ],
        }),
      ),
    );
    const sent = server.requests[1]?.body.messages as { role: string; content: unknown[] }[];
    expect(sent[1]).toEqual({
      role: 'assistant',
      content: [
        {
          type: 'thinking',
          thinking: 'The previous result was 925. Now I need to divide that by 5.\n\n925 ÷ 5 = 185',
          signature,
        },
        { type: 'text', text: '925 ÷ 5 = 185' },
      ],
    });
  });

  it('keeps redacted thinking opaque', async () => {
    server.reply({ body: [scenario('redacted-thinking')] });
    const events = await collect(adapter().stream(simpleRequest()));
    expect(finishOf(events).message.content).toEqual([
      { type: 'thinking', thinking: 'Weighing the plan.', signature: 'c2lnLTE=' },
      { type: 'redacted_thinking', data: 'EmwKAhgBEgy3va3pzix/LafPsn4aDFIT' },
      { type: 'text', text: 'Plan ready.' },
    ]);
    expect(finishOf(events).usage).toEqual({ inputTokens: 40, outputTokens: 25 });
  });
});

describe('createAnthropic: failures', () => {
  it('maps an error event inside the stream, keeping its message', async () => {
    server.reply({ body: [scenario('overloaded-error')] });
    const events: string[] = [];
    const error = await caught(async () => {
      for await (const event of adapter().stream(simpleRequest())) events.push(event.type);
    });
    expect(events).toEqual(['text-delta']);
    expect(TeamError.hasCode(error, 'MODEL_UNAVAILABLE')).toBe(true);
    expect((error as TeamError).message).toBe('anthropic: Overloaded');
    expect((error as TeamError).details).toMatchObject({ providerErrorType: 'overloaded_error' });
  });

  it('maps 401 to MODEL_AUTH and 429 (retries off) to MODEL_RATE_LIMITED with the message', async () => {
    server.reply({
      status: 401,
      headers: JSON_HEADERS,
      body: [
        '{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"}}',
      ],
    });
    const auth = await streamFailure(adapter());
    expect(TeamError.hasCode(auth, 'MODEL_AUTH')).toBe(true);
    expect((auth as TeamError).message).toBe('anthropic 401: invalid x-api-key');

    server.reply({
      status: 429,
      headers: { ...JSON_HEADERS, 'retry-after': '5' },
      body: [
        '{"type":"error","error":{"type":"rate_limit_error","message":"Number of request tokens has exceeded your per-minute rate limit"}}',
      ],
    });
    const limited = await streamFailure(adapter({ retry: false }));
    expect(TeamError.hasCode(limited, 'MODEL_RATE_LIMITED')).toBe(true);
    expect((limited as TeamError).message).toContain('per-minute rate limit');
    expect((limited as TeamError).details).toMatchObject({ retryAfterMs: 5000, attempts: 1 });
  });

  it.each([
    [
      400,
      '{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 209750 tokens > 200000 maximum"}}',
    ],
    [
      413,
      '{"type":"error","error":{"type":"request_too_large","message":"Request exceeds the maximum allowed number of bytes."}}',
    ],
  ])('maps a %i context-window refusal to MODEL_CONTEXT_OVERFLOW at once', async (status, body) => {
    server.reply({ status, headers: JSON_HEADERS, body: [body] });
    const { sleep, calls } = recordingSleep();
    const error = await streamFailure(adapter({ sleep }));
    expect(TeamError.hasCode(error, 'MODEL_CONTEXT_OVERFLOW')).toBe(true);
    expect((error as TeamError).details).toMatchObject({ status, attempts: 1 });
    expect(calls).toEqual([]);
    expect(server.requests).toHaveLength(1);
  });

  it('keeps any other 400 a MODEL_BAD_REQUEST', async () => {
    server.reply({
      status: 400,
      headers: JSON_HEADERS,
      body: [
        '{"type":"error","error":{"type":"invalid_request_error","message":"tools.0.custom.input_schema: JSON schema is invalid"}}',
      ],
    });
    const error = await streamFailure(adapter());
    expect(TeamError.hasCode(error, 'MODEL_BAD_REQUEST')).toBe(true);
  });

  it('maps a context-window refusal inside the stream to MODEL_CONTEXT_OVERFLOW', async () => {
    server.reply({
      body: [
        anthropicSse([
          '{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 209750 tokens > 200000 maximum"}}',
        ]),
      ],
    });
    const error = await streamFailure(adapter());
    expect(TeamError.hasCode(error, 'MODEL_CONTEXT_OVERFLOW')).toBe(true);
    expect((error as TeamError).message).toBe(
      'anthropic: prompt is too long: 209750 tokens > 200000 maximum',
    );
    expect((error as TeamError).details).toMatchObject({ inStream: true });
  });

  it('retries 529 overloaded until it succeeds', async () => {
    const overloaded = {
      status: 529,
      headers: JSON_HEADERS,
      body: ['{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}'],
    };
    server.reply(overloaded, overloaded, { body: [recorded('anthropic-text')] });
    const { sleep, calls } = recordingSleep();
    const finish = finishOf(
      await collect(adapter({ sleep, random: () => 1 }).stream(simpleRequest())),
    );
    expect(finish.stopReason).toBe('end_turn');
    expect(calls).toEqual([500, 1000]);
  });

  it('reports a stream that ends before message_stop as MODEL_PROTOCOL', async () => {
    const chunks = readChunks('provider-streams/anthropic-messages/anthropic-text.chunks.txt');
    server.reply({ body: [anthropicSse(chunks.slice(0, -1))] });
    const error = await streamFailure(adapter());
    expect(TeamError.hasCode(error, 'MODEL_PROTOCOL')).toBe(true);
    expect((error as TeamError).message).toContain('message_stop');
  });

  it('reports a stream cut mid-event as MODEL_PROTOCOL', async () => {
    const whole = recorded('anthropic-tool-no-args');
    server.reply({ body: [whole.slice(0, whole.indexOf('updateIssueList'))] });
    const error = await streamFailure(adapter());
    expect(TeamError.hasCode(error, 'MODEL_PROTOCOL')).toBe(true);
  });

  it('reports malformed events as MODEL_PROTOCOL', async () => {
    const start =
      readChunks('provider-streams/anthropic-messages/anthropic-text.chunks.txt')[0] ?? '';
    const cases = [
      'event: content_block_delta\ndata: {"type":"content_block_delta","index":0,\n\n',
      'event: content_block_delta\ndata: {"type":"content_block_delta","index":3,"delta":{"type":"text_delta","text":"x"}}\n\n',
    ];
    for (const bad of cases) {
      server.reply({ body: [`event: message_start\ndata: ${start}\n\n${bad}`], after: 'hang' });
      const error = await streamFailure(adapter());
      expect(TeamError.hasCode(error, 'MODEL_PROTOCOL')).toBe(true);
    }
    await Promise.all(server.requests.map((request) => request.closed));
  });

  it('aborts mid-stream at once: ABORTED, and the connection closes', async () => {
    const chunks = readChunks('provider-streams/anthropic-messages/anthropic-text.chunks.txt');
    server.reply({ body: [anthropicSse(chunks.slice(0, 4))], after: 'hang' });
    const controller = new AbortController();
    const iterator = adapter()
      .stream(simpleRequest({ signal: controller.signal }))
      [Symbol.asyncIterator]();
    expect((await iterator.next()).value).toEqual({ type: 'text-delta', text: 'Hello' });
    const pending = iterator.next();
    controller.abort(new Error('user pressed escape'));
    const error = await caught(() => pending);
    expect(TeamError.hasCode(error, 'ABORTED')).toBe(true);
    expect((error as TeamError).cause).toEqual(new Error('user pressed escape'));
    await server.requests[0]?.closed;
  });
});
