import type { IncomingMessage, ServerResponse } from 'node:http';
import {
  type Clock,
  type EventHub,
  type HubItem,
  type HubSubscription,
  systemClock,
  TeamError,
} from '@teamwire/core';

/** Options of {@link createSseHandler}. */
export interface SseHandlerOptions {
  /**
   * A comment line is sent this often so proxies keep the connection open and a dead client is
   * noticed. Default 15 000 ms; 0 turns heartbeats off.
   */
  heartbeatMs?: number;
  /** Reconnection delay advised to the client (`retry:`). Default: not sent (browser default). */
  retryMs?: number;
  /** Drives heartbeats. Default: the system clock. */
  clock?: Clock;
  /** Include presence unless the query says `presence=0`. Default false (opt in with `presence=1`). */
  presence?: boolean;
  /**
   * A shared secret every request must present, as `Authorization: Bearer <token>` or, for
   * browsers (`EventSource` cannot set headers), as the `token` query parameter. A request
   * without it, or with another, gets `401` and no stream. Compared in constant time. Default:
   * none (anyone who can reach the socket may read the stream, so bind to loopback).
   */
  token?: string;
  /**
   * Serve only this team (it must be the hub's): a request must name it in the `team` query
   * parameter, else it gets `404` and no stream. Without this option a request may leave `team`
   * out, but one naming another team still gets `404`.
   */
  teamId?: string;
  /**
   * Extra response headers, e.g. CORS for a page served from another origin: name that origin.
   * A wildcard `access-control-allow-origin: *` is refused, since it would let any web page the
   * user visits read the team's stream.
   */
  headers?: Record<string, string>;
  /** Told about failures of a stream (an item that cannot be serialized, a socket error, a hub that fails). */
  onError?: (error: unknown) => void;
}

/** A `node:http` request handler; the promise settles (never rejects) when the stream ends. */
export type SseHandler = (req: IncomingMessage, res: ServerResponse) => Promise<void>;

/**
 * Streams hub items as Server-Sent Events, for web UIs (`EventSource`). Each item is one
 * unnamed event whose `data` is the item as JSON (switch on its `type`); events and presence
 * transitions carry `id: <epoch>:<seq>`, so a browser reconnecting with `Last-Event-ID` resumes
 * exactly after the last item it saw, and one reconnecting to a restarted hub gets a `reset`
 * instead of a misread cursor. Query string: `agent` (repeat it or separate with commas),
 * `presence=1`, `events=0`, `team`, and `lastEventId` and `token` for clients that cannot set
 * headers.
 *
 * Before any stream starts: a wrong or missing `token` (when configured) gets `401`, another team
 * (or none, when `teamId` is configured) gets `404`, a method other than `GET` gets `405`.
 */
export function createSseHandler(hub: EventHub, options: SseHandlerOptions = {}): SseHandler {
  const heartbeatMs = options.heartbeatMs ?? 15_000;
  const clock = options.clock ?? systemClock;
  const onError = options.onError ?? (() => {});
  const checkToken = options.token === undefined ? undefined : tokenChecker(options.token);
  if (options.teamId !== undefined && options.teamId !== hub.teamId) {
    throw new TeamError('INVALID_ARGUMENT', 'teamId must be the team of the hub it serves', {
      details: { teamId: options.teamId, hubTeamId: hub.teamId },
    });
  }
  for (const [name, value] of Object.entries(options.headers ?? {})) {
    if (name.toLowerCase() === 'access-control-allow-origin' && String(value).trim() === '*') {
      throw new TeamError(
        'INVALID_ARGUMENT',
        'a wildcard access-control-allow-origin would let any web page read the stream; name the origin',
      );
    }
  }
  return async (req, res) => {
    const url = URL.canParse(req.url ?? '/', 'http://localhost')
      ? new URL(req.url ?? '/', 'http://localhost')
      : undefined;
    if (url === undefined) {
      res.writeHead(400, { 'content-type': 'text/plain; charset=utf-8' });
      res.end('malformed request target\n');
      return;
    }
    if (checkToken !== undefined && !(await checkToken(presentedToken(req, url)))) {
      res.writeHead(401, {
        'www-authenticate': 'Bearer realm="teamwire"',
        'content-type': 'text/plain; charset=utf-8',
      });
      res.end('unauthorized\n');
      return;
    }
    const team = url.searchParams.get('team');
    if (team === null ? options.teamId !== undefined : team !== hub.teamId) {
      res.writeHead(404, { 'content-type': 'text/plain; charset=utf-8' });
      res.end('no such team\n');
      return;
    }
    if (req.method !== 'GET') {
      res.writeHead(405, { allow: 'GET', 'content-type': 'text/plain; charset=utf-8' });
      res.end('method not allowed\n');
      return;
    }
    let subscription: HubSubscription;
    try {
      const header = req.headers['last-event-id'];
      subscription = hub.subscribe(
        parseRequest(
          (Array.isArray(header) ? header[0] : header) ?? null,
          url,
          options.presence ?? false,
        ),
      );
    } catch (error) {
      // Only a bad request is the client's fault; anything else is ours and its text stays here.
      if (TeamError.hasCode(error, 'INVALID_ARGUMENT')) {
        res.writeHead(400, { 'content-type': 'text/plain; charset=utf-8' });
        res.end(`${error.message}\n`);
      } else if (TeamError.hasCode(error, 'DISPOSED')) {
        res.writeHead(503, { 'content-type': 'text/plain; charset=utf-8' });
        res.end(`${error.message}\n`);
      } else {
        onError(error);
        res.writeHead(500, { 'content-type': 'text/plain; charset=utf-8' });
        res.end('internal error\n');
      }
      return;
    }

    let open = true;
    let cancelHeartbeat = () => {};
    let wakeDrain: (() => void) | undefined;
    const stop = () => {
      if (!open) return;
      open = false;
      cancelHeartbeat();
      subscription.close();
      wakeDrain?.();
    };
    res.on('close', stop);
    res.on('error', (error) => {
      onError(error);
      stop();
    });

    res.writeHead(200, {
      'content-type': 'text/event-stream; charset=utf-8',
      'cache-control': 'no-cache, no-transform',
      connection: 'keep-alive',
      'x-accel-buffering': 'no',
      ...options.headers,
    });
    res.write(options.retryMs === undefined ? ': connected\n\n' : `retry: ${options.retryMs}\n\n`);

    if (heartbeatMs > 0) {
      const arm = () => {
        cancelHeartbeat = clock.setTimer(heartbeatMs, () => {
          if (!open) return;
          res.write(': heartbeat\n\n');
          arm();
        });
      };
      arm();
    }

    try {
      for await (const item of subscription) {
        if (!open) break;
        const frame = formatFrame(item, onError, hub.epoch);
        if (frame === undefined) continue;
        if (!res.write(frame) && open) {
          await new Promise<void>((resolve) => {
            wakeDrain = resolve;
            res.once('drain', resolve);
          });
          wakeDrain = undefined;
        }
      }
    } catch (error) {
      onError(error);
    } finally {
      stop();
      if (!res.writableEnded) res.end();
    }
  };
}

