import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  DEFAULT_TEAM_LIMITS,
  type EventHub,
  type MemberStatus,
  TeamError,
  type TeamLog,
  type TeamService,
  type TranscriptStore,
} from '@teamwire/core';
import { createOperator, runAction } from './actions.js';
import { createAssetLookup } from './assets.js';
import {
  COMMON_HEADERS,
  failure,
  jsonResponse,
  jsonTextResponse,
  PAGE_CSP,
  refusalResponse,
} from './http.js';
import {
  messageBody,
  SNAPSHOT_BYTES_DEFAULT,
  SNAPSHOT_RECORDS_DEFAULT,
  type SnapshotEnvelope,
  snapshotJson,
  transcriptUsage,
} from './snapshot.js';
import { createSseRoute } from './sse.js';

/** Options of {@link createDashboardRoutes}. */
export interface DashboardRoutesOptions {
  /** The team's log: the snapshot a page loads first is read from it. */
  log: Pick<TeamLog, 'read' | 'lastSeq'>;
  /** The hub whose SSE stream keeps the page live (`createEventHub`, or {@link followTeamLog}'s). */
  hub: EventHub;
  /**
   * The team, when this process runs it: the page may then steer it. Without it the page only
   * watches (read-only), and every action gets 403.
   */
  team?: TeamService | undefined;
  /**
   * The member the person at the page acts as: an external member of type
   * {@link OPERATOR_AGENT} (registered in the team's agents), spawned on the first action.
   * Default `operator`.
   */
  operator?: string | undefined;
  /**
   * Where each member's turns and tokens are read for a snapshot (`usage`): a page that follows a
   * log written elsewhere gets no model events, and a page opened mid-run missed the earlier
   * ones. Without it those figures count only the events the page sees.
   */
  transcripts?: Pick<TranscriptStore, 'load'> | undefined;
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
  /** How often the event stream sends a heartbeat comment (default 15 000 ms; 0: never). */
  heartbeatMs?: number | undefined;
}

