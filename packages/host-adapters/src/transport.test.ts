import { type ModelAdapter, TeamError } from '@teamwire/core';
import { createManualClock, type ManualClock } from '@teamwire/core/testing';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { createAnthropic } from './anthropic.js';
import { createOpenAICompatible } from './openai-compatible.js';
import {
  anthropicSse,
  caught,
  collect,
  countingFetch,
  deltaText,
  openAiSse,
  readChunks,
  simpleRequest,
  streamFailure,
} from './testing/fixtures.js';
import { type LoopbackServer, startLoopbackServer } from './testing/loopback-server.js';
import type { TransportOptions } from './transport.js';

const JSON_HEADERS = { 'content-type': 'application/json' };
const KiB = 1024;

let server: LoopbackServer;
let elsewhere: LoopbackServer;
beforeAll(async () => {
  server = await startLoopbackServer();
  elsewhere = await startLoopbackServer();
});
afterAll(async () => {
  await server.close();
  await elsewhere.close();
});
afterEach(() => {
  server.reset();
  elsewhere.reset();
});

const openAiText = openAiSse(readChunks('scenarios/openai-chat/text-cached.chunks.txt'));
const anthropicText = anthropicSse(
  readChunks('scenarios/anthropic-messages/parallel-tools-cached.chunks.txt'),
);

/** Both HTTP adapters, each with the header that carries its key and a whole reply. */
const adapters = [
  {
    name: 'openai-compatible',
    credential: 'authorization',
    reply: openAiText,
    create: (baseURL: string, transport: TransportOptions): ModelAdapter =>
      createOpenAICompatible({ baseURL, apiKey: 'sk-secret', model: 'm', ...transport }),
    /** The first text delta, then `keepAlive` as the only thing the server ever sends again. */
    firstDelta: openAiSse(['{"choices":[{"index":0,"delta":{"content":"Hi"}}]}'], { done: false }),
    keepAlive: ': keep-alive\n\n',
  },
  {
    name: 'anthropic',
    credential: 'x-api-key',
    reply: anthropicText,
    create: (baseURL: string, transport: TransportOptions): ModelAdapter =>
      createAnthropic({ baseURL, apiKey: 'sk-ant-secret', model: 'm', ...transport }),
    firstDelta: anthropicSse([
      '{"type":"message_start","message":{"id":"msg_1","usage":{"input_tokens":1,"output_tokens":0}}}',
      '{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}',
      '{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hi"}}',
    ]),
    keepAlive: 'event: ping\ndata: {"type":"ping"}\n\n',
  },
] as const;

describe.each(adapters)('$name: error bodies are read up to 64 KiB', (a) => {
  // 32 MiB that never closes its JSON: as good as endless for a reader that reads it all.
  const piece = 'x'.repeat(64 * KiB);
  const endless = ['{"error":{"message":"boom ', ...Array.from({ length: 512 }, () => piece)];

  it.each([
    { status: 500, code: 'MODEL_UNAVAILABLE' },
    { status: 200, code: 'MODEL_PROTOCOL' },
  ] as const)('status $status: fails with $code after a bounded read', async ({ status, code }) => {
    server.reply({ status, headers: JSON_HEADERS, body: endless });
    const counting = countingFetch();
    const model = a.create(server.baseURL, { fetch: counting.fetch, retry: false });
    const error = await streamFailure(model);
    expect(TeamError.hasCode(error, code)).toBe(true);
    expect((error as TeamError).message).toContain('boom xxx');
    expect((error as TeamError).message.length).toBeLessThan(2200);
    // The cap plus what the body stream had buffered ahead, never the 32 MiB on offer.
    expect(counting.bytesRead()).toBeLessThan(512 * KiB);
    await server.requests[0]?.closed;
  });
});

describe.each(adapters)('$name: stream events are bounded', (a) => {
  it('fails an event larger than maxEventBytes with MODEL_PROTOCOL naming the provider', async () => {
    server.reply({ body: [a.firstDelta, `data: ${'x'.repeat(4096)}`] });
    const model = a.create(server.baseURL, { maxEventBytes: 1024 });
    const error = await streamFailure(model);
    expect(TeamError.hasCode(error, 'MODEL_PROTOCOL')).toBe(true);
    expect((error as TeamError).message).toBe(
      `${model.provider}: an event is larger than 1024 bytes`,
    );
  });
});

