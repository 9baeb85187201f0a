import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createAdaptorServer } from '@hono/node-server';
import { createTeamEdgeApp, MCP_PATH, type TeamEdgeAppOptions } from './app.js';
import { LOOPBACK_HOSTS } from './policy.js';

/** Options of {@link startTeamEdge}: the app's, and where to listen. */
export interface StartTeamEdgeOptions extends TeamEdgeAppOptions {
  /**
   * Address to bind (default `127.0.0.1`: only this machine can connect). When it is not a
   * loopback address, and `allowedHosts` is not given, the address itself is also allowed as
   * `Host`.
   */
  host?: string | undefined;
  /** Port (default 0: any free port; see `port` of the result). */
  port?: number | undefined;
}

/** A running edge; see {@link startTeamEdge}. */
export interface TeamEdge {
  /** The dashboard page's URL, with its token: what a person opens. Treat it as a secret. */
  readonly url: string;
  /** The MCP endpoint (`…/mcp`); each member presents its own bearer token. */
  readonly mcpUrl: string;
  /** The edge's origin, e.g. `http://127.0.0.1:43117`. */
  readonly origin: string;
  /** The bound port. */
  readonly port: number;
  /** The dashboard's access token. */
  readonly token: string;
  /** Open MCP sessions now. */
  sessionCount(): number;
  /**
   * Closes the MCP sessions, ends the open event streams and closes the server. The team, its
   * log and hub are left to their owner.
   */
  close(): Promise<void>;
}

/**
 * Starts the edge on one port: the dashboard at `/` and, when `mcp` is given, MCP's Streamable
 * HTTP at `/mcp` (see {@link createTeamEdgeApp} for the policy). It binds 127.0.0.1 by default.
 *
 * ```ts
 * const edge = await startTeamEdge({ team, log: store.log, hub, mcp: { tokens } });
 * console.log(`dashboard: ${edge.url}`); // http://127.0.0.1:…/?token=…
 * console.log(`MCP: ${edge.mcpUrl}`); // members connect with tokens.tokenFor(name)
 * // … later
 * await edge.close();
 * ```
 */
export async function startTeamEdge(options: StartTeamEdgeOptions): Promise<TeamEdge> {
  const host = options.host ?? '127.0.0.1';
  const shown = host.includes(':') ? `[${host}]` : host;
  const wildcard = host === '0.0.0.0' || host === '::';
  const allowedHosts =
    options.allowedHosts ??
    (LOOPBACK_HOSTS.includes(shown) || wildcard ? LOOPBACK_HOSTS : [...LOOPBACK_HOSTS, shown]);
  const edge = createTeamEdgeApp({ ...options, allowedHosts });
  const server = createAdaptorServer({ fetch: edge.app.fetch }) as Server;
  server.on('clientError', (_error, socket) => socket.destroy());
  try {
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(options.port ?? 0, host, () => {
        server.off('error', reject);
        resolve();
      });
    });
  } catch (error) {
    edge.close();
    throw error;
  }
  const { port } = server.address() as AddressInfo;
  const origin = `http://${wildcard ? '127.0.0.1' : shown}:${port}`;
  return {
    url: `${origin}/?token=${encodeURIComponent(edge.token)}`,
    mcpUrl: `${origin}${MCP_PATH}`,
    origin,
    port,
    token: edge.token,
    sessionCount: edge.sessionCount,
    async close() {
      edge.close();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
