import type {
  AssistantMessage,
  ChatMessage,
  ContentBlock,
  ModelAdapter,
  ModelRequest,
  ModelStreamEvent,
  StopReason,
  ToolCall,
  Usage,
} from '@teamwire/core';
import {
  appendText,
  appendThinking,
  isRecord,
  joinText,
  parseToolInput,
} from './content-builder.js';
import {
  codeForErrorType,
  protocolError,
  providerError,
  readProviderError,
} from './provider-errors.js';
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
  baseURL?: string;
  /**
   * Sent as `Authorization: Bearer <key>`. Default: `OPENAI_API_KEY`. An empty string sends no
   * header (local servers started without a key).
   */
  apiKey?: string;
  /** Extra request headers (e.g. OpenRouter's `HTTP-Referer`). */
  headers?: Record<string, string>;
  /** Name reported as `ModelAdapter.provider`. Default `openai` for OpenAI's endpoint, else `openai-compatible`. */
  provider?: string;
  /** Ask for a final usage chunk (`stream_options.include_usage`). Default true. */
  includeUsage?: boolean;
  /**
   * Send `ModelRequest.promptCacheKey` as `prompt_cache_key`. Default true; turn off for servers
   * that reject unknown fields.
   */
  sendPromptCacheKey?: boolean;
  /**
   * The field carrying the output limit. Default `max_completion_tokens` on OpenAI's endpoint
   * (its reasoning models refuse `max_tokens`), `max_tokens` elsewhere.
   */
  maxTokensParam?: 'max_tokens' | 'max_completion_tokens';
  /**
   * Pass earlier reasoning back as `reasoning_content` on assistant messages. Default false:
   * most servers ignore or refuse it; DeepSeek's thinking mode with tools wants it.
   */
  sendReasoning?: boolean;
  /** Sampling temperature. */
  temperature?: number;
  /** Fields merged into every request body (`top_p`, OpenRouter `provider`, vLLM `chat_template_kwargs`, ...). */
  extraBody?: Record<string, unknown>;
}

interface ToolCallState {
  index: number;
  id: string | undefined;
  name: string | undefined;
  args: string;
  started: boolean;
}

