import { mkdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { TeamError } from '@teamwire/core';
import { afterEach, describe, expect, it } from 'vitest';
import { resolveInside } from './resolve-inside.js';
import { removeTempDirs, tempDir } from './test-support.js';

afterEach(removeTempDirs);

async function refusal(dir: string, path: string): Promise<string> {
  try {
    await resolveInside(dir, path);
  } catch (error) {
    if (TeamError.isInstance(error)) return error.code;
    throw error;
  }
  return 'allowed';
}

function workspace() {
  const base = tempDir();
  const dir = join(base, 'ws');
  const outside = join(base, 'outside');
  mkdirSync(join(dir, 'src'), { recursive: true });
  mkdirSync(outside);
  writeFileSync(join(dir, 'src', 'a.ts'), 'a');
  writeFileSync(join(outside, 'secret.txt'), 'secret');
  return { dir, outside };
}

describe('resolveInside', () => {
  it('resolves existing and not-yet-existing paths inside the workspace', async () => {
    const { dir } = workspace();
    expect(await resolveInside(dir, 'src/a.ts')).toBe(join(dir, 'src', 'a.ts'));
    expect(await resolveInside(dir, './src/../src/a.ts')).toBe(join(dir, 'src', 'a.ts'));
    expect(await resolveInside(dir, 'new/deeper/file.ts')).toBe(
      join(dir, 'new', 'deeper', 'file.ts'),
    );
    expect(await resolveInside(dir, '.')).toBe(dir);
    expect(await resolveInside(dir, 'src/..')).toBe(dir);
  });

  it('refuses `..` escapes', async () => {
    const { dir } = workspace();
    for (const path of ['..', '../outside/secret.txt', 'src/../../outside', 'a/../../..']) {
      expect(await refusal(dir, path)).toBe('PATH_OUTSIDE_WORKSPACE');
    }
  });

  it('refuses absolute paths, even ones inside the workspace', async () => {
    const { dir, outside } = workspace();
    for (const path of [
      '/etc/passwd',
      join(outside, 'secret.txt'),
      join(dir, 'src', 'a.ts'),
      'C:\\x',
      'c:x',
      '\\\\server\\share',
    ]) {
      expect(await refusal(dir, path)).toBe('PATH_OUTSIDE_WORKSPACE');
    }
  });

  it('refuses symlinks whose real path leads outside, for existing and new files under them', async () => {
    const { dir, outside } = workspace();
    symlinkSync(outside, join(dir, 'link-dir'));
    symlinkSync(join(outside, 'secret.txt'), join(dir, 'link-file'));
    symlinkSync(join(outside, 'not-yet.txt'), join(dir, 'dangling'));
    symlinkSync('../../outside', join(dir, 'src', 'relative-link'));
    for (const path of [
      'link-dir',
      'link-dir/secret.txt',
      'link-dir/new/file.txt',
      'link-file',
      'dangling',
      'src/relative-link/x',
    ]) {
      expect(await refusal(dir, path), path).toBe('PATH_OUTSIDE_WORKSPACE');
    }
  });

  it('allows a symlink that stays inside', async () => {
    const { dir } = workspace();
    symlinkSync(join(dir, 'src'), join(dir, 'alias'));
    symlinkSync('src/a.ts', join(dir, 'a-link'));
    symlinkSync('src/later.ts', join(dir, 'dangling-inside'));
    expect(await resolveInside(dir, 'alias/a.ts')).toBe(join(dir, 'alias', 'a.ts'));
    expect(await resolveInside(dir, 'a-link')).toBe(join(dir, 'a-link'));
    expect(await resolveInside(dir, 'dangling-inside')).toBe(join(dir, 'dangling-inside'));
  });

  it('refuses a dangling symlink chain that ends outside, and a symlink loop', async () => {
    const { dir, outside } = workspace();
    symlinkSync('hop2', join(dir, 'hop1'));
    symlinkSync(join(outside, 'x'), join(dir, 'hop2'));
    symlinkSync('loop-b', join(dir, 'loop-a'));
    symlinkSync('loop-a', join(dir, 'loop-b'));
    expect(await refusal(dir, 'hop1')).toBe('PATH_OUTSIDE_WORKSPACE');
    expect(await refusal(dir, 'loop-a')).toBe('PATH_OUTSIDE_WORKSPACE');
  });

  it('keeps file tools out of .git unless allowed', async () => {
    const { dir } = workspace();
    writeFileSync(join(dir, '.git'), 'gitdir: /somewhere\n');
    expect(await refusal(dir, '.git')).toBe('PATH_OUTSIDE_WORKSPACE');
    expect(await refusal(dir, '.GIT/config')).toBe('PATH_OUTSIDE_WORKSPACE');
    expect(await resolveInside(dir, '.git', { allowGitDir: true })).toBe(join(dir, '.git'));
    expect(await resolveInside(dir, '.github/workflows/ci.yml')).toBe(
      join(dir, '.github', 'workflows', 'ci.yml'),
    );
  });

  it('resolves under the real path of a symlinked workspace', async () => {
    const { dir } = workspace();
    const alias = join(tempDir(), 'alias-of-ws');
    symlinkSync(dir, alias);
    expect(await resolveInside(alias, 'src/a.ts')).toBe(join(dir, 'src', 'a.ts'));
  });

  it('refuses NUL bytes and a missing workspace as INVALID_ARGUMENT', async () => {
    const { dir } = workspace();
    expect(await refusal(dir, 'a\0b')).toBe('INVALID_ARGUMENT');
    expect(await refusal(join(dir, 'missing'), 'a')).toBe('INVALID_ARGUMENT');
  });
});
