import { readFile } from 'node:fs/promises';
import { type AgentTool, defineTool, TeamError, type ToolContext } from '@teamwire/core';
import { z } from 'zod';
import {
  describeFile,
  type FileInfo,
  isBinary,
  type ReviewRoot,
  readIfPresent,
  resolveInside,
  toRelative,
  walkFiles,
} from './workspace-files.js';

const MAX_LIST = 2000;
const MAX_READ_LINES = 2000;
const MAX_MATCHES = 500;

export const ListFilesInput = z.object({
  path: z.string().default('.').describe('Folder (or file) relative to the review directory.'),
  limit: z.number().int().min(1).max(MAX_LIST).default(500).describe('Most files to return.'),
});

export const ReadFileInput = z.object({
  path: z.string().min(1).describe('File relative to the review directory.'),
  startLine: z.number().int().min(1).default(1).describe('First line to return (1-based).'),
  maxLines: z
    .number()
    .int()
    .min(1)
    .max(MAX_READ_LINES)
    .default(400)
    .describe('Most lines to return.'),
});

export const SearchTextInput = z.object({
  pattern: z.string().min(1).max(500).describe('JavaScript regular expression, matched per line.'),
  path: z
    .string()
    .default('.')
    .describe('Folder or file to search, relative to the review directory.'),
  flags: z
    .string()
    .regex(/^[imsu]*$/)
    .default('')
    .describe('Regular expression flags among i, m, s, u.'),
  extensions: z
    .array(z.string().regex(/^\.[A-Za-z0-9]+$/))
    .optional()
    .describe('Only search files with these extensions, e.g. [".ts"].'),
  limit: z.number().int().min(1).max(MAX_MATCHES).default(200).describe('Most matches to return.'),
});

export interface ListFilesResult {
  files: { path: string; bytes: number; lines: number | null }[];
  total: number;
  truncated: boolean;
}

export async function listFiles(
  root: ReviewRoot,
  input: z.input<typeof ListFilesInput>,
): Promise<ListFilesResult> {
  const { path, limit } = ListFilesInput.parse(input);
  const all = await walkFiles(root, resolveInside(root, path));
  const described = await Promise.all(all.map((file) => describeFile(root, file)));
  const files = described.filter((f): f is FileInfo => f !== undefined);
  return { files: files.slice(0, limit), total: files.length, truncated: files.length > limit };
}

export interface ReadFileResult {
  path: string;
  totalLines: number;
  startLine: number;
  text: string;
  truncated: boolean;
}

export async function readTextFile(
  root: ReviewRoot,
  input: z.input<typeof ReadFileInput>,
): Promise<ReadFileResult> {
  const { path, startLine, maxLines } = ReadFileInput.parse(input);
  const absolute = resolveInside(root, path);
  const buffer = await readFile(absolute).catch((cause: unknown) => {
    throw new TeamError('INVALID_ARGUMENT', `cannot read ${path}: it is not a readable file`, {
      cause,
    });
  });
  if (isBinary(buffer)) throw new TeamError('INVALID_ARGUMENT', `${path} is a binary file`);
  const lines = buffer.toString('utf8').split('\n');
  if (lines.at(-1) === '') lines.pop();
  const slice = lines.slice(startLine - 1, startLine - 1 + maxLines);
  return {
    path: toRelative(root, absolute),
    totalLines: lines.length,
    startLine,
    text: slice.join('\n'),
    truncated: startLine - 1 + maxLines < lines.length,
  };
}

export interface SearchTextResult {
  matches: { path: string; line: number; text: string }[];
  /** Every matching line, also those past `limit`. */
  total: number;
  filesSearched: number;
  truncated: boolean;
}

export async function searchText(
  root: ReviewRoot,
  input: z.input<typeof SearchTextInput>,
): Promise<SearchTextResult> {
  const { pattern, path, flags, extensions, limit } = SearchTextInput.parse(input);
  let regex: RegExp;
  try {
    regex = new RegExp(pattern, flags.replace('g', ''));
  } catch (cause) {
    throw new TeamError('INVALID_ARGUMENT', `invalid regular expression: ${pattern}`, { cause });
  }
  const files = await walkFiles(root, resolveInside(root, path));
  const matches: SearchTextResult['matches'] = [];
  let total = 0;
  let searched = 0;
  for (const file of files) {
    if (extensions && !extensions.some((ext) => file.endsWith(ext))) continue;
    const buffer = await readIfPresent(file);
    if (buffer === undefined || isBinary(buffer)) continue;
    searched++;
    const lines = buffer.toString('utf8').split('\n');
    for (let i = 0; i < lines.length; i++) {
      const line = lines[i] ?? '';
      if (!regex.test(line)) continue;
      total++;
      if (matches.length < limit) {
        matches.push({ path: toRelative(root, file), line: i + 1, text: line.slice(0, 240) });
      }
    }
  }
  return { matches, total, filesSearched: searched, truncated: total > matches.length };
}

/**
 * The read tools (`list_files`, `read_file`, `search_text`) on the root `root` gives for a call;
 * `where` names that root in their descriptions. Shared by the review and the fix job.
 */
export function readTools(root: (ctx: ToolContext) => ReviewRoot, where: string): AgentTool[] {
  return [
    defineTool({
      name: 'list_files',
      description: `List the files below a folder of ${where}, with sizes and line counts.`,
      inputSchema: ListFilesInput,
      execute: (input, ctx) => listFiles(root(ctx), input),
    }),
    defineTool({
      name: 'read_file',
      description: `Read lines of a text file of ${where}.`,
      inputSchema: ReadFileInput,
      execute: (input, ctx) => readTextFile(root(ctx), input),
    }),
    defineTool({
      name: 'search_text',
      description:
        'Search the files below a folder for lines matching a regular expression; returns matches and the exact total.',
      inputSchema: SearchTextInput,
      execute: (input, ctx) => searchText(root(ctx), input),
    }),
  ] as AgentTool[];
}
