import {
  type Clock,
  type EventHub,
  type HubItem,
  type HubSubscription,
  systemClock,
  TeamError,
} from '@teamwire/core';

/** Options of {@link createSseRoute}. */
export interface SseRouteOptions {
  /**
   * A comment line is sent this often so proxies keep the connection open and a dead client is
   * noticed. Default 15 000 ms; 0 turns heartbeats off.
   */
  heartbeatMs?: number | undefined;
  /** Reconnection delay advised to the client (`retry:`). Default: not sent (browser default). */
  retryMs?: number | undefined;
  /** Drives heartbeats. Default: the system clock. */
  clock?: Clock | undefined;
  /** Include presence unless the query says `presence=0`. Default false (opt in with `presence=1`). */
  presence?: boolean | undefined;
  /**
   * Serve only this team (it must be the hub's): a request must name it in the `team` query
   * parameter, else it gets `404` and no stream. Without this option a request may leave `team`
   * out, but one naming another team still gets `404`.
   */
  teamId?: string | undefined;
  /**
   * Extra response headers, e.g. CORS for a page served from another origin: name that origin.
   * A wildcard `access-control-allow-origin: *` is refused, since it would let any web page the
   * user visits read the team's stream.
   */
  headers?: Record<string, string> | undefined;
  /** Told about failures of a stream (an item that cannot be serialized, a hub that fails). */
  onError?: ((error: unknown) => void) | undefined;
}

/**
 * Streams hub items as Server-Sent Events, for web UIs (`EventSource`), as a web-standard route
 * (`Request` in, `Response` out). Each item is one unnamed event whose `data` is the item as JSON
 * (switch on its `type`); events and presence transitions carry `id: <epoch>:<seq>`, so a browser
 * reconnecting with `Last-Event-ID` resumes exactly after the last item it saw, and one
 * reconnecting to a restarted hub gets a `reset` instead of a misread cursor. Query string:
 * `agent` (repeat it or separate with commas), `presence=1`, `events=0`, `team`, and
 * `lastEventId` for clients that cannot set headers.
 *
 * It checks no token, `Host` or `Origin`: the server that mounts it decides who may reach it
 * (`@teamwire/edge` does). Before any stream starts: another team (or none, when `teamId` is
 * configured) gets `404`, a method other than `GET` `405`, a malformed `Last-Event-ID` `400`, a
 * closed hub `503`. The stream ends when the client goes away (its body is cancelled) or the hub
 * ends the subscription; a slow client holds the stream back, one frame at a time.
 */
export function createSseRoute(
  hub: EventHub,
  options: SseRouteOptions = {},
): (request: Request) => Response {
  const heartbeatMs = options.heartbeatMs ?? 15_000;
  const clock = options.clock ?? systemClock;
  const onError = options.onError ?? (() => {});
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
  const text = (status: number, body: string, extra: Record<string, string> = {}) =>
    new Response(`${body}\n`, {
      status,
      headers: { 'content-type': 'text/plain; charset=utf-8', ...options.headers, ...extra },
    });
  return (request) => {
    const url = new URL(request.url);
    const team = url.searchParams.get('team');
    if (team === null ? options.teamId !== undefined : team !== hub.teamId) {
      return text(404, 'no such team');
    }
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
