import { describe, expect, it } from 'vitest';
import { clipText } from './content.js';

describe('clipText', () => {
  it('keeps a text within the bound and cuts a longer one with an ellipsis', () => {
    expect(clipText('abc', 3)).toBe('abc');
    expect(clipText('abcdef', 4)).toBe('abc…');
    expect(clipText('abcdef', 4)).toHaveLength(4);
  });

  it('never splits a surrogate pair', () => {
    const text = `ab${'😀'}cd`;
    // a cut after "ab" and the high surrogate would leave half an emoji
    expect(clipText(text, 4)).toBe('ab…');
    expect(clipText(text, 5)).toBe(`ab${'😀'}…`);
  });
});
