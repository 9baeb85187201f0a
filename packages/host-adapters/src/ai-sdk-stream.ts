import {
  type ContentBlock,
  type ModelStreamEvent,
  type StopReason,
  TeamError,
  type ToolCall,
  type Usage,
} from '@teamwire/core';
import {
  appendText,
  appendThinking,
  assertNotEmpty,
  finishEvent,
  isRecord,
  parseToolInput,
} from './content-builder.js';
import {
  abortedError,
  codeForStatus,
  isContextOverflow,
  protocolError,
  providerError,
  readProviderError,
} from './provider-errors.js';
import { isRetryableStatus, parseRetryAfter } from './retry.js';

/** The AI SDK language-model spec versions this package reads (`ai` 5, 6 and 7). */
export type AiSdkSpecificationVersion = 'v2' | 'v3' | 'v4';

/** Finish reasons after which an empty reply is legitimate (AI SDK spelling, V2 to V4). */
const MAY_END_EMPTY: ReadonlySet<string> = new Set(['length', 'content-filter']);

/**
 * Stream parts that carry nothing a teamwire message holds: metadata, keep-alives, the end
 * markers of parts already read (V4's `text-end` may list citations, which point at sources),
 * the results of tools the provider ran itself (its call is skipped too; the model's following
 * text carries what it learned) and V4's `custom` parts (opaque provider state such as an
 * OpenAI compaction item, which the provider only needs to resume its own server-side context).
 */
const NOTHING_TO_MAP: ReadonlySet<string> = new Set([
  'stream-start',
  'response-metadata',
  'raw',
  'ping',
  'source',
  'text-end',
  'tool-result',
  'custom',
]);

function num(value: unknown): number | undefined {
  return typeof value === 'number' && Number.isFinite(value) && value >= 0 ? value : undefined;
}

/** Reads V2 usage (flat numbers) or V3 usage (`{ total, cacheRead, ... }` objects). */
function readUsage(raw: unknown): Usage {
  if (!isRecord(raw)) return { inputTokens: 0, outputTokens: 0 };
  const usage: Usage = { inputTokens: 0, outputTokens: 0 };
  if (isRecord(raw.inputTokens) || isRecord(raw.outputTokens)) {
    const input = isRecord(raw.inputTokens) ? raw.inputTokens : {};
    const output = isRecord(raw.outputTokens) ? raw.outputTokens : {};
    usage.inputTokens = num(input.total) ?? 0;
    usage.outputTokens = num(output.total) ?? 0;
    const cacheRead = num(input.cacheRead);
    const cacheWrite = num(input.cacheWrite);
    const reasoning = num(output.reasoning);
    if (cacheRead !== undefined) usage.cacheReadTokens = cacheRead;
    if (cacheWrite !== undefined) usage.cacheWriteTokens = cacheWrite;
    if (reasoning !== undefined) usage.reasoningTokens = reasoning;
    return usage;
  }
  usage.inputTokens = num(raw.inputTokens) ?? 0;
  usage.outputTokens = num(raw.outputTokens) ?? 0;
  const cached = num(raw.cachedInputTokens);
  const reasoning = num(raw.reasoningTokens);
  if (cached !== undefined) usage.cacheReadTokens = cached;
  if (reasoning !== undefined) usage.reasoningTokens = reasoning;
  return usage;
}

/**
 * The unified finish reason of V2 (a string) or V3 and V4 (`{ unified, raw }`); undefined when
 * the part does not have its version's shape.
 */
function finishReasonOf(raw: unknown, version: AiSdkSpecificationVersion): string | undefined {
  const reason = version === 'v2' ? raw : isRecord(raw) ? raw.unified : undefined;
  return typeof reason === 'string' ? reason : undefined;
}

/** Whether `raw` is usage in its version's shape: flat numbers (V2) or nested objects (V3, V4). */
function isUsageOf(raw: unknown, version: AiSdkSpecificationVersion): boolean {
  if (!isRecord(raw)) return false;
  return version === 'v2' || (isRecord(raw.inputTokens) && isRecord(raw.outputTokens));
}

function mapFinishReason(reason: string | undefined, hasToolCalls: boolean): StopReason {
  switch (reason) {
    case 'stop':
      return hasToolCalls ? 'tool_calls' : 'end_turn';
    case 'tool-calls':
      return 'tool_calls';
    case 'length':
      return 'max_tokens';
    default:
      return hasToolCalls ? 'tool_calls' : 'other';
  }
}

/**
 * Maps an error an AI SDK model threw or streamed (`APICallError` and friends) to a TeamError.
 */