/** Maps core's chat messages to the chat completions `messages` array. */
export function toOpenAIMessages(
  request: Pick<ModelRequest, 'system' | 'messages'>,
  options: { sendReasoning?: boolean } = {},
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
  options: { sendReasoning?: boolean },
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

function mapFinishReason(reason: string | undefined, hasToolCalls: boolean): StopReason {
  if (hasToolCalls && (reason === undefined || reason === 'stop' || reason === 'tool_calls')) {
    // Some local servers report `stop` for a reply that ends in tool calls.
    return 'tool_calls';
  }
  switch (reason) {
    case 'stop':
    case 'end_turn':
      return 'end_turn';
    case 'tool_calls':
    case 'function_call':
      return 'tool_calls';
    case 'length':
      return 'max_tokens';
    default:
      return 'other';
  }
}

function readUsage(raw: Record<string, unknown>): Usage {
  const num = (value: unknown): number | undefined =>
    typeof value === 'number' && Number.isFinite(value) && value >= 0
      ? Math.round(value)
      : undefined;
  const usage: Usage = {
    inputTokens: num(raw.prompt_tokens) ?? 0,
    outputTokens: num(raw.completion_tokens) ?? 0,
  };
  const promptDetails = isRecord(raw.prompt_tokens_details) ? raw.prompt_tokens_details : {};
  // DeepSeek also reports `prompt_cache_hit_tokens`; OpenAI's field wins when both are sent.
  const cached = num(promptDetails.cached_tokens) ?? num(raw.prompt_cache_hit_tokens);
  if (cached !== undefined) usage.cacheReadTokens = cached;
  const completionDetails = isRecord(raw.completion_tokens_details)
    ? raw.completion_tokens_details
    : {};
  const reasoning = num(completionDetails.reasoning_tokens);
  if (reasoning !== undefined) usage.reasoningTokens = reasoning;
  return usage;
}

/**
 * A {@link ModelAdapter} for OpenAI-style `POST /chat/completions` streaming over `fetch`.
 *
 * One adapter serves OpenAI, OpenRouter, Groq, Mistral, DeepSeek, xAI, Azure, and local vLLM,
 * llama.cpp (`llama-server`) and Ollama servers: it reads only the common wire format and
 * tolerates the known quirks (tool calls without `index`, repeated empty names, usage in the
 * finish chunk or in a trailing chunk, `reasoning_content` or `reasoning` deltas).
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

async function* readChatCompletionStream(
  provider: string,
  events: AsyncIterable<{ data: string }>,
): AsyncGenerator<ModelStreamEvent, void, undefined> {
  const content: ContentBlock[] = [];
  const calls = new Map<number, ToolCallState>();
  let lastCall: ToolCallState | undefined;
  let usage: Usage | undefined;
  let finishReason: string | undefined;
  let sawFinish = false;
  let sawDone = false;
  let responseId = '';

  for await (const event of events) {
    if (event.data === '[DONE]') {
      sawDone = true;
      break;
    }
    let chunk: unknown;
    try {
      chunk = JSON.parse(event.data);
    } catch (error) {
      throw protocolError(
        provider,
        'a stream chunk is not valid JSON',
        { chunk: event.data.slice(0, 500) },
        error,
      );
    }
    if (!isRecord(chunk)) {
      throw protocolError(provider, 'a stream chunk is not a JSON object', {
        chunk: event.data.slice(0, 500),
      });
    }
    if (chunk.error !== undefined && chunk.error !== null) {
      const info = readProviderError(chunk);
      throw providerError(provider, codeForErrorType(info?.type), info, { inStream: true });
    }
    if (typeof chunk.id === 'string' && chunk.id !== '' && responseId === '') responseId = chunk.id;
    if (isRecord(chunk.usage)) usage = readUsage(chunk.usage);
    const choices = chunk.choices;
    if (choices === undefined || choices === null) continue;
    if (!Array.isArray(choices)) {
      throw protocolError(provider, '`choices` is not an array', {
        chunk: event.data.slice(0, 500),
      });
    }
    const choice = choices.find((c) => isRecord(c) && (c.index === 0 || c.index === undefined));
    if (!isRecord(choice)) continue;
    const delta = choice.delta;
    if (isRecord(delta)) {
      const reasoning =
        typeof delta.reasoning_content === 'string' ? delta.reasoning_content : delta.reasoning;
      if (typeof reasoning === 'string' && reasoning !== '') {
        appendThinking(content, reasoning);
        yield { type: 'reasoning-delta', text: reasoning };
      }
      if (typeof delta.content === 'string' && delta.content !== '') {
        appendText(content, delta.content);
        yield { type: 'text-delta', text: delta.content };
      }
      if (delta.tool_calls !== undefined && delta.tool_calls !== null) {
        if (!Array.isArray(delta.tool_calls)) {
          throw protocolError(provider, '`tool_calls` is not an array', {
            chunk: event.data.slice(0, 500),
          });
        }
        for (const [position, part] of delta.tool_calls.entries()) {
          if (!isRecord(part)) throw protocolError(provider, 'a tool call delta is not an object');
          const fn = isRecord(part.function) ? part.function : {};
          const id = typeof part.id === 'string' && part.id !== '' ? part.id : undefined;
          let state: ToolCallState | undefined;
          if (typeof part.index === 'number') {
            state = calls.get(part.index);
            // A different id at a known index is a new call (servers that send index 0 for all).
            if (state?.id !== undefined && id !== undefined && state.id !== id) state = undefined;
          } else if (id !== undefined) {
            // No `index` (Mistral): a new id starts a call, a known id continues it.
            state = [...calls.values()].find((call) => call.id === id);
          } else {
            state = lastCall ?? calls.get(position);
          }
          if (state === undefined) {
            let index = typeof part.index === 'number' ? part.index : position;
            if (calls.has(index)) index = Math.max(...calls.keys()) + 1;
            state = { index, id: undefined, name: undefined, args: '', started: false };
            calls.set(index, state);
          }
          lastCall = state;
          if (id !== undefined && state.id === undefined) state.id = id;
          if (typeof fn.name === 'string' && fn.name !== '' && state.name === undefined) {
            state.name = fn.name;
          }
          const argsDelta = typeof fn.arguments === 'string' ? fn.arguments : '';
          state.args += argsDelta;
          if (!state.started && state.name !== undefined) {
            state.id ??= `call_${responseId || 'local'}_${state.index}`;
            state.started = true;
            yield { type: 'tool-call-start', id: state.id, name: state.name };
            if (state.args !== '') {
              yield { type: 'tool-call-delta', id: state.id, argsDelta: state.args };
            }
          } else if (state.started && argsDelta !== '') {
            yield { type: 'tool-call-delta', id: state.id!, argsDelta };
          }
        }
      }
    }
    if (typeof choice.finish_reason === 'string' && choice.finish_reason !== '') {
      finishReason = choice.finish_reason;
      sawFinish = true;
    }
  }

  // Some compatible servers close without `[DONE]`; a finish reason still marks a whole reply.
  if (!sawDone && !sawFinish) {
    throw protocolError(provider, 'the stream ended before a finish reason or [DONE]');
  }
  const toolCalls: ToolCall[] = [];
  for (const state of [...calls.values()].sort((a, b) => a.index - b.index)) {
    if (!state.started || state.id === undefined || state.name === undefined) {
      throw protocolError(provider, 'a tool call ended without a name', { index: state.index });
    }
    const toolCall: ToolCall = {
      id: state.id,
      name: state.name,
      input: parseToolInput(state.args),
    };
    toolCalls.push(toolCall);
    yield { type: 'tool-call', toolCall };
  }
  const finalUsage = usage ?? { inputTokens: 0, outputTokens: 0 };
  const stopReason = mapFinishReason(finishReason, toolCalls.length > 0);
  const message: AssistantMessage = {
    role: 'assistant',
    content,
    toolCalls,
    usage: finalUsage,
    stopReason,
  };
  yield { type: 'finish', message, usage: finalUsage, stopReason };
}
