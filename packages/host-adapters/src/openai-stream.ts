import type { ContentBlock, ModelStreamEvent, StopReason, ToolCall, Usage } from '@teamwire/core';
import {
  appendText,
  appendThinking,
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

/** Finish reasons after which an empty reply is legitimate. */
const MAY_END_EMPTY: ReadonlySet<string> = new Set(['length', 'content_filter']);

interface ToolCallState {
  index: number;
  id: string | undefined;
  name: string | undefined;
  args: string;
  started: boolean;
}

/** What a delta adds to the reply, in the order the provider sent it. */
type Piece =
  | { kind: 'text'; text: string }
  | { kind: 'reasoning'; text: string }
  | { kind: 'signature'; signature: string };

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
 * The text of a thinking part: a string, or (Mistral's Magistral) an array of text parts.
 * `undefined` when it is neither.
 */
function thinkingText(value: unknown): string | undefined {
  if (typeof value === 'string') return value;
  if (!Array.isArray(value)) return undefined;
  let out = '';
  for (const part of value) {
    if (!isRecord(part) || part.type !== 'text' || typeof part.text !== 'string') return undefined;
    out += part.text;
  }
  return out;
}

/**
 * Reads one content part of an array-valued `delta.content`:
 * `{type:'text', text}` is text; `{type:'thinking', thinking, signature?}` and
 * `{type:'reasoning', text | reasoning, signature?}` are reasoning. Anything else would be
 * content silently lost, so it fails with MODEL_PROTOCOL.
 */
function readContentPart(provider: string, part: unknown, pieces: Piece[]): void {
  const bad = (message: string) =>
    protocolError(provider, message, { part: JSON.stringify(part)?.slice(0, 500) });
  if (!isRecord(part) || typeof part.type !== 'string') {
    throw bad('a content part is not an object with a `type`');
  }
  let reasoning: string | undefined;
  switch (part.type) {
    case 'text':
      if (typeof part.text !== 'string') throw bad('a text content part has no `text` string');
      pieces.push({ kind: 'text', text: part.text });
      return;
    case 'thinking':
      reasoning = thinkingText(part.thinking);
      break;
    case 'reasoning':
      reasoning = [part.text, part.reasoning].find((value) => typeof value === 'string') as
        | string
        | undefined;
      break;
    default:
      throw bad(`unknown content part type \`${part.type}\``);
  }
  if (reasoning === undefined && typeof part.signature !== 'string') {
    throw bad(`a ${part.type} content part carries no text`);
  }
  if (reasoning !== undefined) pieces.push({ kind: 'reasoning', text: reasoning });
  if (typeof part.signature === 'string' && part.signature !== '') {
    pieces.push({ kind: 'signature', signature: part.signature });
  }
}

/**
 * What a `delta` adds: `reasoning_content` or `reasoning` strings (DeepSeek, xAI, vLLM,
 * OpenRouter), then `content` as a string or an array of typed parts, then a `refusal`, which is
 * the model's answer as text.
 */
function readDelta(provider: string, delta: Record<string, unknown>): Piece[] {
  const pieces: Piece[] = [];
  const reasoning =
    typeof delta.reasoning_content === 'string' ? delta.reasoning_content : delta.reasoning;
  if (typeof reasoning === 'string') pieces.push({ kind: 'reasoning', text: reasoning });
  const content = delta.content;
  if (typeof content === 'string') {
    pieces.push({ kind: 'text', text: content });
  } else if (Array.isArray(content)) {
    for (const part of content) readContentPart(provider, part, pieces);
  } else if (content !== undefined && content !== null) {
    throw protocolError(provider, '`delta.content` is neither a string nor an array of parts', {
      content: JSON.stringify(content).slice(0, 500),
    });
  }
  if (typeof delta.refusal === 'string') pieces.push({ kind: 'text', text: delta.refusal });
  return pieces;
}

/** Puts a thinking signature on the reasoning it closes. */
function appendSignature(content: ContentBlock[], signature: string): void {
  const last = content.at(-1);
  if (last?.type === 'thinking' && 'thinking' in last) {
    last.signature = (typeof last.signature === 'string' ? last.signature : '') + signature;
  } else {
    content.push({ type: 'thinking', thinking: '', signature });
  }
}

/**
 * Reads a chat completions event stream into model stream events and one assistant message,
 * tolerating the known quirks of compatible servers: tool calls without `index`, repeated empty
 * names, usage in the finish chunk or a trailing chunk, streams closed without `[DONE]`.
 */
export async function* readChatCompletionStream(
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
    const chunk = parseStreamRecord(provider, event.data, 'chunk');
    if (chunk.error !== undefined && chunk.error !== null) {
      const info = readProviderError(chunk);
      throw providerError(provider, codeForFailure(undefined, info), info, { inStream: true });
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
      for (const piece of readDelta(provider, delta)) {
        if (piece.kind === 'signature') {
          appendSignature(content, piece.signature);
        } else if (piece.text === '') {
          // Nothing to add: servers open a reply with an empty `content`.
        } else if (piece.kind === 'reasoning') {
          appendThinking(content, piece.text);
          yield { type: 'reasoning-delta', text: piece.text };
        } else {
          appendText(content, piece.text);
          yield { type: 'text-delta', text: piece.text };
        }
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
    toolCalls.push({ id: state.id, name: state.name, input: parseToolInput(state.args) });
  }
  assertNotEmpty(provider, { content, toolCalls }, finishReason, MAY_END_EMPTY);
  for (const toolCall of toolCalls) yield { type: 'tool-call', toolCall };
  const finalUsage = usage ?? { inputTokens: 0, outputTokens: 0 };
  const stopReason = mapFinishReason(finishReason, toolCalls.length > 0);
  yield finishEvent({ content, toolCalls }, finalUsage, stopReason);
}
