import { TeamError } from '@teamwire/core';
import { describe, expect, it, vi } from 'vitest';
import { createModel, parseModelSpec } from './create-model.js';
import {
  anthropicSse,
  collect,
  finishOf,
  openAiSse,
  readChunks,
  simpleRequest,
} from './testing/fixtures.js';
import { useLoopbackServer } from './testing/loopback-server.js';

const server = useLoopbackServer();

const mistralText = () =>
  openAiSse(readChunks('provider-streams/openai-chat/mistral-text.chunks.txt'));

describe('parseModelSpec', () => {
  it('splits provider, model and an optional base URL', () => {
    expect(parseModelSpec('openai:gpt-4.1-mini')).toEqual({
      provider: 'openai',
      model: 'gpt-4.1-mini',
      baseURL: undefined,
    });
    expect(parseModelSpec('ollama:qwen3:8b')).toEqual({
      provider: 'ollama',
      model: 'qwen3:8b',
      baseURL: undefined,
    });
    expect(parseModelSpec('openai-compatible:Qwen/Qwen3-8B@http://gpu-box:8000/v1')).toEqual({
      provider: 'openai-compatible',
      model: 'Qwen/Qwen3-8B',
      baseURL: 'http://gpu-box:8000/v1',
    });
  });

  it.each([
    '',
    'gpt-4.1-mini',
    ':gpt-4.1-mini',
    'openai:',
    'gemini:gemini-2.5-pro',
    'openai-compatible:model@http://',
  ])('refuses %j with MODEL_UNKNOWN', (spec) => {
    let error: unknown;
    try {
      parseModelSpec(spec);
    } catch (e) {
      error = e;
    }
    expect(TeamError.hasCode(error, 'MODEL_UNKNOWN')).toBe(true);
  });
});

describe('createModel', () => {
  it('resolves OpenAI, Anthropic and local servers to the right adapter', () => {
    vi.stubEnv('OPENAI_BASE_URL', '');
    vi.stubEnv('OPENAI_API_KEY', 'sk-env');
    vi.stubEnv('ANTHROPIC_API_KEY', 'sk-ant-env');
    const openai = createModel('openai:gpt-4.1-mini');
    expect([openai.provider, openai.modelId, openai.specificationVersion]).toEqual([
      'openai',
      'gpt-4.1-mini',
      'v1',
    ]);
    const anthropic = createModel('anthropic:claude-sonnet-4-5');
    expect([anthropic.provider, anthropic.modelId]).toEqual(['anthropic', 'claude-sonnet-4-5']);
    const ollama = createModel('ollama:qwen3:8b');
    expect([ollama.provider, ollama.modelId]).toEqual(['ollama', 'qwen3:8b']);
  });

  it('refuses a hosted provider with no key at once, and lets keyless servers through', () => {
    for (const name of [
      'OPENAI_API_KEY',
      'ANTHROPIC_API_KEY',
      'OPENROUTER_API_KEY',
      'OPENAI_BASE_URL',
    ]) {
      vi.stubEnv(name, '');
    }
    for (const [spec, env] of [
      ['openai:gpt-4.1-mini', 'OPENAI_API_KEY'],
      ['anthropic:claude-sonnet-4-5', 'ANTHROPIC_API_KEY'],
      ['openrouter:openai/gpt-4.1-mini', 'OPENROUTER_API_KEY'],
    ] as const) {
      let error: unknown;
      try {
        createModel(spec);
      } catch (e) {
        error = e;
      }
      expect(TeamError.hasCode(error, 'MODEL_AUTH'), spec).toBe(true);
      expect((error as Error).message).toContain(env);
    }
    // a key from the options, a server of one's own, or a local provider needs nothing more
    expect(createModel('openai:gpt-4.1-mini', { apiKey: 'sk' }).provider).toBe('openai');
    expect(createModel('openai:gpt-4.1-mini', { baseURL: server.baseURL }).provider).toBe('openai');
    expect(createModel(`anthropic:claude-haiku-4-5@${server.baseURL}`).provider).toBe('anthropic');
    expect(createModel('ollama:qwen3:8b').provider).toBe('ollama');
    vi.stubEnv('OPENAI_BASE_URL', server.baseURL);
    expect(createModel('openai:gpt-4.1-mini').provider).toBe('openai');
  });

  it('refuses an openai-compatible spec without a base URL', () => {
    vi.stubEnv('OPENAI_BASE_URL', '');
    expect(() => createModel('openai-compatible:qwen3')).toThrow(
      expect.objectContaining({ code: 'MODEL_UNKNOWN' }),
    );
  });

  it('streams from the base URL in an openai-compatible spec', async () => {
    vi.stubEnv('OPENAI_API_KEY', 'sk-env');
    server.reply({ body: [mistralText()] });
    const model = createModel(`openai-compatible:qwen3-8b@${server.baseURL}`);
    const finish = finishOf(await collect(model.stream(simpleRequest())));
    expect(finish.message.content).toEqual([
      { type: 'text', text: 'Hello, world! This is a test response.' },
    ]);
    expect(server.requests[0]?.body.model).toBe('qwen3-8b');
    expect(server.requests[0]?.headers.authorization).toBe('Bearer sk-env');
  });

  it('sends no key to a local server and applies provider quirks', async () => {
    vi.stubEnv('OPENAI_API_KEY', 'sk-must-not-leak');
    server.reply({ body: [mistralText()] }, { body: [mistralText()] });
    await collect(
      createModel(`ollama:qwen3:8b@${server.baseURL}`).stream(
        simpleRequest({ promptCacheKey: 'k' }),
      ),
    );
    expect(server.requests[0]?.headers.authorization).toBeUndefined();
    expect(server.requests[0]?.body.prompt_cache_key).toBe('k');
    await collect(
      createModel('mistral:mistral-small-latest', { baseURL: server.baseURL, apiKey: 'mk' }).stream(
        simpleRequest({ promptCacheKey: 'k' }),
      ),
    );
    expect(server.requests[1]?.headers.authorization).toBe('Bearer mk');
    expect(server.requests[1]?.body.prompt_cache_key).toBeUndefined();
    expect(server.requests[1]?.body.stream_options).toBeUndefined();
  });

  it('passes overrides to the Anthropic adapter', async () => {
    server.reply({
      body: [
        anthropicSse(readChunks('provider-streams/anthropic-messages/anthropic-text.chunks.txt')),
      ],
    });
    const model = createModel('anthropic:claude-haiku-4-5', {
      baseURL: server.baseURL,
      apiKey: 'sk-ant',
      headers: { 'anthropic-beta': 'test' },
    });
    const finish = finishOf(await collect(model.stream(simpleRequest())));
    expect(finish.usage).toEqual({
      inputTokens: 12,
      outputTokens: 30,
      cacheReadTokens: 0,
      cacheWriteTokens: 0,
    });
    expect(server.requests[0]?.headers['x-api-key']).toBe('sk-ant');
    expect(server.requests[0]?.headers['anthropic-beta']).toBe('test');
    expect(server.requests[0]?.body.model).toBe('claude-haiku-4-5');
  });
});
