import { realpathSync, statSync } from 'node:fs';
import { readdir, readFile, stat } from 'node:fs/promises';
import path from 'node:path';
import { TeamError } from '@teamwire/core';
import { gitignoreMatcher } from './gitignore.js';

/** Folders never listed, whatever `.gitignore` says. */
const ALWAYS_IGNORED = ['.git', 'node_modules'];

/** A directory the review is confined to. Every path the tools take is resolved inside it. */
export interface ReviewRoot {
  /** Absolute, symlink-free path of the root. */
  readonly dir: string;
  /**
   * Whether a path (relative, `/`-separated) is skipped: `.git` and `node_modules` folders, and
   * what the tree's `.gitignore` files ignore (see {@link gitignoreMatcher}).
   */
  ignores(relative: string, isDirectory: boolean): boolean;
}

export function openReviewRoot(
  dir: string,
  options: { hideFiles?: readonly string[] } = {},
): ReviewRoot {
  let real: string;
  try {
    real = realpathSync(dir);
  } catch (cause) {
    throw new TeamError('INVALID_ARGUMENT', `review directory ${dir} does not exist`, { cause });
  }
  if (!statSync(real).isDirectory()) {
    throw new TeamError('INVALID_ARGUMENT', `review directory ${dir} is not a directory`);
  }
  const gitignored = gitignoreMatcher(real);
  return {
    dir: real,
    ignores(relative, isDirectory) {
      const base = relative.slice(relative.lastIndexOf('/') + 1);
      if (isDirectory && ALWAYS_IGNORED.includes(base)) return true;
      // files a job writes itself (the fix job's REVIEW.md) are hidden so a redo sees the same tree
      if (!isDirectory && options.hideFiles?.includes(base)) return true;
      return gitignored(relative, isDirectory);
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