export function mapAiSdkError(
  provider: string,
  error: unknown,
  details: Record<string, unknown> = {},
): TeamError {
  if (TeamError.isInstance(error)) return error;
  const record = isRecord(error) ? error : {};
  const status = typeof record.statusCode === 'number' ? record.statusCode : undefined;
  // The provider's own words (an API error body) beat the SDK's generic summary.
  const info =
    readProviderError(record.responseBody) ??
    (error instanceof Error
      ? { message: error.message, type: undefined }
      : readProviderError(error));
  // Without a status (an error part, a failure of the SDK itself) only an overflow is told apart.
  const code = isContextOverflow(info, status)
    ? 'MODEL_CONTEXT_OVERFLOW'
    : status === undefined
      ? 'MODEL_UNAVAILABLE'
      : codeForStatus(status);
  return providerError(
    provider,
    code,
    info,
    { ...(status === undefined ? {} : { status }), ...details },
    error,
  );
}

/** Whether a failed `doStream` is worth another attempt: the SDK's own flag, else the status. */
export function isRetryableAiSdkError(error: unknown): boolean {
  if (!isRecord(error)) return false;
  if (typeof error.isRetryable === 'boolean') return error.isRetryable;
  return typeof error.statusCode === 'number' && isRetryableStatus(error.statusCode);
}

/** The wait an `APICallError`'s response headers ask for (both `retry-after` forms, `-ms`). */
export function aiSdkRetryAfter(error: unknown, now: number): number | undefined {
  if (!isRecord(error) || !isRecord(error.responseHeaders)) return undefined;
  const headers = Object.entries(error.responseHeaders);
  return parseRetryAfter((name) => {
    const found = headers.find(([key]) => key.toLowerCase() === name);
    return typeof found?.[1] === 'string' ? found[1] : undefined;
  }, now);
}

/** Waits for `promise`, rejecting with ABORTED the moment `signal` fires. */
export function untilAborted<T>(
  promise: PromiseLike<T>,
  signal: AbortSignal | undefined,
  provider: string,
): Promise<T> {
  if (!signal) return Promise.resolve(promise);
  if (signal.aborted) return Promise.reject(abortedError(provider, signal));
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(abortedError(provider, signal));
    signal.addEventListener('abort', onAbort, { once: true });
    Promise.resolve(promise).then(
      (value) => {
        signal.removeEventListener('abort', onAbort);
        resolve(value);
      },
      (error: unknown) => {
        signal.removeEventListener('abort', onAbort);
        reject(error);
      },
    );
  });
}

/**
 * Reads the stream parts of an AI SDK `doStream` (spec `version`) into model stream events and
 * one assistant message. Parts this port cannot hold (a generated file, a tool approval request,
 * a type no supported version knows) fail with MODEL_PROTOCOL rather than vanish, and so do a
 * malformed part, a reply that ends empty and a V4 stream that ends `interrupted`.
 */
