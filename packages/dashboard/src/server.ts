import { randomBytes, timingSafeEqual } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import type { IncomingMessage, ServerResponse } from 'node:http';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  createSseHandler,
  type EventHub,
  type ExternalAgentDefinition,
  type MemberStatus,
  TeamError,
  type TeamLog,
  type TeamRecord,
  type TeamService,
} from '@teamwire/core';
import { z } from 'zod';
import type { DashboardSnapshot } from './view-model.js';

/** The agent type of the person at the dashboard: register it in the team's agents to steer. */
export const OPERATOR_AGENT: ExternalAgentDefinition = {
  type: 'dashboard-operator',
  description: 'A person steering the team from the web dashboard (not an agent: never spawn one).',
  external: true,
};

/** Request bodies of the actions are capped at this many bytes. */
export const ACTION_BODY_MAX = 64 * 1024;
/** A snapshot holds at most this many records besides the member records (default). */
const SNAPSHOT_RECORDS_DEFAULT = 20_000;

/** Options of {@link createDashboardHandler}. */
export interface DashboardHandlerOptions {
  /** The team's log: the snapshot a page loads first is read from it. */
  log: Pick<TeamLog, 'read' | 'lastSeq'>;
  /** The hub whose SSE stream keeps the page live (`createEventHub`, or {@link followTeamLog}'s). */
  hub: EventHub;
  /**
   * The team, when this process runs it: the page may then steer it. Without it the page only
   * watches (read-only), and every action gets 403.
   */
  team?: TeamService | undefined;
  /** The access token every request must carry (see {@link generateDashboardToken}). */
  token: string;
  /**
   * The member the person at the page acts as: an external member of type {@link OPERATOR_AGENT}
   * (registered in the team's agents), spawned by the host on the first action. Default
   * `operator`.
   */
  operator?: string | undefined;
  /** Records of the log a snapshot holds at most, besides member records (default 20000). */
  maxSnapshotRecords?: number | undefined;
  /** The built page (default: `dist/ui` of this package). */
  assetsDir?: string | undefined;
  /**
   * `Host` header values accepted (default: loopback names, any port), against DNS rebinding.
   * Pass the names the server is reached by when it binds another address.
   */
  allowedHosts?: readonly string[] | undefined;
}

/** A `node:http` handler with a `close` that ends its streams. */
export interface DashboardHandler {
  (req: IncomingMessage, res: ServerResponse): Promise<void>;
  /** Ends the open event streams and the operator's inbox watch. */
  close(): void;
}

/** A new random access token (24 bytes, base64url). */
export function generateDashboardToken(): string {
  return randomBytes(24).toString('base64url');
}

const MessageAction = z.strictObject({
  to: z.string().min(1).max(64),
  text: z.string().min(1),
});
const TaskAction = z.strictObject({
  subject: z.string().min(1),
  description: z.string().min(1),
  blockedBy: z.array(z.string().max(32)).max(64).optional(),
});
const TargetAction = z.strictObject({ target: z.string().min(1).max(64) });
const ShutdownAction = z.strictObject({
  target: z.string().min(1).max(64),
  reason: z.string().max(2000).optional(),
});

const STATUS_OF_CODE: Record<string, number> = {
  INVALID_ARGUMENT: 400,
  MESSAGE_TOO_LARGE: 413,
  UNAUTHORIZED: 401,
  FORBIDDEN: 403,
  NOT_A_MEMBER: 403,
  LEAD_ONLY: 403,
  READ_ONLY: 403,
  UNKNOWN_TARGET: 404,
  UNKNOWN_MEMBER: 404,
  TASK_NOT_FOUND: 404,
  NOT_FOUND: 404,
  REVISION_MISMATCH: 409,
  TASK_OWNED: 409,
  MAILBOX_FULL: 429,
  DISPOSED: 503,
  STORE_CLOSED: 503,
};

function send(res: ServerResponse, status: number, body: unknown, headers = {}): void {
  if (res.headersSent) return;
  res.writeHead(status, {
    'content-type': 'application/json; charset=utf-8',
    'cache-control': 'no-store',
    'x-content-type-options': 'nosniff',
    ...headers,
  });
  res.end(JSON.stringify(body));
}

