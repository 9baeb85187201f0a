import { readFileSync, realpathSync, statSync } from 'node:fs';
import { readdir, readFile, stat } from 'node:fs/promises';
import path from 'node:path';
import { TeamError } from '@teamwire/core';

/** Folders never listed, whatever `.gitignore` says. */
const ALWAYS_IGNORED = ['.git', 'node_modules'];

/** A directory the review is confined to. Every path the tools take is resolved inside it. */
export interface ReviewRoot {
  /** Absolute, symlink-free path of the root. */
  readonly dir: string;
  /** Whether a path (relative, `/`-separated) is skipped: see {@link parseIgnoreFile}. */
  ignores(relative: string, isDirectory: boolean): boolean;
}

interface IgnoreRule {
  regex: RegExp;
  /** Matched against the whole relative path (pattern had a `/` before its end), else the base name. */
  anchored: boolean;
  directoryOnly: boolean;
  /** A `!` rule: re-includes what an earlier rule ignored. */
  negated: boolean;
}

/**
 * `.gitignore` rules: `name`, `*.ext`, `dir/`, `path/to/x` and `/rooted` patterns with `*`, `?`,
 * `[a-z]` classes and `\` escapes; `**` as a whole path segment (leading: in any folder;
 * trailing: everything inside; inner: zero or more folders); and `!` negations, the last matching
 * rule winning. As in git, a file inside an ignored folder cannot be re-included, since the
 * folder is never entered.
 */
export function parseIgnoreFile(text: string): IgnoreRule[] {
  const rules: IgnoreRule[] = [];
  for (const raw of text.split('\n')) {
    let line = raw.replace(/\r$/, '');
    // trailing spaces are dropped unless escaped
    line = line.replace(/(?<!\\)\s+$/, '');
    if (!line || line.startsWith('#')) continue;
    const negated = line.startsWith('!');
    if (negated) line = line.slice(1);
    else if (line.startsWith('\\!') || line.startsWith('\\#')) line = line.slice(1);
    const directoryOnly = line.endsWith('/');
    if (directoryOnly) line = line.slice(0, -1);
    const anchored = line.includes('/');
    if (line.startsWith('/')) line = line.slice(1);
    if (!line) continue;
    rules.push({ regex: globToRegex(line), anchored, directoryOnly, negated });
  }
  return rules;
}

/** Whether `rules` ignore a path (relative, `/`-separated): the last rule that matches decides. */
export function isIgnored(
  rules: readonly IgnoreRule[],
  relative: string,
  isDirectory: boolean,
): boolean {
  const base = relative.slice(relative.lastIndexOf('/') + 1);
  let ignored = false;
  for (const rule of rules) {
    if (rule.directoryOnly && !isDirectory) continue;
    if (rule.regex.test(rule.anchored ? relative : base)) ignored = !rule.negated;
  }
  return ignored;
}

/** One glob pattern (no leading or trailing `/`) as an anchored regular expression. */
function globToRegex(pattern: string): RegExp {
  const segments = pattern.split('/');
  let out = '';
  segments.forEach((segment, i) => {
    const last = i === segments.length - 1;
    if (segment === '**') {
      // leading: any folders before; trailing: everything inside; inner: zero or more folders
      if (i === 0) out += last ? '.*' : '(?:.*/)?';
      else out += last ? '/.+' : '/(?:.*/)?';
      return;
    }
    if (i > 0 && segments[i - 1] !== '**') out += '/';
    out += segmentToRegex(segment);
  });
  return new RegExp(`^${out}$`);
}

function segmentToRegex(segment: string): string {
  let out = '';
  for (let i = 0; i < segment.length; i++) {
    const c = segment[i] as string;
    if (c === '\\' && i + 1 < segment.length) {
      out += escapeRegex(segment[++i] as string);
    } else if (c === '*') {
      while (segment[i + 1] === '*') i++;
      out += '[^/]*';
    } else if (c === '?') {
      out += '[^/]';
    } else if (c === '[') {
      const end = segment.indexOf(']', i + 2);
      if (end === -1) {
        out += '\\[';
        continue;
      }
      let body = segment.slice(i + 1, end);
      const negate = body.startsWith('!') || body.startsWith('^');
      if (negate) body = body.slice(1);
      out += `[${negate ? '^' : ''}${body.replace(/[\\\]^]/g, '\\$&')}]`;
      i = end;
    } else {
      out += escapeRegex(c);
    }
  }
  return out;
}

const escapeRegex = (c: string) => c.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&');

