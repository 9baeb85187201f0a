import type { ChatMessage, ContentBlock, ModelAdapter, ModelRequest } from '@teamwire/core';
import { readMessagesStream } from './anthropic-stream.js';
import { isRecord, joinText } from './content-builder.js';
import { postEventStream, type TransportOptions } from './transport.js';

/** The endpoint used when `baseURL` is not given. */
export const ANTHROPIC_DEFAULT_BASE_URL = 'https://api.anthropic.com/v1';

/** The most `cache_control` breakpoints one Messages request may carry. */
export const ANTHROPIC_MAX_CACHE_BREAKPOINTS = 4;

/** Options of {@link createAnthropic}. */
export interface AnthropicOptions extends TransportOptions {
  /** Model id, e.g. `claude-sonnet-4-5`. */
  model: string;
  /** API root including the version segment. Default `https://api.anthropic.com/v1`. */
  baseURL?: string | undefined;
  /** Sent as `x-api-key`. Default: `ANTHROPIC_API_KEY`. */
  apiKey?: string | undefined;
  /** Extra request headers (e.g. `anthropic-beta`). */
  headers?: Record<string, string> | undefined;
  /** Name reported as `ModelAdapter.provider`. Default `anthropic`. */
  provider?: string | undefined;
  /** `max_tokens` when the request sets no `maxOutputTokens` (the API requires one). Default 8192. */
  maxOutputTokens?: number | undefined;
  /**
   * Extended thinking. The budget is added on top of the output limit, as the API requires
   * `max_tokens` to exceed it. Thinking blocks come back as `thinking` content with their
   * signature and are passed back on the next request unchanged.
   */
  thinking?:
    | {
        /** Tokens the model may spend thinking, sent as `budget_tokens`. */
        budgetTokens: number;
      }
    | undefined;
  /**
   * Place `cache_control` breakpoints on the stable prefix: the last system block, up to two
   * earlier `cacheable` system blocks, and the last message of the conversation so far.
   * Default true.
   */
  cacheControl?: boolean | undefined;
  /** The `anthropic-version` header. Default `2023-06-01`. */
  anthropicVersion?: string | undefined;
  /** Sampling temperature (not allowed together with thinking). */
  temperature?: number | undefined;
  /** Fields merged into every request body (`metadata`, `top_k`, ...). */
  extraBody?: Record<string, unknown> | undefined;
}

/** One content block of the Messages API as sent (`text`, `tool_use`, `tool_result`, ...). */
export type AnthropicWireBlock = Record<string, unknown>;

/** One entry of the Messages API `messages` array as sent. */
export interface AnthropicWireMessage {
  /** Tool results travel in `user` messages, as the API requires. */
  role: 'user' | 'assistant';
  /** Never empty: messages without blocks are dropped. */
  content: AnthropicWireBlock[];
}

const EPHEMERAL = { type: 'ephemeral' } as const;

function toolUseInput(input: unknown): Record<string, unknown> {
  if (isRecord(input)) return input;
  if (input === undefined || input === null) return {};
  // The API takes only objects; arguments kept raw (not JSON) travel inside one.
  return { input };
}

function assistantBlocks(
  message: Extract<ChatMessage, { role: 'assistant' }>,
): AnthropicWireBlock[] {
  const blocks: AnthropicWireBlock[] = [];
  for (const block of message.content) {
    if (block.type === 'thinking') {
      // Unsigned reasoning (from another provider) cannot be verified by the API: leave it out.
      if (typeof block.signature === 'string' && block.signature !== '') {
        blocks.push({ type: 'thinking', thinking: block.thinking, signature: block.signature });
      }
    } else if (block.type === 'redacted_thinking') {
      blocks.push({ type: 'redacted_thinking', data: block.data });
    } else if (block.type === 'text') {
      if (typeof block.text === 'string' && block.text !== '') {
        blocks.push({ type: 'text', text: block.text });
      }
    } else {
      // Blocks this version does not model (server tool use, ...) go back as they came.
      blocks.push({ ...block });
    }
  }
  for (const call of message.toolCalls) {
    blocks.push({
      type: 'tool_use',
      id: call.id,
      name: call.name,
      input: toolUseInput(call.input),
    });
  }
  return blocks;
}

function userBlocks(content: readonly ContentBlock[]): AnthropicWireBlock[] {
  const blocks: AnthropicWireBlock[] = [];
  for (const block of content) {
    if (block.type === 'text') {
      if (typeof block.text === 'string' && block.text !== '') {
        blocks.push({ type: 'text', text: block.text });
      }
    } else if (block.type !== 'thinking' && block.type !== 'redacted_thinking') {
      blocks.push({ ...block });
    }
  }
  return blocks;
}

