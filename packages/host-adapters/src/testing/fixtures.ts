import { readdirSync, readFileSync } from 'node:fs';
import type { ModelAdapter, ModelRequest, ModelStreamEvent } from '@teamwire/core';

const FIXTURES = new URL('../__fixtures__/', import.meta.url);

/** The chunk lines (one JSON payload each) of a fixture under `src/__fixtures__/`. */
export function readChunks(path: string): string[] {
  return readFileSync(new URL(path, FIXTURES), 'utf8')
    .split('\n')
    .filter((line) => line.trim() !== '');
}

/** The `*.chunks.txt` file names of a fixture folder. */
export function listChunkFiles(folder: string): string[] {
  return readdirSync(new URL(`${folder}/`, FIXTURES))
    .filter((name) => name.endsWith('.chunks.txt'))
    .sort();
}

/** OpenAI-style SSE: a `data:` event per chunk, then `data: [DONE]`. */
export function openAiSse(chunks: readonly string[], options: { done?: boolean } = {}): string {
  const events = chunks.map((chunk) => `data: ${chunk}\n\n`);
  if (options.done !== false) events.push('data: [DONE]\n\n');
  return events.join('');
}

/** Anthropic-style SSE: `event: <type>` plus `data:` per chunk. */
export function anthropicSse(chunks: readonly string[]): string {
  return chunks
    .map((chunk) => {
      const type = (JSON.parse(chunk) as { type: string }).type;
      return `event: ${type}\ndata: ${chunk}\n\n`;
    })
    .join('');
}

/** Splits `bytes` into pieces of `size` bytes (the last may be shorter). */
export function splitBytes(bytes: Uint8Array, size: number): Uint8Array[] {
  const pieces: Uint8Array[] = [];
  for (let i = 0; i < bytes.length; i += size) pieces.push(bytes.subarray(i, i + size));
  return pieces;
}

/**
 * A fetch that hands the response body to the reader `size` bytes at a time, whatever the TCP
 * reads were, so chunk boundaries fall inside lines and inside multi-byte characters.
 */
export function rechunkingFetch(size: number): typeof fetch {
  return async (input, init) => {
    const response = await fetch(input, init);
    if (!response.body) return response;
    const source = response.body.getReader();
    const body = new ReadableStream<Uint8Array>({
      async pull(controller) {
        const { done, value } = await source.read();
        if (done) {
          controller.close();
          return;
        }
        for (const piece of splitBytes(value, size)) controller.enqueue(piece);
      },
      cancel: (reason) => source.cancel(reason),
    });
    return new Response(body, { status: response.status, headers: response.headers });
  };
}

/** Drains a model stream. */
export async function collect(
  stream: AsyncIterable<ModelStreamEvent>,
): Promise<ModelStreamEvent[]> {
  const events: ModelStreamEvent[] = [];
  for await (const event of stream) events.push(event);
  return events;
}

/** The `finish` event of a drained stream (asserting there is exactly one, last). */
export function finishOf(
  events: readonly ModelStreamEvent[],
): Extract<ModelStreamEvent, { type: 'finish' }> {
  const finishes = events.filter((event) => event.type === 'finish');
  const last = events.at(-1);
  if (finishes.length !== 1 || last?.type !== 'finish') {
    throw new Error(`expected exactly one final finish event, got ${finishes.length}`);
  }
  return last;
}

/** Concatenated `text-delta` texts. */
export function deltaText(events: readonly ModelStreamEvent[]): string {
  return events.map((event) => (event.type === 'text-delta' ? event.text : '')).join('');
}

/** Concatenated `reasoning-delta` texts. */
export function deltaReasoning(events: readonly ModelStreamEvent[]): string {
  return events.map((event) => (event.type === 'reasoning-delta' ? event.text : '')).join('');
}

/** Runs `fn`, returning what it threw (failing when it does not throw). */
export async function caught(fn: () => Promise<unknown>): Promise<unknown> {
  try {
    await fn();
  } catch (error) {
    return error;
  }
  throw new Error('expected a failure');
}

/** Drains `model.stream(request)`, returning what it threw (failing when it does not throw). */
export function streamFailure(
  model: ModelAdapter,
  request: ModelRequest = simpleRequest(),
): Promise<unknown> {
  return caught(() => collect(model.stream(request)));
}

/** A minimal request: one system block and one user message. */
export function simpleRequest(overrides: Partial<ModelRequest> = {}): ModelRequest {
  return {
    system: [{ text: 'You are a careful teammate.' }],
    messages: [{ role: 'user', content: [{ type: 'text', text: 'Say hello.' }] }],
    tools: [],
    ...overrides,
  };
}

/** A sleep that returns at once and records what was asked. */
export function recordingSleep(): { sleep: (ms: number) => Promise<void>; calls: number[] } {
  const calls: number[] = [];
  return {
    calls,
    sleep: async (ms) => {
      calls.push(ms);
    },
  };
}

/** A fetch that counts the response body bytes handed to the reader, across every call. */
export function countingFetch(): { fetch: typeof fetch; bytesRead: () => number } {
  let bytes = 0;
  const counting: typeof fetch = async (input, init) => {
    const response = await fetch(input, init);
    if (!response.body) return response;
    const counter = new TransformStream<Uint8Array, Uint8Array>({
      transform(chunk, controller) {
        bytes += chunk.byteLength;
        controller.enqueue(chunk);
      },
    });
    return new Response(response.body.pipeThrough(counter), {
      status: response.status,
      headers: response.headers,
    });
  };
  return { fetch: counting, bytesRead: () => bytes };
}
