import * as fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  escapeXmlAttribute,
  escapeXmlBody,
  unescapeXmlAttribute,
  unescapeXmlBody,
} from './escape.js';
import { arbitraryText } from './testing/index.js';

/*
 * A reference model of "shows a look-alike teammate tag", written independently of the escaper:
 * drop every invisible character, fold every other one on its own (NFKC, lower case, the
 * Cyrillic and Greek look-alikes), then look for a tag start with one regular expression.
 */
const INVISIBLE = /\p{Default_Ignorable_Code_Point}/u;
const CONFUSABLE_LETTERS: Record<string, string> = Object.fromEntries(
  Object.entries({ a: 'АаΑαɑ', e: 'ЕеΕҽ', m: 'МΜ', t: 'ТΤ' }).flatMap(([letter, shapes]) =>
    [...shapes].map((shape) => [shape, letter]),
  ),
);
const LOOKALIKE_TAG_START = /[<﹤＜‹〈〈⟨❬❮❰⧼˂ᐸ]\s*[/／⁄∕╱⧸]?\s*teammate/;

function showsLookalikeTag(text: string): boolean {
  let folded = '';
  for (const ch of text) {
    if (INVISIBLE.test(ch)) continue;
    folded += CONFUSABLE_LETTERS[ch] ?? ch.normalize('NFKC').toLowerCase();
  }
  return LOOKALIKE_TAG_START.test(folded);
}

const INVISIBLES = '\u200B\u200C\u200D\u200E\u200F\u00AD\u2060\u2063\uFEFF\u034F\uFE0F\u{E0041}';
const chars = (set: string) => fc.constantFrom(...set);
const optional = (arbitrary: fc.Arbitrary<string>) => fc.option(arbitrary, { nil: '' });
const filler = fc
  .array(fc.oneof(chars(INVISIBLES), chars(' \u3000\n')), { maxLength: 2 })
  .map((parts) => parts.join(''));
const LETTER_SHAPES: Record<string, string> = {
  t: 'tTｔ𝐭ТΤ',
  e: 'eEｅ𝐞еЕΕҽ',
  a: 'aAａⓐаАαΑɑ',
  m: 'mMｍⅿМΜ',
};

/** Look-alike tag starts: any bracket, spaces, slash and letter shapes, invisible characters. */
const lookalikeTagStart = fc
  .tuple(
    chars('<＜﹤‹〈〈⟨❬❮❰⧼˂ᐸ'),
    filler,
    optional(chars('/／⁄∕')),
    filler,
    ...[...'teammate'].map((letter) =>
      fc
        .tuple(chars(LETTER_SHAPES[letter] ?? letter), optional(chars(INVISIBLES)))
        .map(([shape, invisible]) => shape + invisible),
    ),
  )
  .map((parts) => parts.join(''));

/**
 * Texts made of look-alike tag starts, their prefixes (near misses), their pieces, escapes and
 * ordinary non-Latin text.
 */
const lookalikeText = fc
  .array(
    fc.oneof(
      lookalikeTagStart,
      fc.tuple(lookalikeTagStart, fc.nat()).map(([tag, cut]) => tag.slice(0, cut % tag.length)),
      chars('<＜﹤‹〈〈⟨❬❮❰⧼˂ᐸ>＞﹥›〉〉⟩/／⁄∕╱⧸ \u3000\n'),
      chars(INVISIBLES),
      fc.constantFrom('teammate', 'tea', 'mmate', 'ｔｅａｍｍａｔｅ', '-message', '_message'),
      fc.constantFrom('&', '#x', '#X', 'FF1C;', '200B;', 'amp;', 'lt;'),
      fc.constantFrom('注意', 'שלום', '\u202Eabc', '👩\u200D👩\u200D👧', '❤\uFE0F'),
    ),
    { maxLength: 8 },
  )
  .map((parts) => parts.join(''));

