import { describe, expect, it } from 'vitest';
import { readProviderError } from './provider-errors.js';

describe('readProviderError', () => {
  const huge = 'x'.repeat(1_000_000);

  it.each([
    ['plain text', huge],
    ['{error: {message}}', { error: { message: huge } }],
    ['{error: string}', { error: huge }],
    ['{message}', { message: huge }],
    ['{detail}', { detail: huge }],
    ['a JSON string', JSON.stringify({ message: huge })],
  ])('keeps at most 2000 characters of %s', (_, body) => {
    const info = readProviderError(body);
    expect(info?.message.startsWith('xxx')).toBe(true);
    expect(info?.message.length).toBe(2000);
  });
});
