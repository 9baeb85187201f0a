import { createServer, type IncomingHttpHeaders, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, afterEach, beforeAll, vi } from 'vitest';

/** One scripted HTTP answer of the loopback server. */
export interface ScriptedResponse {
  status?: number;
  headers?: Record<string, string>;
  /** Body pieces, each written with its own `write` (and so its own chunk on the wire). */
  body?: (string | Uint8Array)[];
  /** What happens after the body: end it (default), keep it open, or reset the socket. */
  after?: 'end' | 'hang' | 'destroy';
  /** Reset the connection before any response bytes (a network failure). */
  reset?: boolean;
}

/** A request the loopback server received. */
export interface RecordedRequest {
  method: string;
  path: string;
  headers: IncomingHttpHeaders;
  /** The body parsed as JSON. */
  body: Record<string, unknown>;
  /** Resolves when the server side of this exchange is closed (by either peer). */
  closed: Promise<void>;
  /** Writes more of the response body, for a response left open with `after: 'hang'`. */
  write(piece: string): Promise<void>;
}

/** An HTTP server on 127.0.0.1 (random port) that answers with scripted responses in order. */
export interface LoopbackServer {
  /** `http://127.0.0.1:<port>/v1` */
  baseURL: string;
  requests: RecordedRequest[];
  /** Queues responses for the next requests. */
  reply(...responses: ScriptedResponse[]): void;
  /** Forgets recorded requests and unused responses (between tests). */
  reset(): void;
  close(): Promise<void>;
}

/** SSE headers of a streaming answer. */
export const SSE_HEADERS = { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' };

async function play(res: ServerResponse, scripted: ScriptedResponse): Promise<void> {
  if (scripted.reset) {
    res.socket?.destroy();
    return;
  }
  res.writeHead(scripted.status ?? 200, scripted.headers ?? SSE_HEADERS);
  res.flushHeaders();
  for (const piece of scripted.body ?? []) {
    await new Promise<void>((resolve) => {
      if (res.destroyed) resolve();
      else res.write(piece, () => resolve());
    });
  }
  if (scripted.after === 'hang') return;
  if (scripted.after === 'destroy') {
    res.socket?.destroy();
    return;
  }
  res.end();
}

/** Starts a {@link LoopbackServer}. */
export async function startLoopbackServer(): Promise<LoopbackServer> {
  const queue: ScriptedResponse[] = [];
  const requests: RecordedRequest[] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const text = Buffer.concat(chunks).toString('utf8');
      let body: Record<string, unknown> = {};
      try {
        body = text === '' ? {} : (JSON.parse(text) as Record<string, unknown>);
      } catch {
        body = { unparsable: text };
      }
      const closed = new Promise<void>((resolve) => res.once('close', () => resolve()));
      requests.push({
        method: req.method ?? '',
        path: req.url ?? '',
        headers: req.headers,
        body,
        closed,
        write: (piece) =>
          new Promise<void>((resolve) => {
            if (res.destroyed) resolve();
            else res.write(piece, () => resolve());
          }),
      });
      const scripted = queue.shift() ?? {
        status: 500,
        headers: { 'content-type': 'application/json' },
        body: ['{"error":{"message":"no scripted response left"}}'],
      };
      void play(res, scripted);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    baseURL: `http://127.0.0.1:${port}/v1`,
    requests,
    reply: (...responses) => queue.push(...responses),
    reset: () => {
      queue.length = 0;
      requests.length = 0;
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/**
 * A {@link LoopbackServer} for the enclosing suite (file or `describe`): started before its
 * tests, reset after each one (stubbed env vars too), closed after all. The returned object
 * forwards to the running server, so it may be captured before the server starts.
 */
export function useLoopbackServer(): LoopbackServer {
  let running: LoopbackServer | undefined;
  beforeAll(async () => {
    running = await startLoopbackServer();
  });
  afterAll(async () => {
    await running?.close();
  });
  afterEach(() => {
    running?.reset();
    vi.unstubAllEnvs();
  });
  const current = (): LoopbackServer => {
    if (running === undefined) throw new Error('the loopback server has not started yet');
    return running;
  };
  return {
    get baseURL() {
      return current().baseURL;
    },
    get requests() {
      return current().requests;
    },
    reply: (...responses) => current().reply(...responses),
    reset: () => current().reset(),
    close: () => current().close(),
  };
}
