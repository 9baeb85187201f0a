import type { Readable, Writable } from 'node:stream';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { createMemberServer, type MemberServerOptions } from './member-server.js';

/** Options of {@link serveStdio}. */
export interface ServeStdioOptions extends MemberServerOptions {
  /** Where requests come from (default `process.stdin`). */
  stdin?: Readable | undefined;
  /** Where answers go (default `process.stdout`); nothing else may write there. */
  stdout?: Writable | undefined;
}

/** A running stdio server; see {@link serveStdio}. */
export interface StdioServing {
  /** Resolves when the client closes the connection (its end of stdin). */
  readonly closed: Promise<void>;
  /** Closes the connection from this side. */
  close(): Promise<void>;
}

/**
 * Serves one external member over stdio: the client started this process, and the member is
 * fixed by its command line (`member`), so there is no token. The connection ends when the
 * client closes stdin; the team is not disposed (its owner does that).
 */
export async function serveStdio(options: ServeStdioOptions): Promise<StdioServing> {
  const { server, close } = createMemberServer(options);
  const transport = new StdioServerTransport(options.stdin, options.stdout);
  let ended: () => void = () => {};
  const closed = new Promise<void>((resolve) => {
    ended = resolve;
  });
  server.onclose = () => {
    close();
    ended();
  };
  const input = options.stdin ?? process.stdin;
  input.once('end', () => void server.close());
  await server.connect(transport);
  return {
    closed,
    async close() {
      await server.close();
    },
  };
}
