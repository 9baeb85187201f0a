import { randomBytes, timingSafeEqual } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import type { IncomingMessage, ServerResponse } from 'node:http';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  DEFAULT_TEAM_LIMITS,
  type EventHub,
  type MemberStatus,
  TeamError,
  type TeamLog,
  type TeamService,
} from '@teamwire/core';
import { act, createOperator, OPERATOR_AGENT } from './actions.js';
import { createAssetServer } from './assets.js';
import { COMMON_HEADERS, fail, PAGE_CSP, refuse, send, sendJson } from './http.js';
import {
  messageBody,
  SNAPSHOT_BYTES_DEFAULT,
  SNAPSHOT_RECORDS_DEFAULT,
  type SnapshotEnvelope,
  snapshotJson,
} from './snapshot.js';
import { createSseHandler, presentedToken } from './sse.js';

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
  /**
   * UTF-8 bytes a snapshot's JSON takes at most (default {@link SNAPSHOT_BYTES_DEFAULT}, 8 MiB):
   * the member records first, then the newest records that fit.
   */
  maxSnapshotBytes?: number | undefined;
  /**
   * The built page (default: `dist/ui` of this package): `index.html`, and `assets/` with the
   * build's `assets.json`, which names the content-hashed, precompressed files.
   */
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

function defaultAssetsDir(): string {
  return path.join(path.dirname(fileURLToPath(import.meta.url)), 'ui');
}

function count(value: number | undefined, fallback: number, option: string): number {
  if (value === undefined) return fallback;
  if (!Number.isSafeInteger(value) || value < 0) {
    throw new TeamError('INVALID_ARGUMENT', `${option} must be a non-negative integer`, {
      details: { option, value },
    });
  }
  return value;
}