export function openReviewRoot(dir: string): ReviewRoot {
  let real: string;
  try {
    real = realpathSync(dir);
  } catch (cause) {
    throw new TeamError('INVALID_ARGUMENT', `review directory ${dir} does not exist`, { cause });
  }
  if (!statSync(real).isDirectory()) {
    throw new TeamError('INVALID_ARGUMENT', `review directory ${dir} is not a directory`);
  }
  let rules: IgnoreRule[] = [];
  try {
    rules = parseIgnoreFile(readFileSync(path.join(real, '.gitignore'), 'utf8'));
  } catch {
    // no .gitignore: only the fixed names are skipped
  }
  return {
    dir: real,
    ignores(relative, isDirectory) {
      const base = relative.slice(relative.lastIndexOf('/') + 1);
      if (isDirectory && ALWAYS_IGNORED.includes(base)) return true;
      return isIgnored(rules, relative, isDirectory);
    },
  };
}

/**
 * Resolves `relative` inside the root, refusing anything that lands outside it — through `..`,
 * an absolute path, or a symlink pointing out.
 */
export function resolveInside(root: ReviewRoot, relative: string): string {
  if (typeof relative !== 'string' || relative.includes('\0')) {
    throw new TeamError('INVALID_ARGUMENT', 'path must be a string without NUL bytes');
  }
  const candidate = path.resolve(root.dir, relative || '.');
  const inside = (p: string) => p === root.dir || p.startsWith(root.dir + path.sep);
  if (!inside(candidate)) {
    throw new TeamError('INVALID_ARGUMENT', `path ${relative} is outside the review directory`);
  }
  let real: string;
  try {
    real = realpathSync(candidate);
  } catch (cause) {
    throw new TeamError('INVALID_ARGUMENT', `path ${relative} does not exist`, { cause });
  }
  if (!inside(real)) {
    throw new TeamError('INVALID_ARGUMENT', `path ${relative} leads outside the review directory`);
  }
  return real;
}

export function toRelative(root: ReviewRoot, absolute: string): string {
  return path.relative(root.dir, absolute).split(path.sep).join('/') || '.';
}

/** Lines of a text: newline count, plus one for an unterminated last line. */
export function countLines(text: string): number {
  if (text.length === 0) return 0;
  let n = 0;
  for (let i = text.indexOf('\n'); i !== -1; i = text.indexOf('\n', i + 1)) n++;
  return text.endsWith('\n') ? n : n + 1;
}

export function isBinary(buffer: Buffer): boolean {
  return buffer.subarray(0, 8192).includes(0);
}

export interface FileInfo {
  path: string;
  bytes: number;
  /** `null` for binary files. */
  lines: number | null;
}

/** Every file below `absolute` (depth-first, names sorted), skipping ignored folders and symlinks. */
export async function walkFiles(root: ReviewRoot, absolute: string): Promise<string[]> {
  const info = await stat(absolute);
  if (info.isFile()) return [absolute];
  const out: string[] = [];
  const entries = await readdir(absolute, { withFileTypes: true });
  entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  for (const entry of entries) {
    const full = path.join(absolute, entry.name);
    const relative = toRelative(root, full);
    if (entry.isDirectory()) {
      if (root.ignores(relative, true)) continue;
      out.push(...(await walkFiles(root, full)));
    } else if (entry.isFile() && !root.ignores(relative, false)) {
      out.push(full);
    }
  }
  return out;
}

/** Reads a file, or `undefined` when it vanished since it was listed. */
export async function readIfPresent(absolute: string): Promise<Buffer | undefined> {
  try {
    return await readFile(absolute);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw error;
  }
}

/** Size and line count of a file; `undefined` when it vanished since it was listed. */
export async function describeFile(
  root: ReviewRoot,
  absolute: string,
): Promise<FileInfo | undefined> {
  const buffer = await readIfPresent(absolute);
  if (buffer === undefined) return undefined;
  return {
    path: toRelative(root, absolute),
    bytes: buffer.length,
    lines: isBinary(buffer) ? null : countLines(buffer.toString('utf8')),
  };
}

/** Matches a line that is a TODO or FIXME marker. */
export const TODO_PATTERN = /\b(TODO|FIXME)\b/;

/** Matches a top-level exported declaration and captures its name. */
export const EXPORT_PATTERN =
  /^export\s+(?:declare\s+)?(?:default\s+)?(?:abstract\s+)?(?:async\s+)?(?:function\*?|class|const|let|var|interface|type|enum)\s+([A-Za-z_$][\w$]*)/;

/** Files whose exports are counted. */
export const SOURCE_EXTENSIONS = ['.ts', '.tsx', '.mts', '.js', '.mjs', '.jsx'];
