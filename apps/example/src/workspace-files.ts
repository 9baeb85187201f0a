import { readFileSync, realpathSync, statSync } from 'node:fs';
import { readdir, readFile, stat } from 'node:fs/promises';
import path from 'node:path';
import { TeamError } from '@teamwire/core';

/** Folders never listed, besides those the root `.gitignore` names as `name/`. */
const ALWAYS_IGNORED = ['.git', 'node_modules'];

/** A directory the review is confined to. Every path the tools take is resolved inside it. */
export interface ReviewRoot {
  /** Absolute, symlink-free path of the root. */
  readonly dir: string;
  /** Folder names skipped at any depth. */
  readonly ignored: ReadonlySet<string>;
}

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
  const ignored = new Set(ALWAYS_IGNORED);
  try {
    for (const raw of readFileSync(path.join(real, '.gitignore'), 'utf8').split('\n')) {
      const line = raw.trim();
      const match = /^\/?([^/*!#\s]+)\/$/.exec(line);
      if (match?.[1]) ignored.add(match[1]);
    }
  } catch {
    // no .gitignore: only the fixed names are skipped
  }
  return { dir: real, ignored };
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
    if (entry.isDirectory()) {
      if (root.ignored.has(entry.name)) continue;
      out.push(...(await walkFiles(root, full)));
    } else if (entry.isFile()) {
      out.push(full);
    }
  }
  return out;
}

export async function describeFile(root: ReviewRoot, absolute: string): Promise<FileInfo> {
  const buffer = await readFile(absolute);
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
