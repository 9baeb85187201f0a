import { mkdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { TeamError } from '@teamwire/core';
import { afterEach, describe, expect, it } from 'vitest';
import { MAX_PATH_BYTES, resolveInside } from './resolve-inside.js';
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

  // Every name git itself treats as `.git` (its is_ntfs_dotgit and is_hfs_dotgit), in any
  // position: a nested one is a repository git enters and whose config it obeys.
  const DOT_GIT_FORMS = [
    '.git',
    '.GIT',
    '.Git',
    '.git.',
    '.git ',
    '.git. . ',
    '.git...',
    'git~1',
    'GIT~1',
    'Git~1',
    'git~2',
    'git~1. ',
    '.git::$INDEX_ALLOCATION',
    '.git:$DATA',
    '.GIT . :stream',
    '.g\u200cit',
    '.\u200dgit',
    '\u200e.git',
    '.gi\u200ft',
    '.git\u202a',
    '.g\u202bi\u202ct',
    '.gi\u202d\u202et',
    '.\u206ag\u206bi\u206ct\u206d',
    '.g\u206eit\u206f',
    '\ufeff.git',
    '.G\u200cIT. ',
  ];
  const positions = (form: string) => [
    form,
    `${form}/config`,
    `pkg/${form}`,
    `pkg/${form}/HEAD`,
    `a/b/${form}/objects/info/alternates`,
    `pkg\\${form}\\config`,
  ];

  it('refuses every form of .git in every position of the path', async () => {
    const { dir } = workspace();
    for (const form of DOT_GIT_FORMS) {
      for (const path of positions(form)) {
        expect(await refusal(dir, path), JSON.stringify(path)).toBe('PATH_OUTSIDE_WORKSPACE');
      }
    }
  });

  it('allows names that only look like .git, and every form of .git with allowGitDir', async () => {
    const { dir } = workspace();
    for (const path of [
      '.github/x',
      '.gitignore',
      '.gitmodules',
      '.gitattributes',
      'pkg/.gitkeep',
      '.git-blame-ignore-revs',
      '.gitx/config',
      'git',
      'git~',
      'git~1x',
      'xgit~1',
      'repo.git/config',
      '.git.x',
      '.g\u200bit',
      'pkg/.gi/t',
    ]) {
      expect(await resolveInside(dir, path), JSON.stringify(path)).toBe(join(dir, path));
    }
    for (const form of DOT_GIT_FORMS) {
      for (const path of positions(form)) {
        expect(await resolveInside(dir, path, { allowGitDir: true })).toBe(join(dir, path));
      }
    }
  });

  it('refuses a symlink inside the workspace that leads into a .git', async () => {
    const { dir } = workspace();
    mkdirSync(join(dir, 'pkg', '.git'), { recursive: true });
    symlinkSync(join(dir, 'pkg', '.git'), join(dir, 'alias'));
    symlinkSync('pkg', join(dir, 'pkg-link'));
    expect(await refusal(dir, 'alias')).toBe('PATH_OUTSIDE_WORKSPACE');
    expect(await refusal(dir, 'alias/config')).toBe('PATH_OUTSIDE_WORKSPACE');
    expect(await refusal(dir, 'pkg-link/.git/config')).toBe('PATH_OUTSIDE_WORKSPACE');
    expect(await resolveInside(dir, 'pkg-link/src.ts')).toBe(join(dir, 'pkg-link', 'src.ts'));
  });

  it('resolves under the real path of a symlinked workspace', async () => {
    const { dir } = workspace();
    const alias = join(tempDir(), 'alias-of-ws');
    symlinkSync(dir, alias);
    expect(await resolveInside(alias, 'src/a.ts')).toBe(join(dir, 'src', 'a.ts'));
  });

  it('refuses NUL bytes, an overlong path and a missing workspace as INVALID_ARGUMENT', async () => {
    const { dir } = workspace();
    expect(await refusal(dir, 'a\0b')).toBe('INVALID_ARGUMENT');
    expect(await refusal(dir, `${'é'.repeat(MAX_PATH_BYTES / 2)}x`)).toBe('INVALID_ARGUMENT');
    expect(await refusal(join(dir, 'missing'), 'a')).toBe('INVALID_ARGUMENT');
  });
});