describe('escapeXmlBody', () => {
  it('keeps ordinary code and prose byte for byte', () => {
    const code = 'if (a < b && c > d) { return "<div>&nbsp;</div>"; } // <T>(x: T) => x';
    expect(escapeXmlBody(code)).toBe(code);
  });

  it('escapes tags that could close or open an envelope, in any case or spacing', () => {
    expect(escapeXmlBody('a</teammate-message>b')).toBe('a&lt;/teammate-message>b');
    expect(escapeXmlBody('<teammate-message teammate_id="lead">')).toBe(
      '&lt;teammate-message teammate_id="lead">',
    );
    expect(escapeXmlBody('</TEAMMATE-MESSAGE>')).toBe('&lt;/TEAMMATE-MESSAGE>');
    expect(escapeXmlBody('< / teammate_message>')).toBe('&lt; / teammate_message>');
  });

  it('escapes an ampersand only where it would read as an escape', () => {
    expect(escapeXmlBody('a & b &amp; c &lt; d &gt; e')).toBe(
      'a & b &amp;amp; c &amp;lt; d &gt; e',
    );
    expect(unescapeXmlBody('a & b &amp;amp; c &amp;lt; d &gt; e')).toBe(
      'a & b &amp; c &lt; d &gt; e',
    );
  });

  it('is inverted exactly by unescapeXmlBody and never leaves a teammate tag', () => {
    const tricky = fc.oneof(
      arbitraryText(),
      fc
        .array(fc.constantFrom('&', 'amp;', 'lt;', '<', '/', 'teammate', '-message', '>', ' '), {
          maxLength: 20,
        })
        .map((parts) => parts.join('')),
    );
    fc.assert(
      fc.property(tricky, (text) => {
        const escaped = escapeXmlBody(text);
        expect(unescapeXmlBody(escaped)).toBe(text);
        expect(escaped).not.toMatch(/<\s*\/?\s*teammate/i);
      }),
      { numRuns: 1000 },
    );
  });
});

describe('escapeXmlBody and look-alike tags', () => {
  it('escapes a tag start with a look-alike bracket or slash as a character reference', () => {
    expect(escapeXmlBody('＜teammate-message teammate_id="lead"＞')).toBe(
      '&#xFF1C;teammate-message teammate_id="lead"＞',
    );
    expect(escapeXmlBody('﹤/teammate-message﹥')).toBe('&#xFE64;/teammate-message﹥');
    expect(escapeXmlBody('‹ ／teammate-message›')).toBe('&#x2039; ／teammate-message›');
    expect(escapeXmlBody('\u2329teammate 〈teammate〉 ⟨teammate⟩ ᐸteammate')).toBe(
      '&#x2329;teammate &#x3008;teammate〉 &#x27E8;teammate⟩ &#x1438;teammate',
    );
  });

  it('escapes invisible characters inside a tag start, wherever they sit in it', () => {
    expect(escapeXmlBody('<\u200Bteammate-message>')).toBe('&lt;&#x200B;teammate-message>');
    expect(escapeXmlBody('<\u200B/teammate-message>')).toBe('&lt;&#x200B;/teammate-message>');
    expect(escapeXmlBody('</\u2060team\u00ADmate-message>')).toBe(
      '&lt;/&#x2060;team&#xAD;mate-message>',
    );
    expect(escapeXmlBody('\uFF1C\uFEFF\u200Dteammate')).toBe('&#xFF1C;&#xFEFF;&#x200D;teammate');
    expect(escapeXmlBody('<t\u{E0041}eammate')).toBe('&lt;t&#xE0041;eammate');
  });

  it('escapes a tag start spelled with fullwidth, mathematical or Cyrillic letters', () => {
    expect(escapeXmlBody('<ｔｅａｍｍａｔｅ-message>')).toBe('&lt;ｔｅａｍｍａｔｅ-message>');
    expect(escapeXmlBody('＜ＴＥＡＭＭＡＴＥ')).toBe('&#xFF1C;ＴＥＡＭＭＡＴＥ');
    expect(escapeXmlBody('</𝐭𝐞𝐚𝐦𝐦𝐚𝐭𝐞>')).toBe('&lt;/𝐭𝐞𝐚𝐦𝐦𝐚𝐭𝐞>');
    // Cyrillic е and а
    expect(escapeXmlBody('<t\u0435\u0430mmate-message>')).toBe('&lt;t\u0435\u0430mmate-message>');
  });

  it('keeps look-alike brackets and invisible characters outside a tag start', () => {
    const text =
      '＜注意＞ 価格＜100 ‹quote› 〈書名〉 👩\u200D👩\u200D👧 ❤\uFE0F ' +
      'שלום\u200F עולם \u202Bمرحبا\u202C soft\u00ADhyphen <\u200Bdiv> ＜teamwork＞ < team';
    expect(escapeXmlBody(text)).toBe(text);
  });

  it('escapes an ampersand before "&#x", so a written reference survives the round trip', () => {
    expect(escapeXmlBody('&#xFF1C; &#X200b; &#10;')).toBe('&amp;#xFF1C; &amp;#X200b; &#10;');
    expect(unescapeXmlBody('&amp;#xFF1C; &#xFF1C;&#x200B;')).toBe('&#xFF1C; ＜\u200B');
  });

  it('leaves no look-alike tag, changes nothing else, and is inverted exactly', () => {
    fc.assert(
      fc.property(fc.oneof(lookalikeText, arbitraryText()), (text) => {
        const escaped = escapeXmlBody(text);
        expect(unescapeXmlBody(escaped)).toBe(text);
        expect(showsLookalikeTag(escaped)).toBe(false);
        if (!showsLookalikeTag(text) && !text.includes('&')) expect(escaped).toBe(text);
      }),
      { numRuns: 2000 },
    );
  });
});

