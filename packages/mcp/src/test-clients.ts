import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';

/*
 * Helpers of the end-to-end tests: real SDK clients over HTTP and stdio, a tool call that throws
 * the TeamError code of a tool error, and a scripted "coding agent" that works a task board.
 */

const SERVE_TEAM = fileURLToPath(new URL('../test/serve-team.mjs', import.meta.url));

/** Every record of the JSONL team log in `dir`, parsed. */
export async function logRecords(dir: string): Promise<{ type: string; [key: string]: unknown }[]> {
  const text = await readFile(join(dir, 'log.jsonl'), 'utf8');
  return text
    .split('\n')
    .filter((line) => line !== '')
    .map((line) => JSON.parse(line));
}

/** How many `message.delivered` records name the message `id`. */
export function deliveredCount(
  records: { type: string; messageId?: unknown }[],
  id: string,
): number {
  return records.filter((r) => r.type === 'message.delivered' && r.messageId === id).length;
}

/** A tool error, as the client saw it. */
export class ToolCallError extends Error {
  constructor(
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

/** Calls a tool; its structured result, or a {@link ToolCallError} with the TeamError code. */
// biome-ignore lint/suspicious/noExplicitAny: results are checked by the tests
export async function call(client: Client, name: string, args: object = {}): Promise<any> {
  const result = (await client.callTool({ name, arguments: { ...args } })) as CallToolResult;
  const structured = result.structuredContent as Record<string, unknown> | undefined;
  if (result.isError === true) {
    const error = structured?.error as { code?: string; message?: string } | undefined;
    throw new ToolCallError(
      error?.code ?? 'UNSTRUCTURED',
      error?.message ?? JSON.stringify(result),
    );
  }
  return structured;
}

/** The code of the tool error `promise` rejects with. */
export async function codeOf(promise: Promise<unknown>): Promise<string> {
  try {
    await promise;
  } catch (error) {
    if (error instanceof ToolCallError) return error.code;
    throw error;
  }
  throw new Error('expected a tool error');
}

/** A client connected over Streamable HTTP with `token`. */
export async function connectHttp(url: string, token: string | undefined): Promise<Client> {
  const client = new Client({ name: 'e2e-http', version: '1.0.0' });
  const transport = new StreamableHTTPClientTransport(new URL(url), {
    requestInit: token === undefined ? {} : { headers: { Authorization: `Bearer ${token}` } },
  });
  await client.connect(transport);
  return client;
}

/**
 * A client that starts `serve-team.mjs` for `member` over stdio, on the team folder `where` (or
 * with the store arguments `where`), plus `extra` arguments.
 */
export async function connectStdio(
  where: string | readonly string[],
  member: string,
  extra: readonly string[] = [],
): Promise<{ client: Client; transport: StdioClientTransport; stderr: () => string }> {
  const store = typeof where === 'string' ? ['--dir', where] : where;
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [SERVE_TEAM, ...store, '--stdio', member, ...extra],
    stderr: 'pipe',
  });
  let stderr = '';
  transport.stderr?.on('data', (chunk: Buffer) => {
    stderr += chunk.toString('utf8');
  });
  const client = new Client({ name: `e2e-stdio-${member}`, version: '1.0.0' });
  await client.connect(transport);
  return { client, transport, stderr: () => stderr };
}

/** Waits until `stderr()` holds a JSON line with a `url`; returns it. */
export async function urlFrom(stderr: () => string): Promise<string> {
  for (let i = 0; i < 600; i++) {
    const match = /\{"url":"([^"]+)"\}/.exec(stderr());
    if (match?.[1] !== undefined) return match[1];
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  throw new Error(`no url on stderr: ${stderr()}`);
}

/**
 * SIGKILLs the process `pid` and waits until it is gone. A process that already exited (the
 * server ends when its client's stdin closes) is gone already: `ESRCH` is that answer.
 */
export async function kill(pid: number): Promise<void> {
  try {
    process.kill(pid, 'SIGKILL');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ESRCH') return;
    throw error;
  }
  for (let i = 0; i < 200; i++) {
    try {
      process.kill(pid, 0);
    } catch {
      return;
    }
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
  throw new Error(`process ${pid} did not die`);
}

/** Starts `serve-team.mjs` as a plain child process (no stdio client). */
export function startServer(dir: string, extra: readonly string[]): ChildProcess {
  return spawn(process.execPath, [SERVE_TEAM, '--dir', dir, ...extra], {
    stdio: ['ignore', 'ignore', 'pipe'],
  });
}

/** Waits for `child` to exit. */
export async function exited(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  await once(child, 'exit');
}

/** What one scripted coding agent did. */
export interface AgentLog {
  /** Ids of every message it read, in order (repeats included). */
  read: string[];
  /** Tasks it completed. */
  completed: string[];
}

/**
 * A scripted coding agent: reads and acknowledges its mail, claims ready tasks, completes them and
 * reports each to the lead, waits for changes in between, and stops when the whole board is done.
 */
export async function workTheBoard(client: Client, name: string, tasks: number): Promise<AgentLog> {
  const log: AgentLog = { read: [], completed: [] };
  let cursor: string | undefined;
  for (let round = 0; round < 200; round++) {
    const page = await call(client, 'read_inbox', cursor === undefined ? {} : { after: cursor });
    cursor = page.cursor;
    for (const message of page.messages) log.read.push(message.id);
    const done = await call(client, 'task_list', { status: 'completed' });
    if (done.tasks.length === tasks) {
      if (cursor !== undefined) await call(client, 'ack_inbox', { cursor });
      return log;
    }
    const ready = await call(client, 'task_list', { ready: true });
    let worked = false;
    for (const task of ready.tasks) {
      try {
        await call(client, 'task_update', { taskId: task.id, action: 'claim' });
      } catch (error) {
        if (error instanceof ToolCallError && error.code === 'TASK_OWNED') continue;
        throw error;
      }
      await call(client, 'task_update', { taskId: task.id, action: 'complete' });
      await call(client, 'send_message', { to: 'lead', message: `${name} finished ${task.id}` });
      log.completed.push(task.id);
      worked = true;
      break;
    }
    if (!worked) await call(client, 'wait_for_change', { timeoutSeconds: 2 });
  }
  throw new Error(`${name} did not finish the board`);
}