/**
 * The dashboard as one `node:http` request handler, to mount on any server:
 *
 * - `GET /?token=…`: the page (the token in its URL is what a person opens), with a strict
 *   Content-Security-Policy.
 * - `GET /assets/…`: its script and stylesheet, without the token (they hold no team data: they
 *   are this package's build), compressed, and kept by browsers when their names carry a hash.
 * - `GET /api/snapshot` (token as `Authorization: Bearer` or `?token=`): the team log as a
 *   {@link DashboardSnapshot}, long texts cut, at most `maxSnapshotBytes` bytes.
 * - `GET /api/messages/<seq>`: the whole text of the message queued at that seq (the snapshot
 *   cuts long ones), at most the team's `maxMessageBytes`.
 * - `GET /api/events?token=…`: the hub's Server-Sent Events (`createSseHandler`), which a
 *   browser resumes with `Last-Event-ID`; a restarted hub answers a `reset` and the page reloads.
 * - `POST /api/actions/{message,task,interrupt,shutdown}`: the token only in the
 *   `x-teamwire-token` header, a JSON body of at most 64 KiB. Messages and tasks come from the
 *   operator member; interrupt and shutdown use the lead's authority, as the host does.
 *
 * Every request but an asset's needs the token, else 401: a header that is present decides
 * (`presentedToken`). No CORS header is ever sent, a request whose `Origin` is not this
 * server is refused (403), and so is a `Host` that is not a loopback name (DNS rebinding): a page
 * on another site can neither read the team nor act on it.
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
  const maxRecords = count(
    options.maxSnapshotRecords,
    SNAPSHOT_RECORDS_DEFAULT,
    'maxSnapshotRecords',
  );
  const maxBytes = count(options.maxSnapshotBytes, SNAPSHOT_BYTES_DEFAULT, 'maxSnapshotBytes');
  const assetsDir = options.assetsDir ?? defaultAssetsDir();
  const assets = createAssetServer(assetsDir);
  const allowedHosts = new Set(options.allowedHosts ?? ['127.0.0.1', 'localhost', '[::1]']);
  const streams = new Set<ServerResponse>();
  const sse = createSseHandler(hub, {
    token: options.token,
    presence: true,
    headers: { ...COMMON_HEADERS },
  });
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
    const route = url.pathname.replace(/\/+$/, '') || '/';
    if (route.startsWith('/api/actions/')) {
      if (!matches(req.headers['x-teamwire-token'] as string | undefined)) {
        return refuse(res, 401, 'UNAUTHORIZED', 'actions need the token in x-teamwire-token');
      }
      if (req.method !== 'POST') return refuse(res, 405, 'INVALID_ARGUMENT', 'use POST');
      if (team === undefined || operator === undefined) {
        return refuse(res, 403, 'READ_ONLY', 'this dashboard only watches the team');
      }
      return act(route.slice('/api/actions/'.length), req, res, team, operator);
    }
    if (route.startsWith('/assets/')) {
      if (req.method !== 'GET') return refuse(res, 405, 'INVALID_ARGUMENT', 'use GET');
      const name = path.basename(route);
      if (name !== route.slice('/assets/'.length)) {
        return refuse(res, 404, 'NOT_FOUND', `no ${route}`);
      }
      return assets(res, name, req.headers);
    }
    if (!matches(presentedToken(req, url))) {
      return refuse(res, 401, 'UNAUTHORIZED', 'open the URL with its token');
    }
    if (req.method !== 'GET') return refuse(res, 405, 'INVALID_ARGUMENT', 'use GET');
    if (route === '/api/events') {
      streams.add(res);
      res.once('close', () => streams.delete(res));
      await sse(req, res);
      return;
    }
    if (route === '/api/snapshot') return snapshot(res);
    if (route.startsWith('/api/messages/'))
      return message(res, route.slice('/api/messages/'.length));
    if (route === '/' || route === '/index.html') return page(res);
    return refuse(res, 404, 'NOT_FOUND', `no ${route}`);
  };

  async function snapshot(res: ServerResponse): Promise<void> {
    let json: string;
    try {
      json = await snapshotJson({ log, envelope: envelope(), maxBytes, maxRecords });
    } catch (error) {
      return serverFailure(res, error);
    }
    sendJson(res, 200, json);
  }

  function envelope(): SnapshotEnvelope {
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
      ...(statuses === undefined ? {} : { statuses }),
      epoch: hub.epoch,
      readOnly: operator === undefined,
      ...(operator === undefined ? {} : { operator: operatorName }),
    };
  }

  async function message(res: ServerResponse, seqText: string): Promise<void> {
    if (!/^[1-9][0-9]{0,14}$/.test(seqText)) {
      return refuse(res, 400, 'INVALID_ARGUMENT', 'name a message by the seq of its record');
    }
    const maxMessageBytes = team?.limits.maxMessageBytes ?? DEFAULT_TEAM_LIMITS.maxMessageBytes;
    let body: Awaited<ReturnType<typeof messageBody>>;
    try {
      body = await messageBody(log, Number(seqText), maxMessageBytes);
    } catch (error) {
      return serverFailure(res, error);
    }
    if (body === undefined) return refuse(res, 404, 'NOT_FOUND', `no message at seq ${seqText}`);
    send(res, 200, body);
  }

  async function page(res: ServerResponse): Promise<void> {
    let html: Buffer;
    try {
      html = await readFile(path.join(assetsDir, 'index.html'));
    } catch {
      return refuse(res, 500, 'NOT_FOUND', 'the dashboard page is not built (run its build)');
    }
    res.writeHead(200, {
      ...COMMON_HEADERS,
      'content-type': 'text/html; charset=utf-8',
      'content-length': String(html.length),
      // its URL holds the token: nothing keeps it
      'cache-control': 'no-store',
      'content-security-policy': PAGE_CSP,
      'x-frame-options': 'DENY',
    });
    res.end(html);
  }

  return Object.assign(handler, {
    close() {
      for (const res of streams) res.destroy();
      streams.clear();
      operator?.close();
    },
  });
}

/** A failure of ours (the log, a record): its `TeamError` status, else 500 without its text. */
function serverFailure(res: ServerResponse, error: unknown): void {
  if (TeamError.isInstance(error)) fail(res, error);
  else refuse(res, 500, 'INTERNAL', 'the dashboard failed to read the team');
}