/** The dashboard's routes as one web-standard handler; see {@link createDashboardRoutes}. */
export interface DashboardRoutes {
  /** Answers one request; its path is taken from the dashboard's root (`/`, `/api/…`). */
  fetch(request: Request): Promise<Response>;
  /** Whether the page only watches (no team was given). */
  readonly readOnly: boolean;
  /** Ends the operator's inbox watch. Open event streams end when their clients go away. */
  close(): void;
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
 * The dashboard as web-standard routes (`Request` in, `Response` out), for a server that owns the
 * access policy: this handler checks **no** token, `Host`, `Origin` or body size. Mount it behind
 * `@teamwire/edge`, which does; never expose it bare.
 *
 * - `GET /` (or `/index.html`): the page, with a strict Content-Security-Policy and `no-store`.
 * - `GET /assets/<name>`: its script and stylesheet, compressed as the request accepts, kept by
 *   browsers when their names carry a hash.
 * - `GET /api/snapshot`: the team log as a {@link DashboardSnapshot}, at most `maxSnapshotBytes`.
 * - `GET /api/messages/<seq>`: the whole text of the message queued at that seq, at most the
 *   team's `maxMessageBytes`.
 * - `GET /api/events`: the hub's Server-Sent Events ({@link createSseRoute}, presence included).
 * - `POST /api/actions/{message,task,interrupt,shutdown,decide}`: a JSON body (`application/json`,
 *   else 415). Messages and tasks come from the operator member; interrupt and shutdown use the
 *   lead's authority, as the host does; a decision on an approval is the operator member's when
 *   it is the approver, else the host's. Without a team: 403 `READ_ONLY`.
 *
 * Any other path is 404, a wrong method 405; refusals are `{error: {code, message}}`.
 */
export function createDashboardRoutes(options: DashboardRoutesOptions): DashboardRoutes {
  const { log, hub, team, transcripts } = options;
  const operatorName = options.operator ?? 'operator';
  const maxRecords = count(
    options.maxSnapshotRecords,
    SNAPSHOT_RECORDS_DEFAULT,
    'maxSnapshotRecords',
  );
  const maxBytes = count(options.maxSnapshotBytes, SNAPSHOT_BYTES_DEFAULT, 'maxSnapshotBytes');
  const assetsDir = options.assetsDir ?? defaultAssetsDir();
  const assets = createAssetLookup(assetsDir);
  const events = createSseRoute(hub, {
    presence: true,
    headers: { ...COMMON_HEADERS },
    ...(options.heartbeatMs === undefined ? {} : { heartbeatMs: options.heartbeatMs }),
  });
  const operator = team === undefined ? undefined : createOperator(team, operatorName);

  const fetch = async (request: Request): Promise<Response> => {
    const url = new URL(request.url);
    const route = url.pathname.replace(/\/+$/, '') || '/';
    if (route.startsWith('/api/actions/')) {
      if (request.method !== 'POST') return refusalResponse(405, 'INVALID_ARGUMENT', 'use POST');
      if (team === undefined || operator === undefined) {
        return refusalResponse(403, 'READ_ONLY', 'this dashboard only watches the team');
      }
      if (!/^application\/json\b/.test(request.headers.get('content-type') ?? '')) {
        return refusalResponse(415, 'INVALID_ARGUMENT', 'send application/json');
      }
      let body: unknown;
      try {
        body = JSON.parse(await request.text());
      } catch (error) {
        // a body cut off by the server's limit is its refusal; anything else is not JSON
        if (error instanceof Error && error.name !== 'SyntaxError') throw error;
        return refusalResponse(400, 'INVALID_ARGUMENT', 'the body is not JSON');
      }
      const answer = await runAction(route.slice('/api/actions/'.length), body, team, operator);
      return jsonResponse(answer.status, answer.body);
    }
    if (request.method !== 'GET' && request.method !== 'HEAD') {
      return refusalResponse(405, 'INVALID_ARGUMENT', 'use GET');
    }
    if (route.startsWith('/assets/')) {
      const name = path.basename(route);
      if (name !== route.slice('/assets/'.length)) {
        return refusalResponse(404, 'NOT_FOUND', `no ${route}`);
      }
      const found = await assets(name, request.headers.get('accept-encoding') ?? undefined);
      if (found === undefined) {
        return refusalResponse(404, 'NOT_FOUND', `no asset ${JSON.stringify(name)}`);
      }
      return new Response(new Uint8Array(found.body), { status: 200, headers: found.headers });
    }
    if (route === '/api/events') return events(request);
    if (route === '/api/snapshot') return snapshot();
    if (route.startsWith('/api/messages/')) return message(route.slice('/api/messages/'.length));
    if (route === '/' || route === '/index.html') return page();
    return refusalResponse(404, 'NOT_FOUND', `no ${route}`);
  };

  async function snapshot(): Promise<Response> {
    try {
      return jsonTextResponse(
        200,
        await snapshotJson({
          log,
          envelope: envelope(),
          maxBytes,
          maxRecords,
          ...(transcripts === undefined
            ? {}
            : { usage: (members) => transcriptUsage(transcripts, members) }),
        }),
      );
    } catch (error) {
      return serverFailure(error);
    }
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

  async function message(seqText: string): Promise<Response> {
    if (!/^[1-9][0-9]{0,14}$/.test(seqText)) {
      return refusalResponse(400, 'INVALID_ARGUMENT', 'name a message by the seq of its record');
    }
    const maxMessageBytes = team?.limits.maxMessageBytes ?? DEFAULT_TEAM_LIMITS.maxMessageBytes;
    let body: Awaited<ReturnType<typeof messageBody>>;
    try {
      body = await messageBody(log, Number(seqText), maxMessageBytes);
    } catch (error) {
      return serverFailure(error);
    }
    if (body === undefined)
      return refusalResponse(404, 'NOT_FOUND', `no message at seq ${seqText}`);
    return jsonResponse(200, body);
  }

  async function page(): Promise<Response> {
    let html: Buffer;
    try {
      html = await readFile(path.join(assetsDir, 'index.html'));
    } catch {
      return refusalResponse(500, 'NOT_FOUND', 'the dashboard page is not built (run its build)');
    }
    return new Response(new Uint8Array(html), {
      status: 200,
      headers: {
        ...COMMON_HEADERS,
        'content-type': 'text/html; charset=utf-8',
        // its URL holds the token: nothing keeps it
        'cache-control': 'no-store',
        'content-security-policy': PAGE_CSP,
        'x-frame-options': 'DENY',
      },
    });
  }

  return {
    fetch,
    readOnly: operator === undefined,
    close() {
      operator?.close();
    },
  };
}

/** A failure of ours (the log, a record): its `TeamError` status, else 500 without its text. */
function serverFailure(error: unknown): Response {
  if (TeamError.isInstance(error)) {
    const answer = failure(error);
    return jsonResponse(answer.status, answer.body);
  }
  return refusalResponse(500, 'INTERNAL', 'the dashboard failed to read the team');
}
