import type { ContentBlock, ModelAdapter, StopReason, ToolCall, Usage } from '@teamwire/core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createAnthropic } from './anthropic.js';
import { createOpenAICompatible } from './openai-compatible.js';
import {
  anthropicSse,
  collect,
  deltaReasoning,
  deltaText,
  finishOf,
  listChunkFiles,
  openAiSse,
  readChunks,
  simpleRequest,
} from './testing/fixtures.js';
import { type LoopbackServer, startLoopbackServer } from './testing/loopback-server.js';

/** What each real recording contains, read from the file by hand. */
interface Expected {
  text: string;
  reasoning: string;
  toolCalls: ToolCall[];
  usage: Usage;
  stopReason: StopReason;
  /** Anthropic thinking signature, when the recording has one. */
  signature?: string;
}

const OPENAI: Record<string, Expected> = {
  'azure-model-router.1.chunks.txt': {
    text: 'Capital of Denmark.',
    reasoning: '',
    toolCalls: [],
    usage: { inputTokens: 15, outputTokens: 78, cacheReadTokens: 0, reasoningTokens: 64 },
    stopReason: 'end_turn',
  },
  'deepseek-tool-call.chunks.txt': {
    text: '',
    reasoning:
      'The user is asking for the weather in San Francisco. I need to use the weather tool to get ' +
      'this information. Let me invoke the weather tool with the location parameter set to "San Francisco".',
    toolCalls: [
      {
        id: 'call_00_ioIn7yN9p1ZOMNpDLwd4MgAF',
        name: 'weather',
        input: { location: 'San Francisco' },
      },
    ],
    usage: { inputTokens: 339, outputTokens: 83, cacheReadTokens: 320, reasoningTokens: 39 },
    stopReason: 'tool_calls',
  },
  'groq-tool-call.chunks.txt': {
    text: '',
    reasoning: '',
    toolCalls: [{ id: 'tk85n1k4m', name: 'weather', input: {} }],
    usage: { inputTokens: 210, outputTokens: 15 },
    stopReason: 'tool_calls',
  },
  'mistral-incremental-tool-call.chunks.txt': {
    text: '',
    reasoning: '',
    toolCalls: [
      {
        id: 'chatcmpl-tool-9f149c74c42f265b',
        name: 'webSearchTool',
        input: { query: 'current Berlin weather' },
      },
    ],
    usage: { inputTokens: 171, outputTokens: 14, cacheReadTokens: 128 },
    stopReason: 'tool_calls',
  },
  'mistral-text.chunks.txt': {
    text: 'Hello, world! This is a test response.',
    reasoning: '',
    toolCalls: [],
    usage: { inputTokens: 13, outputTokens: 8 },
    stopReason: 'end_turn',
  },
  'mistral-tool-call.chunks.txt': {
    text: '',
    reasoning: '',
    toolCalls: [{ id: 'gSIMJiOkT', name: 'weather', input: { location: 'San Francisco' } }],
    usage: { inputTokens: 124, outputTokens: 22 },
    stopReason: 'tool_calls',
  },
  'xai-text.chunks.txt': {
    text: 'Hello',
    reasoning: 'First, the user said',
    toolCalls: [],
    usage: { inputTokens: 12, outputTokens: 1, cacheReadTokens: 11, reasoningTokens: 290 },
    stopReason: 'end_turn',
  },
  'xai-tool-call.chunks.txt': {
    text: '',
    reasoning: 'First, the user is',
    toolCalls: [{ id: 'call_55117580', name: 'weather', input: { location: 'San Francisco' } }],
    usage: { inputTokens: 291, outputTokens: 26, cacheReadTokens: 290, reasoningTokens: 196 },
    stopReason: 'tool_calls',
  },
};

