import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { isInitializeRequest } from '@modelcontextprotocol/sdk/types.js';
import { TeamError, type TeamService } from '@teamwire/core';
import { createMemberServer, type MemberServer } from './member-server.js';
import { admitSession } from './session-limits.js';
import type { TokenIssuer } from './tokens.js';

/** Options of {@link serveHttp}. */
export interface ServeHttpOptions {
  /** The team, opened in this process. */
  team: TeamService;
  /** Checks bearer tokens; each names the one member it acts as. */
  tokens: TokenIssuer;
  /** Address to bind (default `127.0.0.1`: only this machine can connect). */
  host?: string | undefined;
  /** Port (default 0: any free port; see `url`). */
  port?: number | undefined;
  /** The endpoint's path (default `/mcp`). */
  path?: string | undefined;
  /** The agent types the lead may spawn, offered to a client that is the lead. */
  agentTypes?: readonly string[] | undefined;
  /** The members' working directory as tools see it (default `process.cwd()`). */
  cwd?: string | undefined;
  /** Largest request body, in bytes (default 1 MiB); larger ones get 413. */
  maxBodyBytes?: number | undefined;
  /**
   * Open sessions at most, over all members (default 64). When all are taken, an initialize
   * closes the session idle the longest of the member holding the most, or gets 503
   * `SESSION_LIMIT` if all of that member's sessions are busy.
   */
  maxSessions?: number | undefined;
  /**
   * Sessions one member holds at most (default 8, or `maxSessions` if lower; at most
   * `maxSessions`). A member at its share that initializes again gets its own session idle the
   * longest closed, or 503 `MEMBER_SESSION_LIMIT` if all of its sessions are busy.
   */
  maxSessionsPerMember?: number | undefined;
  /** A session with no request for this long is closed (default 30 min). */
  sessionIdleMs?: number | undefined;
  /**
   * `Host` header values accepted (default: the bound loopback address and `localhost`, with the
   * port), against DNS rebinding: a page on another site cannot reach the server through a name
   * that resolves to 127.0.0.1. Requests carrying an `Origin` must come from one of these hosts.
   */
  allowedHosts?: readonly string[] | undefined;
}

/** A running HTTP server; see {@link serveHttp}. */
export interface HttpServing {
  /** The endpoint, e.g. `http://127.0.0.1:43117/mcp`. */
  readonly url: string;
  /** The bound port. */
  readonly port: number;
  /** Open sessions now. */
  sessionCount(): number;
  /** Closes every session and the server. The team is not disposed (its owner does that). */
  close(): Promise<void>;
}

interface Session {
  /** Set once the transport has initialized it. */
  id: string | undefined;
  member: string;
  transport: StreamableHTTPServerTransport;
  memberServer: MemberServer;
  idle: NodeJS.Timeout | undefined;
  /** Requests in progress; an open notification stream is one. */
  inFlight: number;
  /** When it last became idle, on a counter that only grows. */
  idleSince: number;
}

/**
 * `Authorization: Bearer <token>`. The scheme is case-insensitive (RFC 9110 §11.1); one token
 * of RFC 6750's b64token syntax follows it after spaces (§2.1), and nothing else.
 */
const BEARER = /^bearer +([A-Za-z0-9\-._~+/]+=*)$/i;

/** Calls `done` once, when the response has been sent or its connection closed. */
function settled(res: ServerResponse, done: () => void): void {
  let called = false;
  const once = () => {
    if (called) return;
    called = true;
    done();
  };
  res.once('finish', once);
  res.once('close', once);
}

function reply(res: ServerResponse, status: number, code: string, message: string, extra = {}) {
  if (res.headersSent) return;
  res.writeHead(status, { 'content-type': 'application/json', ...extra });
  res.end(
    JSON.stringify({
      jsonrpc: '2.0',
      error: { code: -32001, message: `${code}: ${message}`, data: { code } },
      id: null,
    }),
  );
}

