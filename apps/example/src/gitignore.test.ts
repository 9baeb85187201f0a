import { execFileSync, spawnSync } from 'node:child_process';
import { mkdirSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { listFiles } from './file-tools.js';
import { MAX_GITIGNORE_BYTES } from './gitignore.js';
import { tempDir } from './test-support.js';
import { openReviewRoot } from './workspace-files.js';

function tree(files: Record<string, string>): string {
  const root = tempDir('gitignore');
  for (const [file, text] of Object.entries(files)) {
    mkdirSync(path.dirname(path.join(root, file)), { recursive: true });
    writeFileSync(path.join(root, file), text);
  }
  return root;
}

/** `ignores` of a review root over `files`: paths ending in `/` are asked about as folders. */
function matcher(files: Record<string, string>): (p: string) => boolean {
  const root = openReviewRoot(tree(files));
  return (p) => (p.endsWith('/') ? root.ignores(p.slice(0, -1), true) : root.ignores(p, false));
}

const listed = async (dir: string) =>
  (await listFiles(openReviewRoot(dir), { limit: 2000 })).files.map((f) => f.path);

describe('a top-level .gitignore', () => {
  it('matches the common patterns', () => {
    const ignored = matcher({
      '.gitignore': '# c\ndist/\n*.tgz\n/rooted.txt\nsub/dir/file.md\n',
    });
    expect(ignored('a/dist/')).toBe(true);
    expect(ignored('a/dist')).toBe(false);
    expect(ignored('x/pkg-1.0.0.tgz')).toBe(true);
    expect(ignored('rooted.txt')).toBe(true);
    expect(ignored('a/rooted.txt')).toBe(false);
    expect(ignored('sub/dir/file.md')).toBe(true);
    expect(ignored('keep')).toBe(false);
  });

  it('honours negations (last match wins), ** segments, classes and escapes', () => {
    const ignored = matcher({
      '.gitignore': [
        '*.log',
        '!important.log',
        '**/cache',
        'docs/**/draft-*.md',
        'out/**',
        '!out/keep.txt',
        'file[0-9].txt',
        '\\#literal',
        '\\!bang',
        'trailing\\ ',
        '',
      ].join('\n'),
    });
    expect(ignored('a/debug.log')).toBe(true);
    expect(ignored('a/important.log')).toBe(false);
    expect(ignored('cache/')).toBe(true);
    expect(ignored('deep/er/cache/')).toBe(true);
    expect(ignored('docs/draft-1.md')).toBe(true);
    expect(ignored('docs/a/b/draft-2.md')).toBe(true);
    expect(ignored('docs/a/final.md')).toBe(false);
    expect(ignored('out/')).toBe(false);
    expect(ignored('out/build.js')).toBe(true);
    expect(ignored('out/sub/x.js')).toBe(true);
    expect(ignored('out/keep.txt')).toBe(false);
    expect(ignored('file7.txt')).toBe(true);
    expect(ignored('fileX.txt')).toBe(false);
    expect(ignored('#literal')).toBe(true);
    expect(ignored('!bang')).toBe(true);
    expect(ignored('trailing ')).toBe(true);
    expect(ignored('trailing')).toBe(false);
    // as git without core.ignorecase: case matters
    expect(ignored('a/DEBUG.LOG')).toBe(false);
  });
});

describe('nested .gitignore files', () => {
  const ignored = matcher({
    '.gitignore': '*.log\nbuild/\n/top-only.txt\n',
    'pkg/.gitignore': [
      '# relative to pkg/',
      '/local.txt',
      'gen/',
      '*.tmp',
      '!keep.log',
      '!build/',
      'nested/deep.txt',
      '',
    ].join('\n'),
    'pkg/sub/.gitignore': '!*.tmp\nkeep.log\n',
  });

  it('apply to the paths below their folder, relative to it', () => {
    expect(ignored('pkg/local.txt')).toBe(true);
    expect(ignored('pkg/a/local.txt')).toBe(false); // rooted at pkg/, not anywhere below it
    expect(ignored('local.txt')).toBe(false);
    expect(ignored('pkg/gen/')).toBe(true);
    expect(ignored('pkg/a/b/gen/')).toBe(true);
    expect(ignored('gen/')).toBe(false); // pkg/'s rules leave its siblings alone
    expect(ignored('other/x.tmp')).toBe(false);
    expect(ignored('pkg/x.tmp')).toBe(true);
    expect(ignored('pkg/nested/deep.txt')).toBe(true);
    expect(ignored('nested/deep.txt')).toBe(false);
    expect(ignored('pkg/top-only.txt')).toBe(false); // the root's /top-only.txt is rooted at the root
    expect(ignored('top-only.txt')).toBe(true);
  });

  it('let a deeper file override a shallower one, both ways', () => {
    expect(ignored('a.log')).toBe(true);
    expect(ignored('pkg/a.log')).toBe(true);
    expect(ignored('pkg/keep.log')).toBe(false); // pkg/ re-includes what the root ignores
    expect(ignored('pkg/x/keep.log')).toBe(false);
    expect(ignored('pkg/sub/keep.log')).toBe(true); // and pkg/sub/ ignores it again
    expect(ignored('pkg/sub/x.tmp')).toBe(false); // pkg/sub/ re-includes what pkg/ ignores
    expect(ignored('build/')).toBe(true);
    expect(ignored('pkg/build/')).toBe(false);
  });

  it('do not apply to their own folder', () => {
    const own = matcher({ 'a/.gitignore': '/a/\na/\n*\n' });
    expect(own('a/')).toBe(false);
    expect(own('a/x.txt')).toBe(true);
  });

  it('cannot re-include a file inside an ignored folder, which is never entered', async () => {
    const dir = tree({
      '.gitignore': 'vendor/\n',
      'vendor/.gitignore': '!*\n',
      'vendor/lib.js': 'x\n',
      'src/app.js': 'y\n',
    });
    expect(await listed(dir)).toEqual(['.gitignore', 'src/app.js']);
  });

  it('are not followed through a symlink, and one over the size cap is skipped', async () => {
    const dir = tree({
      'outside.ignore': '*.js\n',
      'big/.gitignore': `*.js\n${'#'.repeat(MAX_GITIGNORE_BYTES)}\n`,
      'big/a.js': '1\n',
      'linked/a.js': '1\n',
      'plain/.gitignore': '*.js\n',
      'plain/a.js': '1\n',
    });
    symlinkSync(path.join(dir, 'outside.ignore'), path.join(dir, 'linked', '.gitignore'));
    expect((await listed(dir)).filter((f) => f.endsWith('.js'))).toEqual([
      'big/a.js',
      'linked/a.js',
    ]);
  });
});

const hasGit = spawnSync('git', ['--version']).status === 0;

describe.skipIf(!hasGit)('the review against git itself', () => {
  it('lists exactly the files git does not ignore', async () => {
    const files: Record<string, string> = {
      '.gitignore': [
        '*.log',
        '!keep.log',
        'dist/',
        '/rooted.txt',
        'docs/**/draft-*.md',
        'cache/**',
        '!cache/keep.txt',
        'file[0-9].txt',
        '',
      ].join('\n'),
      'keep.log': '',
      'a.log': '',
      'rooted.txt': '',
      'file1.txt': '',
      'fileX.txt': '',
      'dist/x.js': '',
      'docs/draft-1.md': '',
      'docs/a/b/draft-2.md': '',
      'docs/a/final.md': '',
      'cache/keep.txt': '',
      'cache/drop.txt': '',
      'pkg/.gitignore': '/local.txt\ngen/\n*.tmp\n!keep.log\n!dist/\nnested/deep.txt\n',
      'pkg/local.txt': '',
      'pkg/rooted.txt': '',
      'pkg/a/local.txt': '',
      'pkg/gen/x.ts': '',
      'pkg/a/gen/y.ts': '',
      'pkg/x.tmp': '',
      'pkg/a.log': '',
      'pkg/keep.log': '',
      'pkg/dist/kept.js': '',
      'pkg/nested/deep.txt': '',
      'pkg/nested/other.txt': '',
      'pkg/sub/.gitignore': '!*.tmp\nkeep.log\n*.md\n!README.md\n',
      'pkg/sub/x.tmp': '',
      'pkg/sub/keep.log': '',
      'pkg/sub/notes.md': '',
      'pkg/sub/README.md': '',
      'pkg/sub/deeper/y.tmp': '',
      'gen/top.ts': '',
      'other/x.tmp': '',
      'other/local.txt': '',
      'vendor/.gitignore': '*\n!.gitignore\n!keep/\n!keep/**\n',
      'vendor/drop.js': '',
      'vendor/keep/kept.js': '',
      // folder names that mean something in a pattern, holding their own rules
      'we[i]rd*/.gitignore': '*.out\n/here.txt\nsub/x.txt\n',
      'we[i]rd*/a.out': '',
      'we[i]rd*/here.txt': '',
      'we[i]rd*/sub/x.txt': '',
      'we[i]rd*/sub/y.txt': '',
      'weird/a.out': '',
      '#hash/.gitignore': '*.out\n',
      '#hash/a.out': '',
      '!bang/.gitignore': '*.out\n',
      '!bang/a.out': '',
      'sp ace/.gitignore': 'x.txt   \n\\#lit\n\\!lit\ntrail\\ \n  lead.txt\n# comment\n\n/\n',
      'sp ace/x.txt': '',
      'sp ace/#lit': '',
      'sp ace/!lit': '',
      'sp ace/trail ': '',
      'sp ace/trail': '',
      'sp ace/  lead.txt': '',
      'sp ace/lead.txt': '',
      'crlf/.gitignore': 'a.txt\r\nb/\r\n',
      'crlf/a.txt': '',
      'crlf/b/c.txt': '',
      'crlf/c.txt': '',
    };
    const dir = tree(files);
    const env = { ...process.env, GIT_CONFIG_GLOBAL: '/dev/null', GIT_CONFIG_NOSYSTEM: '1' };
    execFileSync('git', ['init', '-q'], { cwd: dir, env });
    const fromGit = execFileSync('git', ['ls-files', '--others', '--exclude-standard', '-z'], {
      cwd: dir,
      env,
    })
      .toString()
      .split('\0')
      .filter(Boolean)
      .sort();
    // the oracle must see nested rules at work, or agreeing with it proves little
    expect(fromGit).toContain('pkg/keep.log');
    expect(fromGit).toContain('pkg/dist/kept.js');
    expect(fromGit).toContain('pkg/sub/x.tmp');
    expect(fromGit).not.toContain('pkg/sub/keep.log');
    expect(fromGit).toContain('vendor/keep/kept.js');
    expect(fromGit).not.toContain('vendor/drop.js');
    expect((await listed(dir)).sort()).toEqual(fromGit);
  });
});
