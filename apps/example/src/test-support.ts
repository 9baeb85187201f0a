import { execFileSync, spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { type ChatMessage, contentText, parseTranscriptEntry } from '@teamwire/core';
import { TRANSCRIPTS_DIR } from '@teamwire/storage';

/** The built CLI; the example's tests run after its build (see turbo.json). */
export const CLI = fileURLToPath(new URL('../dist/cli.js', import.meta.url));

/**
 * The built `teamwire` command of @teamwire/cli: a team of the example is inspected, verified and
 * served to a stdio MCP client with it.
 */
export const TEAMWIRE_CLI = path.join(
  path.dirname(createRequire(import.meta.url).resolve('@teamwire/cli/package.json')),
  'dist',
  'cli.js',
);

export function tempDir(prefix: string): string {
  return mkdtempSync(path.join(tmpdir(), `teamwire-example-${prefix}-`));
}

function put(root: string, file: string, text: string): void {
  const full = path.join(root, file);
  mkdirSync(path.dirname(full), { recursive: true });
  writeFileSync(full, text);
}

/**
 * A small repository whose review numbers are known by construction: two workspace packages, two
 * plain folders, plus content every review must skip (ignored, hidden, root files).
 */
export function makeFixtureRepo(root: string, options: { extraUnits?: number } = {}): void {
  put(root, '.gitignore', 'dist/\ncoverage/\n');
  put(root, 'README.md', '# fixture\nTODO not in any unit\n');
  put(root, 'packages/alpha/package.json', '{ "name": "alpha" }\n');
  put(
    root,
    'packages/alpha/src/index.ts',
    'export const a = 1;\nexport function b() {}\n// TODO: more\n',
  );
  put(
    root,
    'packages/alpha/src/big.ts',
    `${Array.from({ length: 30 }, (_, i) => `const x${i} = ${i};`).join('\n')}\n`,
  );
  put(root, 'packages/alpha/src/index.test.ts', "import { a } from './index';\n");
  put(root, 'packages/alpha/dist/index.js', 'export const a = 1; // TODO ignored\n');
  put(root, 'packages/beta/package.json', '{ "name": "beta" }\n');
  put(
    root,
    'packages/beta/lib/main.js',
    'export class C {}\n// FIXME y\n// TODO z\nexport default 1;',
  );
  put(root, 'packages/notes.md', 'a loose file in a package container\n');
  put(root, 'docs/guide.md', '# Guide\nTODO write the guide\n\nend\n');
  put(root, 'tools/run.sh', '#!/bin/sh\necho run\n');
  put(root, 'tools/bin/blob.bin', 'a\0b\0c');
  put(root, '.hidden/secret.txt', 'TODO hidden\n');
  put(root, 'node_modules/dep/index.js', 'export const dep = 1; // TODO dep\n');
  for (let i = 1; i <= (options.extraUnits ?? 0); i++) {
    for (let f = 1; f <= 4; f++) {
      put(root, `extra${i}/file${f}.ts`, `export const v${f} = ${f};\n// TODO ${i}.${f}\n`);
    }
  }
}

/** What the fixture's review must report, unit by unit: files, lines, TODO/FIXME, exports. */
export const FIXTURE_EXPECTED: Record<
  string,
  { files: number; lines: number; todo: number; exports: number }
> = {
  docs: { files: 1, lines: 4, todo: 1, exports: 0 },
  'packages/alpha': { files: 4, lines: 1 + 3 + 30 + 1, todo: 1, exports: 2 },
  'packages/beta': { files: 2, lines: 1 + 4, todo: 2, exports: 1 },
  tools: { files: 2, lines: 2, todo: 0, exports: 0 },
};

export interface ReportRow {
  unit: string;
  files: number;
  lines: number;
  todo: number;
  exports: number;
  reviewer: string;
}

/** Reads the table at the top of a team report. */
export function parseReportTable(markdown: string): ReportRow[] {
  const rows: ReportRow[] = [];
  for (const line of markdown.split('\n')) {
    const m = /^\| ([^|*]+?) \| (\d+) \| (\d+) \| (\d+) \| (\d+) \| ([^|]+) \|$/.exec(line);
    if (m) {
      rows.push({
        unit: m[1] as string,
        files: Number(m[2]),
        lines: Number(m[3]),
        todo: Number(m[4]),
        exports: Number(m[5]),
        reviewer: (m[6] as string).trim(),
      });
    }
  }
  return rows;
}

export interface CliRun {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

/**
 * Runs the built CLI (`cli`: another one, such as {@link TEAMWIRE_CLI}) to completion (`env`:
 * added to this process's environment).
 */
export function runCli(
  args: readonly string[],
  options: { cwd: string; env?: NodeJS.ProcessEnv; cli?: string },
): Promise<CliRun> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [options.cli ?? CLI, ...args], {
      cwd: options.cwd,
      env: { ...process.env, ...options.env, INIT_CWD: options.cwd },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => {
      stdout += d.toString();
    });
    child.stderr.on('data', (d: Buffer) => {
      stderr += d.toString();
    });
    child.on('error', reject);
    child.on('close', (code, signal) => resolve({ code, signal, stdout, stderr }));
  });
}