/** Reads a JSON body of at most `limit` bytes; `undefined` after answering 413 or 400. */
async function readJson(
  req: IncomingMessage,
  res: ServerResponse,
  limit: number,
): Promise<{ body: unknown } | undefined> {
  const declared = Number(req.headers['content-length'] ?? 0);
  if (declared > limit) {
    reply(res, 413, 'MESSAGE_TOO_LARGE', `the request body is over ${limit} bytes`);
    req.resume();
    return undefined;
  }
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    size += (chunk as Buffer).length;
    if (size > limit) {
      reply(res, 413, 'MESSAGE_TOO_LARGE', `the request body is over ${limit} bytes`, {
        connection: 'close',
      });
      req.destroy();
      return undefined;
    }
    chunks.push(chunk as Buffer);
  }
  try {
    return { body: JSON.parse(Buffer.concat(chunks).toString('utf8')) };
  } catch {
    reply(res, 400, 'INVALID_ARGUMENT', 'the request body is not JSON');
    return undefined;
  }
}

function positive(value: number | undefined, fallback: number, name: string): number {
  const v = value ?? fallback;
  if (!Number.isInteger(v) || v < 1) {
    throw new TeamError('INVALID_ARGUMENT', `${name} must be a positive integer`, {
      details: { option: name },
    });
  }
  return v;
}

/**
 * Serves a team's external members over MCP Streamable HTTP (stateful sessions). Every request
 * needs `Authorization: Bearer <token>`: a missing or unknown token gets 401 with nothing changed;
 * a session acts only as the member its token names, and a request on another member's session
 * gets 403. Binds 127.0.0.1 by default and checks `Host` (and `Origin`, when sent) against
 * loopback names. Bodies are capped; sessions are bounded per member and overall (a member at its
 * share, or a full server, closes the longest idle session of the member holding the most, never a
 * busy one), and closed after `sessionIdleMs` without a request.
 */
