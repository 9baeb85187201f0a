import { randomUUID } from 'node:crypto';
import { WebStandardStreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js';
import { isInitializeRequest } from '@modelcontextprotocol/sdk/types.js';
import { TeamError, type TeamService } from '@teamwire/core';
import { createMemberServer, type MemberServer } from './member-server.js';
import { admitSession } from './session-limits.js';
import type { InboxCursorSeal } from './tokens.js';

/** Options of {@link createMcpRoutes}. */
export interface McpRoutesOptions {
  /** The team, opened in this process. */
  team: TeamService;
  /** Seals the inbox cursors handed out (the `TokenIssuer` whose tokens name the members). */
  cursors: InboxCursorSeal;
  /** The agent types the lead may spawn, offered to a client that is the lead. */
  agentTypes?: readonly string[] | undefined;
  /** The members' working directory as tools see it (default `process.cwd()`). */
  cwd?: string | undefined;
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
}

/** MCP's Streamable HTTP endpoint as a web-standard handler; see {@link createMcpRoutes}. */
export interface McpRoutes {
  /**
   * Answers one request of `member`: the member the request's bearer token names, which the
   * mounting server has checked (a `TokenIssuer`'s `memberOf`).
   */
  fetch(request: Request, member: string): Promise<Response>;
  /** Open sessions now. */
  sessionCount(): number;
  /** Closes every session. The team is not disposed (its owner does that). */
  close(): void;
}

interface Session {
  /** Set once the transport has initialized it. */
  id: string | undefined;
  member: string;
  transport: WebStandardStreamableHTTPServerTransport;
  memberServer: MemberServer;
  idle: NodeJS.Timeout | undefined;
  /** Requests in progress; an open notification stream is one. */
  inFlight: number;
  /** When it last became idle, on a counter that only grows. */
  idleSince: number;
}

/** A JSON-RPC error answer carrying a teamwire code in `error.data.code`. */
export function mcpRefusal(
  status: number,
  code: string,
  message: string,
  headers: Record<string, string> = {},
): Response {
  return new Response(
    JSON.stringify({
      jsonrpc: '2.0',
      error: { code: -32001, message: `${code}: ${message}`, data: { code } },
      id: null,
    }),
    { status, headers: { 'content-type': 'application/json', ...headers } },
  );
}

/**
 * `response`, whose body calls `done` once when it has been read to its end, failed or been
 * cancelled (the client went away); at once when it has no body.
 */
function settled(response: Response, done: () => void): Response {
  let called = false;
  const once = () => {
    if (called) return;
    called = true;
    done();
  };
  if (response.body === null) {
    once();
    return response;
  }
  const reader = response.body.getReader();
  const body = new ReadableStream<Uint8Array>({
    async pull(controller) {
      try {
        const next = await reader.read();
        if (next.done) {
          once();
          controller.close();
        } else {
          controller.enqueue(next.value);
        }
      } catch (error) {
        once();
        controller.error(error);
      }
    },
    async cancel(reason) {
      once();
      await reader.cancel(reason).catch(() => {});
    },
  });
  return new Response(body, {
    status: response.status,
    statusText: response.statusText,
    headers: response.headers,
  });
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
 * Serves a team's external members over MCP Streamable HTTP (stateful sessions) as a web-standard
 * handler, on the MCP SDK's `WebStandardStreamableHTTPServerTransport`. The mounting server owns
 * the access policy (the `@teamwire/edge` server): it checks the bearer token, `Host`, `Origin`
 * and body size, and passes the member the token names. A session acts only as the member that
 * opened it, and a request on another member's session gets 403. Sessions are bounded per member
 * and overall (a member at its share, or a full server, closes the longest idle session of the
 * member holding the most, never a busy one), and closed after `sessionIdleMs` without a request.
 */
export function createMcpRoutes(options: McpRoutesOptions): McpRoutes {
  const { team } = options;
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
  const idle = (session: Session) => () => {
    session.inFlight--;
    session.idleSince = ++tick;
  };

  const fetch = async (request: Request, member: string): Promise<Response> => {
    const sessionId = request.headers.get('mcp-session-id');
    if (sessionId !== null) {
      const session = sessions.get(sessionId);
      if (session === undefined) {
        return mcpRefusal(404, 'UNKNOWN_SESSION', 'no such session: initialize again');
      }
      if (session.member !== member) {
        return mcpRefusal(403, 'FORBIDDEN', 'this session belongs to another member');
      }
      touch(sessionId, session);
      session.inFlight++;
      let response: Response;
      try {
        response = await session.transport.handleRequest(request);
      } catch (error) {
        idle(session)();
        throw error;
      }
      return settled(response, idle(session));
    }
    if (request.method !== 'POST') {
      return mcpRefusal(400, 'INVALID_ARGUMENT', 'a request without a session must initialize one');
    }
    let body: unknown;
    try {
      body = JSON.parse(await request.text());
    } catch (error) {
      // a body cut off by the server's limit is its refusal; anything else is not JSON
      if (error instanceof Error && error.name !== 'SyntaxError') throw error;
      return mcpRefusal(400, 'INVALID_ARGUMENT', 'the request body is not JSON');
    }
    if (!isInitializeRequest(body)) {
      return mcpRefusal(400, 'INVALID_ARGUMENT', 'a request without a session must initialize one');
    }
    let memberServer: MemberServer;
    try {
      memberServer = createMemberServer({
        team,
        member,
        agentTypes: options.agentTypes,
        cwd: options.cwd,
        cursors: options.cursors,
      });
    } catch (error) {
      const failure = TeamError.isInstance(error) ? error : undefined;
      return mcpRefusal(403, failure?.code ?? 'FORBIDDEN', failure?.message ?? String(error));
    }
    // No await from here to `opening.add`: concurrent initializes see each other's places.
    const admission = admitSession([...sessions.values(), ...opening], member, limits);
    if (!admission.admitted) {
      memberServer.close();
      return mcpRefusal(503, admission.code, admission.message);
    }
    if (admission.yielding?.id !== undefined) endSession(admission.yielding.id);
    const transport: WebStandardStreamableHTTPServerTransport =
      new WebStandardStreamableHTTPServerTransport({
        sessionIdGenerator: () => randomUUID(),
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
    const done = () => {
      idle(session)();
      if (!opening.delete(session)) return;
      // the initialize failed: no session came of it
      memberServer.close();
      void transport.close().catch(() => {});
    };
    transport.onclose = () => {
      if (transport.sessionId !== undefined) endSession(transport.sessionId);
      memberServer.close();
    };
    let response: Response;
    try {
      await memberServer.server.connect(transport);
      response = await transport.handleRequest(request, { parsedBody: body });
    } catch (error) {
      done();
      throw error;
    }
    return settled(response, done);
  };

  return {
    fetch,
    sessionCount: () => sessions.size,
    close() {
      for (const id of [...sessions.keys()]) endSession(id);
      for (const session of [...opening]) {
        opening.delete(session);
        session.memberServer.close();
        void session.transport.close().catch(() => {});
      }
    },
  };
}
