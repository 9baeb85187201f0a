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

/**
 * An incremental `text/event-stream` parser.
 *
 * Network reads split the stream anywhere: inside a line, between `\r` and `\n`, or inside a
 * multi-byte UTF-8 character. The parser keeps every such remainder until the next chunk, so the
 * events it returns do not depend on where the chunks were cut.
 */
export interface SseParser {
  /** Feeds the next bytes; returns the events they complete, in order. */
  push(chunk: Uint8Array): SseEvent[];
  /** Flushes the input; an event not closed by a blank line is dispatched if its line was whole. */
  end(): SseEnd;
}

/** Creates a fresh {@link SseParser}. */
export function createSseParser(): SseParser {
  const decoder = new TextDecoder('utf-8');
  let buffer = '';
  let data: string[] = [];
  let eventName: string | undefined;
  let hasFields = false;

  const takeEvent = (): SseEvent | undefined => {
    const event =
      data.length > 0 ? { event: eventName, data: data.join('\n') } : (undefined as undefined);
    data = [];
    eventName = undefined;
    hasFields = false;
    return event;
  };

  const processLine = (line: string, out: SseEvent[]): void => {
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
      hasFields = true;
    } else if (field === 'event') {
      eventName = value;
      hasFields = true;
    }
    // `id`, `retry` and unknown fields carry nothing the adapters use.
  };

  const drain = (final: boolean): SseEvent[] => {
    const out: SseEvent[] = [];
    let start = 0;
    for (let i = 0; i < buffer.length; i++) {
      const ch = buffer.charCodeAt(i);
      if (ch === 10 /* \n */) {
        processLine(buffer.slice(start, i), out);
        start = i + 1;
      } else if (ch === 13 /* \r */) {
        if (i + 1 === buffer.length && !final) break; // a `\n` may follow in the next chunk
        processLine(buffer.slice(start, i), out);
        if (buffer.charCodeAt(i + 1) === 10) i++;
        start = i + 1;
      }
    }
    buffer = buffer.slice(start);
    return out;
  };

  return {
    push(chunk) {
      buffer += decoder.decode(chunk, { stream: true });
      return drain(false);
    },
    end() {
      buffer += decoder.decode();
      const events = drain(true);
      const cutLine = buffer.length > 0;
      buffer = '';
      if (cutLine) {
        takeEvent();
        return { events, incomplete: true };
      }
      const pending = hasFields;
      const last = takeEvent();
      if (last) events.push(last);
      return { events, incomplete: pending && last === undefined };
    },
  };
}
