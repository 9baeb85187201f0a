import { closeSync, constants, fstatSync, lstatSync, openSync, readSync } from 'node:fs';
import path from 'node:path';
import ignore from 'ignore';

/**
 * A `.gitignore` larger than this is skipped, as git skips one over 100 MiB: the review reads the
 * file of every folder it walks, so each read is bounded.
 */
export const MAX_GITIGNORE_BYTES = 1024 * 1024;

/** Whether a path (relative to the root, `/`-separated) is ignored by the tree's `.gitignore` files. */
export type GitignoreMatcher = (relative: string, isDirectory: boolean) => boolean;

/**
 * The `.gitignore` files of a tree, as git reads them: a folder's file applies to the paths below
 * it, its patterns relative to that folder, and the deepest file with a matching pattern decides
 * (within one file, the last matching pattern). Each folder's file is read once, when a path
 * below it is first asked about. As in git, a path inside an ignored folder is ignored (no
 * pattern can re-include it), and a `.gitignore` that is a symlink is not followed.
 */
export function gitignoreMatcher(rootDir: string): GitignoreMatcher {
  // One set of rules for the whole tree, each nested file's patterns rebased onto the root and
  // added after its ancestors' files: then `ignore`'s last-match-wins is git's deepest-file-wins,
  // and its "a parent folder is ignored" check sees every file's say about that folder.
  // git compares case-sensitively unless core.ignorecase is set.
  const rules = ignore({ ignorecase: false });
  const looked = new Set<string>();
  const load = (folder: string) => {
    if (looked.has(folder)) return;
    looked.add(folder);
    const text = readGitignore(path.join(rootDir, folder, '.gitignore'));
    if (text !== undefined) rules.add(folder === '' ? text : rebase(text, folder));
  };
  return (relative, isDirectory) => {
    if (relative === '' || relative === '.') return false;
    load('');
    for (let i = relative.indexOf('/'); i !== -1; i = relative.indexOf('/', i + 1)) {
      load(relative.slice(0, i));
    }
    // a trailing slash is how `ignore` tells a folder, which `dir/` patterns match
    return rules.ignores(isDirectory ? `${relative}/` : relative);
  };
}

/**
 * The patterns of `folder/.gitignore`, rewritten relative to the root. git matches a pattern with
 * a slash before its end against the path relative to the file's folder, and one without against
 * the name at any depth below that folder.
 */
function rebase(text: string, folder: string): string[] {
  const base = folder.replace(/[\\*?[\]!#]/g, '\\$&');
  const patterns: string[] = [];
  for (const raw of text.split(/\r?\n/)) {
    // trailing spaces do not count unless escaped with a backslash
    const line = raw.replace(/(?<!\\) +$/, '');
    if (line === '' || line.startsWith('#')) continue;
    const negated = line.startsWith('!');
    const pattern = negated ? line.slice(1) : line;
    if (pattern.replace(/^\/|\/$/g, '') === '') continue;
    const anchored = pattern.replace(/\/$/, '').includes('/');
    const body = anchored ? pattern.replace(/^\//, '') : `**/${pattern}`;
    patterns.push(`${negated ? '!' : ''}${base}/${body}`);
  }
  return patterns;
}

/** The text of a regular `.gitignore` file, or `undefined` when there is none to use. */
function readGitignore(file: string): string | undefined {
  let fd: number;
  try {
    // not through a symlink, as git >= 2.32 does not: it could point outside the review
    if (!lstatSync(file).isFile()) return undefined;
    fd = openSync(file, constants.O_RDONLY | (constants.O_NOFOLLOW ?? 0));
  } catch {
    return undefined;
  }
  try {
    const info = fstatSync(fd);
    if (!info.isFile() || info.size > MAX_GITIGNORE_BYTES) return undefined;
    // at most the size seen now, should the file grow while it is read
    const buffer = Buffer.alloc(info.size);
    const read = readSync(fd, buffer, 0, info.size, 0);
    return buffer.subarray(0, read).toString('utf8');
  } finally {
    closeSync(fd);
  }
}