export async function serveHttp(options: ServeHttpOptions): Promise<HttpServing> {
  const { team, tokens } = options;
  const host = options.host ?? '127.0.0.1';
  const path = options.path ?? '/mcp';
  const maxBodyBytes = positive(options.maxBodyBytes, 1 << 20, 'maxBodyBytes');
  const maxSessions = positive(options.maxSessions, 64, 'maxSessions');
  const maxSessionsPerMember = positive(
    options.maxSessionsPerMember,
    Math.min(8, maxSessions),
    'maxSessionsPerMember',
  );
  if (maxSessionsPerMember > maxSessions) {
    throw new TeamError('INVALID_ARGUMENT', 'maxSessionsPerMember must not exceed maxSessions', {
      details: { option: 'maxSessionsPerMember' },
    });
  }
  const limits = { maxSessions, maxSessionsPerMember };
  const sessionIdleMs = positive(options.sessionIdleMs, 30 * 60_000, 'sessionIdleMs');
  const sessions = new Map<string, Session>();
  /** Admitted, not initialized yet: they count against the limits, and never yield. */
  const opening = new Set<Session>();
  let tick = 0;
  let allowedHosts: Set<string> | undefined;

  const endSession = (id: string) => {
    const session = sessions.get(id);
    if (session === undefined) return;
    sessions.delete(id);
    clearTimeout(session.idle);
    session.memberServer.close();
    void session.transport.close().catch(() => {});
  };
  const touch = (id: string, session: Session) => {
    clearTimeout(session.idle);
    session.idle = setTimeout(() => endSession(id), sessionIdleMs);
    session.idle.unref();
  };

  const handle = async (req: IncomingMessage, res: ServerResponse) => {
    const url = new URL(req.url ?? '/', 'http://localhost');
    if (url.pathname !== path)
      return reply(res, 404, 'NOT_FOUND', `no endpoint at ${url.pathname}`);
    const hostHeader = req.headers.host ?? '';
    if (allowedHosts !== undefined && !allowedHosts.has(hostHeader)) {
      return reply(res, 403, 'FORBIDDEN', `host ${JSON.stringify(hostHeader)} is not allowed`);
    }
    const origin = req.headers.origin;
    if (origin !== undefined && allowedHosts !== undefined) {
      let originHost = '';
      try {
        originHost = new URL(origin).host;
      } catch {
        // an unparsable origin is not allowed
      }
      if (!allowedHosts.has(originHost)) {
        return reply(res, 403, 'FORBIDDEN', `origin ${JSON.stringify(origin)} is not allowed`);
      }
    }
    const bearer = BEARER.exec(req.headers.authorization ?? '')?.[1];
    const member = bearer === undefined ? undefined : tokens.memberOf(bearer);
    if (member === undefined) {
      return reply(res, 401, 'UNAUTHORIZED', 'a valid bearer token is required', {
        'www-authenticate': 'Bearer realm="teamwire"',
      });
    }
    const sessionId = req.headers['mcp-session-id'];
    if (typeof sessionId === 'string') {
      const session = sessions.get(sessionId);
      if (session === undefined) {
        return reply(res, 404, 'UNKNOWN_SESSION', 'no such session: initialize again');
      }
      if (session.member !== member) {
        return reply(res, 403, 'FORBIDDEN', 'this session belongs to another member');
      }
      touch(sessionId, session);
      session.inFlight++;
      settled(res, () => {
        session.inFlight--;
        session.idleSince = ++tick;
      });
      await session.transport.handleRequest(req, res);
      return;
    }
    if (req.method !== 'POST') {
      return reply(res, 400, 'INVALID_ARGUMENT', 'a request without a session must initialize one');
    }
    const read = await readJson(req, res, maxBodyBytes);
    if (read === undefined) return;
    if (!isInitializeRequest(read.body)) {
      return reply(res, 400, 'INVALID_ARGUMENT', 'a request without a session must initialize one');
    }
    let memberServer: MemberServer;
    try {
      memberServer = createMemberServer({
        team,
        member,
        agentTypes: options.agentTypes,
        cwd: options.cwd,
        cursors: tokens,
      });
    } catch (error) {
      const failure = TeamError.isInstance(error) ? error : undefined;
      return reply(res, 403, failure?.code ?? 'FORBIDDEN', failure?.message ?? String(error));
    }
    // No await from here to `opening.add`: concurrent initializes see each other's places.
    const admission = admitSession([...sessions.values(), ...opening], member, limits);
    if (!admission.admitted) {
      memberServer.close();
      return reply(res, 503, admission.code, admission.message);
    }
    if (admission.yielding?.id !== undefined) endSession(admission.yielding.id);
    const transport: StreamableHTTPServerTransport = new StreamableHTTPServerTransport({
      sessionIdGenerator: () => randomUUID(),
      maxRequestBodySize: maxBodyBytes,
      onsessioninitialized: (id) => {
        opening.delete(session);
        session.id = id;
        sessions.set(id, session);
        touch(id, session);
      },
      onsessionclosed: (id) => endSession(id),
    });
    const session: Session = {
      id: undefined,
      member,
      transport,
      memberServer,
      idle: undefined,
      inFlight: 1,
      idleSince: 0,
    };
    opening.add(session);
    settled(res, () => {
      session.inFlight--;
      session.idleSince = ++tick;
      if (!opening.delete(session)) return;
      // the initialize failed: no session came of it
      memberServer.close();
      void transport.close().catch(() => {});
    });
    transport.onclose = () => {
      if (transport.sessionId !== undefined) endSession(transport.sessionId);
      memberServer.close();
    };
    await memberServer.server.connect(transport);
    await transport.handleRequest(req, res, read.body);
  };

  const server = createServer((req, res) => {
    handle(req, res).catch((error: unknown) => {
      reply(res, 500, 'INTERNAL', error instanceof Error ? error.message : String(error));
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
  const bound = host.includes(':') ? `[${host}]` : host;
  allowedHosts = new Set(
    options.allowedHosts ?? [`${bound}:${port}`, `localhost:${port}`, `127.0.0.1:${port}`],
  );
  return {
    url: `http://${bound}:${port}${path}`,
    port,
    sessionCount: () => sessions.size,
    async close() {
      for (const id of [...sessions.keys()]) endSession(id);
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
