import * as fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  escapeXmlAttribute,
  escapeXmlBody,
  unescapeXmlAttribute,
  unescapeXmlBody,
} from './escape.js';
import { arbitraryText } from './testing/index.js';

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

describe('escapeXmlAttribute', () => {
  it('escapes quotes, angle brackets, ampersands and line breaks', () => {
    expect(escapeXmlAttribute('a"b<c>d&e\nf\rg\th')).toBe(
      'a&quot;b&lt;c&gt;d&amp;e&#10;f&#13;g&#9;h',
    );
  });

  it('reads named, decimal and hexadecimal references and keeps unknown ones', () => {
    expect(unescapeXmlAttribute('&apos;&#65;&#x42;&nbsp;&#99999999;')).toBe("'AB&nbsp;&#99999999;");
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
