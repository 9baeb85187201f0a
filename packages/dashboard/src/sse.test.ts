import { createServer, request, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { getRequestListener } from '@hono/node-server';
import {
  type AgentEvent,
  createEventHub,
  type EventHub,
  type HubItem,
  TeamError,
} from '@teamwire/core';
import { createManualClock, type ManualClock } from '@teamwire/core/testing';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { createSseRoute, type SseRouteOptions } from './sse.js';

/** The team id every test here uses. */
const TEAM = 'team-1';

/** A text delta: the most common (and least durable) agent event. */
function delta(text: string): AgentEvent {
  return { type: 'model.text-delta', text };
}

interface Frame {
  id?: string;
  data?: HubItem;
  comment?: string;
  retry?: string;
}

/** A minimal SSE client over node:http, which lets the test drop the connection at will. */
interface Client {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  frames: Frame[];
  /** Resolves once `predicate` holds for the frames received so far. */
  until(predicate: (frames: Frame[]) => boolean): Promise<void>;
  disconnect(): void;
  ended: Promise<void>;
}

function parseFrames(block: string): Frame {
  const frame: Frame = {};
  for (const line of block.split('\n')) {
    if (line.startsWith(':')) frame.comment = line.slice(1).trim();
    else if (line.startsWith('id: ')) frame.id = line.slice(4);
    else if (line.startsWith('retry: ')) frame.retry = line.slice(7);
    else if (line.startsWith('data: ')) frame.data = JSON.parse(line.slice(6)) as HubItem;
  }
  return frame;
}

function connect(
  port: number,
  options: {
    path?: string;
    lastEventId?: string | undefined;
    method?: string;
    headers?: Record<string, string>;
  } = {},
): Promise<Client> {
  return new Promise((resolve, reject) => {
    const req = request({
      host: '127.0.0.1',
      port,
      path: options.path ?? '/events',
      method: options.method ?? 'GET',
      agent: false,
      headers: {
        accept: 'text/event-stream',
        ...(options.lastEventId === undefined ? {} : { 'last-event-id': options.lastEventId }),
        ...options.headers,
      },
    });
    req.on('error', reject);
    req.on('response', (res) => {
      let buffer = '';
      const waiters: (() => void)[] = [];
      let endResolve = () => {};
      const client: Client = {
        status: res.statusCode ?? 0,
        headers: res.headers,
        frames: [],
        until(predicate) {
          if (predicate(client.frames)) return Promise.resolve();
          return new Promise<void>((done, fail) => {
            const check = () => {
              if (predicate(client.frames)) done();
              else waiters.push(check);
            };
            waiters.push(check);
            res.once('end', () => fail(new Error('stream ended before the condition held')));
          });
        },
        disconnect() {
          req.destroy();
        },
        ended: new Promise<void>((done) => {
          endResolve = done;
        }),
      };
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => {
        buffer += chunk;
        let index = buffer.indexOf('\n\n');
        while (index >= 0) {
          client.frames.push(parseFrames(buffer.slice(0, index)));
          buffer = buffer.slice(index + 2);
          index = buffer.indexOf('\n\n');
        }
        for (const waiter of waiters.splice(0)) waiter();
      });
      res.on('end', () => endResolve());
      res.on('close', () => endResolve());
      resolve(client);
    });
    req.end();
  });
}

/** Frames that carry hub items with a cursor, as `id:text`. */
function deltas(frames: readonly Frame[]): string[] {
  return frames.flatMap((frame) =>
    frame.data?.type === 'event' && frame.data.event.type === 'model.text-delta'
      ? [`${frame.id}:${frame.data.event.text}`]
      : [],
  );
}

let server: Server | undefined;

afterEach(async () => {
  server?.closeAllConnections();
  await new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()));
  server = undefined;
});

