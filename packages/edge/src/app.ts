import type { EventHub, TeamLog, TeamService } from '@teamwire/core';
import { TeamError } from '@teamwire/core';
import {
  createDashboardRoutes,
  type DashboardRoutes,
  type DashboardRoutesOptions,
} from '@teamwire/dashboard';
import {
  createMcpRoutes,
  type McpRoutes,
  type McpRoutesOptions,
  type TokenIssuer,
} from '@teamwire/mcp';
import { type Context, Hono } from 'hono';
import { bodyLimit } from 'hono/body-limit';
import {
  EDGE_BODY_MAX_DEFAULT,
  generateEdgeToken,
  hostPolicy,
  LOOPBACK_HOSTS,
  presentedToken,
  tokenMatcher,
} from './policy.js';

/** The MCP endpoint's path on the edge. */
export const MCP_PATH = '/mcp';

/** What the edge serves of MCP; see {@link TeamEdgeAppOptions.mcp}. */
export interface EdgeMcpOptions extends Omit<McpRoutesOptions, 'team' | 'cursors'> {
  /**
   * Issues and checks the members' bearer tokens (`createTokenIssuer` of `@teamwire/mcp`): a
   * token names the one member it acts as, and also seals that member's inbox cursors.
   */
  tokens: TokenIssuer;
}

/** What the edge serves of the dashboard; see {@link TeamEdgeAppOptions.dashboard}. */
export type EdgeDashboardOptions = Omit<DashboardRoutesOptions, 'log' | 'hub' | 'team'>;

/** Options of {@link createTeamEdgeApp}. */
export interface TeamEdgeAppOptions {
  /**
   * The team, opened in this process. Without it the dashboard only watches (read-only), and MCP
   * cannot be served.
   */
  team?: TeamService | undefined;
  /** The team's log: the dashboard's snapshot is read from it. Needed with the dashboard. */
  log?: Pick<TeamLog, 'read' | 'lastSeq'> | undefined;
  /**
   * The hub whose events the dashboard streams (the one the team publishes to). Needed with the
   * dashboard.
   */
  hub?: EventHub | undefined;
  /**
   * The access token of the dashboard (16 to 512 characters of base64url or base64; default: a new
   * random one, see {@link generateEdgeToken}).
   */
  token?: string | undefined;
  /**
   * `Host` names the edge answers to (default {@link LOOPBACK_HOSTS}: `127.0.0.1`, `localhost`,
   * `[::1]`, any port). An entry with a port allows that port only. Name the host a proxy or a
   * LAN address reaches the edge by when it serves beyond loopback.
   */
  allowedHosts?: readonly string[] | undefined;
  /** Largest request body, in bytes (default {@link EDGE_BODY_MAX_DEFAULT}, 1 MiB); larger get 413. */
  maxBodyBytes?: number | undefined;
  /** The dashboard's options, or `false` to serve no dashboard (default: served). */
  dashboard?: EdgeDashboardOptions | false | undefined;
  /** MCP's Streamable HTTP at {@link MCP_PATH}, for members holding a token of `tokens`. */
  mcp?: EdgeMcpOptions | false | undefined;
  /** More routes on the same port and policy, each at one exact path (default: none). */
  mounts?: readonly EdgeMount[] | undefined;
}

/**
 * A route of another package served on the edge, behind the edge's Host/Origin policy and body
 * limit (e.g. `@teamwire/a2a`'s JSON-RPC endpoint and Agent Card); see
 * {@link TeamEdgeAppOptions.mounts}.
 */
export interface EdgeMount {
  /** The exact path it answers (e.g. `/a2a`); it must not be `/mcp`, `/api/…` or `/assets/…`. */
  path: string;
  /**
   * `token` (default): the edge token, as the dashboard takes it (`x-teamwire-token` or
   * `Authorization: Bearer`), and the request acts as the operator; `public`: no token, for
   * documents anyone may read, such as an A2A Agent Card.
   */
  access?: 'token' | 'public' | undefined;
  /** Refusals of the edge on this path as JSON-RPC errors (`error.data.code`) instead of JSON. */
  jsonRpc?: boolean | undefined;
  /** Answers one request the edge let through. */
  fetch(request: Request): Promise<Response> | Response;
}

