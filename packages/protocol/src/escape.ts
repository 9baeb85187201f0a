/**
 * Escaping of the XML envelope. Attribute values are fully escaped (they are short, and a value
 * must never end its quotes or its tag). Bodies are escaped lazily: only the few character
 * sequences that could end the element early, open a forged one, or be mistaken for an escape
 * are rewritten, so code and prose reach the model byte for byte and cost no extra tokens.
 */

const ATTRIBUTE_ESCAPES: Record<string, string> = {
  '&': '&amp;',
  '"': '&quot;',
  '<': '&lt;',
  '>': '&gt;',
  '\n': '&#10;',
  '\r': '&#13;',
  '\t': '&#9;',
};

const NAMED_ENTITIES: Record<string, string> = {
  amp: '&',
  quot: '"',
  apos: "'",
  lt: '<',
  gt: '>',
};

/**
 * Escapes an attribute value for a double-quoted XML attribute: `&`, `"`, `<`, `>` become
 * entities and `\n`, `\r`, `\t` become character references, so the opening tag stays on one line
 * and no value can close its quotes, its tag, or add an attribute.
 */
export function escapeXmlAttribute(value: string): string {
  return value.replace(/[&"<>\n\r\t]/g, (ch) => ATTRIBUTE_ESCAPES[ch] ?? ch);
}

/**
 * Inverse of {@link escapeXmlAttribute}. Also reads `&apos;` and any decimal or hexadecimal
 * character reference, so hand-written envelopes parse; an unknown or invalid reference is kept
 * as literal text rather than refused.
 */
export function unescapeXmlAttribute(value: string): string {
  return value.replace(
    /&(?:(amp|quot|apos|lt|gt)|#([0-9]{1,7})|#[xX]([0-9a-fA-F]{1,6}));/g,
    (match, named: string | undefined, dec: string | undefined, hex: string | undefined) => {
      if (named !== undefined) return NAMED_ENTITIES[named] ?? match;
      const code = dec !== undefined ? Number.parseInt(dec, 10) : Number.parseInt(hex ?? '', 16);
      return Number.isInteger(code) && code >= 0 && code <= 0x10ffff
        ? String.fromCodePoint(code)
        : match;
    },
  );
}

/**
 * Escapes an envelope body. Two rewrites, both rare in ordinary text:
 * - `<` becomes `&lt;` when it starts something that reads as a teammate tag: optional
 *   whitespace, optional `/`, optional whitespace, then `teammate` in any case
 *   (`</teammate-message>`, `<teammate-message`, `< /Teammate_Message`).
 * - `&` becomes `&amp;` when it starts `&amp;` or `&lt;` (any case), so those sequences survive
 *   the round trip.
 * Every other byte is kept. The body therefore never contains a closing or opening tag, and
 * {@link unescapeXmlBody} restores the input exactly.
 */
export function escapeXmlBody(text: string): string {
  return text.replace(/&(?=amp;|lt;)|<(?=\s*\/?\s*teammate)/gi, (ch) =>
    ch === '&' ? '&amp;' : '&lt;',
  );
}

/** Inverse of {@link escapeXmlBody}: `&lt;` becomes `<` and `&amp;` becomes `&`, left to right. */
export function unescapeXmlBody(text: string): string {
  return text.replace(/&(amp|lt);/g, (_match, name: string) => (name === 'amp' ? '&' : '<'));
}