/** Runs git in `cwd` and returns its output (throws on a non-zero exit). */
export function gitOut(cwd: string, args: readonly string[]): string {
  return execFileSync('git', ['-C', cwd, ...args], { encoding: 'utf8' });
}

/**
 * A small git repository for `demo fix`: three folders (`alpha`, `beta`, `gamma`) with known
 * review numbers, committed on `main`, plus a second branch and an untracked file so a test can
 * tell that the repository was left alone.
 */
export function makeFixRepo(root: string): void {
  put(root, 'README.md', '# fix fixture\n');
  put(root, 'alpha/index.ts', 'export const a = 1;\n// TODO: more\n');
  put(root, 'beta/notes.md', 'FIXME one\nTODO two\nthree\n');
  put(root, 'gamma/run.sh', '#!/bin/sh\necho run\n');
  const git = (...args: string[]) =>
    execFileSync('git', ['-C', root, ...args], {
      env: {
        ...process.env,
        GIT_AUTHOR_DATE: '2024-01-01T00:00:00Z',
        GIT_COMMITTER_DATE: '2024-01-01T00:00:00Z',
      },
    });
  git('init', '--quiet', '--initial-branch=main');
  git('add', '.');
  git(
    '-c',
    'user.name=fixture',
    '-c',
    'user.email=fixture@localhost',
    'commit',
    '--quiet',
    '-m',
    'fixture',
  );
  git('branch', 'side');
  put(root, 'untracked.txt', 'not committed\n');
}

/** What `demo fix` must write in each folder's REVIEW.md (a part of it). */
export const FIX_EXPECTED: Record<string, string[]> = {
  alpha: [
    '# Review of alpha',
    '- files: 1',
    '- lines: 2',
    '- TODO/FIXME: 1',
    '- exported symbols: 1',
  ],
  beta: [
    '# Review of beta',
    '- files: 1',
    '- lines: 3',
    '- TODO/FIXME: 2',
    '- exported symbols: 0',
  ],
  gamma: [
    '# Review of gamma',
    '- files: 1',
    '- lines: 2',
    '- TODO/FIXME: 0',
    '- exported symbols: 0',
  ],
};

/** Everything about a repository a run must not change: refs, HEAD, status, worktrees, stash. */
export function repoSnapshot(root: string): string {
  return [
    gitOut(root, ['for-each-ref', '--format=%(refname) %(objectname)']),
    gitOut(root, ['symbolic-ref', 'HEAD']),
    gitOut(root, ['status', '--porcelain=v1', '--untracked-files=all']),
    gitOut(root, ['worktree', 'list', '--porcelain']),
    gitOut(root, ['config', '--local', '--list']),
  ].join('\n---\n');
}

/**
 * Starts the CLI and SIGKILLs it as soon as `killWhen` says so about the output so far; resolves
 * with the output and whether it was killed (false: it ended by itself first).
 */
export function runCliUntil(
  args: readonly string[],
  cwd: string,
  killWhen: (stdout: string) => boolean,
): Promise<{ stdout: string; killed: boolean; code: number | null }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [CLI, ...args], {
      cwd,
      env: { ...process.env, INIT_CWD: cwd },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    child.stdout.on('data', (chunk: Buffer) => {
      out += chunk.toString();
      if (child.exitCode === null && !child.killed && killWhen(out)) child.kill('SIGKILL');
    });
    child.on('error', reject);
    child.on('close', (code, signal) =>
      resolve({ stdout: out, killed: signal === 'SIGKILL', code }),
    );
  });
}

/** A writable that keeps what the app printed, for `AppIo.stdout` / `stderr`. */
export function textSink(): { write(s: string): string; text(): string } {
  let text = '';
  return { write: (s: string) => (text += s), text: () => text };
}

/** Calls an MCP tool; its structured result, or an error carrying the tool error's content. */
// biome-ignore lint/suspicious/noExplicitAny: the tests check what comes back
export async function callTool(client: Client, name: string, args: object = {}): Promise<any> {
  const result = (await client.callTool({ name, arguments: { ...args } })) as CallToolResult;
  if (result.isError) throw new Error(JSON.stringify(result.content));
  return result.structuredContent;
}

/** The conversation of a member of a team kept in a JSONL folder, as its transcript holds it. */
export function transcriptOf(teamDir: string, memberId: string): ChatMessage[] {
  return readFileSync(path.join(teamDir, TRANSCRIPTS_DIR, `${memberId}.jsonl`), 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((line) => parseTranscriptEntry(JSON.parse(line)).message);
}

/** Each tool call of a conversation that failed: its tool's name and the error it got. */
export function failedCalls(messages: readonly ChatMessage[]): { tool: string; error: string }[] {
  return messages.flatMap((m) =>
    m.role === 'tool' && m.isError === true
      ? [{ tool: m.toolName, error: contentText(m.content) }]
      : [],
  );
}

/** The names of the tools a conversation called, in order. */
export function toolCalls(messages: readonly ChatMessage[]): string[] {
  return messages.flatMap((m) => (m.role === 'assistant' ? m.toolCalls.map((c) => c.name) : []));
}
