import { describe, expect, it } from 'vitest';
import { Backoff, backoffDelay, checkBackoffPolicy, EQUAL_JITTER } from './backoff.js';
import { TeamError } from './errors.js';

describe('backoffDelay', () => {
  it('doubles from the first step up to the cap', () => {
    const policy = { initialDelayMs: 50, maxDelayMs: 2000 };
    expect([0, 1, 2, 3, 4, 5, 6, 7].map((n) => backoffDelay(policy, n))).toEqual([
      50, 100, 200, 400, 800, 1600, 2000, 2000,
    ]);
  });

  it('multiplies each step by a factor between the jitter bounds, picked by the random source', () => {
    const policy = { initialDelayMs: 500, maxDelayMs: 8000, jitter: EQUAL_JITTER };
    expect(backoffDelay(policy, 0, () => 0)).toBe(250);
    expect(backoffDelay(policy, 0, () => 0.5)).toBe(375);
    expect(backoffDelay(policy, 5, () => 0.999)).toBeCloseTo(7996, 0);
    const spread = { initialDelayMs: 100, maxDelayMs: 100, jitter: [0.75, 1.25] as const };
    expect(backoffDelay(spread, 3, () => 0)).toBe(75);
    expect(backoffDelay(spread, 3, () => 0.5)).toBe(100);
  });

  it('stays at the cap for any number of attempts, and never asks for random without jitter', () => {
    const policy = { initialDelayMs: 1, maxDelayMs: 50 };
    const random = () => {
      throw new Error('no jitter, no random');
    };
    expect(backoffDelay(policy, 5000, random)).toBe(50);
    expect(backoffDelay({ initialDelayMs: 0, maxDelayMs: 10 }, 5000, random)).toBe(0);
  });
});

describe('Backoff', () => {
  it('hands out one step after another and starts over on reset', () => {
    const backoff = new Backoff({ initialDelayMs: 10, maxDelayMs: 40, jitter: [0.5, 1] }, () => 0);
    expect([backoff.next(), backoff.next(), backoff.next(), backoff.next()]).toEqual([
      5, 10, 20, 20,
    ]);
    backoff.reset();
    expect(backoff.next()).toBe(5);
  });

  it('refuses a policy with a negative, infinite or missing delay, or inverted jitter', () => {
    const bad = [
      { initialDelayMs: -1, maxDelayMs: 10 },
      { initialDelayMs: 1, maxDelayMs: Number.POSITIVE_INFINITY },
      { initialDelayMs: 1 } as unknown as { initialDelayMs: number; maxDelayMs: number },
      { initialDelayMs: 1, maxDelayMs: 10, jitter: [1, 0.5] as const },
      { initialDelayMs: 1, maxDelayMs: 10, jitter: [-0.5, 1] as const },
    ];
    for (const policy of bad) {
      expect(() => new Backoff(policy)).toThrow(TeamError);
      try {
        checkBackoffPolicy(policy);
      } catch (error) {
        expect(TeamError.hasCode(error, 'INVALID_ARGUMENT')).toBe(true);
      }
    }
    expect(() => checkBackoffPolicy({ initialDelayMs: 0, maxDelayMs: 0 })).not.toThrow();
  });
});
