import { execFileSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { checkTeamId, memberBranch } from './member-place.js';

function gitAccepts(ref: string): boolean {
  try {
    execFileSync('git', ['check-ref-format', `refs/heads/${ref}`], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

function accepted(teamId: string): boolean {
  try {
    checkTeamId(teamId);
    return true;
  } catch {
    return false;
  }
}

describe('team ids and branch names', () => {
  it('accepts only team ids that git also accepts in a branch name (differential against git check-ref-format)', () => {
    // Seeded generator: the same cases every run, biased towards the characters refs care about.
    let seed = 0x5eed;
    const next = () => {
      seed = (seed * 1103515245 + 12345) & 0x7fffffff;
      return seed;
    };
    const alphabet = [
      'a',
      'Z',
      '0',
      '9',
      '.',
      '.',
      '-',
      '_',
      '/',
      '@',
      '{',
      '~',
      '^',
      ':',
      ' ',
      '*',
      '\\',
      'é',
      'l',
      'o',
      'c',
      'k',
    ];
    const cases = [
      '01JTEAMULID0000000000000AB',
      'a.b',
      'x.lock',
      'a..b',
      '.a',
      'a.',
      '@',
      'a@{b',
      'team-1_2',
    ];
    for (let i = 0; i < 400; i++) {
      const length = 1 + (next() % 8);
      cases.push(Array.from({ length }, () => alphabet[next() % alphabet.length]).join(''));
    }
    let acceptedCount = 0;
    for (const teamId of cases) {
      if (!accepted(teamId)) continue;
      acceptedCount++;
      expect(gitAccepts(memberBranch(teamId, 'worker-1')), teamId).toBe(true);
      expect(teamId).toMatch(/^[A-Za-z0-9._-]+$/);
    }
    expect(acceptedCount).toBeGreaterThan(20);
    expect(accepted('01JTEAMULID0000000000000AB')).toBe(true);
    expect(accepted('123e4567-e89b-12d3-a456-426614174000')).toBe(true);
    expect(accepted('x.lock')).toBe(false);
    expect(accepted('a..b')).toBe(false);
  });
});
