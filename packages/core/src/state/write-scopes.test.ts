import { describe, expect, it } from 'vitest';
import { catchTeamError } from './test-fixtures.js';
import {
  anyWriteScopeOverlaps,
  normalizeWriteScope,
  normalizeWriteScopes,
  writeScopesOverlap,
} from './write-scopes.js';

describe('normalizeWriteScope', () => {
  it.each([
    ['src', 'src'],
    ['src/lib', 'src/lib'],
    ['src\\lib\\util', 'src/lib/util'],
    ['./src', 'src'],
    ['src/', 'src'],
    ['./src/lib/', 'src/lib'],
    ['.\\src\\', 'src'],
    ['.hidden/x', '.hidden/x'],
    ['a..b/c', 'a..b/c'],
    ['packages/core/src/state.ts', 'packages/core/src/state.ts'],
  ])('normalizes %j to %j', (raw, normalized) => {
    expect(normalizeWriteScope(raw)).toBe(normalized);
  });

  it.each([
    ['', 'empty'],
    ['./', 'empty after stripping'],
    ['/', 'root'],
    ['/etc', 'absolute'],
    ['\\\\server\\share', 'UNC path'],
    ['C:/work', 'drive letter'],
    ['c:work', 'drive-relative'],
    ['D:\\x', 'drive letter with backslash'],
    ['.', 'dot'],
    ['..', 'dot-dot'],
    ['../x', 'leading dot-dot'],
    ['a/../b', 'inner dot-dot'],
    ['a/./b', 'inner dot'],
    ['././a', 'only one ./ is stripped'],
    ['a//b', 'empty segment'],
    ['a//', 'trailing empty segment'],
  ])('refuses %j (%s) with INVALID_WRITE_SCOPE', (raw) => {
    const error = catchTeamError(() => normalizeWriteScope(raw));
    expect(error.code).toBe('INVALID_WRITE_SCOPE');
    expect(error.details).toEqual({ scope: raw });
  });

  it('refuses a non-string', () => {
    expect(catchTeamError(() => normalizeWriteScope(3 as unknown as string)).code).toBe(
      'INVALID_WRITE_SCOPE',
    );
  });
});

describe('normalizeWriteScopes', () => {
  it('normalizes every scope and drops repeats keeping the first position', () => {
    expect(normalizeWriteScopes(['./b/', 'a', 'b', 'a\\c', 'a/c/', 'a'])).toEqual([
      'b',
      'a',
      'a/c',
    ]);
  });

  it('is all-or-nothing: one bad scope refuses the list', () => {
    expect(catchTeamError(() => normalizeWriteScopes(['ok', '../bad'])).code).toBe(
      'INVALID_WRITE_SCOPE',
    );
  });

  it('accepts an empty list', () => {
    expect(normalizeWriteScopes([])).toEqual([]);
  });
});

describe('write scope overlap', () => {
  it.each([
    ['src', 'src', true],
    ['src', 'src/a', true],
    ['src/a', 'src', true],
    ['src/a/b', 'src/a', true],
    ['src', 'srcx', false],
    ['src/a', 'src/b', false],
    ['src/ab', 'src/a', false],
  ])('%j vs %j -> %s', (a, b, overlaps) => {
    expect(writeScopesOverlap(a, b)).toBe(overlaps);
  });

  it('compares lists pairwise', () => {
    expect(anyWriteScopeOverlaps(['docs', 'src/a'], ['test', 'src'])).toBe(true);
    expect(anyWriteScopeOverlaps(['docs'], ['src'])).toBe(false);
    expect(anyWriteScopeOverlaps([], ['src'])).toBe(false);
  });
});