function fail(res: ServerResponse, error: unknown): void {
  const failure = TeamError.isInstance(error)
    ? error
    : new TeamError('INVALID_ARGUMENT', error instanceof Error ? error.message : String(error));
  send(res, STATUS_OF_CODE[failure.code] ?? 400, {
    error: { code: failure.code, message: failure.message },
  });
}

function refuse(res: ServerResponse, status: number, code: string, message: string): void {
  send(res, status, { error: { code, message } });
}

const CONTENT_TYPES: Record<string, string> = {
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
};

function defaultAssetsDir(): string {
  return path.join(path.dirname(fileURLToPath(import.meta.url)), 'ui');
}

/**
 * The dashboard as one `node:http` request handler, to mount on any server:
 *
 * - `GET /?token=…`: the page (the token in its URL is what a person opens).
 * - `GET /assets/…?token=…`: its script and stylesheet.
 * - `GET /api/snapshot` (token as `Authorization: Bearer` or `?token=`): the team log as a
 *   {@link DashboardSnapshot}.
 * - `GET /api/events?token=…`: the hub's Server-Sent Events (core's `createSseHandler`), which a
 *   browser resumes with `Last-Event-ID`; a restarted hub answers a `reset` and the page reloads.
 * - `POST /api/actions/{message,task,interrupt,shutdown}`: the token only in the
 *   `x-teamwire-token` header, a JSON body of at most 64 KiB. Messages and tasks come from the
 *   operator member; interrupt and shutdown use the lead's authority, as the host does.
 *
 * Every request without the token gets 401. No CORS header is ever sent, a request whose `Origin`
 * is not this server is refused (403), and so is a `Host` that is not a loopback name (DNS
 * rebinding): a page on another site can neither read the team nor act on it.
 */
