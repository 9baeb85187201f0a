import { APICallError } from '@ai-sdk/provider';
import { type ModelRequest, TeamError } from '@teamwire/core';
import { describe, expect, it } from 'vitest';
import { createAiSdkModel, type LanguageModelV3Like } from './ai-sdk.js';
import { scriptedModel } from './testing/ai-sdk-model.js';
import {
  caught,
  collect,
  finishOf,
  recordingSleep,
  simpleRequest,
  streamFailure,
} from './testing/fixtures.js';

const usage = {
  inputTokens: 100,
  outputTokens: 20,
  totalTokens: 120,
  cachedInputTokens: 64,
  reasoningTokens: 5,
};

describe('createAiSdkModel', () => {
  it('maps text, reasoning with a signature, tool input streaming and usage', async () => {
    const { model } = scriptedModel([
      [
        { type: 'stream-start', warnings: [] },
        { type: 'response-metadata', id: 'resp-1', modelId: 'scripted-1' },
        { type: 'reasoning-start', id: 'r1' },
        { type: 'reasoning-delta', id: 'r1', delta: 'Think ' },
        { type: 'reasoning-delta', id: 'r1', delta: 'first.' },
        {
          type: 'reasoning-end',
          id: 'r1',
          providerMetadata: { anthropic: { signature: 'sig-9' } },
        },
        { type: 'text-start', id: 't1' },
        { type: 'text-delta', id: 't1', delta: 'Grüße, ' },
        { type: 'text-delta', id: 't1', delta: 'team.' },
        { type: 'text-end', id: 't1' },
        { type: 'tool-input-start', id: 'call-1', toolName: 'send_message' },
        { type: 'tool-input-delta', id: 'call-1', delta: '{"to":"lead",' },
        { type: 'tool-input-delta', id: 'call-1', delta: '"text":"done"}' },
        { type: 'tool-input-end', id: 'call-1' },
        {
          type: 'tool-call',
          toolCallId: 'call-1',
          toolName: 'send_message',
          input: '{"to":"lead","text":"done"}',
        },
        // A provider-executed call is already answered: it must not reach the agent loop.
        {
          type: 'tool-call',
          toolCallId: 'ws-1',
          toolName: 'web_search',
          input: '{}',
          providerExecuted: true,
        },
        { type: 'finish', usage, finishReason: 'tool-calls' },
      ],
    ]);
    const adapter = createAiSdkModel(model);
    expect(adapter.provider).toBe('scripted.chat');
    expect(adapter.modelId).toBe('scripted-1');
    const events = await collect(adapter.stream(simpleRequest()));
    const toolCall = { id: 'call-1', name: 'send_message', input: { to: 'lead', text: 'done' } };
    const mappedUsage = {
      inputTokens: 100,
      outputTokens: 20,
      cacheReadTokens: 64,
      reasoningTokens: 5,
    };
    expect(events).toEqual([
      { type: 'reasoning-delta', text: 'Think ' },
      { type: 'reasoning-delta', text: 'first.' },
      { type: 'text-delta', text: 'Grüße, ' },
      { type: 'text-delta', text: 'team.' },
      { type: 'tool-call-start', id: 'call-1', name: 'send_message' },
      { type: 'tool-call-delta', id: 'call-1', argsDelta: '{"to":"lead",' },
      { type: 'tool-call-delta', id: 'call-1', argsDelta: '"text":"done"}' },
      { type: 'tool-call', toolCall },
      {
        type: 'finish',
        usage: mappedUsage,
        stopReason: 'tool_calls',
        message: {
          role: 'assistant',
          content: [
            { type: 'thinking', thinking: 'Think first.', signature: 'sig-9' },
            { type: 'text', text: 'Grüße, team.' },
          ],
          toolCalls: [toolCall],
          usage: mappedUsage,
          stopReason: 'tool_calls',
        },
      },
    ]);
  });

  it('sends the prompt, tools, cache marks and prompt cache key as call options', async () => {
    const { model, calls } = scriptedModel([
      [
        { type: 'text-delta', id: 't', delta: 'Drafted.' },
        { type: 'finish', usage, finishReason: 'stop' },
      ],
    ]);
    const request: ModelRequest = {
      system: [{ text: 'Team rules.', cacheable: true }, { text: 'You are "writer".' }],
      messages: [
        { role: 'user', content: [{ type: 'text', text: 'Draft it.' }] },
        {
          role: 'assistant',
          content: [
            { type: 'thinking', thinking: 'Plan.', signature: 'sig-1' },
            { type: 'redacted_thinking', data: 'opaque' },
            { type: 'text', text: 'Reading.' },
          ],
          toolCalls: [{ id: 'c1', name: 'read_file', input: { path: 'a.md' } }],
        },
        {
          role: 'tool',
          toolCallId: 'c1',
          toolName: 'read_file',
          content: [{ type: 'text', text: 'ENOENT' }],
          isError: true,
        },
      ],
      tools: [{ name: 'read_file', description: 'Reads a file.', inputSchema: { type: 'object' } }],
      promptCacheKey: 'team-1:writer',
      maxOutputTokens: 256,
    };
    await collect(
      createAiSdkModel(model, { providerOptions: { openai: { user: 'u' } } }).stream(request),
    );
    const cache = { anthropic: { cacheControl: { type: 'ephemeral' } } };
    expect(calls[0]).toEqual({
      prompt: [
        { role: 'system', content: 'Team rules.', providerOptions: cache },
        { role: 'system', content: 'You are "writer".', providerOptions: cache },
        { role: 'user', content: [{ type: 'text', text: 'Draft it.' }] },
        {
          role: 'assistant',
          content: [
            {
              type: 'reasoning',
              text: 'Plan.',
              providerOptions: { anthropic: { signature: 'sig-1' } },
            },
            {
              type: 'reasoning',
              text: '',
              providerOptions: { anthropic: { redactedData: 'opaque' } },
            },
            { type: 'text', text: 'Reading.' },
            { type: 'tool-call', toolCallId: 'c1', toolName: 'read_file', input: { path: 'a.md' } },
          ],
        },
        {
          role: 'tool',
          content: [
            {
              type: 'tool-result',
              toolCallId: 'c1',
              toolName: 'read_file',
              output: { type: 'error-text', value: 'ENOENT' },
            },
          ],
          providerOptions: cache,
        },
      ],
      tools: [
        {
          type: 'function',
          name: 'read_file',
          description: 'Reads a file.',
          inputSchema: { type: 'object' },
        },
      ],
      maxOutputTokens: 256,
      providerOptions: { openai: { promptCacheKey: 'team-1:writer', user: 'u' } },
    });
  });

  it('maps error parts and rejected calls to TeamErrors, retrying retryable ones', async () => {
    const rateLimited = Object.assign(new Error('Too Many Requests'), {
      statusCode: 429,
      isRetryable: true,
      responseHeaders: { 'retry-after': '3' },
      responseBody: '{"error":{"message":"slow down","type":"rate_limit_exceeded"}}',
    });
    const { model, calls } = scriptedModel([
      { reject: rateLimited },
      [
        { type: 'text-delta', id: 't', delta: 'ok' },
        { type: 'finish', usage, finishReason: 'stop' },
      ],
      { reject: Object.assign(new Error('Unauthorized'), { statusCode: 401, isRetryable: false }) },
      [
        { type: 'text-delta', id: 't', delta: 'partial' },
        { type: 'error', error: { message: 'stream broke' } },
      ],
    ]);
    const { sleep, calls: sleeps } = recordingSleep();
    const adapter = createAiSdkModel(model, { sleep });

    const finish = finishOf(await collect(adapter.stream(simpleRequest())));
    expect(finish.message.content).toEqual([{ type: 'text', text: 'ok' }]);
    expect(finish.stopReason).toBe('end_turn');
    expect(sleeps).toEqual([3000]);
    expect(calls).toHaveLength(2);

    const auth = await streamFailure(adapter);
    expect(TeamError.hasCode(auth, 'MODEL_AUTH')).toBe(true);
    expect((auth as TeamError).message).toContain('Unauthorized');

    const broken = await streamFailure(adapter);
    expect(TeamError.hasCode(broken, 'MODEL_UNAVAILABLE')).toBe(true);
    expect((broken as TeamError).message).toContain('stream broke');
  });

  it('maps context-window refusals to MODEL_CONTEXT_OVERFLOW without retrying them', async () => {
    const refused = new APICallError({
      message: "This model's maximum context length is 128000 tokens.",
      url: 'https://api.openai.com/v1/chat/completions',
      requestBodyValues: {},
      statusCode: 400,
      responseBody:
        '{"error":{"message":"This model\'s maximum context length is 128000 tokens. However, your messages resulted in 130412 tokens. Please reduce the length of the messages.","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}',
    });
    const invalid = new APICallError({
      message: 'invalid tool schema',
      url: 'https://api.openai.com/v1/chat/completions',
      requestBodyValues: {},
      statusCode: 400,
      responseBody: '{"error":{"message":"invalid tool schema","type":"invalid_request_error"}}',
    });
    const { model, calls } = scriptedModel([
      { reject: refused },
      { reject: invalid },
      [
        {
          type: 'error',
          error: {
            type: 'invalid_request_error',
            message: 'prompt is too long: 209750 tokens > 200000 maximum',
          },
        },
      ],
    ]);
    const { sleep, calls: sleeps } = recordingSleep();
    const adapter = createAiSdkModel(model, { sleep });

    const overflow = await streamFailure(adapter);
    expect(TeamError.hasCode(overflow, 'MODEL_CONTEXT_OVERFLOW')).toBe(true);
    expect((overflow as TeamError).details).toMatchObject({ status: 400, attempts: 1 });
    expect(calls).toHaveLength(1);
    expect(sleeps).toEqual([]);

    const bad = await streamFailure(adapter);
    expect(TeamError.hasCode(bad, 'MODEL_BAD_REQUEST')).toBe(true);

    const inStream = await streamFailure(adapter);
    expect(TeamError.hasCode(inStream, 'MODEL_CONTEXT_OVERFLOW')).toBe(true);
    expect((inStream as TeamError).message).toContain('prompt is too long');
    expect(calls).toHaveLength(3);
  });

  it('keeps at most 2000 characters of a huge error, whatever its shape', async () => {
    const huge = 'x'.repeat(1_000_000);
    const { model } = scriptedModel([
      { reject: Object.assign(new Error(huge), { statusCode: 400 }) },
      { reject: Object.assign(new Error('Bad Request'), { statusCode: 400, responseBody: huge }) },
      [{ type: 'error', error: { message: huge } }],
    ]);
    const adapter = createAiSdkModel(model, { retry: false });
    for (let i = 0; i < 3; i++) {
      const error = await streamFailure(adapter);
      expect(TeamError.isInstance(error)).toBe(true);
      expect((error as TeamError).message.length).toBeLessThan(2100);
      expect(String((error as TeamError).details?.providerMessage).length).toBe(2000);
    }
  });

  it('reports a stream without a finish part as MODEL_PROTOCOL', async () => {
    const { model } = scriptedModel([[{ type: 'text-delta', id: 't', delta: 'Hel' }]]);
    const error = await streamFailure(createAiSdkModel(model));
    expect(TeamError.hasCode(error, 'MODEL_PROTOCOL')).toBe(true);
  });

  it('aborts a stream that never ends at once, cancelling it', async () => {
    const { model, cancelled } = scriptedModel([
      { hang: [{ type: 'text-delta', id: 't', delta: 'Hel' }] },
    ]);
    const controller = new AbortController();
    const iterator = createAiSdkModel(model)
      .stream(simpleRequest({ signal: controller.signal }))
      [Symbol.asyncIterator]();
    expect((await iterator.next()).value).toEqual({ type: 'text-delta', text: 'Hel' });
    const pending = iterator.next();
    controller.abort();
    const error = await caught(() => pending);
    expect(TeamError.hasCode(error, 'ABORTED')).toBe(true);
    expect(cancelled).toHaveLength(1);
  });

  it('understands AI SDK 6 (V3) usage and finish reasons', async () => {
    const parts = [
      { type: 'text-delta', id: 't', delta: 'v3 says hi' },
      {
        type: 'finish',
        finishReason: { unified: 'stop', raw: 'end_turn' },
        usage: {
          inputTokens: { total: 500, noCache: 100, cacheRead: 350, cacheWrite: 50 },
          outputTokens: { total: 30, text: 22, reasoning: 8 },
        },
      },
    ];
    const model: LanguageModelV3Like = {
      specificationVersion: 'v3',
      provider: 'anthropic.messages',
      modelId: 'claude-v3',
      doStream: async () => ({
        stream: new ReadableStream<unknown>({
          start(controller) {
            for (const part of parts) controller.enqueue(part);
            controller.close();
          },
        }),
      }),
    };
    const finish = finishOf(await collect(createAiSdkModel(model).stream(simpleRequest())));
    expect(finish.usage).toEqual({
      inputTokens: 500,
      outputTokens: 30,
      cacheReadTokens: 350,
      cacheWriteTokens: 50,
      reasoningTokens: 8,
    });
    expect(finish.stopReason).toBe('end_turn');
    expect(finish.message.content).toEqual([{ type: 'text', text: 'v3 says hi' }]);
  });
});