describe.each(adapters)('$name: redirects', (a) => {
  it('never sends the key or the prompt to another origin', async () => {
    const target = `${elsewhere.baseURL}/steal`;
    server.reply({ status: 307, headers: { location: target }, body: [] });
    elsewhere.reply({ body: [a.reply] });
    const error = await streamFailure(a.create(server.baseURL, { retry: false }));
    expect(elsewhere.requests).toEqual([]);
    expect(TeamError.hasCode(error, 'MODEL_PROTOCOL')).toBe(true);
    expect((error as TeamError).message).toContain('redirect to another origin');
    expect((error as TeamError).details).toMatchObject({
      status: 307,
      location: new URL(elsewhere.baseURL).origin,
    });
    expect(server.requests[0]?.headers[a.credential]).toContain('secret');
  });

  it('follows a same-origin 307/308 with the key and the body', async () => {
    server.reply(
      { status: 307, headers: { location: '/v1/moved' }, body: [] },
      { status: 308, headers: { location: `${server.baseURL}/moved-again` }, body: [] },
      { body: [a.reply] },
    );
    const events = await collect(a.create(server.baseURL, {}).stream(simpleRequest()));
    expect(deltaText(events)).not.toBe('');
    expect(server.requests.map((r) => r.path).slice(1)).toEqual(['/v1/moved', '/v1/moved-again']);
    expect(server.requests[2]?.headers[a.credential]).toContain('secret');
    expect(server.requests[2]?.body).toEqual(server.requests[0]?.body);
  });

  it('refuses a same-origin 302, which would turn the POST into a GET', async () => {
    server.reply(
      { status: 302, headers: { location: '/v1/moved' }, body: [] },
      { body: [a.reply] },
    );
    const error = await streamFailure(a.create(server.baseURL, { retry: false }));
    expect(TeamError.hasCode(error, 'MODEL_PROTOCOL')).toBe(true);
    expect(server.requests).toHaveLength(1);
  });

  it('stops after five same-origin redirects', async () => {
    const loop = { status: 307, headers: { location: '/v1/again' }, body: [] };
    server.reply(loop, loop, loop, loop, loop, loop, { body: [a.reply] });
    const error = await streamFailure(a.create(server.baseURL, { retry: false }));
    expect(TeamError.hasCode(error, 'MODEL_PROTOCOL')).toBe(true);
    expect((error as TeamError).message).toContain('too many redirects');
    expect(server.requests).toHaveLength(6);
  });
});

describe.each(adapters)('$name: stream deadlines', (a) => {
  /**
   * Advances the clock past `ms`, then far past every default limit: on code without the limit
   * under test, a default timer fires instead and the assertions on the message fail at once.
   */
  async function expireAfter(clock: ManualClock, pending: Promise<unknown>, ms: number) {
    await vi.waitFor(() => expect(clock.pendingTimers()).toBe(1));
    clock.advance(ms);
    clock.advance(24 * 3_600_000);
    return caught(() => pending);
  }

  it('fails a stream of keep-alives alone after eventTimeoutMs', async () => {
    server.reply({ body: [a.firstDelta], after: 'hang' });
    const manual = createManualClock();
    let timersSet = 0;
    const clock = {
      now: manual.now,
      setTimer: (ms: number, callback: () => void) => {
        timersSet++;
        return manual.setTimer(ms, callback);
      },
    };
    const iterator = a
      .create(server.baseURL, { clock, eventTimeoutMs: 60_000, idleTimeoutMs: 30_000 })
      .stream(simpleRequest())
      [Symbol.asyncIterator]();
    expect((await iterator.next()).value).toEqual({ type: 'text-delta', text: 'Hi' });
    const pending = caught(() => iterator.next());
    // A keep-alive every 20 s: the idle timeout never runs out, the event timeout must.
    for (let i = 0; i < 3; i++) {
      const before = timersSet;
      await server.requests[0]?.write(a.keepAlive);
      // Reading the bytes re-arms the idle limit: the keep-alive has reached the adapter.
      await vi.waitFor(() => expect(timersSet).toBeGreaterThan(before));
      manual.advance(20_000);
    }
    manual.advance(24 * 3_600_000);
    const error = await pending;
    expect(TeamError.hasCode(error, 'MODEL_UNAVAILABLE')).toBe(true);
    expect((error as TeamError).message).toContain('no event received for 60000 ms');
    expect((error as TeamError).details).toMatchObject({ eventTimeoutMs: 60_000 });
    await server.requests[0]?.closed;
  });

  it('fails a call still running at deadlineMs', async () => {
    server.reply({ body: [a.firstDelta, a.keepAlive], after: 'hang' });
    const clock = createManualClock();
    const iterator = a
      .create(server.baseURL, { clock, deadlineMs: 90_000, idleTimeoutMs: 0, eventTimeoutMs: 0 })
      .stream(simpleRequest())
      [Symbol.asyncIterator]();
    expect((await iterator.next()).value).toEqual({ type: 'text-delta', text: 'Hi' });
    const error = await expireAfter(clock, iterator.next(), 90_000);
    expect(TeamError.hasCode(error, 'MODEL_UNAVAILABLE')).toBe(true);
    expect((error as TeamError).message).toContain('not finished within 90000 ms');
    expect((error as TeamError).details).toMatchObject({ deadlineMs: 90_000 });
    await server.requests[0]?.closed;
  });
});
