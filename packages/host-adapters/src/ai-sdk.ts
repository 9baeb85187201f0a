import type {
  LanguageModelV2,
  LanguageModelV2CallOptions,
  LanguageModelV2Message,
  LanguageModelV2StreamPart,
  SharedV2ProviderOptions,
} from '@ai-sdk/provider';
import {
  type AssistantMessage,
  type ContentBlock,
  type ModelAdapter,
  type ModelRequest,
  type ModelStreamEvent,
  type StopReason,
  TeamError,
  type ToolCall,
  type Usage,
} from '@teamwire/core';
import {
  appendText,
  appendThinking,
  isRecord,
  joinText,
  parseToolInput,
} from './content-builder.js';
import {
  abortedError,
  codeForStatus,
  protocolError,
  providerError,
  readProviderError,
} from './provider-errors.js';
import {
  backoffDelay,
  isRetryableStatus,
  type RetryOptions,
  type SleepFunction,
} from './transport.js';

/**
 * An AI SDK 6 model (`LanguageModelV3` of `@ai-sdk/provider@3`), matched by shape so this
 * package does not need that major installed. Its stream parts are read like V2's; the nested
 * V3 usage and finish-reason objects are understood too.
 */
export interface LanguageModelV3Like {
  readonly specificationVersion: 'v3';
  readonly provider: string;
  readonly modelId: string;
  doStream(options: never): PromiseLike<{ stream: ReadableStream<unknown> }>;
}

/** Options of {@link createAiSdkModel}. */
export interface AiSdkModelOptions {
  /** Name reported as `ModelAdapter.provider`. Default: the model's own `provider`. */
  provider?: string;
  /**
   * Mark the stable prefix for prompt caching through `providerOptions.anthropic.cacheControl`
   * (other providers ignore the key). Default true.
   */
  cacheControl?: boolean;
  /** Provider options merged into every call (`{ openai: { reasoningEffort: 'low' } }`, ...). */
  providerOptions?: SharedV2ProviderOptions;
  /** Retries when `doStream` itself fails with a retryable error. `false` never retries. */
  retry?: Omit<RetryOptions, 'maxRetryAfterMs'> | false;
  /** Overrides how the adapter waits between retries (tests inject an instant one). */
  sleep?: SleepFunction;
  /** Random source in [0, 1) for backoff jitter. */
  random?: () => number;
}

const ANTHROPIC_CACHE: SharedV2ProviderOptions = {
  anthropic: { cacheControl: { type: 'ephemeral' } },
};
const MAX_BREAKPOINTS = 4;

/**
 * Maps a {@link ModelRequest} to an AI SDK language-model prompt: one system message per system
 * block, thinking blocks as reasoning parts (Anthropic signatures in provider options), tool
 * calls as `tool-call` parts and tool results as `tool-result` parts.
 */
export function toAiSdkPrompt(
  request: Pick<ModelRequest, 'system' | 'messages'>,
  options: { cacheControl?: boolean } = {},
): LanguageModelV2Message[] {
  const prompt: LanguageModelV2Message[] = [];
  const systemIndexes: number[] = [];
  const cacheableIndexes: number[] = [];
  for (const block of request.system) {
    if (block.text === '') continue;
    if (block.cacheable) cacheableIndexes.push(prompt.length);
    systemIndexes.push(prompt.length);
    prompt.push({ role: 'system', content: block.text });
  }
  for (const message of request.messages) {
    if (message.role === 'user') {
      prompt.push({ role: 'user', content: [{ type: 'text', text: joinText(message.content) }] });
    } else if (message.role === 'tool') {
      const value = joinText(message.content);
      prompt.push({
        role: 'tool',
        content: [
          {
            type: 'tool-result',
            toolCallId: message.toolCallId,
            toolName: message.toolName,
            output: message.isError ? { type: 'error-text', value } : { type: 'text', value },
          },
        ],
      });
    } else {
      const content: Extract<LanguageModelV2Message, { role: 'assistant' }>['content'] = [];
      for (const block of message.content) {
        if (block.type === 'text' && typeof block.text === 'string' && block.text !== '') {
          content.push({ type: 'text', text: block.text });
        } else if (block.type === 'thinking' && typeof block.thinking === 'string') {
          const signature = typeof block.signature === 'string' ? block.signature : undefined;
          content.push({
            type: 'reasoning',
            text: block.thinking,
            ...(signature ? { providerOptions: { anthropic: { signature } } } : {}),
          });
        } else if (block.type === 'redacted_thinking' && typeof block.data === 'string') {
          content.push({
            type: 'reasoning',
            text: '',
            providerOptions: { anthropic: { redactedData: block.data } },
          });
        }
      }
      for (const call of message.toolCalls) {
        content.push({
          type: 'tool-call',
          toolCallId: call.id,
          toolName: call.name,
          input: call.input,
        });
      }
      if (content.length > 0) prompt.push({ role: 'assistant', content });
    }
  }
  if (options.cacheControl !== false) {
    const marks = new Set<number>();
    if (prompt.length > systemIndexes.length) marks.add(prompt.length - 1);
    const lastSystem = systemIndexes.at(-1);
    if (lastSystem !== undefined) marks.add(lastSystem);
    for (const index of cacheableIndexes) {
      if (marks.size >= MAX_BREAKPOINTS) break;
      marks.add(index);
    }
    for (const index of marks) {
      const message = prompt[index];
      if (message) message.providerOptions = { ...message.providerOptions, ...ANTHROPIC_CACHE };
    }
  }
  return prompt;
}

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

