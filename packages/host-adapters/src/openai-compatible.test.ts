import type { ModelRequest } from '@teamwire/core';
import { describe, expect, it, vi } from 'vitest';
import { createOpenAICompatible, toOpenAIMessages } from './openai-compatible.js';
import { openAiAdapter } from './testing/adapters.js';
import {
  collect,
  deltaText,
  finishOf,
  openAiSse,
  readChunks,
  rechunkingFetch,
  simpleRequest,
  splitBytes,
} from './testing/fixtures.js';
import { useLoopbackServer } from './testing/loopback-server.js';

const server = useLoopbackServer();
const adapter = openAiAdapter.bind(undefined, server);

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
