/**
 * Escaping of the XML envelope. Attribute values are fully escaped (they are short, and a value
 * must never end its quotes or its tag). Bodies are escaped lazily: only the few character
 * sequences that could end the element early, open a forged one, look like one of those to a
 * reader, or be mistaken for an escape are rewritten, so code and prose reach the model byte for
 * byte and cost no extra tokens.
 *
 * Look-alike tags: a model reads `＜teammate-message>` (fullwidth bracket),
 * `<\u200Bteammate-message>` (zero-width space) or `<ｔｅａｍｍａｔｅ-message>` (fullwidth
 * letters) much as it reads the real tag, although no parser would. They cannot change the parsed
 * sender, but they could mislead the model, so they are escaped like the real tag. The rule (see
 * {@link escapeXmlBody}) looks ahead from each bracket only over the characters a tag start can
 * hold, so escaping stays linear in the text's length.
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
 * Characters that look like `<`: the small and fullwidth forms, angle quotation marks and angle
 * brackets, the modifier-letter arrowhead and the Canadian syllabic PA.
 */
const LESS_THAN_LOOKALIKES =
  '\u02C2\u1438\u2039\u2329\u276C\u276E\u2770\u27E8\u29FC\u3008\uFE64\uFF1C';
/** Characters that look like `>`, the counterparts of {@link LESS_THAN_LOOKALIKES}. */
const GREATER_THAN_LOOKALIKES =
  '\u02C3\u1433\u203A\u232A\u276D\u276F\u2771\u27E9\u29FD\u3009\uFE65\uFF1E';
/** Characters that look like `"` (curly quotes are left alone: prose is full of them). */
const QUOTE_LOOKALIKES = '\u02BA\u02DD\u2033\uFF02';
/** Characters that look like `/`: fraction and division slashes, the big solidus, fullwidth. */
const SOLIDUS_LOOKALIKES = '\u2044\u2215\u2571\u29F8\uFF0F';

/**
 * Latin, Cyrillic and Greek letters that Unicode lists as confusable with the letters of
 * `teammate` but that compatibility normalization (NFKC) does not map to them.
 */
const LETTER_LOOKALIKES: Record<string, string> = {
  '\u0251': 'a', // ɑ
  '\u0391': 'a', // Α
  '\u03B1': 'a', // α
  '\u0410': 'a', // А
  '\u0430': 'a', // а
  '\u0395': 'e', // Ε
  '\u0415': 'e', // Е
  '\u0435': 'e', // е
  '\u04BD': 'e', // ҽ
  '\u039C': 'm', // Μ
  '\u041C': 'm', // М
  '\u03A4': 't', // Τ
  '\u0422': 't', // Т
};

const TAG_NAME = 'teammate';
const IGNORABLE = /\p{Default_Ignorable_Code_Point}/u;
const SPACE = /\s/;

/** `&#xHEX;` for the code point of `ch`. */
function reference(ch: string): string {
  return `&#x${(ch.codePointAt(0) ?? 0).toString(16).toUpperCase()};`;
}

/** Folded characters, since normalizing is slow; cleared when full, to bound its memory. */
const folds = new Map<string, string>();

/** A non-ASCII `ch` as the letters of {@link TAG_NAME} it looks like: folded, lower case. */
function foldLetter(ch: string): string {
  let folded = folds.get(ch);
  if (folded === undefined) {
    folded = LETTER_LOOKALIKES[ch] ?? ch.normalize('NFKC').toLowerCase();
    if (folds.size >= 4096) folds.clear();
    folds.set(ch, folded);
  }
  return folded;
}

/**
 * When the `<` (or look-alike) at `start` begins a look-alike teammate tag, returns the index just
 * past its `teammate`; otherwise -1. Reads only characters a tag start can hold (spaces,
 * ignorables, one slash, the letters), so runs tried from different brackets never overlap.
 */
function tagStartEnd(text: string, start: number): number {
  let i = start + 1;
  let slash = false;
  let matched = 0;
  while (i < text.length) {
    const code = text.charCodeAt(i);
    // ASCII first, without building strings: markup puts a `<` before every tag.
    if (code < 0x80) {
      i++;
      if (matched === 0 && (code === 0x20 || (code >= 0x09 && code <= 0x0d))) continue;
      if (matched === 0 && !slash && code === 0x2f) {
        slash = true;
        continue;
      }
      if ((code | 0x20) !== TAG_NAME.charCodeAt(matched)) return -1;
      if (++matched === TAG_NAME.length) return i;
      continue;
    }
    const ch = String.fromCodePoint(text.codePointAt(i) ?? 0);
    const next = i + ch.length;
    i = next;
    if (IGNORABLE.test(ch)) continue;
    if (matched === 0 && SPACE.test(ch)) continue;
    if (matched === 0 && !slash && SOLIDUS_LOOKALIKES.includes(ch)) {
      slash = true;
      continue;
    }
    // A compatibility character can stand for several letters (`ﬀ` is `ff`); one that finishes
    // the name may run past it, as `teammates` does.
    const folded = foldLetter(ch);
    const rest = TAG_NAME.slice(matched);
    if (folded.startsWith(rest)) return next;
    if (folded === '' || !rest.startsWith(folded)) return -1;
    matched += folded.length;
  }
  return -1;
}

const keep = (ch: string) => ch;

/**
 * Escapes the look-alike tag start from `start` (its bracket) to `end`: the bracket becomes
 * `&lt;` or a character reference, and so does every invisible character inside it, so the
 * reader sees what is there. `escapeRest` escapes the other characters (for attribute values).
 */