function mapFinishReason(raw: unknown, hasToolCalls: boolean): StopReason {
  const reason = isRecord(raw) ? raw.unified : raw;
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

/** Maps an error an AI SDK model threw or streamed (`APICallError` and friends) to a TeamError. */
function mapAiSdkError(provider: string, error: unknown): TeamError {
  if (TeamError.isInstance(error)) return error;
  const record = isRecord(error) ? error : {};
  const status = typeof record.statusCode === 'number' ? record.statusCode : undefined;
  // The provider's own words (an API error body) beat the SDK's generic summary.
  const info =
    readProviderError(record.responseBody) ??
    (error instanceof Error
      ? { message: error.message, type: undefined }
      : readProviderError(error));
  const code = status === undefined ? 'MODEL_UNAVAILABLE' : codeForStatus(status);
  return providerError(provider, code, info, status === undefined ? {} : { status }, error);
}

function isRetryable(error: unknown): boolean {
  if (!isRecord(error)) return false;
  if (typeof error.isRetryable === 'boolean') return error.isRetryable;
  return typeof error.statusCode === 'number' && isRetryableStatus(error.statusCode);
}

function retryAfterOf(error: unknown): number | undefined {
  if (!isRecord(error) || !isRecord(error.responseHeaders)) return undefined;
  const headers = error.responseHeaders;
  const ms = Number(headers['retry-after-ms']);
  if (Number.isFinite(ms) && ms >= 0 && headers['retry-after-ms'] !== undefined) return ms;
  const seconds = Number(headers['retry-after']);
  if (Number.isFinite(seconds) && seconds >= 0 && headers['retry-after'] !== undefined) {
    return seconds * 1000;
  }
  return undefined;
}

/** Waits for `promise`, rejecting with ABORTED the moment `signal` fires. */
function untilAborted<T>(
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

const defaultSleep: SleepFunction = (ms, signal) =>
  new Promise<void>((resolve) => {
    const handle = setTimeout(done, ms);
    function done() {
      signal?.removeEventListener('abort', done);
      clearTimeout(handle);
      resolve();
    }
    signal?.addEventListener('abort', done, { once: true });
  });

/**
 * Wraps any AI SDK language model (`LanguageModelV2` from `ai` 5 provider packages, or a
 * `LanguageModelV3` from `ai` 6) as a {@link ModelAdapter}, so every provider the AI SDK supports
 * can drive a teammate. Only the model object is used: this package never imports the SDK at
 * run time.
 */
export function createAiSdkModel(
  model: LanguageModelV2 | LanguageModelV3Like,
  options: AiSdkModelOptions = {},
): ModelAdapter {
  const provider = options.provider ?? model.provider;
  const retry =
    options.retry === false
      ? undefined
      : {
          maxRetries: 3,
          initialDelayMs: 500,
          maxDelayMs: 8000,
          maxRetryAfterMs: 60_000,
          ...options.retry,
        };
  const sleep = options.sleep ?? defaultSleep;
  const random = options.random ?? Math.random;

  async function* run(request: ModelRequest): AsyncGenerator<ModelStreamEvent, void, undefined> {
    const { signal } = request;
    const providerOptions: SharedV2ProviderOptions = { ...options.providerOptions };
    if (request.promptCacheKey !== undefined) {
      providerOptions.openai = {
        promptCacheKey: request.promptCacheKey,
        ...providerOptions.openai,
      };
    }
    const callOptions: LanguageModelV2CallOptions = {
      prompt: toAiSdkPrompt(request, options),
      ...(request.tools.length > 0
        ? {
            tools: request.tools.map((tool) => ({
              type: 'function' as const,
              name: tool.name,
              description: tool.description,
              inputSchema: tool.inputSchema,
            })),
          }
        : {}),
      ...(request.maxOutputTokens === undefined
        ? {}
        : { maxOutputTokens: request.maxOutputTokens }),
      ...(signal ? { abortSignal: signal } : {}),
      ...(Object.keys(providerOptions).length > 0 ? { providerOptions } : {}),
    };

    let stream: ReadableStream<unknown>;
    for (let attempt = 0; ; attempt++) {
      if (signal?.aborted) throw abortedError(provider, signal);
      try {
        const result = await untilAborted(
          (
            model.doStream as (o: LanguageModelV2CallOptions) => PromiseLike<{
              stream: ReadableStream<unknown>;
            }>
          )(callOptions),
          signal,
          provider,
        );
        stream = result.stream;
        break;
      } catch (error) {
        if (signal?.aborted) throw abortedError(provider, signal);
        const mapped = mapAiSdkError(provider, error);
        if (!retry || attempt >= retry.maxRetries || !isRetryable(error)) throw mapped;
        const after = retryAfterOf(error);
        if (after !== undefined && after > retry.maxRetryAfterMs) throw mapped;
        await sleep(after ?? backoffDelay(retry, attempt, random), signal);
      }
    }

    const reader = stream.getReader();
    const content: ContentBlock[] = [];
    const byId = new Map<string, ContentBlock>();
    const toolCalls: ToolCall[] = [];
    const startedCalls = new Set<string>();
    let finish: { usage: Usage; reason: unknown } | undefined;
    try {
      for (;;) {
        let chunk: { done: boolean; value?: unknown };
        try {
          chunk = await untilAborted(reader.read(), signal, provider);
        } catch (error) {
          throw signal?.aborted ? abortedError(provider, signal) : mapAiSdkError(provider, error);
        }
        if (chunk.done) break;
        const part = chunk.value as LanguageModelV2StreamPart;
        if (!isRecord(part) || typeof part.type !== 'string') {
          throw protocolError(provider, 'a stream part is not an object with a `type`');
        }
        switch (part.type) {
          case 'text-start': {
            const block: ContentBlock = { type: 'text', text: '' };
            content.push(block);
            byId.set(`text:${part.id}`, block);
            break;
          }
          case 'text-delta': {
            const block = byId.get(`text:${part.id}`);
            if (block?.type === 'text' && typeof block.text === 'string') block.text += part.delta;
            else appendText(content, part.delta);
            if (part.delta !== '') yield { type: 'text-delta', text: part.delta };
            break;
          }
          case 'reasoning-start': {
            const anthropic = part.providerMetadata?.anthropic;
            const redacted = isRecord(anthropic) ? anthropic.redactedData : undefined;
            const block: ContentBlock =
              typeof redacted === 'string'
                ? { type: 'redacted_thinking', data: redacted }
                : { type: 'thinking', thinking: '' };
            content.push(block);
            byId.set(`reasoning:${part.id}`, block);
            break;
          }
          case 'reasoning-delta': {
            const block = byId.get(`reasoning:${part.id}`);
            if (block?.type === 'thinking' && typeof block.thinking === 'string') {
              block.thinking += part.delta;
            } else if (block === undefined) {
              appendThinking(content, part.delta);
            }
            if (part.delta !== '') yield { type: 'reasoning-delta', text: part.delta };
            break;
          }
          case 'reasoning-end': {
            const block = byId.get(`reasoning:${part.id}`);
            const anthropic = part.providerMetadata?.anthropic;
            const signature = isRecord(anthropic) ? anthropic.signature : undefined;
            if (block?.type === 'thinking' && typeof signature === 'string') {
              block.signature = signature;
            }
            break;
          }
          case 'tool-input-start':
            if (!part.providerExecuted) {
              startedCalls.add(part.id);
              yield { type: 'tool-call-start', id: part.id, name: part.toolName };
            }
            break;
          case 'tool-input-delta':
            if (startedCalls.has(part.id) && part.delta !== '') {
              yield { type: 'tool-call-delta', id: part.id, argsDelta: part.delta };
            }
            break;
          case 'tool-call': {
            // Calls the provider ran itself are already answered; the agent must not run them.
            if (part.providerExecuted) break;
            if (!startedCalls.has(part.toolCallId)) {
              startedCalls.add(part.toolCallId);
              yield { type: 'tool-call-start', id: part.toolCallId, name: part.toolName };
            }
            const toolCall: ToolCall = {
              id: part.toolCallId,
              name: part.toolName,
              input: typeof part.input === 'string' ? parseToolInput(part.input) : part.input,
            };
            toolCalls.push(toolCall);
            yield { type: 'tool-call', toolCall };
            break;
          }
          case 'finish':
            finish = { usage: readUsage(part.usage), reason: part.finishReason };
            break;
          case 'error':
            throw mapAiSdkError(provider, part.error);
          default:
            // stream-start, response-metadata, raw, source, file, tool-result: nothing to map.
            break;
        }
      }
    } finally {
      reader.cancel().catch(() => {});
    }
    if (finish === undefined) {
      throw protocolError(provider, 'the model stream ended without a `finish` part');
    }
    const stopReason = mapFinishReason(finish.reason, toolCalls.length > 0);
    const message: AssistantMessage = {
      role: 'assistant',
      content: content.filter((block) => !(block.type === 'text' && block.text === '')),
      toolCalls,
      usage: finish.usage,
      stopReason,
    };
    yield { type: 'finish', message, usage: finish.usage, stopReason };
  }

  return {
    specificationVersion: 'v1',
    provider,
    modelId: model.modelId,
    stream: run,
  };
}
