import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import {
  createDashboardHandler,
  type DashboardHandlerOptions,
  generateDashboardToken,
} from './server.js';

/** Options of {@link serveDashboard}: the handler's, with a generated token by default. */
export interface ServeDashboardOptions extends Omit<DashboardHandlerOptions, 'token'> {
  /** The access token (default: a new random one). */
  token?: string | undefined;
  /** Address to bind (default `127.0.0.1`). */
  host?: string | undefined;
  /** Port (default 0: any free port). */
  port?: number | undefined;
}

/** A running dashboard; see {@link serveDashboard}. */
export interface DashboardServer {
  /** The page's URL, with its token: what a person opens. Treat it as a secret. */
  readonly url: string;
  /** The bound port. */
  readonly port: number;
  /** The access token. */
  readonly token: string;
  /** Ends the streams and closes the server (the team is left to its owner). */
  close(): Promise<void>;
}

/** Serves the dashboard on its own HTTP server, on 127.0.0.1 by default. */
export async function serveDashboard(options: ServeDashboardOptions): Promise<DashboardServer> {
  const token = options.token ?? generateDashboardToken();
  const host = options.host ?? '127.0.0.1';
  const handler = createDashboardHandler({ ...options, token });
  const server = createServer((req, res) => {
    handler(req, res).catch(() => {
      if (!res.headersSent) res.writeHead(500);
      res.end();
    });
  });
  server.on('clientError', (_error, socket) => socket.destroy());
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const { port } = server.address() as AddressInfo;
  const shown = host.includes(':') ? `[${host}]` : host;
  return {
    url: `http://${shown}:${port}/?token=${encodeURIComponent(token)}`,
    port,
    token,
    async close() {
      handler.close();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
