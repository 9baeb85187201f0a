import { afterEach, describe, expect, it, vi } from 'vitest';
import { ulidIdSource } from './clock.js';

const ULID = /^[0-9A-HJKMNP-TV-Z]{26}$/;

describe('ulidIdSource', () => {
  afterEach(() => vi.restoreAllMocks());

  it('draws random bytes a block at a time, not once per character', () => {
    let now = 1_700_000_000_000;
    const ids = ulidIdSource({ now: () => now++, setTimer: () => () => {} });
    const draws = vi.spyOn(globalThis.crypto, 'getRandomValues');
    const made = Array.from({ length: 160 }, () => ids.next());
    // 160 ids in distinct milliseconds need 160 * 16 random characters: 10 blocks of 256 bytes
    expect(draws.mock.calls.length).toBeLessThanOrEqual(10);
    expect(draws.mock.calls.length).toBeGreaterThan(0);
    expect(new Set(made).size).toBe(made.length);
    for (const id of made) expect(id).toMatch(ULID);
    expect([...made].sort()).toEqual(made);
  });

  it('stays monotonic within one millisecond and uses the whole alphabet', () => {
    const ids = ulidIdSource({ now: () => 1_700_000_000_000, setTimer: () => () => {} });
    const made = Array.from({ length: 50 }, () => ids.next());
    expect([...made].sort()).toEqual(made);
    expect(new Set(made).size).toBe(made.length);
    let fresh = 1_700_000_000_000;
    const spread = ulidIdSource({ now: () => fresh++, setTimer: () => () => {} });
    const seen = new Set<string>();
    for (let i = 0; i < 400; i++) for (const c of spread.next().slice(10)) seen.add(c);
    expect(seen.size).toBe(32);
  });
});
