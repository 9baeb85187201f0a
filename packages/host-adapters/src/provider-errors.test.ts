import { describe, expect, it } from 'vitest';
import {
  codeForFailure,
  isContextOverflow,
  providerError,
  readProviderError,
} from './provider-errors.js';

describe('readProviderError', () => {
  const huge = 'x'.repeat(1_000_000);

  it.each([
    ['plain text', huge],
    ['{error: {message}}', { error: { message: huge } }],
    ['{error: string}', { error: huge }],
    ['{message}', { message: huge }],
    ['{detail}', { detail: huge }],
    ['a JSON string', JSON.stringify({ message: huge })],
  ])('keeps at most 2000 characters of %s', (_, body) => {
    const info = readProviderError(body);
    expect(info?.message.startsWith('xxx')).toBe(true);
    expect(info?.message.length).toBe(2000);
  });
});

/** Real error bodies of context-window refusals, by provider (HTTP status, body). */
const OVERFLOWS: [string, number, unknown][] = [
  [
    'OpenAI',
    400,
    '{"error":{"message":"This model\'s maximum context length is 128000 tokens. However, your messages resulted in 130412 tokens. Please reduce the length of the messages.","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}',
  ],
  [
    'OpenAI, code only (message reworded)',
    400,
    '{"error":{"message":"Your input exceeds the context window of this model.","type":"invalid_request_error","param":"input","code":"context_length_exceeded"}}',
  ],
  [
    'Anthropic',
    400,
    '{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 209750 tokens > 200000 maximum"}}',
  ],
  [
    'Anthropic, input plus max_tokens',
    400,
    '{"type":"error","error":{"type":"invalid_request_error","message":"input length and `max_tokens` exceed context limit: 190000 + 20000 > 200000, decrease input length or `max_tokens` and try again"}}',
  ],
  [
    'Anthropic 413',
    413,
    '{"type":"error","error":{"type":"request_too_large","message":"Request exceeds the maximum allowed number of bytes."}}',
  ],
  [
    'vLLM (top-level message)',
    400,
    '{"object":"error","message":"This model\'s maximum context length is 4096 tokens. However, you requested 5000 tokens (3000 in the messages, 2000 in the completion). Please reduce the length of the messages or completion.","type":"BadRequestError","param":null,"code":400}',
  ],
  [
    'OpenRouter',
    400,
    '{"error":{"message":"This endpoint\'s maximum context length is 200000 tokens. However, you requested about 250123 tokens (250123 of text input). Please reduce the length of either one, or use the \\"middle-out\\" transform to compress your prompt automatically.","code":400,"metadata":{"provider_name":null}}}',
  ],
  [
    'llama.cpp',
    400,
    '{"error":{"code":400,"message":"the request exceeds the available context size, try increasing it","type":"exceed_context_size_error","n_prompt_tokens":9000,"n_ctx":8192}}',
  ],
  [
    'Gemini (OpenAI-compatible, in an array)',
    400,
    '[{"error":{"code":400,"message":"The input token count (1196265) exceeds the maximum number of tokens allowed (1048576).","status":"INVALID_ARGUMENT"}}]',
  ],
  [
    'Mistral',
    400,
    '{"object":"error","message":"Prompt contains 40011 tokens and 0 draft tokens, too large for model with 32768 maximum context length","type":"invalid_request_error","param":null,"code":null}',
  ],
  ['Ollama', 400, '{"error":"the input length exceeds the context length"}'],
  [
    'Bedrock',
    400,
    '{"message":"The model returned the following errors: Input is too long for requested model."}',
  ],
  [
    'Azure OpenAI',
    400,
    '{"error":{"message":"This model\'s maximum context length is 8192 tokens, however you requested 9000 tokens.","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}',
  ],
  [
    'xAI',
    400,
    '{"code":"Client specified an invalid argument","error":"This model\'s maximum prompt length is 131072 but the request contains 150003 tokens."}',
  ],
  ['plain text, in capitals', 400, 'PROMPT IS TOO LONG: 300000 TOKENS > 200000 MAXIMUM'],
  ['a type in other case', 400, '{"error":{"message":"refused","type":"Context_Length_Exceeded"}}'],
];

