import { z } from 'zod';

/** Plain text. */
export const TextBlock = z.object({
  /** Discriminates {@link ContentBlock}. */
  type: z.literal('text'),
  /** The text. */
  text: z.string(),
});
export type TextBlock = z.infer<typeof TextBlock>;

/** Model reasoning kept verbatim so it can be passed back to the provider (Anthropic thinking). */
export const ThinkingBlock = z.object({
  /** Discriminates {@link ContentBlock}. */
  type: z.literal('thinking'),
  /** The reasoning text. */
  thinking: z.string(),
  /** The provider's signature over the reasoning, needed to send it back. */
  signature: z.string().optional(),
});
export type ThinkingBlock = z.infer<typeof ThinkingBlock>;

/** Reasoning the provider redacted; only its opaque data is kept. */
export const RedactedThinkingBlock = z.object({
  /** Discriminates {@link ContentBlock}. */
  type: z.literal('redacted_thinking'),
  /** The provider's opaque payload, passed back unchanged. */
  data: z.string(),
});
export type RedactedThinkingBlock = z.infer<typeof RedactedThinkingBlock>;

const knownTypes = new Set(['text', 'thinking', 'redacted_thinking']);

/**
 * A block of a type this version does not know. It is kept with all its fields, never dropped,
 * so a newer writer's content survives a round trip through an older reader.
 */
export const UnknownBlock = z
  .looseObject({
    /** The block type, one this version does not know. */
    type: z.string().min(1),
  })
  .refine((block) => !knownTypes.has(block.type), {
    message: 'a known block type must match its own schema',
  });
export type UnknownBlock = z.infer<typeof UnknownBlock>;

/** A block of message content. Unknown block types are kept, not dropped (see {@link UnknownBlock}). */
export const ContentBlock = z.union([
  TextBlock,
  ThinkingBlock,
  RedactedThinkingBlock,
  UnknownBlock,
]);
export type ContentBlock = z.infer<typeof ContentBlock>;

/** Shorthand for a one-element text content list. */
export function textContent(text: string): ContentBlock[] {
  return [{ type: 'text', text }];
}

/**
 * `text` cut to at most `max` UTF-16 code units, ending in `…` when it was cut; never splits a
 * surrogate pair.
 */
export function clipText(text: string, max: number): string {
  if (text.length <= max) return text;
  let cut = max - 1;
  if ((text.charCodeAt(cut - 1) & 0xfc00) === 0xd800) cut--;
  return `${text.slice(0, cut)}…`;
}

/** Concatenates the text blocks of `content` (other blocks are skipped). */
export function contentText(content: readonly ContentBlock[]): string {
  let out = '';
  for (const block of content) {
    if (block.type === 'text') out += (block as TextBlock).text;
  }
  return out;
}