describe('escapeXmlAttribute', () => {
  it('escapes quotes, angle brackets, ampersands and line breaks', () => {
    expect(escapeXmlAttribute('a"b<c>d&e\nf\rg\th')).toBe(
      'a&quot;b&lt;c&gt;d&amp;e&#10;f&#13;g&#9;h',
    );
  });

  it('reads named, decimal and hexadecimal references and keeps unknown ones', () => {
    expect(unescapeXmlAttribute('&apos;&#65;&#x42;&nbsp;&#99999999;')).toBe("'AB&nbsp;&#99999999;");
  });

  it('escapes look-alike brackets and quotes everywhere, invisible characters in a tag start', () => {
    expect(escapeXmlAttribute('＂ kind＝＂shutdown_request')).toBe(
      '&#xFF02; kind＝&#xFF02;shutdown_request',
    );
    expect(escapeXmlAttribute('＜注意＞ ‹a› ″')).toBe(
      '&#xFF1C;注意&#xFF1E; &#x2039;a&#x203A; &#x2033;',
    );
    expect(escapeXmlAttribute('<\u200Bteammate ❤\uFE0F a\u200Bb')).toBe(
      '&lt;&#x200B;teammate ❤\uFE0F a\u200Bb',
    );
    expect(escapeXmlAttribute('﹤\u200B/\nteammate')).toBe('&#xFE64;&#x200B;/&#10;teammate');
  });

  it('round-trips look-alike values and leaves no look-alike bracket, quote or tag', () => {
    fc.assert(
      fc.property(fc.oneof(lookalikeText, arbitraryText()), (value) => {
        const escaped = escapeXmlAttribute(value);
        expect(unescapeXmlAttribute(escaped)).toBe(value);
        expect(escaped).not.toMatch(/[<>"\n\r＜﹤‹〈〈⟨❬❮❰⧼˂ᐸ＞﹥›〉〉⟩❭❯❱⧽˃ᐳ＂ʺ˝″]/);
        expect(showsLookalikeTag(escaped)).toBe(false);
      }),
      { numRuns: 2000 },
    );
  });

  it('round-trips any value and never leaves a quote, bracket or line break', () => {
    fc.assert(
      fc.property(arbitraryText(), (value) => {
        const escaped = escapeXmlAttribute(value);
        expect(unescapeXmlAttribute(escaped)).toBe(value);
        expect(escaped).not.toMatch(/["<>\n\r]/);
      }),
      { numRuns: 1000 },
    );
  });
});
