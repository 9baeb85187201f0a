import { TeamError } from '@teamwire/core';
import { describe, expect, it } from 'vitest';
import { promptCacheKey } from './cache-key.js';

describe('promptCacheKey', () => {
  it('joins session and agent, with a spawn suffix when given', () => {
    expect(promptCacheKey('01JTEAM', 'alice')).toBe('01JTEAM:alice');
    expect(promptCacheKey('01JTEAM', 'alice', 2)).toBe('01JTEAM:alice#2');
    expect(promptCacheKey('a:b', 'lead', 1)).toBe('a:b:lead#1');
  });

  it('gives each agent and each spawn its own key', () => {
    const keys = new Set([
      promptCacheKey('s', 'alice'),
      promptCacheKey('s', 'bob'),
      promptCacheKey('s', 'alice', 1),
      promptCacheKey('s', 'alice', 2),
      promptCacheKey('t', 'alice'),
    ]);
    expect(keys.size).toBe(5);
  });

  it.each([
    ['', 'alice', undefined],
    ['s', '', undefined],
    ['s', 'a:b', undefined],
    ['s', 'a#1', undefined],
    ['s', 'alice', 0],
    ['s', 'alice', 1.5],
  ])('refuses (%j, %j, %j) with INVALID_ARGUMENT', (sessionId, agentName, spawn) => {
    let error: unknown;
    try {
      promptCacheKey(sessionId, agentName, spawn);
    } catch (caught) {
      error = caught;
    }
    expect(TeamError.hasCode(error, 'INVALID_ARGUMENT')).toBe(true);
  });
});
