import {
  type AssistantMessage,
  type ChatMessage,
  type ContentBlock,
  type ModelAdapter,
  type ModelRequest,
  type ModelStreamEvent,
  type StopReason,
  TeamError,
  type ToolCall,
  type Usage,
} from '@teamwire/core';
import { isRecord, joinText, parseToolInput } from './content-builder.js';
import {
  codeForErrorType,
  protocolError,
  providerError,
  readProviderError,
} from './provider-errors.js';
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
  baseURL?: string;
  /** Sent as `x-api-key`. Default: `ANTHROPIC_API_KEY`. */
  apiKey?: string;
  /** Extra request headers (e.g. `anthropic-beta`). */
  headers?: Record<string, string>;
  /** Name reported as `ModelAdapter.provider`. Default `anthropic`. */
  provider?: string;
  /** `max_tokens` when the request sets no `maxOutputTokens` (the API requires one). Default 8192. */
  maxOutputTokens?: number;
  /**
   * Extended thinking. The budget is added on top of the output limit, as the API requires
   * `max_tokens` to exceed it. Thinking blocks come back as `thinking` content with their
   * signature and are passed back on the next request unchanged.
   */
  thinking?: { budgetTokens: number };
  /**
   * Place `cache_control` breakpoints on the stable prefix: the last system block, up to two
   * earlier `cacheable` system blocks, and the last message of the conversation so far.
   * Default true.
   */
  cacheControl?: boolean;
  /** The `anthropic-version` header. Default `2023-06-01`. */
  anthropicVersion?: string;
  /** Sampling temperature (not allowed together with thinking). */
  temperature?: number;
  /** Fields merged into every request body (`metadata`, `top_k`, ...). */
  extraBody?: Record<string, unknown>;
}

type WireBlock = Record<string, unknown>;
interface WireMessage {
  role: 'user' | 'assistant';
  content: WireBlock[];
}

const EPHEMERAL = { type: 'ephemeral' } as const;

function toolUseInput(input: unknown): Record<string, unknown> {
  if (isRecord(input)) return input;
  if (input === undefined || input === null) return {};
  // The API takes only objects; arguments kept raw (not JSON) travel inside one.
  return { input };
}