/** Serves the hub on a loopback port; `closed()` resolves when the n-th response has closed. */
async function serve(hub: EventHub, options: SseRouteOptions) {
  const route = createSseRoute(hub, options);
  const handler = getRequestListener((request: Request) => route(request));
  let closedCount = 0;
  const closeWaiters: { n: number; resolve: () => void }[] = [];
  server = createServer((req, res) => {
    res.on('close', () => {
      closedCount++;
      for (const waiter of closeWaiters.filter((w) => closedCount >= w.n)) waiter.resolve();
    });
    void handler(req, res);
  });
  await new Promise<void>((resolve) => server?.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  return {
    port,
    closed: (n: number) =>
      new Promise<void>((resolve) => {
        if (closedCount >= n) resolve();
        else closeWaiters.push({ n, resolve });
      }),
  };
}

describe('createSseRoute', () => {
  it('resumes with Last-Event-ID after a disconnect and delivers every event exactly once', async () => {
    const clock: ManualClock = createManualClock();
    const hub = createEventHub({ teamId: TEAM, clock, epoch: 'run1' });
    const { port, closed } = await serve(hub, { clock, heartbeatMs: 1_000, retryMs: 500 });

    hub.publish('alice', delta('1')); // seq 2 (1: presence)
    hub.publish('alice', delta('2')); // seq 3
    const first = await connect(port);
    expect(first.status).toBe(200);
    expect(first.headers['content-type']).toBe('text/event-stream; charset=utf-8');
    expect(first.headers['cache-control']).toBe('no-cache, no-transform');
    await first.until((frames) => deltas(frames).length === 2);
    expect(first.frames[0]).toEqual({ retry: '500' });

    hub.publish('alice', delta('3')); // seq 4, live
    await first.until((frames) => deltas(frames).length === 3);

    clock.advance(1_000);
    await first.until((frames) => frames.some((frame) => frame.comment === 'heartbeat'));

    first.disconnect();
    await closed(1);
    expect(hub.subscriberCount()).toBe(0);
    expect(clock.pendingTimers()).toBe(0);

    hub.publish('alice', delta('4')); // seq 5, while nobody listens
    hub.publish('bob', delta('5')); //   seq 7 (6: bob started)
    const lastId = first.frames.filter((frame) => frame.id !== undefined).at(-1)?.id;
    expect(lastId).toBe('run1:4');

    const second = await connect(port, { lastEventId: lastId });
    await second.until((frames) => deltas(frames).length === 2);
    hub.publish('alice', delta('6')); // seq 8, live
    await second.until((frames) => deltas(frames).length === 3);

    const everything = [...deltas(first.frames), ...deltas(second.frames)];
    expect(everything).toEqual([
      'run1:2:1',
      'run1:3:2',
      'run1:4:3',
      'run1:5:4',
      'run1:7:5',
      'run1:8:6',
    ]);

    second.disconnect();
    await closed(2);
    expect(hub.subscriberCount()).toBe(0);
  });

  it('filters by agent and adds presence from the query string', async () => {
    const hub = createEventHub({ teamId: TEAM, epoch: 'e' });
    const { port } = await serve(hub, { heartbeatMs: 0 });
    hub.publish('alice', delta('a'));
    hub.publish('bob', delta('b'));
    const client = await connect(port, { path: '/events?agent=bob&presence=1' });
    hub.publish('alice', delta('a2'));
    hub.agentStopped('bob');
    await client.until((frames) => frames.some((f) => f.data?.type === 'presence'));
    const items = client.frames.filter((frame) => frame.data !== undefined);
    expect(items.map((frame) => [frame.id, frame.data?.type])).toEqual([
      [undefined, 'presence.snapshot'],
      ['e:4', 'event'],
      ['e:6', 'presence'],
    ]);
    // The snapshot restates state and must not move the client's cursor.
    expect(items[0]?.data).toMatchObject({ active: [{ name: 'bob', active: true }] });
    client.disconnect();
  });

  it('ends the stream when the hub closes, after what was buffered', async () => {
    const hub = createEventHub({ teamId: TEAM, epoch: 'e' });
    const { port } = await serve(hub, { heartbeatMs: 0 });
    const client = await connect(port, { path: '/events?lastEventId=0' });
    hub.publish('alice', delta('last words'));
    hub.close();
    await client.ended;
    expect(deltas(client.frames)).toEqual(['e:2:last words']);
  });

  it('tells a client that reconnects to a restarted hub to rebuild its view', async () => {
    const before = createEventHub({ teamId: TEAM, epoch: 'before' });
    const { port } = await serve(before, { heartbeatMs: 0 });
    for (let i = 1; i <= 5; i++) before.publish('alice', delta(`old ${i}`)); // seqs 2..6
    const client = await connect(port);
    await client.until((frames) => deltas(frames).length === 5);
    const lastId = client.frames.filter((frame) => frame.id !== undefined).at(-1)?.id;
    expect(lastId).toBe('before:6');
    client.disconnect();
    before.close();
    server?.closeAllConnections();
    await new Promise<void>((resolve) => server?.close(() => resolve()));

    // The process restarted: a new hub whose seqs began again, already past the old cursor.
    const after = createEventHub({ teamId: TEAM, epoch: 'after' });
    for (let i = 1; i <= 7; i++) after.publish('alice', delta(`new ${i}`)); // seqs 2..8
    const restarted = await serve(after, { heartbeatMs: 0 });
    const again = await connect(restarted.port, { lastEventId: lastId });
    await again.until((frames) => deltas(frames).length === 7);
    const items = again.frames.filter((frame) => frame.data !== undefined);
    // not "everything after seq 6" (which would skip `new 1`..`new 5`): a reset, then everything
    expect(items[0]?.data).toEqual({ type: 'reset', reason: 'hub-restarted' });
    expect(items[0]?.id).toBeUndefined();
    expect(deltas(again.frames)).toEqual(
      [2, 3, 4, 5, 6, 7, 8].map((seq) => `after:${seq}:new ${seq - 1}`),
    );

    // a cursor of this hub, with or without its epoch, resumes exactly
    const resumed = await connect(restarted.port, { lastEventId: 'after:6' });
    await resumed.until((frames) => deltas(frames).length === 2);
    const bare = await connect(restarted.port, { lastEventId: '6' });
    await bare.until((frames) => deltas(frames).length === 2);
    for (const client of [resumed, bare]) {
      expect(client.frames.some((frame) => frame.data?.type === 'reset')).toBe(false);
      expect(deltas(client.frames)).toEqual(['after:7:new 6', 'after:8:new 7']);
      client.disconnect();
    }
  });

  it('refuses other methods, a malformed Last-Event-ID and a closed hub', async () => {
    const hub = createEventHub({ teamId: TEAM });
    const { port } = await serve(hub, { heartbeatMs: 0 });
    expect((await connect(port, { method: 'POST' })).status).toBe(405);
    for (const lastEventId of ['abc', 'e:', ':5', 'e:5:6', 'a b:5', `${'x'.repeat(65)}:5`]) {
      expect((await connect(port, { lastEventId })).status, lastEventId).toBe(400);
    }
    hub.close();
    expect((await connect(port)).status).toBe(503);
  });
});

/** What a refused response streamed before it ended: a refusal must never open a stream. */
async function streamed(client: Client): Promise<Frame[]> {
  await client.ended;
  return client.frames;
}

describe('createSseRoute: scope and failures', () => {
  it('scoped to a team, serves only requests naming it and answers 404 to the rest', async () => {
    const hub = createEventHub({ teamId: TEAM, epoch: 'e' });
    const { port } = await serve(hub, { heartbeatMs: 0, teamId: TEAM });
    hub.publish('alice', delta('mine'));
    for (const path of ['/events', '/events?team=other-team', '/events?team=']) {
      const client = await connect(port, { path });
      expect(client.status, path).toBe(404);
      expect(await streamed(client), path).toEqual([]);
      expect(hub.subscriberCount(), path).toBe(0);
    }
    const client = await connect(port, { path: `/events?team=${TEAM}` });
    expect(client.status).toBe(200);
    await client.until((frames) => deltas(frames).length === 1);
    client.disconnect();
  });

  it('without team scoping, still answers 404 to a request for another team', async () => {
    const hub = createEventHub({ teamId: TEAM });
    const { port } = await serve(hub, { heartbeatMs: 0 });
    expect((await connect(port, { path: '/events?team=other-team' })).status).toBe(404);
    const own = await connect(port, { path: `/events?team=${TEAM}` });
    const unnamed = await connect(port);
    expect([own.status, unnamed.status]).toEqual([200, 200]);
    own.disconnect();
    unnamed.disconnect();
  });

  it('refuses a configuration that would expose the stream', () => {
    const hub = createEventHub({ teamId: TEAM });
    const code = (options: SseRouteOptions) => {
      try {
        createSseRoute(hub, options);
        return 'no error';
      } catch (error) {
        return TeamError.isInstance(error) ? error.code : 'not a TeamError';
      }
    };
    expect(code({ headers: { 'Access-Control-Allow-Origin': '*' } })).toBe('INVALID_ARGUMENT');
    expect(code({ headers: { 'access-control-allow-origin': ' * ' } })).toBe('INVALID_ARGUMENT');
    expect(code({ teamId: 'another-team' })).toBe('INVALID_ARGUMENT');
    expect(code({ headers: { 'access-control-allow-origin': 'https://board.example' } })).toBe(
      'no error',
    );
  });

  it('answers 500 (not 400) when the hub fails, and reports the error', async () => {
    const hub = createEventHub({ teamId: TEAM });
    const broken: EventHub = Object.assign(Object.create(hub) as EventHub, {
      subscribe() {
        throw new RangeError('Maximum call stack size exceeded');
      },
    });
    const onError = vi.fn();
    const { port } = await serve(broken, { heartbeatMs: 0, onError });
    const client = await connect(port);
    expect(client.status).toBe(500);
    await client.ended;
    expect(onError).toHaveBeenCalledWith(expect.any(RangeError));
  });
});