/** Options of {@link createSseRoute}. */
export interface SseRouteOptions {
  /** As {@link SseHandlerOptions.heartbeatMs}. Default 15 000 ms; 0 turns heartbeats off. */
  heartbeatMs?: number | undefined;
  /** As {@link SseHandlerOptions.retryMs}. */
  retryMs?: number | undefined;
  /** Drives heartbeats. Default: the system clock. */
  clock?: Clock | undefined;
  /** Include presence unless the query says `presence=0`. Default false. */
  presence?: boolean | undefined;
  /** Extra response headers. */
  headers?: Record<string, string> | undefined;
  /** Told about failures of a stream. */
  onError?: ((error: unknown) => void) | undefined;
}

/**
 * The hub's Server-Sent Events as a web-standard route (`Request` in, `Response` out), with the
 * same frames, query string and resumption as {@link createSseHandler}. It checks no token: the
 * server that mounts it (the `@teamwire/edge` server) decides who may reach it. A request naming
 * another team gets `404`, a method other than `GET` `405`, a malformed `Last-Event-ID` `400`.
 * The stream ends when the client goes away (the body is cancelled) or the hub closes it.
 */
export function createSseRoute(
  hub: EventHub,
  options: SseRouteOptions = {},
): (request: Request) => Response {
  const heartbeatMs = options.heartbeatMs ?? 15_000;
  const clock = options.clock ?? systemClock;
  const onError = options.onError ?? (() => {});
  const text = (status: number, body: string, extra: Record<string, string> = {}) =>
    new Response(`${body}\n`, {
      status,
      headers: { 'content-type': 'text/plain; charset=utf-8', ...options.headers, ...extra },
    });
  return (request) => {
    const url = new URL(request.url);
    const team = url.searchParams.get('team');
    if (team !== null && team !== hub.teamId) return text(404, 'no such team');
    if (request.method !== 'GET') return text(405, 'method not allowed', { allow: 'GET' });
    let subscription: HubSubscription;
    try {
      subscription = hub.subscribe(
        parseRequest(request.headers.get('last-event-id'), url, options.presence ?? false),
      );
    } catch (error) {
      if (TeamError.hasCode(error, 'INVALID_ARGUMENT')) return text(400, error.message);
      if (TeamError.hasCode(error, 'DISPOSED')) return text(503, error.message);
      onError(error);
      return text(500, 'internal error');
    }
    const encoder = new TextEncoder();
    const items = subscription[Symbol.asyncIterator]();
    let open = true;
    let cancelHeartbeat = () => {};
    const stop = () => {
      if (!open) return;
      open = false;
      cancelHeartbeat();
      subscription.close();
    };
    const body = new ReadableStream<Uint8Array>(
      {
        start(controller) {
          controller.enqueue(
            encoder.encode(
              options.retryMs === undefined ? ': connected\n\n' : `retry: ${options.retryMs}\n\n`,
            ),
          );
          if (heartbeatMs > 0) {
            const arm = () => {
              cancelHeartbeat = clock.setTimer(heartbeatMs, () => {
                if (!open) return;
                controller.enqueue(encoder.encode(': heartbeat\n\n'));
                arm();
              });
            };
            arm();
          }
        },
        async pull(controller) {
          // one frame a pull: a slow client holds the stream back instead of filling memory
          try {
            while (open) {
              const next = await items.next();
              if (next.done === true || !open) break;
              const frame = formatFrame(next.value, onError, hub.epoch);
              if (frame === undefined) continue;
              controller.enqueue(encoder.encode(frame));
              return;
            }
          } catch (error) {
            onError(error);
          }
          stop();
          try {
            controller.close();
          } catch {
            // already cancelled
          }
        },
        cancel() {
          stop();
        },
      },
      { highWaterMark: 1 },
    );
    return new Response(body, {
      status: 200,
      headers: {
        'content-type': 'text/event-stream; charset=utf-8',
        'cache-control': 'no-cache, no-transform',
        'x-accel-buffering': 'no',
        ...options.headers,
      },
    });
  };
}

