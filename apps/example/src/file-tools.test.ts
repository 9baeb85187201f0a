import { mkdirSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { TeamError } from '@teamwire/core';
import { beforeAll, describe, expect, it } from 'vitest';
import { listFiles, readTextFile, searchText } from './file-tools.js';
import { unitsFromPaths } from './policy-model.js';
import { FIXTURE_EXPECTED, makeFixtureRepo, tempDir } from './test-support.js';
import { countLines, openReviewRoot, type ReviewRoot } from './workspace-files.js';

let work: string;
let root: ReviewRoot;

beforeAll(() => {
  work = tempDir('tools');
  makeFixtureRepo(path.join(work, 'repo'));
  writeFileSync(path.join(work, 'outside.txt'), 'secret\n');
  mkdirSync(path.join(work, 'repo', 'links'));
  symlinkSync(path.join(work, 'outside.txt'), path.join(work, 'repo', 'links', 'escape.txt'));
  root = openReviewRoot(path.join(work, 'repo'));
});

const refusal = async (promise: Promise<unknown>) => {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(TeamError.isInstance(error)).toBe(true);
  return (error as TeamError).message;
};

describe('file tools', () => {
  it('list files with sizes and line counts, skipping ignored, hidden-by-rule and dependency folders', async () => {
    const result = await listFiles(root, { path: 'packages/alpha' });
    expect(result.files.map((f) => [f.path, f.lines])).toEqual([
      ['packages/alpha/package.json', 1],
      ['packages/alpha/src/big.ts', 30],
      ['packages/alpha/src/index.test.ts', 1],
      ['packages/alpha/src/index.ts', 3],
    ]);
    const all = await listFiles(root, {});
    expect(
      all.files.some((f) => f.path.includes('node_modules') || f.path.includes('/dist/')),
    ).toBe(false);
    expect(all.files.find((f) => f.path === 'tools/bin/blob.bin')?.lines).toBeNull();
    const few = await listFiles(root, { limit: 2 });
    expect(few.files).toHaveLength(2);
    expect(few.truncated).toBe(true);
    expect(few.total).toBe(all.total);
  });

  it('read a slice of a file', async () => {
    const result = await readTextFile(root, {
      path: 'packages/alpha/src/big.ts',
      startLine: 3,
      maxLines: 2,
    });
    expect(result).toEqual({
      path: 'packages/alpha/src/big.ts',
      totalLines: 30,
      startLine: 3,
      text: 'const x2 = 2;\nconst x3 = 3;',
      truncated: true,
    });
    expect(await refusal(readTextFile(root, { path: 'tools/bin/blob.bin' }))).toMatch(/binary/);
  });

  it('search with an exact total beyond the returned matches', async () => {
    const result = await searchText(root, { pattern: '\\b(TODO|FIXME)\\b', limit: 1 });
    // README, docs, alpha, beta (x2) and .hidden; dist/ (by .gitignore) and node_modules never
    expect(result.matches).toHaveLength(1);
    expect(result.total).toBe(6);
    expect(result.truncated).toBe(true);
    const ts = await searchText(root, { pattern: '^export', extensions: ['.ts'] });
    expect(ts.matches.map((m) => `${m.path}:${m.line}`)).toEqual([
      'packages/alpha/src/index.ts:1',
      'packages/alpha/src/index.ts:2',
    ]);
    expect(await refusal(searchText(root, { pattern: '(' }))).toMatch(/invalid regular expression/);
  });

  it.each([
    '..',
    '../outside.txt',
    '/etc/passwd',
    'packages/../../outside.txt',
    'links/escape.txt',
  ])('refuses %s, which lies outside the review directory', async (p) => {
    expect(await refusal(readTextFile(root, { path: p }))).toMatch(/outside the review directory/);
    expect(await refusal(listFiles(root, { path: p }))).toMatch(/outside the review directory/);
  });
});

describe('review units and line counts', () => {
  it('splits a workspace into packages and top-level folders, skipping root and hidden files', async () => {
    const all = await listFiles(root, {});
    // links/ holds only a symlink, which is never followed, so it is no unit
    expect(unitsFromPaths(all.files.map((f) => f.path))).toEqual(
      Object.keys(FIXTURE_EXPECTED).sort(),
    );
  });

  it('counts lines like wc -l plus an unterminated last line', () => {
    expect([
      countLines(''),
      countLines('a'),
      countLines('a\n'),
      countLines('a\nb'),
      countLines('\n\n'),
    ]).toEqual([0, 1, 1, 2, 2]);
  });
});
