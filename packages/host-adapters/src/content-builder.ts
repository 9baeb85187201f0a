import type {
  AssistantMessage,
  ContentBlock,
  ModelStreamEvent,
  StopReason,
  ToolCall,
  Usage,
} from '@teamwire/core';
import { protocolError } from './provider-errors.js';

/**
 * Parses streamed tool-call arguments. Empty arguments mean "no arguments" (`{}`). Arguments
 * that are not JSON are kept as the raw string, so the agent loop can report the mistake to the
 * model and let it try again instead of failing the whole turn.
 */
export function parseToolInput(raw: string): unknown {
  if (raw.trim() === '') return {};
  try {
    return JSON.parse(raw);
  } catch {
    return raw;
  }
}

/** Appends streamed text to the last text block, or starts one. */
export function appendText(content: ContentBlock[], text: string): void {
  const last = content.at(-1);
  if (last?.type === 'text' && 'text' in last && typeof last.text === 'string') {
    last.text += text;
  } else {
    content.push({ type: 'text', text });
  }
}

/** Appends streamed reasoning to the last thinking block, or starts one. */
export function appendThinking(content: ContentBlock[], text: string): void {
  const last = content.at(-1);
  if (last?.type === 'thinking' && 'thinking' in last && typeof last.thinking === 'string') {
    last.thinking += text;
  } else {
    content.push({ type: 'thinking', thinking: text });
  }
}

/** The text blocks of `content` joined (no separator: they are parts of one reply). */
export function joinText(content: readonly ContentBlock[]): string {
  let out = '';
  for (const block of content) {
    if (block.type === 'text' && 'text' in block && typeof block.text === 'string') {
      out += block.text;
    }
  }
  return out;
}

/** Narrows unknown JSON to a plain object. */
export function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * Parses the data of one stream event as a JSON object, failing with MODEL_PROTOCOL when it is
 * not JSON or not an object. `noun` names the payload in the message and keys its excerpt in the
 * error details (`{ event: '...' }`, `{ chunk: '...' }`).
 */
export function parseStreamRecord(
  provider: string,
  data: string,
  noun: 'event' | 'chunk',
): Record<string, unknown> {
  let parsed: unknown;
  try {
    parsed = JSON.parse(data);
  } catch (error) {
    throw protocolError(
      provider,
      `a stream ${noun} is not valid JSON`,
      { [noun]: data.slice(0, 500) },
      error,
    );
  }
  if (!isRecord(parsed)) {
    throw protocolError(provider, `a stream ${noun} is not a JSON object`, {
      [noun]: data.slice(0, 500),
    });
  }
  return parsed;
}

/** The closing `finish` event of a stream: the whole assistant message, its usage and stop reason. */
export function finishEvent(
  reply: { content: ContentBlock[]; toolCalls: ToolCall[] },
  usage: Usage,
  stopReason: StopReason,
): Extract<ModelStreamEvent, { type: 'finish' }> {
  const message: AssistantMessage = {
    role: 'assistant',
    content: reply.content,
    toolCalls: reply.toolCalls,
    usage,
    stopReason,
  };
  return { type: 'finish', message, usage, stopReason };
}

/** Whether a block carries anything: text, reasoning (or its signature), or another kind. */
function carries(block: ContentBlock): boolean {
  if (block.type === 'text') return 'text' in block && block.text !== '';
  if (block.type === 'thinking') {
    return 'thinking' in block && (block.thinking !== '' || typeof block.signature === 'string');
  }
  return true;
}

/**
 * Fails with MODEL_PROTOCOL when a finished reply carries no text, no reasoning, no other block
 * and no tool call, unless its finish reason is one that may legitimately end empty (an output
 * limit, a content filter). A reply the adapter could not read must never pass for a silent one.
 */
export function assertNotEmpty(
  provider: string,
  reply: { content: readonly ContentBlock[]; toolCalls: readonly unknown[] },
  finishReason: string | undefined,
  mayBeEmpty: ReadonlySet<string>,
): void {
  if (reply.toolCalls.length > 0 || reply.content.some(carries)) return;
  if (finishReason !== undefined && mayBeEmpty.has(finishReason)) return;
  throw protocolError(
    provider,
    `the reply carries no text, reasoning or tool call (finish reason: ${finishReason ?? 'none'})`,
    { finishReason: finishReason ?? null },
  );
}
