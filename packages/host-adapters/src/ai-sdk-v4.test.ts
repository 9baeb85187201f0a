import type {
  LanguageModelV2,
  LanguageModelV2CallOptions,
  LanguageModelV2Message,
} from '@ai-sdk/provider';
import type {
  LanguageModelV3,
  LanguageModelV3CallOptions,
  LanguageModelV3Message,
} from '@ai-sdk/provider-v3';
import type {
  LanguageModelV4,
  LanguageModelV4CallOptions,
  LanguageModelV4FinishReason,
  LanguageModelV4Message,
  LanguageModelV4StreamPart,
  LanguageModelV4Usage,
} from '@ai-sdk/provider-v4';
import { type ModelRequest, type StopReason, TeamError } from '@teamwire/core';
import { describe, expect, expectTypeOf, it } from 'vitest';
import {
  type AiSdkCallOptions,
  type AiSdkLanguageModel,
  type AiSdkPromptMessage,
  createAiSdkModel,
  type LanguageModelV4Like,
} from './ai-sdk.js';
import { scriptedModelV4 } from './testing/ai-sdk-model.js';
import {
  caught,
  collect,
  finishOf,
  recordingSleep,
  simpleRequest,
  streamFailure,
} from './testing/fixtures.js';

const usage: LanguageModelV4Usage = {
  inputTokens: { total: 500, noCache: 100, cacheRead: 350, cacheWrite: 50 },
  outputTokens: { total: 30, text: 22, reasoning: 8 },
};
const mappedUsage = {
  inputTokens: 500,
  outputTokens: 30,
  cacheReadTokens: 350,
  cacheWriteTokens: 50,
  reasoningTokens: 8,
};
const finish = (
  unified: LanguageModelV4FinishReason['unified'],
  raw?: string,
): LanguageModelV4StreamPart => ({ type: 'finish', usage, finishReason: { unified, raw } });

/** A V4 stream part that breaks the published types on purpose. */
const malformed = (part: unknown) => part as LanguageModelV4StreamPart;

async function protocolFailure(parts: LanguageModelV4StreamPart[]): Promise<TeamError> {
  const { model } = scriptedModelV4([parts]);
  const error = await streamFailure(createAiSdkModel(model, { retry: false }));
  expect(TeamError.hasCode(error, 'MODEL_PROTOCOL')).toBe(true);
  return error as TeamError;
}