/** The edge as a Hono app, not yet listening; see {@link createTeamEdgeApp}. */
export interface TeamEdgeApp {
  /** The Hono app: mount it, or serve its `fetch` with any web-standard server. */
  readonly app: Hono<EdgeEnv>;
  /** Answers one web-standard request. */
  fetch(request: Request): Promise<Response>;
  /** The dashboard's access token. */
  readonly token: string;
  /** Open MCP sessions now (0 without MCP). */
  sessionCount(): number;
  /** Closes the MCP sessions and the operator's inbox watch. The team is left to its owner. */
  close(): void;
}

/** Who a request is: the person at the dashboard, or a member over MCP. */
export type EdgePrincipal = EdgeOperator | EdgeMember;

/** A request that presented the edge token: the person at the dashboard. */
export interface EdgeOperator {
  /** Always `operator`. */
  kind: 'operator';
}

/** A request that presented a member token of the MCP issuer. */
export interface EdgeMember {
  /** Always `member`. */
  kind: 'member';
  /** The member the token names. */
  member: string;
}

/** The variables the edge sets on each request it lets through. */
export interface EdgeVariables {
  /** Who the request is, as the token check found. */
  principal: EdgePrincipal;
}

/** The Hono environment of the edge's app: each request's {@link EdgePrincipal}, once known. */
export interface EdgeEnv {
  /** Set by the edge's token check. */
  Variables: EdgeVariables;
}
type Env = EdgeEnv;

function positive(value: number | undefined, fallback: number, option: string): number {
  const v = value ?? fallback;
  if (!Number.isSafeInteger(v) || v < 1) {
    throw new TeamError('INVALID_ARGUMENT', `${option} must be a positive integer`, {
      details: { option },
    });
  }
  return v;
}

/** A refusal in the shape the route's clients read. */
function refusal(
  path: string,
  status: 401 | 403 | 404 | 413,
  code: string,
  message: string,
  headers: Record<string, string> = {},
  rpcPaths: ReadonlySet<string> = new Set([MCP_PATH]),
): Response {
  const body = rpcPaths.has(path)
    ? // MCP clients read a JSON-RPC error; the teamwire code is in `error.data.code`
      {
        jsonrpc: '2.0',
        error: { code: -32001, message: `${code}: ${message}`, data: { code } },
        id: null,
      }
    : { error: { code, message } };
  return new Response(JSON.stringify(body), {
    status,
    headers: {
      'content-type': 'application/json; charset=utf-8',
      'cache-control': 'no-store',
      'x-content-type-options': 'nosniff',
      'referrer-policy': 'no-referrer',
      ...headers,
    },
  });
}

/**
 * The edge as one Hono app: the dashboard (page, assets, snapshot, messages, actions and its
 * Server-Sent Events) at `/`, and MCP's Streamable HTTP at {@link MCP_PATH}, behind one policy,
 * applied in this order before any route runs:
 *
 * 1. **Host/Origin**: a `Host` not allowed, or an `Origin` that is not this host, gets 403
 *    `FORBIDDEN` (against DNS rebinding and cross-site requests). No CORS header is ever sent.
 * 2. **Token** ({@link presentedToken}): dashboard routes but its assets take the edge token;
 *    {@link MCP_PATH} takes a member token of the MCP issuer, and acts as that member. Anything
 *    else gets 401 `UNAUTHORIZED` with `www-authenticate: Bearer realm="teamwire"`.
 * 3. **Body limit**: a body over `maxBodyBytes` gets 413 `MESSAGE_TOO_LARGE` and the connection
 *    is closed; a declared `Content-Length` over it is refused before a byte is read, a chunked
 *    body as soon as it passes it.
 */
