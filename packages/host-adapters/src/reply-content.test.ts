import type { LanguageModelV2StreamPart } from '@ai-sdk/provider';
import { TeamError } from '@teamwire/core';
import { describe, expect, it } from 'vitest';
import { createAiSdkModel } from './ai-sdk.js';
import { anthropicAdapter, openAiAdapter } from './testing/adapters.js';
import { scriptedModel } from './testing/ai-sdk-model.js';
import {
  anthropicSse,
  collect,
  deltaReasoning,
  deltaText,
  finishOf,
  openAiSse,
  readChunks,
  simpleRequest,
  streamFailure,
} from './testing/fixtures.js';
import { useLoopbackServer } from './testing/loopback-server.js';

const server = useLoopbackServer();
const openai = () => openAiAdapter(server, { apiKey: 'k', model: 'm' });
const anthropic = () => anthropicAdapter(server, { apiKey: 'k', model: 'm' });

/** A chat completions chunk with one choice. */
const chunk = (delta: unknown, finish: string | null = null) =>
  JSON.stringify({ id: 'c1', choices: [{ index: 0, delta, finish_reason: finish }] });

/** Replays OpenAI-style chunks and returns what the adapter made of them. */
async function openAiReply(chunks: string[]) {
  server.reply({ body: [openAiSse(chunks)] });
  return collect(openai().stream(simpleRequest()));
}

async function openAiFailure(chunks: string[]): Promise<TeamError> {
  server.reply({ body: [openAiSse(chunks)] });
  const error = await streamFailure(openai());
  expect(TeamError.hasCode(error, 'MODEL_PROTOCOL')).toBe(true);
  return error as TeamError;
}

describe('OpenAI-compatible: delta.content as an array of typed parts', () => {
  it('maps text parts to text and thinking parts to a thinking block (fixture)', async () => {
    const events = await openAiReply(readChunks('scenarios/openai-chat/content-parts.chunks.txt'));
    const finish = finishOf(events);
    expect(deltaReasoning(events)).toBe('The user wants a greeting for the team.');
    expect(deltaText(events)).toBe('Hello, team — ready ✅');
    expect(finish.message.content).toEqual([
      { type: 'thinking', thinking: 'The user wants a greeting for the team.' },
      { type: 'text', text: 'Hello, team — ready ✅' },
    ]);
    expect(finish.stopReason).toBe('end_turn');
    expect(finish.usage).toEqual({ inputTokens: 21, outputTokens: 17 });
  });

  it('maps reasoning parts, thinking signatures, reasoning strings and a refusal', async () => {
    const events = await openAiReply([
      chunk({ reasoning_content: 'Plan. ' }),
      chunk({ content: [{ type: 'reasoning', text: 'Check.' }] }),
      chunk({ content: [{ type: 'thinking', thinking: '', signature: 'sig-1' }] }),
      chunk({ content: [{ type: 'text', text: 'Done.' }], refusal: null }),
      chunk({ content: null, refusal: ' But not that.' }, 'stop'),
    ]);
    expect(finishOf(events).message.content).toEqual([
      { type: 'thinking', thinking: 'Plan. Check.', signature: 'sig-1' },
      { type: 'text', text: 'Done. But not that.' },
    ]);
    expect(deltaReasoning(events)).toBe('Plan. Check.');
  });

  it('fails loudly on a part it does not know, naming it', async () => {
    const error = await openAiFailure([
      chunk({ content: [{ type: 'text', text: 'See ' }] }),
      chunk({ content: [{ type: 'image_url', image_url: { url: 'data:...' } }] }),
      chunk({}, 'stop'),
    ]);
    expect(error.message).toContain('unknown content part type `image_url`');
    expect(error.details).toMatchObject({ provider: 'openai-compatible' });
  });

  it.each([
    ['a text part without text', { content: [{ type: 'text' }] }],
    ['a part that is not an object', { content: ['hello'] }],
    ['a thinking part with neither text nor signature', { content: [{ type: 'thinking' }] }],
    ['content that is an object', { content: { type: 'text', text: 'hi' } }],
  ])('fails on %s', async (_, delta) => {
    await openAiFailure([chunk(delta), chunk({ content: 'x' }, 'stop')]);
  });
});