function escapeTagStart(
  text: string,
  start: number,
  end: number,
  escapeRest: (ch: string) => string,
): string {
  const bracket = text[start] as string;
  let out = bracket === '<' ? '&lt;' : reference(bracket);
  let from = start + 1;
  for (let i = from; i < end; ) {
    const code = text.charCodeAt(i);
    if (code < 0x80 && escapeRest === keep) {
      i++;
      continue;
    }
    const ch = String.fromCodePoint(text.codePointAt(i) ?? 0);
    const escaped = code >= 0x80 && IGNORABLE.test(ch) ? reference(ch) : escapeRest(ch);
    if (escaped !== ch) {
      out += text.slice(from, i) + escaped;
      from = i + ch.length;
    }
    i += ch.length;
  }
  return out + text.slice(from, end);
}

const BODY_SPECIAL = new RegExp(`[<${LESS_THAN_LOOKALIKES}]|&(?=amp;|lt;|#x)`, 'gi');
const ATTRIBUTE_SPECIAL = new RegExp(
  `[&"<>\\n\\r\\t${LESS_THAN_LOOKALIKES}${GREATER_THAN_LOOKALIKES}${QUOTE_LOOKALIKES}]`,
  'g',
);

/** One pass over `text`: `pattern` finds candidates, `plain` escapes those that start no tag. */
function escapeWith(
  text: string,
  pattern: RegExp,
  plain: (ch: string) => string,
  escapeRest: (ch: string) => string,
): string {
  let out = '';
  let last = 0;
  pattern.lastIndex = 0;
  for (let match = pattern.exec(text); match !== null; match = pattern.exec(text)) {
    const at = match.index;
    const ch = match[0];
    const end = ch === '<' || LESS_THAN_LOOKALIKES.includes(ch) ? tagStartEnd(text, at) : -1;
    if (end !== -1) {
      out += text.slice(last, at) + escapeTagStart(text, at, end, escapeRest);
      last = end;
      pattern.lastIndex = end;
      continue;
    }
    const escaped = plain(ch);
    if (escaped !== ch) {
      out += text.slice(last, at) + escaped;
      last = at + 1;
    }
  }
  return last === 0 ? text : out + text.slice(last);
}

/** One character of an attribute value: the fixed escapes, and look-alikes as references. */
function escapeAttributeChar(ch: string): string {
  const fixed = ATTRIBUTE_ESCAPES[ch];
  if (fixed !== undefined) return fixed;
  const lookalike =
    LESS_THAN_LOOKALIKES.includes(ch) ||
    GREATER_THAN_LOOKALIKES.includes(ch) ||
    QUOTE_LOOKALIKES.includes(ch);
  return lookalike ? reference(ch) : ch;
}

/**
 * Escapes an attribute value for a double-quoted XML attribute: `&`, `"`, `<`, `>` become
 * entities and `\n`, `\r`, `\t` become character references, so the opening tag stays on one line
 * and no value can close its quotes, its tag, or add an attribute. Look-alikes of `<`, `>` and `"`
 * (`＜`, `﹥`, `‹`, `〈`, `＂`, ...) become hexadecimal character references (`&#xFF1C;`), and so
 * does an invisible character inside a look-alike tag start (see {@link escapeXmlBody}), so a
 * value cannot look as if it did either.
 */
export function escapeXmlAttribute(value: string): string {
  return escapeWith(value, ATTRIBUTE_SPECIAL, escapeAttributeChar, escapeAttributeChar);
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
 * - A look-alike tag start is escaped: a `<` or a look-alike of it (`＜`, `﹤`, `‹`, `〈`, `⟨`,
 *   ...), then any spaces and invisible characters, an optional `/` or look-alike (`／`, `⁄`,
 *   `∕`, ...), any spaces and invisible characters, then `teammate` with each letter in any case,
 *   in any compatibility form (`ｔ`, `𝐭`, ...) or as a Cyrillic or Greek look-alike (`е`, `а`,
 *   ...), invisible characters allowed between the letters. Invisible means Unicode's
 *   Default_Ignorable_Code_Point (zero-width spaces and joiners, soft hyphen, word joiner,
 *   bidirectional marks, variation selectors, BOM, ...). In it, `<` becomes `&lt;`, a look-alike
 *   bracket and every invisible character become hexadecimal character references (`&#xFF1C;`,
 *   `&#x200B;`); everything else is kept.
 * - `&` becomes `&amp;` when it starts `&amp;`, `&lt;` or `&#x` (any case), so those sequences
 *   survive the round trip.
 * Every other character is kept, including look-alike brackets and invisible characters outside
 * a tag start (emoji sequences, CJK and right-to-left text are untouched). The body therefore
 * never contains an opening or closing tag or a look-alike of one, and {@link unescapeXmlBody}
 * restores the input exactly.
 */
export function escapeXmlBody(text: string): string {
  return escapeWith(text, BODY_SPECIAL, (ch) => (ch === '&' ? '&amp;' : ch), keep);
}

/**
 * Inverse of {@link escapeXmlBody}: `&lt;` becomes `<`, `&amp;` becomes `&` and `&#xHEX;` becomes
 * its character, left to right.
 */
export function unescapeXmlBody(text: string): string {
  return text.replace(
    /&(?:(amp|lt)|#[xX]([0-9a-fA-F]{1,6}));/g,
    (match, name: string | undefined, hex: string | undefined) => {
      if (name !== undefined) return name === 'amp' ? '&' : '<';
      const code = Number.parseInt(hex ?? '', 16);
      return code <= 0x10ffff ? String.fromCodePoint(code) : match;
    },
  );
}