export function createDashboardHandler(options: DashboardHandlerOptions): DashboardHandler {
  const { log, hub, team } = options;
  if (typeof options.token !== 'string' || options.token.length < 16) {
    throw new TeamError(
      'INVALID_ARGUMENT',
      'the dashboard needs a token of 16 or more characters',
      {
        details: { option: 'token' },
      },
    );
  }
  const expected = Buffer.from(options.token);
  const matches = (given: string | undefined | null): boolean => {
    if (typeof given !== 'string') return false;
    const actual = Buffer.from(given);
    return actual.length === expected.length && timingSafeEqual(actual, expected);
  };
  const operatorName = options.operator ?? 'operator';
  const maxRecords = options.maxSnapshotRecords ?? SNAPSHOT_RECORDS_DEFAULT;
  const assetsDir = options.assetsDir ?? defaultAssetsDir();
  const allowedHosts = new Set(options.allowedHosts ?? ['127.0.0.1', 'localhost', '[::1]']);
  const streams = new Set<ServerResponse>();
  const sse = createSseHandler(hub, { token: options.token, presence: true });
  const operator = team === undefined ? undefined : createOperator(team, operatorName);

  const handler = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const url = new URL(req.url ?? '/', 'http://localhost');
    const host = (req.headers.host ?? '').replace(/:\d+$/, '');
    if (!allowedHosts.has(host)) {
      return refuse(res, 403, 'FORBIDDEN', `host ${JSON.stringify(host)} is not allowed`);
    }
    const origin = req.headers.origin;
    if (origin !== undefined && origin !== `http://${req.headers.host}`) {
      return refuse(res, 403, 'FORBIDDEN', 'requests from another origin are refused');
    }
    const bearer = /^Bearer (\S+)$/.exec(req.headers.authorization ?? '')?.[1];
    const route = url.pathname.replace(/\/+$/, '') || '/';
    if (route.startsWith('/api/actions/')) {
      if (!matches(req.headers['x-teamwire-token'] as string | undefined)) {
        return refuse(res, 401, 'UNAUTHORIZED', 'actions need the token in x-teamwire-token');
      }
      if (req.method !== 'POST') return refuse(res, 405, 'INVALID_ARGUMENT', 'use POST');
      if (operator === undefined) {
        return refuse(res, 403, 'READ_ONLY', 'this dashboard only watches the team');
      }
      return act(route.slice('/api/actions/'.length), req, res, operator);
    }
    if (!matches(url.searchParams.get('token')) && !matches(bearer)) {
      return refuse(res, 401, 'UNAUTHORIZED', 'open the URL with its token');
    }
    if (req.method !== 'GET') return refuse(res, 405, 'INVALID_ARGUMENT', 'use GET');
    if (route === '/api/events') {
      streams.add(res);
      res.once('close', () => streams.delete(res));
      await sse(req, res);
      return;
    }
    if (route === '/api/snapshot') {
      return send(res, 200, await snapshot());
    }
    if (route === '/' || route === '/index.html') return page(res, url.searchParams.get('token'));
    if (route.startsWith('/assets/')) return asset(res, route, url.searchParams.get('token'));
    return refuse(res, 404, 'NOT_FOUND', `no ${route}`);
  };

  async function snapshot(): Promise<DashboardSnapshot> {
    // The member records always (names for the rest), then the newest `maxRecords` records.
    const last = log.lastSeq();
    const from = Math.max(1, last - maxRecords + 1);
    const records: TeamRecord[] = [];
    let truncated = 0;
    for await (const record of log.read()) {
      if (record.seq > last) break;
      if (record.seq >= from || record.type === 'member') records.push(record);
      else truncated++;
    }
    let statuses: Record<string, MemberStatus> | undefined;
    if (team !== undefined) {
      try {
        statuses = Object.fromEntries(team.listMembers(team.lead).map((m) => [m.name, m.status]));
      } catch {
        statuses = undefined; // disposed: the records still tell the phases
      }
    }
    return {
      version: 1,
      teamId: hub.teamId,
      records,
      truncated,
      ...(statuses === undefined ? {} : { statuses }),
      epoch: hub.epoch,
      readOnly: operator === undefined,
      ...(operator === undefined ? {} : { operator: operatorName }),
    };
  }

  async function page(res: ServerResponse, token: string | null): Promise<void> {
    let html: string;
    try {
      html = await readFile(path.join(assetsDir, 'index.html'), 'utf8');
    } catch {
      return refuse(res, 500, 'NOT_FOUND', 'the dashboard page is not built (run its build)');
    }
    // Every asset the page loads carries the token too: no request goes without it.
    const withToken = html.replace(
      /((?:src|href)=")(\.?\/assets\/[^"?]+)(")/g,
      (_all, before: string, file: string, after: string) =>
        `${before}${file}?token=${encodeURIComponent(token ?? '')}${after}`,
    );
    res.writeHead(200, {
      'content-type': 'text/html; charset=utf-8',
      'cache-control': 'no-store',
      'referrer-policy': 'no-referrer',
      'x-content-type-options': 'nosniff',
      'x-frame-options': 'DENY',
    });
    res.end(withToken);
  }

  async function asset(res: ServerResponse, route: string, _token: string | null): Promise<void> {
    const name = path.basename(route);
    const type = CONTENT_TYPES[path.extname(name)];
    if (type === undefined || name !== route.slice('/assets/'.length)) {
      return refuse(res, 404, 'NOT_FOUND', `no ${route}`);
    }
    let body: Buffer;
    try {
      body = await readFile(path.join(assetsDir, 'assets', name));
    } catch {
      return refuse(res, 404, 'NOT_FOUND', `no ${route}`);
    }
    res.writeHead(200, {
      'content-type': type,
      'cache-control': 'no-store',
      'x-content-type-options': 'nosniff',
    });
    res.end(body);
  }

  async function act(
    action: string,
    req: IncomingMessage,
    res: ServerResponse,
    as: Operator,
  ): Promise<void> {
    if (!/^application\/json\b/.test(req.headers['content-type'] ?? '')) {
      return refuse(res, 415, 'INVALID_ARGUMENT', 'send application/json');
    }
    let body: unknown;
    try {
      body = await readBody(req);
    } catch (error) {
      return fail(res, error);
    }
    try {
      await as.ready();
      switch (action) {
        case 'message': {
          const input = parse(MessageAction, body);
          return send(res, 200, await as.service().sendMessage({ to: input.to, text: input.text }));
        }
        case 'task': {
          const input = parse(TaskAction, body);
          const task = await as.service().createTask({
            subject: input.subject,
            description: input.description,
            ...(input.blockedBy === undefined ? {} : { blockedBy: input.blockedBy }),
          });
          return send(res, 200, { id: task.id, revision: task.revision });
        }
        case 'interrupt': {
          const input = parse(TargetAction, body);
          return send(res, 200, await (team as TeamService).interrupt(as.lead(), input));
        }
        case 'shutdown': {
          const input = parse(ShutdownAction, body);
          return send(res, 200, await (team as TeamService).shutdown(as.lead(), input));
        }
        default:
          return refuse(res, 404, 'NOT_FOUND', `no action ${JSON.stringify(action)}`);
      }
    } catch (error) {
      return fail(res, error);
    }
  }

  return Object.assign(handler, {
    close() {
      for (const res of streams) res.destroy();
      streams.clear();
      operator?.close();
    },
  });
}