/**
 * The token a request presents: its `Authorization` header when it has one, else the `token`
 * query parameter. The header must be `Bearer <token>`: the scheme in any case (RFC 9110 §11.1),
 * then spaces and exactly one token (§11.4), nothing else. A header that is present decides, so a
 * malformed one gives no token even when the query holds one. Node has already trimmed the
 * value's surrounding whitespace.
 */
export function presentedToken(req: IncomingMessage, url: URL): string | undefined {
  const header = req.headers.authorization;
  if (header !== undefined) return /^bearer +(\S+)$/i.exec(header)?.[1];
  return url.searchParams.get('token') ?? undefined;
}

/**
 * A constant-time check against `expected`. Both sides are hashed first, so `timingSafeEqual`
 * compares buffers of equal length and the time taken says nothing about the token, not even its
 * length. `node:crypto` is loaded on first use, which keeps core's entry free of Node built-ins.
 */
function tokenChecker(expected: string): (presented: string | undefined) => Promise<boolean> {
  if (typeof expected !== 'string' || expected === '') {
    throw new TeamError('INVALID_ARGUMENT', 'token must be a non-empty string');
  }
  let wanted: Buffer | undefined;
  return async (presented) => {
    const crypto = await import('node:crypto');
    const digest = (text: string) => crypto.createHash('sha256').update(text, 'utf8').digest();
    wanted ??= digest(expected);
    // A missing token still costs one comparison, like a wrong one.
    const same = crypto.timingSafeEqual(digest(presented ?? ''), wanted);
    return same && presented !== undefined;
  };
}

function parseRequest(lastEventId: string | null, url: URL, defaultPresence: boolean) {
  const agents = url.searchParams
    .getAll('agent')
    .flatMap((value) => value.split(','))
    .map((value) => value.trim())
    .filter((value) => value !== '');
  const raw = lastEventId ?? url.searchParams.get('lastEventId');
  let afterSeq: number | undefined;
  let epoch: string | undefined;
  if (raw !== undefined && raw !== null && raw.trim() !== '') {
    // `<epoch>:<seq>` as this handler writes it, or a bare `<seq>` taken to be this hub's
    const match = /^(?:([A-Za-z0-9_-]{1,64}):)?(\d{1,15})$/.exec(raw.trim());
    if (match === null) {
      throw new TeamError('INVALID_ARGUMENT', 'Last-Event-ID must be <epoch>:<seq> or a hub seq', {
        details: { lastEventId: raw },
      });
    }
    epoch = match[1];
    afterSeq = Number(match[2]);
  }
  return {
    agent: agents.length > 0 ? agents : undefined,
    afterSeq,
    epoch,
    presence: flag(url.searchParams.get('presence'), defaultPresence),
    events: flag(url.searchParams.get('events'), true),
  };
}

function flag(value: string | null, fallback: boolean): boolean {
  if (value === null) return fallback;
  return !['0', 'false', 'no', 'off'].includes(value.toLowerCase());
}

/**
 * One SSE frame. Only items with a cursor get an `id:` line (`<epoch>:<seq>`, or the bare seq
 * without an epoch): a snapshot, gap or reset restates or reports rather than advances, and must
 * not move the client's `Last-Event-ID`.
 */
export function formatFrame(
  item: HubItem,
  onError: (error: unknown) => void = () => {},
  epoch?: string,
) {
  let data: string;
  try {
    data = JSON.stringify(item);
  } catch (error) {
    onError(error);
    return undefined;
  }
  const cursor = epoch === undefined ? '' : `${epoch}:`;
  const id = item.type === 'event' || item.type === 'presence' ? `id: ${cursor}${item.seq}\n` : '';
  return `${id}data: ${data}\n\n`;
}