const ANTHROPIC: Record<string, Expected> = {
  'anthropic-clear-thinking.1.chunks.txt': {
    text: '925 ÷ 5 = 185',
    reasoning: 'The previous result was 925. Now I need to divide that by 5.\n\n925 ÷ 5 = 185',
    signature:
      'EvQBCkYICxgCKkAxhD4NUKFzudtZ6NzbZdEiBACIScTzqjPViM596iWLZIk4EFKYYBj3B6Ptl3b0dcQv/VeJBNbejNWIWRBn+KPNEgz6HWtKx7p+QRgKsEoaDGjsiqfht7gTRFYHiyIwD1VSmNqHxv3wy8KEMP+LYb/TC4UH3H97tuoaADARFFcA0phdfxnzKQxFnc9lwY+dKlzUsaKSUAFeu1bDL5ikZJ1vL0Fkz6JjoFke0L/wOJRIUDUlDUOFJ1tZ3ea7g6LGE/5hwuvWgLwewdcm64d+43l7F57XrOmqNd6flI2K/oPr/4yzNgvi/EhT6Ca17BgB',
    toolCalls: [],
    usage: { inputTokens: 69, outputTokens: 53, cacheReadTokens: 0, cacheWriteTokens: 0 },
    stopReason: 'end_turn',
  },
  'anthropic-json-tool.1.chunks.txt': {
    text: '',
    reasoning: '',
    toolCalls: [
      {
        id: 'toolu_01KFbKqPYSuAKujiL6mTfzYA',
        name: 'json',
        input: { elements: [{ location: 'San Francisco', temperature: 58, condition: 'sunny' }] },
      },
    ],
    usage: { inputTokens: 849, outputTokens: 47, cacheReadTokens: 0, cacheWriteTokens: 0 },
    stopReason: 'tool_calls',
  },
  'anthropic-text.chunks.txt': {
    text: "Hello! I'm doing well, thank you for asking. How are you doing today? Is there anything I can help you with?",
    reasoning: '',
    toolCalls: [],
    usage: { inputTokens: 12, outputTokens: 30, cacheReadTokens: 0, cacheWriteTokens: 0 },
    stopReason: 'end_turn',
  },
  'anthropic-tool-no-args.chunks.txt': {
    text: "I'll update the issue list for you.",
    reasoning: '',
    toolCalls: [{ id: 'toolu_01QE1WLsSVp5hy5Q3GmGTmjP', name: 'updateIssueList', input: {} }],
    usage: { inputTokens: 565, outputTokens: 48, cacheReadTokens: 0, cacheWriteTokens: 0 },
    stopReason: 'tool_calls',
  },
};

let server: LoopbackServer;
beforeAll(async () => {
  server = await startLoopbackServer();
});
afterAll(async () => {
  await server.close();
});

async function replay(adapter: ModelAdapter, body: string, expected: Expected): Promise<void> {
  server.reply({ body: [body] });
  const events = await collect(adapter.stream(simpleRequest()));
  const finish = finishOf(events);
  const { message } = finish;

  expect(deltaText(events)).toBe(expected.text);
  expect(deltaReasoning(events)).toBe(expected.reasoning);
  const content: ContentBlock[] = [];
  if (expected.reasoning !== '') {
    content.push({
      type: 'thinking',
      thinking: expected.reasoning,
      ...(expected.signature === undefined ? {} : { signature: expected.signature }),
    });
  }
  if (expected.text !== '') content.push({ type: 'text', text: expected.text });
  expect(message.content).toEqual(content);

  expect(message.toolCalls).toEqual(expected.toolCalls);
  expect(events.filter((e) => e.type === 'tool-call').map((e) => e.toolCall)).toEqual(
    expected.toolCalls,
  );
  expect(
    events.filter((e) => e.type === 'tool-call-start').map((e) => ({ id: e.id, name: e.name })),
  ).toEqual(expected.toolCalls.map(({ id, name }) => ({ id, name })));
  expect(finish.usage).toEqual(expected.usage);
  expect(message.usage).toEqual(expected.usage);
  expect(finish.stopReason).toBe(expected.stopReason);
  expect(message.stopReason).toBe(expected.stopReason);
}

describe('recorded OpenAI-compatible streams', () => {
  it('has an expectation for every recording', () => {
    expect(listChunkFiles('provider-streams/openai-chat')).toEqual(Object.keys(OPENAI).sort());
  });

  for (const [file, expected] of Object.entries(OPENAI)) {
    it(`replays ${file}`, async () => {
      const adapter = createOpenAICompatible({ baseURL: server.baseURL, apiKey: 'k', model: 'm' });
      await replay(
        adapter,
        openAiSse(readChunks(`provider-streams/openai-chat/${file}`)),
        expected,
      );
    });
  }
});

describe('recorded Anthropic Messages streams', () => {
  it('has an expectation for every recording', () => {
    expect(listChunkFiles('provider-streams/anthropic-messages')).toEqual(
      Object.keys(ANTHROPIC).sort(),
    );
  });

  for (const [file, expected] of Object.entries(ANTHROPIC)) {
    it(`replays ${file}`, async () => {
      const adapter = createAnthropic({ baseURL: server.baseURL, apiKey: 'k', model: 'm' });
      await replay(
        adapter,
        anthropicSse(readChunks(`provider-streams/anthropic-messages/${file}`)),
        expected,
      );
    });
  }
});