function parse<T>(schema: z.ZodType<T>, body: unknown): T {
  const parsed = schema.safeParse(body);
  if (!parsed.success) {
    throw new TeamError('INVALID_ARGUMENT', z.prettifyError(parsed.error), { cause: parsed.error });
  }
  return parsed.data;
}

async function readBody(req: IncomingMessage): Promise<unknown> {
  const declared = Number(req.headers['content-length'] ?? 0);
  if (declared > ACTION_BODY_MAX) {
    throw new TeamError('MESSAGE_TOO_LARGE', `the body is over ${ACTION_BODY_MAX} bytes`);
  }
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    size += (chunk as Buffer).length;
    if (size > ACTION_BODY_MAX) {
      throw new TeamError('MESSAGE_TOO_LARGE', `the body is over ${ACTION_BODY_MAX} bytes`);
    }
    chunks.push(chunk as Buffer);
  }
  try {
    return JSON.parse(Buffer.concat(chunks).toString('utf8'));
  } catch {
    throw new TeamError('INVALID_ARGUMENT', 'the body is not JSON');
  }
}

interface Operator {
  /** Spawns the operator member when the team has none yet, and starts acknowledging its mail. */
  ready(): Promise<void>;
  /** The operator's own view of the team (after {@link Operator.ready}). */
  service(): ReturnType<TeamService['forMember']>;
  /** The lead's credential, for lead-only actions. */
  lead(): ReturnType<TeamService['externalMember']>;
  close(): void;
}

/**
 * The person at the page: an external member, spawned by the host when first needed. Its mail
 * (replies to the person) is shown from the log's records and acknowledged as it arrives, so its
 * inbox never fills up; a shutdown request is left unread, so the person stays on the team.
 */
function createOperator(team: TeamService, name: string): Operator {
  let spawning: Promise<void> | undefined;
  let unwatch: (() => void) | undefined;
  let draining = false;
  let again = false;
  const drain = async () => {
    // mail that rings while a drain runs is read by that drain's next round
    again = true;
    if (draining) return;
    draining = true;
    try {
      while (again) {
        again = false;
        const ref = team.externalMember(name);
        // A person is not shut down by the lead: its shutdown requests stay unread, so the page
        // keeps working after the lead ends the run.
        const kinds = ['message', 'idle_notification', 'task_assignment'] as const;
        let page = await team.readInbox(ref, { limit: 50, kinds });
        while (page.cursor !== undefined) {
          page = await team.readInbox(ref, { after: page.cursor, limit: 50, kinds });
        }
      }
    } catch {
      // retired, or the team is closing: nothing to acknowledge
    } finally {
      draining = false;
    }
  };
  const ready = async () => {
    if (!team.listMembers(team.lead).some((m) => m.name === name)) {
      spawning ??= team
        .spawnTeammate(team.lead, {
          name,
          description: 'The person at the dashboard',
          prompt: 'You steer the team from the dashboard.',
          agentType: OPERATOR_AGENT.type,
        })
        .then(() => undefined)
        .finally(() => {
          spawning = undefined;
        });
      await spawning;
    }
    if (unwatch === undefined) {
      unwatch = team.watchInbox(team.externalMember(name), () => void drain());
      void drain();
    }
  };
  return {
    service: () => team.forMember(team.externalMember(name)),
    lead: () => team.lead,
    close: () => unwatch?.(),
    ready,
  };
}
