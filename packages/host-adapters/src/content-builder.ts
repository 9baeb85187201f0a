import type { ContentBlock } from '@teamwire/core';

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
