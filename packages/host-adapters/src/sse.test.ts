import { TeamError } from '@teamwire/core';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { createSseParser, type SseEvent } from './sse.js';

const encoder = new TextEncoder();

function parseAll(pieces: readonly Uint8Array[]): { events: SseEvent[]; incomplete: boolean } {
  const parser = createSseParser();
  const events: SseEvent[] = [];
  for (const piece of pieces) events.push(...parser.push(piece));
  const end = parser.end();
  return { events: [...events, ...end.events], incomplete: end.incomplete };
}

function splitAt(bytes: Uint8Array, cuts: readonly number[]): Uint8Array[] {
  const sorted = [...new Set(cuts)].filter((c) => c > 0 && c < bytes.length).sort((a, b) => a - b);
  const pieces: Uint8Array[] = [];
  let start = 0;
  for (const cut of sorted) {
    pieces.push(bytes.subarray(start, cut));
    start = cut;
  }
  pieces.push(bytes.subarray(start));
  return pieces;
}

describe('createSseParser', () => {
  it('reads data, event names, comments and multi-line data', () => {
    const text =
      ': keep-alive comment\n' +
      'event: message_start\ndata: {"a":1}\n\n' +
      'data: line one\ndata: line two\n\n' +
      'id: 7\nretry: 100\ndata:no-space\n\n' +
      'event: lonely\n\n' +
      'data: [DONE]\n\n';
    const { events, incomplete } = parseAll([encoder.encode(text)]);
    expect(events).toEqual([
      { event: 'message_start', data: '{"a":1}' },
      { event: undefined, data: 'line one\nline two' },
      { event: undefined, data: 'no-space' },
      { event: undefined, data: '[DONE]' },
    ]);
    expect(incomplete).toBe(false);
  });

  it('accepts CRLF and bare CR line endings, even with CR and LF in different chunks', () => {
    const bytes = encoder.encode('data: a\r\n\r\ndata: b\r\rdata: c\n\n');
    const whole = parseAll([bytes]).events.map((e) => e.data);
    expect(whole).toEqual(['a', 'b', 'c']);
    for (let cut = 1; cut < bytes.length; cut++) {
      expect(parseAll(splitAt(bytes, [cut])).events.map((e) => e.data)).toEqual(whole);
    }
  });

  it('gives the same events for every single split point inside multi-byte characters', () => {
    const text = 'data: {"t":"Grüße 👋 東京 — ✅"}\n\nevent: x\ndata: é\n\n';
    const bytes = encoder.encode(text);
    const expected = parseAll([bytes]).events;
    expect(expected[0]?.data).toBe('{"t":"Grüße 👋 東京 — ✅"}');
    for (let cut = 1; cut < bytes.length; cut++) {
      expect(parseAll(splitAt(bytes, [cut])).events).toEqual(expected);
    }
    // One byte at a time: every boundary at once.
    expect(parseAll([...bytes].map((b) => Uint8Array.of(b))).events).toEqual(expected);
  });

  it('is independent of chunk boundaries (property)', () => {
    const payload = fc
      .string({ unit: 'grapheme', maxLength: 30 })
      .map((s) => s.replace(/[\r\n]/g, ' '));
    const event = fc.record({
      event: fc.option(fc.constantFrom('a', 'ping', 'delta')),
      data: payload,
    });
    fc.assert(
      fc.property(
        fc.array(event, { minLength: 1, maxLength: 8 }),
        fc.constantFrom('\n', '\r\n', '\r'),
        fc.array(fc.nat(), { maxLength: 20 }),
        (events, eol, rawCuts) => {
          const text = events
            .map(
              (e) =>
                `${e.event === null ? '' : `event: ${e.event}${eol}`}data: ${e.data}${eol}${eol}`,
            )
            .join('');
          const bytes = encoder.encode(text);
          const cuts = rawCuts.map((n) => (bytes.length > 1 ? (n % (bytes.length - 1)) + 1 : 0));
          const got = parseAll(splitAt(bytes, cuts));
          expect(got.incomplete).toBe(false);
          expect(got.events).toEqual(
            events.map((e) => ({ event: e.event === null ? undefined : e.event, data: e.data })),
          );
        },
      ),
      { numRuns: 300 },
    );
  });

  it('reports a stream that stops inside a line or inside an event', () => {
    expect(parseAll([encoder.encode('data: {"a":1}\n\ndata: {"b"')])).toEqual({
      events: [{ event: undefined, data: '{"a":1}' }],
      incomplete: true,
    });
    expect(parseAll([encoder.encode('event: message_delta\n')]).incomplete).toBe(true);
    // A whole last line without the closing blank line still counts.
    expect(parseAll([encoder.encode('data: {"a":1}\n')])).toEqual({
      events: [{ event: undefined, data: '{"a":1}' }],
      incomplete: false,
    });
  });

  it('inspects each byte once, however many reads a long line takes', () => {
    const line = encoder.encode(`data: ${'x'.repeat(1024 * 1024)}\n\n`);
    const pieces = splitAt(
      line,
      [...Array(1024).keys()].map((i) => i * 1025),
    );
    const meter = { reads: 0 };
    const parser = createSseParser();
    const events = pieces.flatMap((piece) => parser.push(metered(piece, meter)));
    expect(events).toEqual([{ event: undefined, data: 'x'.repeat(1024 * 1024) }]);
    // A parser that looked at its whole buffer on every read would make ~500 times as many.
    expect(meter.reads).toBeLessThanOrEqual(line.length + pieces.length);
  });

  it('refuses an event larger than maxEventBytes, counting an unfinished line', () => {
    const parser = createSseParser({ maxEventBytes: 1024 });
    parser.push(encoder.encode(`data: ${'a'.repeat(500)}`));
    const error = caughtSync(() => parser.push(encoder.encode('b'.repeat(600))));
    expect(TeamError.hasCode(error, 'MODEL_PROTOCOL')).toBe(true);
    expect((error as TeamError).message).toContain('larger than 1024 bytes');
    expect((error as TeamError).details).toMatchObject({ maxEventBytes: 1024 });
  });

  it('refuses an event of many short lines that never ends, but not many events', () => {
    const line = encoder.encode(`data: ${'a'.repeat(94)}\n`);
    const ok = createSseParser({ maxEventBytes: 1024 });
    for (let i = 0; i < 1000; i++) {
      expect(ok.push(line)).toEqual([]);
      expect(ok.push(encoder.encode('\n'))).toHaveLength(1);
    }
    const endless = createSseParser({ maxEventBytes: 1024 });
    const error = caughtSync(() => {
      for (let i = 0; i < 1000; i++) endless.push(line);
    });
    expect(TeamError.hasCode(error, 'MODEL_PROTOCOL')).toBe(true);
  });

  it('refuses a line past the default cap of 8 MiB', () => {
    const parser = createSseParser();
    const mib = new Uint8Array(1024 * 1024).fill(0x78);
    parser.push(encoder.encode('data: '));
    for (let i = 1; i < 8; i++) parser.push(mib);
    expect(
      TeamError.hasCode(
        caughtSync(() => parser.push(mib)),
        'MODEL_PROTOCOL',
      ),
    ).toBe(true);
  });
});

function caughtSync(fn: () => unknown): unknown {
  try {
    fn();
  } catch (error) {
    return error;
  }
  throw new Error('expected a failure');
}

/** `bytes` behind a proxy that counts reads of its elements: the parser's scanning work. */
function metered(bytes: Uint8Array, meter: { reads: number }): Uint8Array {
  return new Proxy(bytes, {
    get(target, key) {
      if (typeof key === 'string' && key.charCodeAt(0) >= 48 && key.charCodeAt(0) <= 57) {
        meter.reads++;
      }
      const value: unknown = Reflect.get(target, key, target);
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
}
