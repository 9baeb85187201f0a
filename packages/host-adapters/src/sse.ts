import { TeamError } from '@teamwire/core';

/** One dispatched Server-Sent Event. */
export interface SseEvent {
  /** The `event:` field, when the server sent one (Anthropic does; OpenAI-style APIs do not). */
  event: string | undefined;
  /** The `data:` fields joined with `\n`. */
  data: string;
}

/** Result of {@link SseParser.end}. */
export interface SseEnd {
  /** Events completed by the end of input (a final `data:` line terminated by a newline). */
  events: SseEvent[];
  /**
   * True when the input stopped inside an event: an unterminated line, or nothing at all after a
   * line that was cut. Adapters treat this as a stream cut mid-event.
   */
  incomplete: boolean;
}

/** Options of {@link createSseParser}. */
export interface SseParserOptions {
  /**
   * The most bytes one event may hold: its `data:` lines plus the line still being received. A
   * larger event throws MODEL_PROTOCOL, so a server that never ends a line or an event cannot
   * grow the process without bound. Default 8 MiB.
   */
  maxEventBytes?: number | undefined;
}

/** The default of {@link SseParserOptions.maxEventBytes}. */
export const DEFAULT_MAX_EVENT_BYTES = 8 * 1024 * 1024;

/**
 * An incremental `text/event-stream` parser.
 *
 * Network reads split the stream anywhere: inside a line, between `\r` and `\n`, or inside a
 * multi-byte UTF-8 character. The parser keeps every such remainder until the next chunk, so the
 * events it returns do not depend on where the chunks were cut. Each byte is inspected once, so
 * a long line costs time in proportion to its length whatever the number of reads.
 */
export interface SseParser {
  /**
   * Feeds the next bytes; returns the events they complete, in order. Throws MODEL_PROTOCOL when
   * an event grows past `maxEventBytes`; the parser is then spent.
   */
  push(chunk: Uint8Array): SseEvent[];
  /** Flushes the input; an event not closed by a blank line is dispatched if its line was whole. */
  end(): SseEnd;
}

/** Creates a fresh {@link SseParser}. */
export function createSseParser(options: SseParserOptions = {}): SseParser {
  const maxEventBytes = options.maxEventBytes ?? DEFAULT_MAX_EVENT_BYTES;
  // Line breaks are ASCII bytes, which never occur inside a multi-byte character, so lines can be
  // cut from the bytes and decoded whole. The BOM is dropped by hand: only the stream's first.
  const decoder = new TextDecoder('utf-8', { ignoreBOM: true });
  // The unfinished line, in one buffer that doubles as it fills: a line arriving a byte per read
  // costs neither quadratic copying nor an object per read.
  let partial = new Uint8Array(0);
  let partialBytes = 0;
  let eventBytes = 0;
  let afterCR = false;
  let firstLine = true;
  let data: string[] = [];
  let eventName: string | undefined;
  let hasFields = false;

  const takeEvent = (): SseEvent | undefined => {
    const event =
      data.length > 0 ? { event: eventName, data: data.join('\n') } : (undefined as undefined);
    data = [];
    eventName = undefined;
    hasFields = false;
    eventBytes = 0;
    return event;
  };

  const checkSize = (lineBytes: number): void => {
    if (eventBytes + lineBytes <= maxEventBytes) return;
    partial = new Uint8Array(0);
    partialBytes = 0;
    data = [];
    throw new TeamError('MODEL_PROTOCOL', `an event is larger than ${maxEventBytes} bytes`, {
      details: { maxEventBytes },
    });
  };

  const keep = (bytes: Uint8Array): void => {
    if (partialBytes + bytes.length > partial.length) {
      const grown = new Uint8Array(Math.max(2 * partial.length, partialBytes + bytes.length, 256));
      grown.set(partial.subarray(0, partialBytes));
      partial = grown;
    }
    partial.set(bytes, partialBytes);
    partialBytes += bytes.length;
  };

  const lineOf = (chunk: Uint8Array, start: number, end: number): string => {
    let bytes = chunk.subarray(start, end);
    if (partialBytes > 0) {
      keep(bytes);
      bytes = partial.subarray(0, partialBytes);
      partialBytes = 0;
    }
    const line = decoder.decode(bytes);
    // Let a buffer grown by one long line go rather than hold it for the rest of the stream.
    if (partial.length > 64 * 1024) partial = new Uint8Array(0);
    if (!firstLine) return line;
    firstLine = false;
    return line.charCodeAt(0) === 0xfeff ? line.slice(1) : line;
  };

  const processLine = (line: string, lineBytes: number, out: SseEvent[]): void => {
    if (line === '') {
      const event = takeEvent();
      if (event) out.push(event);
      return;
    }
    if (line.startsWith(':')) return;
    const colon = line.indexOf(':');
    const field = colon === -1 ? line : line.slice(0, colon);
    let value = colon === -1 ? '' : line.slice(colon + 1);
    if (value.startsWith(' ')) value = value.slice(1);
    if (field === 'data') {
      data.push(value);
      eventBytes += lineBytes;
      hasFields = true;
    } else if (field === 'event') {
      eventName = value;
      hasFields = true;
    }
    // `id`, `retry` and unknown fields carry nothing the adapters use.
  };

  return {
    push(chunk) {
      const out: SseEvent[] = [];
      if (chunk.length === 0) return out;
      let start = 0;
      // A `\n` right after a `\r` ends no second line, even when a read fell between them.
      if (afterCR && chunk[0] === 10) start = 1;
      afterCR = false;
      for (let i = start; i < chunk.length; i++) {
        const byte = chunk[i];
        if (byte !== 10 && byte !== 13) continue;
        const lineBytes = partialBytes + i - start;
        checkSize(lineBytes);
        processLine(lineOf(chunk, start, i), lineBytes, out);
        if (byte === 13) {
          if (i + 1 === chunk.length) afterCR = true;
          else if (chunk[i + 1] === 10) i++;
        }
        start = i + 1;
      }
      if (start < chunk.length) {
        checkSize(partialBytes + chunk.length - start);
        // Copied: the caller may reuse its buffer for the next read.
        keep(chunk.subarray(start));
      }
      return out;
    },
    end() {
      const cutLine = partialBytes > 0;
      partial = new Uint8Array(0);
      partialBytes = 0;
      afterCR = false;
      if (cutLine) {
        takeEvent();
        return { events: [], incomplete: true };
      }
      const pending = hasFields;
      const last = takeEvent();
      return { events: last ? [last] : [], incomplete: pending && last === undefined };
    },
  };
}