/**
 * Maps core's system blocks and messages to a Messages API `system` and `messages`.
 *
 * Tool results become `tool_result` blocks of a user message; consecutive user-side messages
 * are merged (tool results first, as the API requires) and empty messages are dropped. With
 * `cacheControl`, breakpoints go on the last system block, up to two earlier `cacheable` ones,
 * and the last block of the last message, never more than four.
 */
export function toAnthropicMessages(
  request: Pick<ModelRequest, 'system' | 'messages'>,
  options: { cacheControl?: boolean | undefined } = {},
): {
  /** The request's `system` blocks; empty system blocks are dropped. */
  system: AnthropicWireBlock[];
  /** The request's `messages`, alternating user-side and assistant messages. */
  messages: AnthropicWireMessage[];
} {
  const systemSource = request.system.filter((block) => block.text !== '');
  const system: AnthropicWireBlock[] = systemSource.map((block) => ({
    type: 'text',
    text: block.text,
  }));
  const messages: AnthropicWireMessage[] = [];
  for (const message of request.messages) {
    const role = message.role === 'assistant' ? 'assistant' : 'user';
    const blocks =
      message.role === 'assistant'
        ? assistantBlocks(message)
        : message.role === 'user'
          ? userBlocks(message.content)
          : [
              {
                type: 'tool_result',
                tool_use_id: message.toolCallId,
                ...(joinText(message.content) === '' ? {} : { content: joinText(message.content) }),
                ...(message.isError ? { is_error: true } : {}),
              },
            ];
    if (blocks.length === 0) continue;
    const last = messages.at(-1);
    if (last?.role !== role) {
      messages.push({ role, content: blocks });
    } else if (message.role === 'tool') {
      const firstOther = last.content.findIndex((block) => block.type !== 'tool_result');
      if (firstOther === -1) last.content.push(...blocks);
      else last.content.splice(firstOther, 0, ...blocks);
    } else {
      last.content.push(...blocks);
    }
  }

  if (options.cacheControl !== false) {
    let budget = ANTHROPIC_MAX_CACHE_BREAKPOINTS;
    const lastMessage = messages.at(-1);
    if (lastMessage) {
      const target = lastMessage.content.findLast(
        (block) => block.type !== 'thinking' && block.type !== 'redacted_thinking',
      );
      if (target) {
        target.cache_control = EPHEMERAL;
        budget--;
      }
    }
    const lastSystem = system.at(-1);
    if (lastSystem) {
      lastSystem.cache_control = EPHEMERAL;
      budget--;
    }
    for (let i = 0; i < system.length - 1 && budget > 0; i++) {
      if (systemSource[i]?.cacheable) {
        system[i]!.cache_control = EPHEMERAL;
        budget--;
      }
    }
  }
  return { system, messages };
}

/**
 * A `ModelAdapter` for the Anthropic Messages API (`POST /v1/messages`, streaming) over
 * `fetch`, with tool use, extended thinking passed back verbatim, and prompt-cache breakpoints
 * placed so every teammate sharing the team's system prefix reuses one cache entry.
 */
export function createAnthropic(options: AnthropicOptions): ModelAdapter {
  const baseURL = (options.baseURL ?? ANTHROPIC_DEFAULT_BASE_URL).replace(/\/+$/, '');
  const url = `${baseURL}/messages`;
  const provider = options.provider ?? 'anthropic';

  return {
    specificationVersion: 'v1',
    provider,
    modelId: options.model,
    stream(request) {
      const apiKey = options.apiKey ?? process.env.ANTHROPIC_API_KEY ?? '';
      const { system, messages } = toAnthropicMessages(request, options);
      const maxTokens = request.maxOutputTokens ?? options.maxOutputTokens ?? 8192;
      const body: Record<string, unknown> = {
        model: options.model,
        max_tokens: maxTokens + (options.thinking?.budgetTokens ?? 0),
        messages,
        stream: true,
      };
      if (system.length > 0) body.system = system;
      if (request.tools.length > 0) {
        body.tools = request.tools.map((tool) => ({
          name: tool.name,
          description: tool.description,
          input_schema: tool.inputSchema,
        }));
      }
      if (options.thinking) {
        body.thinking = { type: 'enabled', budget_tokens: options.thinking.budgetTokens };
      }
      if (options.temperature !== undefined) body.temperature = options.temperature;
      Object.assign(body, options.extraBody);
      const headers: Record<string, string> = {
        'content-type': 'application/json',
        accept: 'text/event-stream',
        'anthropic-version': options.anthropicVersion ?? '2023-06-01',
        ...(apiKey === '' ? {} : { 'x-api-key': apiKey }),
        ...options.headers,
      };
      return readMessagesStream(
        provider,
        apiKey,
        postEventStream(options, {
          provider,
          url,
          headers,
          body,
          signal: request.signal,
          isKeepAlive: (event) => event.event === 'ping',
        }),
      );
    },
  };
}
