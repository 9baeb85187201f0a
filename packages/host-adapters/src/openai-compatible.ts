import type { ChatMessage, ContentBlock, ModelAdapter, ModelRequest } from '@teamwire/core';
import { joinText } from './content-builder.js';
import { readChatCompletionStream } from './openai-stream.js';
import { postEventStream, type TransportOptions } from './transport.js';

/** The endpoint used when neither `baseURL` nor `OPENAI_BASE_URL` is set. */
export const OPENAI_DEFAULT_BASE_URL = 'https://api.openai.com/v1';

/** Options of {@link createOpenAICompatible}. */
export interface OpenAICompatibleOptions extends TransportOptions {
  /** Model id as the server knows it (`gpt-4.1-mini`, `qwen3:8b`, a vLLM served model name). */
  model: string;
  /**
   * API root including the version segment, e.g. `http://127.0.0.1:8080/v1`.
   * Default: `OPENAI_BASE_URL`, then `https://api.openai.com/v1`.
   */
  baseURL?: string | undefined;
  /**
   * Sent as `Authorization: Bearer <key>`. Default: `OPENAI_API_KEY`. An empty string sends no
   * header (local servers started without a key).
   */
  apiKey?: string | undefined;
  /** Extra request headers (e.g. OpenRouter's `HTTP-Referer`). */
  headers?: Record<string, string> | undefined;
  /** Name reported as `ModelAdapter.provider`. Default `openai` for OpenAI's endpoint, else `openai-compatible`. */
  provider?: string | undefined;
  /** Ask for a final usage chunk (`stream_options.include_usage`). Default true. */
  includeUsage?: boolean | undefined;
  /**
   * Send `ModelRequest.promptCacheKey` as `prompt_cache_key`. Default true; turn off for servers
   * that reject unknown fields.
   */
  sendPromptCacheKey?: boolean | undefined;
  /**
   * The field carrying the output limit. Default `max_completion_tokens` on OpenAI's endpoint
   * (its reasoning models refuse `max_tokens`), `max_tokens` elsewhere.
   */
  maxTokensParam?: 'max_tokens' | 'max_completion_tokens' | undefined;
  /**
   * Pass earlier reasoning back as `reasoning_content` on assistant messages. Default false:
   * most servers ignore or refuse it; DeepSeek's thinking mode with tools wants it.
   */
  sendReasoning?: boolean | undefined;
  /** Sampling temperature. */
  temperature?: number | undefined;
  /** Fields merged into every request body (`top_p`, OpenRouter `provider`, vLLM `chat_template_kwargs`, ...). */
  extraBody?: Record<string, unknown> | undefined;
}

/** Maps core's chat messages to the chat completions `messages` array. */
export function toOpenAIMessages(
  request: Pick<ModelRequest, 'system' | 'messages'>,
  options: { sendReasoning?: boolean | undefined } = {},
): Record<string, unknown>[] {
  const out: Record<string, unknown>[] = [];
  const system = request.system
    .map((block) => block.text)
    .filter((text) => text !== '')
    .join('\n\n');
  // One string-content system message: the shape every compatible server accepts.
  if (system !== '') out.push({ role: 'system', content: system });
  for (const message of request.messages) out.push(toOpenAIMessage(message, options));
  return out;
}

function toOpenAIMessage(
  message: ChatMessage,
  options: { sendReasoning?: boolean | undefined },
): Record<string, unknown> {
  switch (message.role) {
    case 'user':
      return { role: 'user', content: joinText(message.content) };
    case 'tool':
      return { role: 'tool', tool_call_id: message.toolCallId, content: joinText(message.content) };
    case 'assistant': {
      const text = joinText(message.content);
      const out: Record<string, unknown> = {
        role: 'assistant',
        content: text === '' && message.toolCalls.length > 0 ? null : text,
      };
      if (options.sendReasoning) {
        const reasoning = reasoningOf(message.content);
        if (reasoning !== '') out.reasoning_content = reasoning;
      }
      if (message.toolCalls.length > 0) {
        out.tool_calls = message.toolCalls.map((call) => ({
          id: call.id,
          type: 'function',
          function: {
            name: call.name,
            arguments:
              typeof call.input === 'string' ? call.input : JSON.stringify(call.input ?? {}),
          },
        }));
      }
      return out;
    }
  }
}

function reasoningOf(content: readonly ContentBlock[]): string {
  let out = '';
  for (const block of content) {
    if (block.type === 'thinking' && typeof block.thinking === 'string') out += block.thinking;
  }
  return out;
}

/**
 * A `ModelAdapter` for OpenAI-style `POST /chat/completions` streaming over `fetch`.
 *
 * One adapter serves OpenAI, OpenRouter, Groq, Mistral, DeepSeek, xAI, Azure, and local vLLM,
 * llama.cpp (`llama-server`) and Ollama servers: it reads only the common wire format and
 * tolerates the known quirks (tool calls without `index`, repeated empty names, usage in the
 * finish chunk or in a trailing chunk, `reasoning_content` or `reasoning` deltas, `content` as an
 * array of text and thinking parts).
 */
export function createOpenAICompatible(options: OpenAICompatibleOptions): ModelAdapter {
  const envBase = process.env.OPENAI_BASE_URL;
  const baseURL = (options.baseURL ?? (envBase || undefined) ?? OPENAI_DEFAULT_BASE_URL).replace(
    /\/+$/,
    '',
  );
  const apiKey = options.apiKey ?? process.env.OPENAI_API_KEY ?? '';
  const isOpenAI = /^https:\/\/api\.openai\.com(\/|$)/.test(baseURL);
  const provider = options.provider ?? (isOpenAI ? 'openai' : 'openai-compatible');
  const maxTokensParam =
    options.maxTokensParam ?? (isOpenAI ? 'max_completion_tokens' : 'max_tokens');
  const url = `${baseURL}/chat/completions`;

  return {
    specificationVersion: 'v1',
    provider,
    modelId: options.model,
    stream(request) {
      const body: Record<string, unknown> = {
        model: options.model,
        messages: toOpenAIMessages(request, options),
        stream: true,
      };
      if (options.includeUsage !== false) body.stream_options = { include_usage: true };
      if (request.tools.length > 0) {
        body.tools = request.tools.map((tool) => ({
          type: 'function',
          function: {
            name: tool.name,
            description: tool.description,
            parameters: tool.inputSchema,
          },
        }));
      }
      if (request.maxOutputTokens !== undefined) body[maxTokensParam] = request.maxOutputTokens;
      if (options.temperature !== undefined) body.temperature = options.temperature;
      if (request.promptCacheKey !== undefined && options.sendPromptCacheKey !== false) {
        body.prompt_cache_key = request.promptCacheKey;
      }
      Object.assign(body, options.extraBody);

      const headers: Record<string, string> = {
        'content-type': 'application/json',
        accept: 'text/event-stream',
        ...(apiKey === '' ? {} : { authorization: `Bearer ${apiKey}` }),
        ...options.headers,
      };
      return readChatCompletionStream(
        provider,
        postEventStream(options, { provider, url, headers, body, signal: request.signal }),
      );
    },
  };
}
