import {
  type ContentBlock,
  type ModelStreamEvent,
  type StopReason,
  TeamError,
  type ToolCall,
  type Usage,
} from '@teamwire/core';
import {
  assertNotEmpty,
  finishEvent,
  isRecord,
  parseStreamRecord,
  parseToolInput,
} from './content-builder.js';
import {
  codeForFailure,
  protocolError,
  providerError,
  readProviderError,
} from './provider-errors.js';

/**
 * Stop reasons after which an empty reply is legitimate. Anthropic documents that a model may end
 * its turn with no content right after tool results (an empty `end_turn`): the model chose to say
 * nothing more, which is a known answer, not an unreadable one.
 */
const MAY_END_EMPTY: ReadonlySet<string> = new Set([
  'end_turn',
  'max_tokens',
  'model_context_window_exceeded',
  'refusal',
]);

/**
 * Blocks of the provider's own tools (`server_tool_use`, `web_search_tool_result`,
 * `mcp_tool_use`, `code_execution_tool_result`, ..., `container_upload`). The model's text
 * carries what it learned from them; they are kept whole because the API wants them back.
 */
const SERVER_TOOL_BLOCK = /^(?:[a-z_]+_tool_use|[a-z_]+_tool_result|container_upload)$/;

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

type BlockState =
  | { kind: 'text'; block: { type: 'text'; text: string } }
  | { kind: 'thinking'; block: { type: 'thinking'; thinking: string; signature?: string } }
  | { kind: 'redacted'; block: { type: 'redacted_thinking'; data: string } }
  | { kind: 'tool'; id: string; name: string; json: string; initial: unknown; done: boolean }
  | { kind: 'other'; block: Record<string, unknown> & { type: string }; json: string };

/**
 * Reads a Messages API event stream into model stream events and one assistant message. Thinking
 * keeps its signature, redacted thinking its data, and blocks of the provider's own tools are
 * kept whole; a content block or delta of a type this version does not know fails with
 * MODEL_PROTOCOL, and so does a reply that ends empty.
 */
export async function* readMessagesStream(
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
    const data = parseStreamRecord(provider, event.data, 'event');
    const type = typeof data.type === 'string' ? data.type : event.event;
    const bad = (message: string) =>
      protocolError(provider, `${message} (${type} event)`, { event: event.data.slice(0, 500) });
    if (type === 'error') {
      const info = readProviderError(data);
      throw providerError(provider, codeForFailure(undefined, info), info, { inStream: true });
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
      } else if (SERVER_TOOL_BLOCK.test(block.type)) {
        state = { kind: 'other', block: { ...block, type: block.type }, json: '' };
      } else {
        // A block this version cannot read may hold the answer: fail rather than lose it.
        throw bad(`unknown content block type \`${block.type}\``);
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
      } else if (delta.type !== 'citations_delta') {
        // Citations only annotate text already received; any other delta may carry content.
        throw bad(`unknown delta type \`${String(delta.type)}\``);
      }
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
    // Unknown event types are skipped: Anthropic may add new ones and asks clients to ignore
    // them. Content only arrives in the content block events read above.
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
  assertNotEmpty(provider, { content, toolCalls }, stopReason, MAY_END_EMPTY);
  const usage: Usage = {
    inputTokens: inputTokens + (cacheRead ?? 0) + (cacheWrite ?? 0),
    outputTokens,
  };
  if (cacheRead !== undefined) usage.cacheReadTokens = cacheRead;
  if (cacheWrite !== undefined) usage.cacheWriteTokens = cacheWrite;
  yield finishEvent({ content, toolCalls }, usage, mapStopReason(stopReason));
}
