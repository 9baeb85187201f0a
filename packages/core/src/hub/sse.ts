import type { IncomingMessage, ServerResponse } from 'node:http';
import { type Clock, systemClock } from '../clock.js';
import { TeamError } from '../errors.js';
import type { EventHub, HubItem, HubSubscription } from './types.js';

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
  /** Extra response headers, e.g. CORS. */
  headers?: Record<string, string>;
  /** Told about failures of a stream (an item that cannot be serialized, a socket error). */
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
 * `presence=1`, `events=0`, and `lastEventId` for clients that cannot set the header.
 */
export function createSseHandler(hub: EventHub, options: SseHandlerOptions = {}): SseHandler {
  const heartbeatMs = options.heartbeatMs ?? 15_000;
  const clock = options.clock ?? systemClock;
  const onError = options.onError ?? (() => {});
  return async (req, res) => {
    if (req.method !== 'GET') {
      res.writeHead(405, { allow: 'GET', 'content-type': 'text/plain; charset=utf-8' });
      res.end('method not allowed\n');
      return;
    }
    let subscription: HubSubscription;
    try {
      subscription = hub.subscribe(parseRequest(req, options.presence ?? false));
    } catch (error) {
      const status = TeamError.hasCode(error, 'DISPOSED') ? 503 : 400;
      res.writeHead(status, { 'content-type': 'text/plain; charset=utf-8' });
      res.end(`${error instanceof Error ? error.message : String(error)}\n`);
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

function parseRequest(req: IncomingMessage, defaultPresence: boolean) {
  const url = new URL(req.url ?? '/', 'http://localhost');
  const agents = url.searchParams
    .getAll('agent')
    .flatMap((value) => value.split(','))
    .map((value) => value.trim())
    .filter((value) => value !== '');
  const header = req.headers['last-event-id'];
  const raw = (Array.isArray(header) ? header[0] : header) ?? url.searchParams.get('lastEventId');
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
    ...(agents.length > 0 ? { agent: agents } : {}),
    ...(afterSeq === undefined ? {} : { afterSeq }),
    ...(epoch === undefined ? {} : { epoch }),
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