describe('no reply becomes an empty message without an error', () => {
  it('OpenAI-compatible: a stop with no text, reasoning or tool call is MODEL_PROTOCOL', async () => {
    const error = await openAiFailure([
      chunk({ role: 'assistant', content: '' }),
      chunk({ content: null }, 'stop'),
    ]);
    expect(error.details).toMatchObject({ finishReason: 'stop' });
    await openAiFailure([chunk({ role: 'assistant' })]); // [DONE] with no finish reason at all
  });

  it.each(['length', 'content_filter'])(
    'OpenAI-compatible: an empty reply that ends with %s is legitimate',
    async (reason) => {
      const finish = finishOf(await openAiReply([chunk({ content: '' }, reason)]));
      expect(finish.message.content).toEqual([]);
    },
  );

  const start =
    '{"type":"message_start","message":{"id":"msg_1","usage":{"input_tokens":5,"output_tokens":0}}}';
  const stop = (reason: string) => [
    `{"type":"message_delta","delta":{"stop_reason":"${reason}"},"usage":{"output_tokens":1}}`,
    '{"type":"message_stop"}',
  ];
  const emptyText = [
    '{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}',
    '{"type":"content_block_stop","index":0}',
  ];

  it('Anthropic: a tool_use stop with no tool call is MODEL_PROTOCOL; empty end_turn and max_tokens are not', async () => {
    server.reply({ body: [anthropicSse([start, ...emptyText, ...stop('tool_use')])] });
    const error = await streamFailure(anthropic());
    expect(TeamError.hasCode(error, 'MODEL_PROTOCOL')).toBe(true);
    expect((error as TeamError).details).toMatchObject({ finishReason: 'tool_use' });

    // Documented by Anthropic: a turn may end empty right after tool results.
    server.reply({ body: [anthropicSse([start, ...emptyText, ...stop('end_turn')])] });
    const ended = finishOf(await collect(anthropic().stream(simpleRequest())));
    expect(ended.stopReason).toBe('end_turn');
    expect(ended.message.content).toEqual([]);

    server.reply({ body: [anthropicSse([start, ...emptyText, ...stop('max_tokens')])] });
    const finish = finishOf(await collect(anthropic().stream(simpleRequest())));
    expect(finish.stopReason).toBe('max_tokens');
    expect(finish.message.content).toEqual([]);
  });

  it('Anthropic: an unknown content block or delta type is MODEL_PROTOCOL', async () => {
    server.reply({
      body: [
        anthropicSse([
          start,
          '{"type":"content_block_start","index":0,"content_block":{"type":"answer","answer":"42"}}',
          '{"type":"content_block_stop","index":0}',
          ...stop('end_turn'),
        ]),
      ],
    });
    const block = await streamFailure(anthropic());
    expect(TeamError.hasCode(block, 'MODEL_PROTOCOL')).toBe(true);
    expect((block as TeamError).message).toContain('unknown content block type `answer`');

    server.reply({
      body: [
        anthropicSse([
          start,
          '{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}',
          '{"type":"content_block_delta","index":0,"delta":{"type":"rich_text_delta","text":"42"}}',
          '{"type":"content_block_stop","index":0}',
          ...stop('end_turn'),
        ]),
      ],
    });
    const delta = await streamFailure(anthropic());
    expect(TeamError.hasCode(delta, 'MODEL_PROTOCOL')).toBe(true);
    expect((delta as TeamError).message).toContain('unknown delta type `rich_text_delta`');
  });

  it('Anthropic: blocks of server tools are kept whole, citations are read past', async () => {
    server.reply({
      body: [
        anthropicSse([
          start,
          '{"type":"content_block_start","index":0,"content_block":{"type":"server_tool_use","id":"srvtoolu_1","name":"web_search","input":{}}}',
          '{"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"{\\"query\\":\\"weather\\"}"}}',
          '{"type":"content_block_stop","index":0}',
          '{"type":"content_block_start","index":1,"content_block":{"type":"web_search_tool_result","tool_use_id":"srvtoolu_1","content":[]}}',
          '{"type":"content_block_stop","index":1}',
          '{"type":"content_block_start","index":2,"content_block":{"type":"text","text":""}}',
          '{"type":"content_block_delta","index":2,"delta":{"type":"citations_delta","citation":{"type":"web_search_result_location","url":"https://example.com"}}}',
          '{"type":"content_block_delta","index":2,"delta":{"type":"text_delta","text":"Sunny."}}',
          '{"type":"content_block_stop","index":2}',
          ...stop('end_turn'),
        ]),
      ],
    });
    const finish = finishOf(await collect(anthropic().stream(simpleRequest())));
    expect(finish.message.content).toEqual([
      {
        type: 'server_tool_use',
        id: 'srvtoolu_1',
        name: 'web_search',
        input: { query: 'weather' },
      },
      { type: 'web_search_tool_result', tool_use_id: 'srvtoolu_1', content: [] },
      { type: 'text', text: 'Sunny.' },
    ]);
  });

  const usage = { inputTokens: 1, outputTokens: 1, totalTokens: 2 };
  const aiSdkFailure = async (parts: unknown[]): Promise<TeamError> => {
    const { model } = scriptedModel([parts as LanguageModelV2StreamPart[]]);
    const error = await streamFailure(createAiSdkModel(model, { retry: false }));
    expect(TeamError.hasCode(error, 'MODEL_PROTOCOL')).toBe(true);
    return error as TeamError;
  };

  it('AI SDK: an empty stop, an unknown part type and a file part are MODEL_PROTOCOL', async () => {
    const empty = await aiSdkFailure([
      { type: 'text-start', id: 't' },
      { type: 'text-end', id: 't' },
      { type: 'finish', usage, finishReason: 'stop' },
    ]);
    expect(empty.details).toMatchObject({ finishReason: 'stop' });
    const unknown = await aiSdkFailure([
      { type: 'text-delta', id: 't', delta: 'Hi' },
      { type: 'answer-delta', id: 'a', delta: '42' },
      { type: 'finish', usage, finishReason: 'stop' },
    ]);
    expect(unknown.message).toContain('unknown stream part type (answer-delta part)');
    await aiSdkFailure([
      { type: 'text-delta', id: 't', delta: 'Here it is:' },
      { type: 'file', mediaType: 'image/png', data: 'iVBORw0KGgo=' },
      { type: 'finish', usage, finishReason: 'stop' },
    ]);
    await aiSdkFailure([
      { type: 'text-delta', id: 't', delta: 42 },
      { type: 'finish', usage, finishReason: 'stop' },
    ]);
  });

  it('AI SDK: an empty reply cut by the output limit is legitimate', async () => {
    const { model } = scriptedModel([[{ type: 'finish', usage, finishReason: 'length' }]]);
    const finish = finishOf(await collect(createAiSdkModel(model).stream(simpleRequest())));
    expect(finish.stopReason).toBe('max_tokens');
    expect(finish.message.content).toEqual([]);
  });
});