export async function* readAiSdkStream(
  provider: string,
  stream: ReadableStream<unknown>,
  signal: AbortSignal | undefined,
  version: AiSdkSpecificationVersion = 'v2',
): AsyncGenerator<ModelStreamEvent, void, undefined> {
  const reader = stream.getReader();
  const content: ContentBlock[] = [];
  const byId = new Map<string, ContentBlock>();
  const toolCalls: ToolCall[] = [];
  const startedCalls = new Set<string>();
  /**
   * Calls whose input deltas are raw text (`inputEncoding: 'text'`, V3 and V4), each with
   * whether its opening quote went out: they are streamed as the pieces of a JSON string so that
   * `argsDelta` stays raw JSON, as the port says.
   */
  const textInputs = new Map<string, boolean>();
  /** The closing quote of a text-encoded call's streamed input, once. */
  const closeTextInput = (id: string): ModelStreamEvent | undefined => {
    const opened = textInputs.get(id);
    textInputs.delete(id);
    return opened ? { type: 'tool-call-delta', id, argsDelta: '"' } : undefined;
  };
  let finish: { usage: Usage; reason: string | undefined } | undefined;
  try {
    for (;;) {
      let chunk: { done: boolean; value?: unknown };
      try {
        chunk = await untilAborted(reader.read(), signal, provider);
      } catch (error) {
        throw signal?.aborted ? abortedError(provider, signal) : mapAiSdkError(provider, error);
      }
      if (chunk.done) break;
      const part = chunk.value;
      if (!isRecord(part) || typeof part.type !== 'string') {
        throw protocolError(provider, 'a stream part is not an object with a `type`');
      }
      const type = part.type;
      const bad = (message: string) =>
        protocolError(provider, `${message} (${type} part)`, { partType: type });
      /** A string field the part type requires. */
      const field = (name: string): string => {
        const value = part[name];
        if (typeof value !== 'string') throw bad(`\`${name}\` is not a string`);
        return value;
      };
      const metadata = isRecord(part.providerMetadata) ? part.providerMetadata : {};
      const anthropic = isRecord(metadata.anthropic) ? metadata.anthropic : {};
      switch (type) {
        case 'text-start': {
          const block: ContentBlock = { type: 'text', text: '' };
          content.push(block);
          byId.set(`text:${field('id')}`, block);
          break;
        }
        case 'text-delta': {
          const delta = field('delta');
          const block = byId.get(`text:${String(part.id)}`);
          if (block?.type === 'text' && typeof block.text === 'string') block.text += delta;
          else appendText(content, delta);
          if (delta !== '') yield { type: 'text-delta', text: delta };
          break;
        }
        case 'reasoning-start': {
          const redacted = anthropic.redactedData;
          const block: ContentBlock =
            typeof redacted === 'string'
              ? { type: 'redacted_thinking', data: redacted }
              : { type: 'thinking', thinking: '' };
          content.push(block);
          byId.set(`reasoning:${field('id')}`, block);
          break;
        }
        case 'reasoning-delta': {
          const delta = field('delta');
          let block = byId.get(`reasoning:${String(part.id)}`);
          if (block?.type === 'thinking' && typeof block.thinking === 'string') {
            block.thinking += delta;
          } else if (block === undefined) {
            appendThinking(content, delta);
            block = content.at(-1);
          }
          // Anthropic's provider sends the signature as an empty delta with provider metadata.
          const signature = anthropic.signature;
          if (block?.type === 'thinking' && typeof signature === 'string') {
            block.signature = signature;
          }
          if (delta !== '') yield { type: 'reasoning-delta', text: delta };
          break;
        }
        case 'reasoning-end': {
          const block = byId.get(`reasoning:${String(part.id)}`);
          const signature = anthropic.signature;
          if (block?.type === 'thinking' && typeof signature === 'string') {
            block.signature = signature;
          }
          break;
        }
        case 'tool-input-start':
          if (!part.providerExecuted) {
            const id = field('id');
            const name = field('toolName');
            const encoding = part.inputEncoding;
            if (encoding === 'text') textInputs.set(id, false);
            else if (encoding !== undefined && encoding !== 'json') {
              throw bad('`inputEncoding` is neither `json` nor `text`');
            }
            startedCalls.add(id);
            yield { type: 'tool-call-start', id, name };
          }
          break;
        case 'tool-input-delta': {
          const id = field('id');
          const delta = field('delta');
          if (startedCalls.has(id) && delta !== '') {
            const opened = textInputs.get(id);
            if (opened === undefined) {
              yield { type: 'tool-call-delta', id, argsDelta: delta };
            } else {
              textInputs.set(id, true);
              const piece = JSON.stringify(delta).slice(1, -1);
              yield { type: 'tool-call-delta', id, argsDelta: opened ? piece : `"${piece}` };
            }
          }
          break;
        }
        case 'tool-input-end': {
          const closing = closeTextInput(field('id'));
          if (closing) yield closing;
          break;
        }
        case 'tool-call': {
          // Calls the provider ran itself are already answered; the agent must not run them.
          if (part.providerExecuted) break;
          const id = field('toolCallId');
          const name = field('toolName');
          if (!startedCalls.has(id)) {
            startedCalls.add(id);
            yield { type: 'tool-call-start', id, name };
          }
          const closing = closeTextInput(id);
          if (closing) yield closing;
          // V3 and V4 send the input JSON-encoded; V2 providers may send it parsed.
          const input = typeof part.input === 'string' ? parseToolInput(part.input) : part.input;
          const toolCall: ToolCall = { id, name, input };
          toolCalls.push(toolCall);
          yield { type: 'tool-call', toolCall };
          break;
        }
        case 'finish': {
          const reason = finishReasonOf(part.finishReason, version);
          if (reason === undefined) throw bad(`\`finishReason\` is not a ${version} finish reason`);
          if (!isUsageOf(part.usage, version)) throw bad(`\`usage\` is not ${version} usage`);
          // V4 finishes a stream the provider lost before its end as `interrupted`: the reply may
          // be cut anywhere, so it fails like a stream without a finish part instead of counting.
          if (reason === 'interrupted') {
            throw protocolError(
              provider,
              'the provider stream ended without a completion signal (finish reason `interrupted`); the reply may be incomplete',
              { finishReason: reason },
            );
          }
          finish = { usage: readUsage(part.usage), reason };
          break;
        }
        case 'error':
          throw mapAiSdkError(provider, part.error);
        case 'file':
          throw bad('the model sent a file, which a teamwire message cannot carry');
        case 'reasoning-file':
          throw bad(
            'the model sent a file in its reasoning, which a teamwire message cannot carry',
          );
        case 'tool-approval-request':
          throw bad(
            'the model asks to approve a call of a tool the provider runs, which teamwire cannot answer',
          );
        default:
          if (!NOTHING_TO_MAP.has(type)) throw bad('unknown stream part type');
      }
    }
  } finally {
    reader.cancel().catch(() => {});
  }
  if (finish === undefined) {
    throw protocolError(provider, 'the model stream ended without a `finish` part');
  }
  const reply = {
    content: content.filter((block) => !(block.type === 'text' && block.text === '')),
    toolCalls,
  };
  assertNotEmpty(provider, reply, finish.reason, MAY_END_EMPTY);
  yield finishEvent(reply, finish.usage, mapFinishReason(finish.reason, toolCalls.length > 0));
}