function assistantBlocks(message: Extract<ChatMessage, { role: 'assistant' }>): WireBlock[] {
  const blocks: WireBlock[] = [];
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

function userBlocks(content: readonly ContentBlock[]): WireBlock[] {
  const blocks: WireBlock[] = [];
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
  options: { cacheControl?: boolean } = {},
): { system: WireBlock[]; messages: WireMessage[] } {
  const systemSource = request.system.filter((block) => block.text !== '');
  const system: WireBlock[] = systemSource.map((block) => ({ type: 'text', text: block.text }));
  const messages: WireMessage[] = [];
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

function mapStopReason(reason: string | undefined): StopReason {
  switch (reason) {
    case 'end_turn':
    case 'stop_sequence':
      return 'end_turn';
    case 'tool_use':
      return 'tool_calls';
    case 'max_tokens':
    case 'model_context_window_exceeded':
      return 'max_tokens';
    default:
      return 'other';
  }
}

/**
 * A {@link ModelAdapter} for the Anthropic Messages API (`POST /v1/messages`, streaming) over
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

type BlockState =
  | { kind: 'text'; block: { type: 'text'; text: string } }
  | { kind: 'thinking'; block: { type: 'thinking'; thinking: string; signature?: string } }
  | { kind: 'redacted'; block: { type: 'redacted_thinking'; data: string } }
  | { kind: 'tool'; id: string; name: string; json: string; initial: unknown; done: boolean }
  | { kind: 'other'; block: Record<string, unknown> & { type: string }; json: string };

async function* readMessagesStream(
  provider: string,
  apiKey: string,
  events: AsyncIterable<{ event: string | undefined; data: string }>,
): AsyncGenerator<ModelStreamEvent, void, undefined> {
  if (apiKey === '') {
    throw new TeamError(
      'MODEL_AUTH',
      `${provider}: no API key (pass apiKey or set ANTHROPIC_API_KEY)`,
      {
        details: { provider },
      },
    );
  }
  const blocks = new Map<number, BlockState>();
  const order: number[] = [];
  const toolCalls: ToolCall[] = [];
  let started = false;
  let stopped = false;
  let stopReason: string | undefined;
  let inputTokens = 0;
  let outputTokens = 0;
  let cacheRead: number | undefined;
  let cacheWrite: number | undefined;

  const readUsage = (raw: unknown) => {
    if (!isRecord(raw)) return;
    const num = (value: unknown) =>
      typeof value === 'number' && Number.isFinite(value) && value >= 0 ? value : undefined;
    inputTokens = num(raw.input_tokens) ?? inputTokens;
    outputTokens = num(raw.output_tokens) ?? outputTokens;
    cacheRead = num(raw.cache_read_input_tokens) ?? cacheRead;
    cacheWrite = num(raw.cache_creation_input_tokens) ?? cacheWrite;
  };

  for await (const event of events) {
    let data: unknown;
    try {
      data = JSON.parse(event.data);
    } catch (error) {
      throw protocolError(
        provider,
        'a stream event is not valid JSON',
        { event: event.data.slice(0, 500) },
        error,
      );
    }
    if (!isRecord(data)) {
      throw protocolError(provider, 'a stream event is not a JSON object', {
        event: event.data.slice(0, 500),
      });
    }
    const type = typeof data.type === 'string' ? data.type : event.event;
    const bad = (message: string) =>
      protocolError(provider, `${message} (${type} event)`, { event: event.data.slice(0, 500) });
    if (type === 'error') {
      const info = readProviderError(data);
      throw providerError(provider, codeForErrorType(info?.type), info, { inStream: true });
    }
    if (type === 'ping') continue;
    if (type === 'message_start') {
      if (!isRecord(data.message)) throw bad('missing `message`');
      started = true;
      readUsage(data.message.usage);
      continue;
    }
    if (!started) {
      throw bad('an event arrived before `message_start`');
    }
    if (type === 'content_block_start') {
      const index = data.index;
      const block = data.content_block;
      if (typeof index !== 'number' || !isRecord(block) || typeof block.type !== 'string') {
        throw bad('missing `index` or `content_block`');
      }
      if (blocks.has(index)) throw bad(`content block ${index} started twice`);
      let state: BlockState;
      if (block.type === 'text') {
        const text = typeof block.text === 'string' ? block.text : '';
        state = { kind: 'text', block: { type: 'text', text } };
        if (text !== '') yield { type: 'text-delta', text };
      } else if (block.type === 'thinking') {
        const thinking = typeof block.thinking === 'string' ? block.thinking : '';
        state = { kind: 'thinking', block: { type: 'thinking', thinking } };
        if (typeof block.signature === 'string' && block.signature !== '') {
          state.block.signature = block.signature;
        }
        if (thinking !== '') yield { type: 'reasoning-delta', text: thinking };
      } else if (block.type === 'redacted_thinking') {
        const blockData = typeof block.data === 'string' ? block.data : '';
        state = { kind: 'redacted', block: { type: 'redacted_thinking', data: blockData } };
      } else if (block.type === 'tool_use') {
        if (typeof block.id !== 'string' || typeof block.name !== 'string' || block.id === '') {
          throw bad('a tool_use block has no id or name');
        }
        state = {
          kind: 'tool',
          id: block.id,
          name: block.name,
          json: '',
          initial: block.input,
          done: false,
        };
        yield { type: 'tool-call-start', id: block.id, name: block.name };
      } else {
        state = { kind: 'other', block: { ...block, type: block.type }, json: '' };
      }
      blocks.set(index, state);
      order.push(index);
      continue;
    }
    if (type === 'content_block_delta') {
      const state = typeof data.index === 'number' ? blocks.get(data.index) : undefined;
      const delta = data.delta;
      if (state === undefined || !isRecord(delta)) throw bad('delta for an unknown block');
      if (delta.type === 'text_delta') {
        if (state.kind !== 'text' || typeof delta.text !== 'string') throw bad('misplaced text');
        state.block.text += delta.text;
        if (delta.text !== '') yield { type: 'text-delta', text: delta.text };
      } else if (delta.type === 'thinking_delta') {
        if (state.kind !== 'thinking' || typeof delta.thinking !== 'string') {
          throw bad('misplaced thinking');
        }
        state.block.thinking += delta.thinking;
        if (delta.thinking !== '') yield { type: 'reasoning-delta', text: delta.thinking };
      } else if (delta.type === 'signature_delta') {
        if (state.kind !== 'thinking' || typeof delta.signature !== 'string') {
          throw bad('misplaced signature');
        }
        state.block.signature = (state.block.signature ?? '') + delta.signature;
      } else if (delta.type === 'input_json_delta') {
        if (
          (state.kind !== 'tool' && state.kind !== 'other') ||
          typeof delta.partial_json !== 'string'
        ) {
          throw bad('misplaced input_json_delta');
        }
        state.json += delta.partial_json;
        if (state.kind === 'tool' && delta.partial_json !== '') {
          yield { type: 'tool-call-delta', id: state.id, argsDelta: delta.partial_json };
        }
      }
      // Other delta types (citations, ...) carry nothing this port models.
      continue;
    }
    if (type === 'content_block_stop') {
      const state = typeof data.index === 'number' ? blocks.get(data.index) : undefined;
      if (state === undefined) throw bad('stop for an unknown block');
      if (state.kind === 'tool' && !state.done) {
        state.done = true;
        const input = state.json.trim() === '' ? (state.initial ?? {}) : parseToolInput(state.json);
        const toolCall: ToolCall = { id: state.id, name: state.name, input };
        toolCalls.push(toolCall);
        yield { type: 'tool-call', toolCall };
      } else if (state.kind === 'other' && state.json.trim() !== '') {
        state.block.input = parseToolInput(state.json);
      }
      continue;
    }
    if (type === 'message_delta') {
      if (isRecord(data.delta) && typeof data.delta.stop_reason === 'string') {
        stopReason = data.delta.stop_reason;
      }
      readUsage(data.usage);
      continue;
    }
    if (type === 'message_stop') {
      stopped = true;
      break;
    }
    // Unknown event types are skipped: the API may add new ones.
  }

  if (!stopped) throw protocolError(provider, 'the stream ended before `message_stop`');
  for (const state of blocks.values()) {
    if (state.kind === 'tool' && !state.done) {
      throw protocolError(provider, 'a tool_use block was never stopped', { id: state.id });
    }
  }
  const content: ContentBlock[] = [];
  for (const index of order.sort((a, b) => a - b)) {
    const state = blocks.get(index);
    if (state === undefined || state.kind === 'tool') continue;
    if (state.kind === 'text' && state.block.text === '') continue;
    content.push(state.block);
  }
  const usage: Usage = {
    inputTokens: inputTokens + (cacheRead ?? 0) + (cacheWrite ?? 0),
    outputTokens,
  };
  if (cacheRead !== undefined) usage.cacheReadTokens = cacheRead;
  if (cacheWrite !== undefined) usage.cacheWriteTokens = cacheWrite;
  const mapped = mapStopReason(stopReason);
  const message: AssistantMessage = {
    role: 'assistant',
    content,
    toolCalls,
    usage,
    stopReason: mapped,
  };
  yield { type: 'finish', message, usage, stopReason: mapped };
}