describe('createAiSdkModel over an AI SDK 7 (LanguageModelV4) model', () => {
  it('accepts the published V2, V3 and V4 model types and sends options all three accept', () => {
    expectTypeOf<LanguageModelV2>().toExtend<AiSdkLanguageModel>();
    expectTypeOf<LanguageModelV3>().toExtend<AiSdkLanguageModel>();
    expectTypeOf<LanguageModelV4>().toExtend<AiSdkLanguageModel>();
    expectTypeOf<LanguageModelV4>().toExtend<LanguageModelV4Like>();
    expectTypeOf<LanguageModelV4>().toExtend<Parameters<typeof createAiSdkModel>[0]>();
    expectTypeOf<LanguageModelV3>().not.toExtend<LanguageModelV4Like>();
    expectTypeOf<{
      specificationVersion: 'v1';
      provider: string;
      modelId: string;
      doStream(options: never): PromiseLike<{ stream: ReadableStream<unknown> }>;
    }>().not.toExtend<AiSdkLanguageModel>();

    expectTypeOf<AiSdkPromptMessage>().toExtend<LanguageModelV2Message>();
    expectTypeOf<AiSdkPromptMessage>().toExtend<LanguageModelV3Message>();
    expectTypeOf<AiSdkPromptMessage>().toExtend<LanguageModelV4Message>();
    expectTypeOf<AiSdkCallOptions>().toExtend<LanguageModelV2CallOptions>();
    expectTypeOf<AiSdkCallOptions>().toExtend<LanguageModelV3CallOptions>();
    expectTypeOf<AiSdkCallOptions>().toExtend<LanguageModelV4CallOptions>();
  });

  it('maps text, reasoning, streamed and whole tool calls and nested usage', async () => {
    const { model } = scriptedModelV4([
      [
        { type: 'stream-start', warnings: [] },
        { type: 'response-metadata', id: 'resp-1', modelId: 'scripted-v4' },
        { type: 'ping' },
        { type: 'reasoning-start', id: 'r1' },
        { type: 'reasoning-delta', id: 'r1', delta: 'Think ' },
        { type: 'reasoning-delta', id: 'r1', delta: 'first.' },
        // How Anthropic's provider delivers the signature: an empty delta with metadata.
        {
          type: 'reasoning-delta',
          id: 'r1',
          delta: '',
          providerMetadata: { anthropic: { signature: 'sig-4' } },
        },
        { type: 'reasoning-end', id: 'r1' },
        { type: 'text-start', id: 't1' },
        { type: 'text-delta', id: 't1', delta: 'Grüße, ' },
        { type: 'text-delta', id: 't1', delta: 'team.' },
        {
          type: 'text-end',
          id: 't1',
          citations: [
            { source: { type: 'source', sourceType: 'url', id: 's1', url: 'https://x.test' } },
          ],
        },
        { type: 'source', sourceType: 'url', id: 's1', url: 'https://x.test' },
        {
          type: 'custom',
          kind: 'openai.compaction',
          providerMetadata: { openai: { type: 'compaction', encryptedContent: 'opaque' } },
        },
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
        // A call whose input was not streamed.
        { type: 'tool-call', toolCallId: 'call-2', toolName: 'task_list', input: '{"open":true}' },
        // A provider-executed call and its result are already answered.
        {
          type: 'tool-input-start',
          id: 'ws-1',
          toolName: 'web_search',
          providerExecuted: true,
        },
        { type: 'tool-input-delta', id: 'ws-1', delta: '{"q":"x"}' },
        { type: 'tool-input-end', id: 'ws-1' },
        {
          type: 'tool-call',
          toolCallId: 'ws-1',
          toolName: 'web_search',
          input: '{"q":"x"}',
          providerExecuted: true,
        },
        { type: 'tool-result', toolCallId: 'ws-1', toolName: 'web_search', result: { hits: 1 } },
        { type: 'raw', rawValue: { anything: true } },
        finish('tool-calls', 'tool_use'),
      ],
    ]);
    const adapter = createAiSdkModel(model);
    expect(adapter.specificationVersion).toBe('v1');
    expect(adapter.provider).toBe('scripted-v4.chat');
    expect(adapter.modelId).toBe('scripted-v4');
    const events = await collect(adapter.stream(simpleRequest()));
    const call1 = { id: 'call-1', name: 'send_message', input: { to: 'lead', text: 'done' } };
    const call2 = { id: 'call-2', name: 'task_list', input: { open: true } };
    expect(events).toEqual([
      { type: 'reasoning-delta', text: 'Think ' },
      { type: 'reasoning-delta', text: 'first.' },
      { type: 'text-delta', text: 'Grüße, ' },
      { type: 'text-delta', text: 'team.' },
      { type: 'tool-call-start', id: 'call-1', name: 'send_message' },
      { type: 'tool-call-delta', id: 'call-1', argsDelta: '{"to":"lead",' },
      { type: 'tool-call-delta', id: 'call-1', argsDelta: '"text":"done"}' },
      { type: 'tool-call', toolCall: call1 },
      { type: 'tool-call-start', id: 'call-2', name: 'task_list' },
      { type: 'tool-call', toolCall: call2 },
      {
        type: 'finish',
        usage: mappedUsage,
        stopReason: 'tool_calls',
        message: {
          role: 'assistant',
          content: [
            { type: 'thinking', thinking: 'Think first.', signature: 'sig-4' },
            { type: 'text', text: 'Grüße, team.' },
          ],
          toolCalls: [call1, call2],
          usage: mappedUsage,
          stopReason: 'tool_calls',
        },
      },
    ]);
  });

  it('keeps redacted reasoning and counts missing token numbers as zero', async () => {
    const { model } = scriptedModelV4([
      [
        {
          type: 'reasoning-start',
          id: 'r',
          providerMetadata: { anthropic: { redactedData: 'opaque' } },
        },
        { type: 'reasoning-end', id: 'r' },
        { type: 'text-delta', id: 't', delta: 'ok' },
        {
          type: 'finish',
          usage: {
            inputTokens: {
              total: 7,
              noCache: undefined,
              cacheRead: undefined,
              cacheWrite: undefined,
            },
            outputTokens: { total: undefined, text: undefined, reasoning: undefined },
          },
          finishReason: { unified: 'stop', raw: undefined },
        },
      ],
    ]);
    const done = finishOf(await collect(createAiSdkModel(model).stream(simpleRequest())));
    expect(done.message.content).toEqual([
      { type: 'redacted_thinking', data: 'opaque' },
      { type: 'text', text: 'ok' },
    ]);
    expect(done.usage).toEqual({ inputTokens: 7, outputTokens: 0 });
  });

  it('sends the prompt, tools, cache marks and prompt cache key in the V4 call-options shape', async () => {
    const { model, calls } = scriptedModelV4([
      [{ type: 'text-delta', id: 't', delta: 'Drafted.' }, finish('stop')],
    ]);
    const request: ModelRequest = {
      system: [{ text: 'Team rules.', cacheable: true }],
      messages: [
        { role: 'user', content: [{ type: 'text', text: 'Draft it.' }] },
        {
          role: 'assistant',
          content: [
            { type: 'thinking', thinking: 'Plan.', signature: 'sig-1' },
            { type: 'text', text: 'Reading.' },
          ],
          toolCalls: [{ id: 'c1', name: 'read_file', input: { path: 'a.md' } }],
        },
        {
          role: 'tool',
          toolCallId: 'c1',
          toolName: 'read_file',
          content: [{ type: 'text', text: '# A' }],
        },
      ],
      tools: [{ name: 'read_file', description: 'Reads a file.', inputSchema: { type: 'object' } }],
      promptCacheKey: 'team-1:writer',
      maxOutputTokens: 256,
    };
    await collect(createAiSdkModel(model, { cacheControl: false }).stream(request));
    const expected: LanguageModelV4CallOptions = {
      prompt: [
        { role: 'system', content: 'Team rules.' },
        { role: 'user', content: [{ type: 'text', text: 'Draft it.' }] },
        {
          role: 'assistant',
          content: [
            {
              type: 'reasoning',
              text: 'Plan.',
              providerOptions: { anthropic: { signature: 'sig-1' } },
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
              output: { type: 'text', value: '# A' },
            },
          ],
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
      providerOptions: { openai: { promptCacheKey: 'team-1:writer' } },
    };
    expect(calls).toEqual([expected]);
  });

  const reasons: [LanguageModelV4FinishReason['unified'], boolean, StopReason][] = [
    ['stop', false, 'end_turn'],
    ['stop', true, 'tool_calls'],
    ['tool-calls', true, 'tool_calls'],
    ['length', false, 'max_tokens'],
    ['content-filter', false, 'other'],
    ['error', false, 'other'],
    ['other', false, 'other'],
    ['other', true, 'tool_calls'],
  ];
  it.each(reasons)(
    'maps the finish reason %s (tool call: %s) to %s',
    async (unified, tool, stop) => {
      const { model } = scriptedModelV4([
        [
          { type: 'text-delta', id: 't', delta: 'Some text.' },
          ...(tool
            ? [{ type: 'tool-call', toolCallId: 'c', toolName: 'task_list', input: '{}' } as const]
            : []),
          finish(unified, `raw-${unified}`),
        ],
      ]);
      const done = finishOf(await collect(createAiSdkModel(model).stream(simpleRequest())));
      expect(done.stopReason).toBe(stop);
      expect(done.message.stopReason).toBe(stop);
    },
  );

  it('lets a reply cut by the output limit or a content filter end empty, not a stop', async () => {
    const { model } = scriptedModelV4([[finish('length')], [finish('content-filter')]]);
    const adapter = createAiSdkModel(model);
    expect(finishOf(await collect(adapter.stream(simpleRequest()))).stopReason).toBe('max_tokens');
    expect(finishOf(await collect(adapter.stream(simpleRequest()))).stopReason).toBe('other');
    const empty = await protocolFailure([{ type: 'text-start', id: 't' }, finish('stop')]);
    expect(empty.details).toMatchObject({ finishReason: 'stop' });
  });

  it('fails a stream the provider reports as interrupted with MODEL_PROTOCOL', async () => {
    const error = await protocolFailure([
      { type: 'text-delta', id: 't', delta: 'The answer is' },
      finish('interrupted'),
    ]);
    expect(error.message).toContain('interrupted');
    expect(error.details).toMatchObject({ finishReason: 'interrupted' });
  });

  it('streams text-encoded tool input as the pieces of a JSON string', async () => {
    const raw = 'Line "one"\nünï 😀\\';
    const { model } = scriptedModelV4([
      [
        { type: 'tool-input-start', id: 'c1', toolName: 'write_note', inputEncoding: 'text' },
        { type: 'tool-input-delta', id: 'c1', delta: 'Line "one"\n' },
        { type: 'tool-input-delta', id: 'c1', delta: '' },
        { type: 'tool-input-delta', id: 'c1', delta: 'ünï 😀\\' },
        { type: 'tool-input-end', id: 'c1' },
        {
          type: 'tool-call',
          toolCallId: 'c1',
          toolName: 'write_note',
          input: JSON.stringify(raw),
        },
        // No tool-input-end: the tool-call part closes the string.
        { type: 'tool-input-start', id: 'c2', toolName: 'write_note', inputEncoding: 'text' },
        { type: 'tool-input-delta', id: 'c2', delta: 'two' },
        { type: 'tool-call', toolCallId: 'c2', toolName: 'write_note', input: '"two"' },
        // JSON encoding, said out loud.
        { type: 'tool-input-start', id: 'c3', toolName: 'task_list', inputEncoding: 'json' },
        { type: 'tool-input-delta', id: 'c3', delta: '{}' },
        { type: 'tool-call', toolCallId: 'c3', toolName: 'task_list', input: '{}' },
        finish('tool-calls'),
      ],
    ]);
    const events = await collect(createAiSdkModel(model).stream(simpleRequest()));
    const argsOf = (id: string) =>
      events
        .flatMap((e) => (e.type === 'tool-call-delta' && e.id === id ? [e.argsDelta] : []))
        .join('');
    expect(argsOf('c1')).toBe(JSON.stringify(raw));
    expect(JSON.parse(argsOf('c1'))).toBe(raw);
    expect(argsOf('c2')).toBe('"two"');
    expect(argsOf('c3')).toBe('{}');
    expect(finishOf(events).message.toolCalls).toEqual([
      { id: 'c1', name: 'write_note', input: raw },
      { id: 'c2', name: 'write_note', input: 'two' },
      { id: 'c3', name: 'task_list', input: {} },
    ]);
    // Every delta of a call comes between its start and its tool-call event.
    const order = events
      .filter((e) => e.type !== 'finish' && 'id' in e && e.id === 'c2')
      .map((e) => e.type);
    expect(order).toEqual(['tool-call-start', 'tool-call-delta', 'tool-call-delta']);
    const c2Call = events.findIndex((e) => e.type === 'tool-call' && e.toolCall.id === 'c2');
    const c2Close = events.findIndex(
      (e) => e.type === 'tool-call-delta' && e.id === 'c2' && e.argsDelta === '"',
    );
    expect(c2Close).toBeGreaterThan(-1);
    expect(c2Close).toBeLessThan(c2Call);
  });

  it('maps error parts and rejected calls to TeamErrors, retrying retryable ones', async () => {
    const rateLimited = Object.assign(new Error('Too Many Requests'), {
      statusCode: 429,
      isRetryable: true,
      responseHeaders: { 'retry-after': '2' },
    });
    const { model, calls } = scriptedModelV4([
      { reject: rateLimited },
      [{ type: 'text-delta', id: 't', delta: 'ok' }, finish('stop')],
      [
        { type: 'text-delta', id: 't', delta: 'partial' },
        { type: 'error', error: { message: 'stream broke' } },
        finish('error'),
      ],
      [
        {
          type: 'error',
          error: { message: 'prompt is too long: 209750 tokens > 200000 maximum' },
        },
      ],
      { reject: Object.assign(new Error('Unauthorized'), { statusCode: 401, isRetryable: false }) },
    ]);
    const { sleep, calls: sleeps } = recordingSleep();
    const adapter = createAiSdkModel(model, { sleep });

    const done = finishOf(await collect(adapter.stream(simpleRequest())));
    expect(done.message.content).toEqual([{ type: 'text', text: 'ok' }]);
    expect(sleeps).toEqual([2000]);
    expect(calls).toHaveLength(2);

    const broken = await streamFailure(adapter);
    expect(TeamError.hasCode(broken, 'MODEL_UNAVAILABLE')).toBe(true);
    expect((broken as TeamError).message).toContain('stream broke');

    const overflow = await streamFailure(adapter);
    expect(TeamError.hasCode(overflow, 'MODEL_CONTEXT_OVERFLOW')).toBe(true);

    const auth = await streamFailure(adapter);
    expect(TeamError.hasCode(auth, 'MODEL_AUTH')).toBe(true);
    expect((auth as TeamError).details).toMatchObject({ status: 401, attempts: 1 });
    expect(calls).toHaveLength(5);
  });

  it('aborts a stream that never ends at once, cancelling it', async () => {
    const { model, cancelled, calls } = scriptedModelV4([
      { hang: [{ type: 'ping' }, { type: 'text-delta', id: 't', delta: 'Hel' }] },
    ]);
    const controller = new AbortController();
    const iterator = createAiSdkModel(model)
      .stream(simpleRequest({ signal: controller.signal }))
      [Symbol.asyncIterator]();
    expect((await iterator.next()).value).toEqual({ type: 'text-delta', text: 'Hel' });
    expect(calls[0]?.abortSignal).toBe(controller.signal);
    const pending = iterator.next();
    controller.abort();
    const error = await caught(() => pending);
    expect(TeamError.hasCode(error, 'ABORTED')).toBe(true);
    expect(cancelled).toHaveLength(1);
  });

  it('fails an unknown part type with MODEL_PROTOCOL instead of dropping it', async () => {
    const unknown = await protocolFailure([
      { type: 'text-delta', id: 't', delta: 'Hi' },
      malformed({ type: 'answer-delta', id: 'a', delta: '42' }),
      finish('stop'),
    ]);
    expect(unknown.message).toContain('unknown stream part type (answer-delta part)');
    expect(unknown.details).toMatchObject({ partType: 'answer-delta' });
  });

  it('fails parts a teamwire message cannot hold with MODEL_PROTOCOL', async () => {
    const file = await protocolFailure([
      { type: 'text-delta', id: 't', delta: 'Here:' },
      { type: 'file', mediaType: 'image/png', data: { type: 'data', data: 'iVBORw0KGgo=' } },
      finish('stop'),
    ]);
    expect(file.details).toMatchObject({ partType: 'file' });
    const reasoningFile = await protocolFailure([
      {
        type: 'reasoning-file',
        mediaType: 'image/png',
        data: { type: 'url', url: new URL('https://x.test/a.png') },
      },
      { type: 'text-delta', id: 't', delta: 'Drawn.' },
      finish('stop'),
    ]);
    expect(reasoningFile.details).toMatchObject({ partType: 'reasoning-file' });
    const approval = await protocolFailure([
      {
        type: 'tool-call',
        toolCallId: 'm1',
        toolName: 'mcp_x',
        input: '{}',
        providerExecuted: true,
      },
      { type: 'tool-approval-request', approvalId: 'a1', toolCallId: 'm1' },
      finish('other'),
    ]);
    expect(approval.details).toMatchObject({ partType: 'tool-approval-request' });
  });

  it('fails malformed parts with MODEL_PROTOCOL', async () => {
    const cases: [unknown[], string][] = [
      [['not a part'], 'not an object with a `type`'],
      [[{ type: 'text-delta', id: 't', delta: 42 }], '`delta` is not a string (text-delta part)'],
      [[{ type: 'text-start' }], '`id` is not a string (text-start part)'],
      [
        [{ type: 'tool-input-start', id: 'c', toolName: 'x', inputEncoding: 'yaml' }],
        '`inputEncoding` is neither',
      ],
      [[{ type: 'tool-call', toolCallId: 'c', input: '{}' }], '`toolName` is not a string'],
      // V2's string finish reason and flat usage are not V4's.
      [
        [
          { type: 'text-delta', id: 't', delta: 'x' },
          { type: 'finish', usage, finishReason: 'stop' },
        ],
        '`finishReason` is not a v4 finish reason',
      ],
      [
        [
          { type: 'text-delta', id: 't', delta: 'x' },
          {
            type: 'finish',
            usage: { inputTokens: 5, outputTokens: 1 },
            finishReason: { unified: 'stop', raw: 'stop' },
          },
        ],
        '`usage` is not v4 usage',
      ],
    ];
    for (const [parts, message] of cases) {
      const error = await protocolFailure(parts.map(malformed));
      expect(error.message).toContain(message);
    }
  });

  it('refuses a model of a spec version it cannot read, at once', () => {
    const v1 = {
      specificationVersion: 'v1',
      provider: 'old',
      modelId: 'old-1',
      doStream: () => Promise.reject(new Error('not used')),
    } as unknown as AiSdkLanguageModel;
    const error = (() => {
      try {
        createAiSdkModel(v1);
      } catch (thrown) {
        return thrown;
      }
      return undefined;
    })();
    expect(TeamError.hasCode(error, 'INVALID_ARGUMENT')).toBe(true);
    expect((error as TeamError).message).toContain('"v1"');
    expect((error as TeamError).details).toEqual({ specificationVersion: 'v1' });
  });
});
