import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { contentJsonBytes, jsonStringBytes, utf8Length } from './limits.js';

/** What `maxMessageBytes` is defined as: the UTF-8 bytes of the content's JSON. */
const serialised = (value: unknown) => utf8Length(JSON.stringify(value) ?? '');

/** Strings of any UTF-16 units: controls, quotes, backslashes, lone and paired surrogates. */
const anyText = fc.oneof(
  fc.string({ unit: 'binary' }),
  fc.string({
    unit: fc.constantFrom('"', '\\', '\n', '\u0001', '\u007f', 'é', '\ud800', '\udc00'),
  }),
  fc.string({ unit: 'grapheme' }),
);

describe('jsonStringBytes', () => {
  it('is the UTF-8 length of JSON.stringify of the string', () => {
    fc.assert(
      fc.property(anyText, (text) => {
        expect(jsonStringBytes(text)).toBe(serialised(text));
      }),
      { numRuns: 500 },
    );
  });
});

describe('contentJsonBytes', () => {
  const textBlock = anyText.map((text) => ({ type: 'text', text }));
  const otherValue = fc.oneof(
    fc.jsonValue(),
    fc.record({ type: fc.constant('text'), text: anyText, extra: fc.option(fc.integer()) }),
    fc.record({ type: fc.constant('text'), text: fc.integer() }),
    fc.constant(undefined),
    fc.constant({ type: 'text', text: 'x', toJSON: () => 'replaced by toJSON' }),
  );

  it('equals the UTF-8 length of the JSON of any value, text blocks or not', () => {
    fc.assert(
      fc.property(
        fc.oneof(fc.array(textBlock), fc.array(fc.oneof(textBlock, otherValue)), otherValue),
        (content) => {
          expect(contentJsonBytes(content)).toBe(serialised(content));
        },
      ),
      { numRuns: 1000 },
    );
  });

  it('serialises nothing for a list of plain text blocks, and falls back for anything else', () => {
    const stringify = JSON.stringify;
    let calls = 0;
    JSON.stringify = ((...args: Parameters<typeof stringify>) => {
      calls++;
      return stringify(...args);
    }) as typeof JSON.stringify;
    try {
      const text = [
        { type: 'text', text: 'plain' },
        { type: 'text', text: 'é"\n' },
      ];
      expect(contentJsonBytes(text)).toBe(utf8Length(stringify(text)));
      expect(calls).toBe(0);
      const withImage = [...text, { type: 'image', data: 'x' }];
      expect(contentJsonBytes(withImage)).toBe(utf8Length(stringify(withImage)));
      expect(calls).toBe(1);
      const withToJson = Object.assign([...text], { toJSON: () => 'x' });
      expect(contentJsonBytes(withToJson)).toBe(3);
      expect(calls).toBe(2);
    } finally {
      JSON.stringify = stringify;
    }
  });
});