/** 400s that are not about the context window. */
const OTHER_BAD_REQUESTS: [string, unknown][] = [
  [
    'an invalid tool schema',
    '{"error":{"message":"Invalid schema for function \'weather\': invalid tool schema.","type":"invalid_request_error","param":"tools[0].function.parameters","code":"invalid_function_parameters"}}',
  ],
  [
    'Anthropic: max_tokens over the output limit',
    '{"type":"error","error":{"type":"invalid_request_error","message":"max_tokens: 300000 > 64000, which is the maximum allowed number of output tokens for claude-sonnet-4-5"}}',
  ],
  [
    'OpenAI: max_tokens too large',
    '{"error":{"message":"max_tokens is too large: 200000. This model supports at most 16384 completion tokens, whereas you provided 200000.","type":"invalid_request_error","param":"max_tokens","code":null}}',
  ],
  ['a model that does not exist', '{"error":"model \\"nope\\" not found, try pulling it first"}'],
  ['an empty body', ''],
  ['a body without an error', '{"ok":false}'],
];

const OPENAI_OVERFLOW = OVERFLOWS[0]?.[2];

describe('isContextOverflow and codeForFailure', () => {
  it.each(OVERFLOWS)('recognise %s', (_, status, body) => {
    const info = readProviderError(body);
    expect(isContextOverflow(info, status)).toBe(true);
    expect(codeForFailure(status, info)).toBe('MODEL_CONTEXT_OVERFLOW');
    // The same error inside a stream, where there is no status.
    expect(isContextOverflow(info)).toBe(true);
    expect(codeForFailure(undefined, info)).toBe('MODEL_CONTEXT_OVERFLOW');
  });

  it.each(OTHER_BAD_REQUESTS)('leave %s a MODEL_BAD_REQUEST', (_, body) => {
    const info = readProviderError(body);
    expect(isContextOverflow(info, 400)).toBe(false);
    expect(codeForFailure(400, info)).toBe('MODEL_BAD_REQUEST');
  });

  it.each([
    [429, 'MODEL_RATE_LIMITED'],
    [500, 'MODEL_UNAVAILABLE'],
    [503, 'MODEL_UNAVAILABLE'],
    [401, 'MODEL_AUTH'],
    [404, 'MODEL_BAD_REQUEST'],
    [422, 'MODEL_BAD_REQUEST'],
  ] as const)('never call a %i an overflow, whatever it says', (status, code) => {
    const info = readProviderError(OPENAI_OVERFLOW);
    expect(isContextOverflow(info, status)).toBe(false);
    expect(codeForFailure(status, info)).toBe(code);
  });

  it('never call an in-stream rate limit, auth failure or 5xx an overflow', () => {
    const message = "This model's maximum context length is 8192 tokens.";
    for (const [error, code] of [
      [{ type: 'rate_limit_error', message }, 'MODEL_RATE_LIMITED'],
      [{ type: 'authentication_error', message }, 'MODEL_AUTH'],
      [{ code: 503, message }, 'MODEL_UNAVAILABLE'],
      [{ type: 'server_error', code: 500, message }, 'MODEL_UNAVAILABLE'],
    ] as const) {
      const info = readProviderError({ error });
      expect(isContextOverflow(info)).toBe(false);
      expect(codeForFailure(undefined, info)).toBe(code);
    }
  });

  it('keep the other in-stream codes', () => {
    expect(codeForFailure(undefined, readProviderError({ error: { message: 'boom' } }))).toBe(
      'MODEL_UNAVAILABLE',
    );
    expect(
      codeForFailure(
        undefined,
        readProviderError({ error: { type: 'invalid_request_error', message: 'bad tool' } }),
      ),
    ).toBe('MODEL_BAD_REQUEST');
    expect(isContextOverflow(undefined)).toBe(false);
    expect(codeForFailure(undefined, undefined)).toBe('MODEL_UNAVAILABLE');
  });

  it('cost time in proportion to the message, even a near miss of every phrase', () => {
    const nearMiss = 'maximum context lengt exceeds the available context siz prompt is too lon ';
    const info = { message: nearMiss.repeat(1000), type: 'invalid_request_error' };
    const started = performance.now();
    for (let i = 0; i < 100; i++) expect(isContextOverflow(info, 400)).toBe(false);
    expect(performance.now() - started).toBeLessThan(1000);
  });

  it('keep the code beside the type in the error details', () => {
    const error = providerError(
      'openai',
      'MODEL_CONTEXT_OVERFLOW',
      readProviderError(OPENAI_OVERFLOW),
      {
        status: 400,
      },
    );
    expect(error.details).toMatchObject({
      providerErrorType: 'invalid_request_error',
      providerErrorCode: 'context_length_exceeded',
      status: 400,
    });
  });
});