export function createTeamEdgeApp(options: TeamEdgeAppOptions): TeamEdgeApp {
  const token = options.token ?? generateEdgeToken();
  const matches = tokenMatcher(token);
  const hosts = hostPolicy(options.allowedHosts ?? LOOPBACK_HOSTS);
  const maxBodyBytes = positive(options.maxBodyBytes, EDGE_BODY_MAX_DEFAULT, 'maxBodyBytes');
  const mcpOptions = options.mcp === false ? undefined : options.mcp;
  if (mcpOptions !== undefined && options.team === undefined) {
    throw new TeamError('INVALID_ARGUMENT', 'MCP needs the team opened in this process', {
      details: { option: 'mcp' },
    });
  }
  const mcp: McpRoutes | undefined =
    mcpOptions === undefined || options.team === undefined
      ? undefined
      : createMcpRoutes({
          ...mcpOptions,
          team: options.team,
          cursors: mcpOptions.tokens,
        });
  let dashboard: DashboardRoutes | undefined;
  if (options.dashboard !== false) {
    if (options.log === undefined || options.hub === undefined) {
      throw new TeamError(
        'INVALID_ARGUMENT',
        'the dashboard needs the team log and its hub (or pass dashboard: false)',
        { details: { option: options.log === undefined ? 'log' : 'hub' } },
      );
    }
    dashboard = createDashboardRoutes({
      ...options.dashboard,
      log: options.log,
      hub: options.hub,
      team: options.team,
    });
  }

  const mounts = new Map<string, EdgeMount>();
  for (const mount of options.mounts ?? []) {
    const reserved =
      mount.path === MCP_PATH ||
      mount.path.startsWith('/api/') ||
      mount.path.startsWith('/assets/') ||
      !mount.path.startsWith('/');
    if (reserved || mounts.has(mount.path)) {
      throw new TeamError('INVALID_ARGUMENT', `the edge cannot mount ${mount.path}`, {
        details: { option: 'mounts', path: mount.path },
      });
    }
    mounts.set(mount.path, mount);
  }
  const rpcPaths = new Set([
    MCP_PATH,
    ...[...mounts.values()].filter((m) => m.jsonRpc === true).map((m) => m.path),
  ]);
  const refuse = (
    path: string,
    status: 401 | 403 | 404 | 413,
    code: string,
    message: string,
    headers: Record<string, string> = {},
  ) => refusal(path, status, code, message, headers, rpcPaths);
  const unauthorized = (c: Context<Env>, message: string) =>
    refuse(c.req.path, 401, 'UNAUTHORIZED', message, {
      'www-authenticate': 'Bearer realm="teamwire"',
    });

  const app = new Hono<Env>();

  // 1. Host and Origin, before anything else
  app.use('*', async (c, next) => {
    const why = hosts.refusal(c.req.header('host') ?? null, c.req.header('origin') ?? null);
    if (why !== undefined) return refuse(c.req.path, 403, 'FORBIDDEN', why);
    return next();
  });

  // 2. the token: who the request is
  app.use('*', async (c, next) => {
    const path = c.req.path;
    if (path.startsWith('/assets/')) return next(); // the page's build: no team data
    if (mounts.get(path)?.access === 'public') return next();
    const presented = presentedToken(c.req.raw);
    if (path === MCP_PATH) {
      const member = presented === undefined ? undefined : mcpOptions?.tokens.memberOf(presented);
      if (member === undefined) return unauthorized(c, 'a valid member bearer token is required');
      c.set('principal', { kind: 'member', member });
      return next();
    }
    if (!matches(presented)) {
      return unauthorized(
        c,
        mounts.has(path)
          ? 'the edge token is required (x-teamwire-token or Authorization: Bearer)'
          : path.startsWith('/api/actions/')
            ? 'actions need the token in a header (x-teamwire-token or Authorization: Bearer)'
            : 'open the URL with its token',
      );
    }
    c.set('principal', { kind: 'operator' });
    return next();
  });

  // 3. one body limit
  app.use(
    '*',
    bodyLimit({
      maxSize: maxBodyBytes,
      onError: (c) =>
        refuse(
          c.req.path,
          413,
          'MESSAGE_TOO_LARGE',
          `the request body is over ${maxBodyBytes} bytes`,
          // the rest of the body is never read: the connection cannot serve another request
          { connection: 'close' },
        ),
    }),
  );

  app.all(MCP_PATH, async (c) => {
    const principal = c.get('principal');
    if (mcp === undefined || principal.kind !== 'member') {
      return refuse(c.req.path, 404, 'NOT_FOUND', 'this edge serves no MCP');
    }
    return mcp.fetch(c.req.raw, principal.member);
  });
  for (const mount of mounts.values()) {
    app.all(mount.path, async (c) => mount.fetch(c.req.raw));
  }
  app.all('*', async (c) => {
    if (dashboard === undefined) {
      return refuse(c.req.path, 404, 'NOT_FOUND', `no ${c.req.path}`);
    }
    return dashboard.fetch(c.req.raw);
  });
  app.onError((error) => {
    // a failure of ours: its code when it is a TeamError, never the text of anything else
    const code = TeamError.isInstance(error) ? error.code : 'INTERNAL';
    return new Response(
      JSON.stringify({ error: { code, message: 'the request failed on the server' } }),
      { status: 500, headers: { 'content-type': 'application/json; charset=utf-8' } },
    );
  });

  return {
    app,
    fetch: async (request) => app.fetch(request),
    token,
    sessionCount: () => mcp?.sessionCount() ?? 0,
    close() {
      mcp?.close();
      dashboard?.close();
    },
  };
}
