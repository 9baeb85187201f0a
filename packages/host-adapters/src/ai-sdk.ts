import type {
  JSONValue,
  LanguageModelV2,
  LanguageModelV2FunctionTool,
  LanguageModelV2Message,
  SharedV2ProviderOptions,
} from '@ai-sdk/provider';
import {
  type ModelAdapter,
  type ModelRequest,
  type ModelStreamEvent,
  systemClock,
  TeamError,
} from '@teamwire/core';
import {
  type AiSdkSpecificationVersion,
  aiSdkRetryAfter,
  isRetryableAiSdkError,
  mapAiSdkError,
  readAiSdkStream,
  untilAborted,
} from './ai-sdk-stream.js';
import { joinText } from './content-builder.js';
import { abortedError } from './provider-errors.js';
import { type RetrySettings, withRetries } from './retry.js';

/**
 * An AI SDK 6 model (`LanguageModelV3` of `@ai-sdk/provider@3`), matched by shape so this
 * package does not need that major installed. Its stream parts are read like V2's; the nested
 * V3 usage and finish-reason objects are understood too.
 */
export interface LanguageModelV3Like {
  /** The discriminant that tells it from a `LanguageModelV2`. */
  readonly specificationVersion: 'v3';
  /** The default of `ModelAdapter.provider` (see {@link AiSdkModelOptions.provider}). */
  readonly provider: string;
  /** Reported as `ModelAdapter.modelId`. */
  readonly modelId: string;
  /**
   * Starts one streaming call. Typed `never` so that any V3 model's own call-options type
   * matches; the adapter calls it with options every version's call-options type accepts.
   */
  doStream(options: never): PromiseLike<{
    /** The model's stream parts, read like V2's. */
    stream: ReadableStream<unknown>;
  }>;
}

/**
 * An AI SDK 7 model (`LanguageModelV4` of `@ai-sdk/provider@4`), matched by shape so this
 * package does not need that major installed (it needs Node 22 at run time). Its stream parts
 * are read like V3's, plus V4's `ping`, `custom` and `reasoning-file` parts and its
 * `interrupted` finish reason.
 */
export interface LanguageModelV4Like {
  /** The discriminant that tells it from a `LanguageModelV2` or `LanguageModelV3`. */
  readonly specificationVersion: 'v4';
  /** The default of `ModelAdapter.provider` (see {@link AiSdkModelOptions.provider}). */
  readonly provider: string;
  /** Reported as `ModelAdapter.modelId`. */
  readonly modelId: string;
  /**
   * Starts one streaming call. Typed `never` so that any V4 model's own call-options type
   * matches; the adapter calls it with options every version's call-options type accepts.
   */
  doStream(options: never): PromiseLike<{
    /** The model's stream parts (`LanguageModelV4StreamPart`). */
    stream: ReadableStream<unknown>;
  }>;
}

/**
 * Every model {@link createAiSdkModel} takes: a `LanguageModelV2` (`ai` 5), a `LanguageModelV3`
 * (`ai` 6) or a `LanguageModelV4` (`ai` 7).
 */
export type AiSdkLanguageModel = LanguageModelV2 | LanguageModelV3Like | LanguageModelV4Like;

/** Provider options as every spec version takes them (an object of JSON objects per provider). */
type ProviderOptions = SharedV2ProviderOptions;

/**
 * The prompt messages this adapter builds: the subset of the V2, V3 and V4 message types that a
 * teamwire conversation needs (the type tests check it against all three published types).
 */
export type AiSdkPromptMessage = (
  | { role: 'system'; content: string }
  | { role: 'user'; content: Array<{ type: 'text'; text: string }> }
  | {
      role: 'assistant';
      content: Array<
        | { type: 'text'; text: string }
        | { type: 'reasoning'; text: string; providerOptions?: ProviderOptions }
        | { type: 'tool-call'; toolCallId: string; toolName: string; input: unknown }
      >;
    }
  | {
      role: 'tool';
      content: Array<{
        type: 'tool-result';
        toolCallId: string;
        toolName: string;
        output: { type: 'text' | 'error-text'; value: string };
      }>;
    }
) & { providerOptions?: ProviderOptions };

/**
 * The call options this adapter passes to `doStream`, in the shape shared by
 * `LanguageModelV2CallOptions`, `LanguageModelV3CallOptions` and `LanguageModelV4CallOptions`
 * (the type tests check it against all three).
 */
export interface AiSdkCallOptions {
  prompt: AiSdkPromptMessage[];
  tools?: Array<{
    type: 'function';
    name: string;
    description?: string;
    inputSchema: LanguageModelV2FunctionTool['inputSchema'];
  }>;
  maxOutputTokens?: number;
  abortSignal?: AbortSignal;
  providerOptions?: ProviderOptions;
}

/** Options of {@link createAiSdkModel}. */
export interface AiSdkModelOptions extends RetrySettings {
  /** Name reported as `ModelAdapter.provider`. Default: the model's own `provider`. */
  provider?: string | undefined;
  /**
   * Mark the stable prefix for prompt caching through `providerOptions.anthropic.cacheControl`
   * (other providers ignore the key). Default true.
   */
  cacheControl?: boolean | undefined;
  /** Provider options merged into every call (`{ openai: { reasoningEffort: 'low' } }`, ...). */
  providerOptions?: SharedV2ProviderOptions | undefined;
}

const ANTHROPIC_CACHE: Record<string, Record<string, JSONValue>> = {
  anthropic: { cacheControl: { type: 'ephemeral' } },
};
const MAX_BREAKPOINTS = 4;

/**
 * Maps a `ModelRequest` to an AI SDK language-model prompt: one system message per system
 * block, thinking blocks as reasoning parts (Anthropic signatures in provider options), tool
 * calls as `tool-call` parts and tool results as `tool-result` parts.
 */
export function toAiSdkPrompt(
  request: Pick<ModelRequest, 'system' | 'messages'>,
  options: { cacheControl?: boolean | undefined } = {},
): LanguageModelV2Message[] {
  return buildPrompt(request, options);
}

function buildPrompt(
  request: Pick<ModelRequest, 'system' | 'messages'>,
  options: { cacheControl?: boolean | undefined },
): AiSdkPromptMessage[] {
  const prompt: AiSdkPromptMessage[] = [];
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
      const content: Extract<AiSdkPromptMessage, { role: 'assistant' }>['content'] = [];
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

/** The spec versions {@link createAiSdkModel} reads. */
const SPECIFICATION_VERSIONS: ReadonlySet<unknown> = new Set<AiSdkSpecificationVersion>([
  'v2',
  'v3',
  'v4',
]);

/**
 * Wraps any AI SDK language model (`LanguageModelV2` from `ai` 5 provider packages, a
 * `LanguageModelV3` from `ai` 6 or a `LanguageModelV4` from `ai` 7) as a `ModelAdapter`, so
 * every provider the AI SDK supports can drive a teammate. Only the model object is used: this
 * package never imports the SDK at run time. Any other `specificationVersion` (an `ai` 4
 * `LanguageModelV1`, a future major) fails at once with INVALID_ARGUMENT.
 */
export function createAiSdkModel(
  model: AiSdkLanguageModel,
  options: AiSdkModelOptions = {},
): ModelAdapter {
  const version: unknown = model.specificationVersion;
  if (!SPECIFICATION_VERSIONS.has(version)) {
    throw new TeamError(
      'INVALID_ARGUMENT',
      `createAiSdkModel takes an AI SDK language model of spec v2, v3 or v4 (ai 5, 6 or 7), not ${JSON.stringify(version)}`,
      { details: { specificationVersion: typeof version === 'string' ? version : null } },
    );
  }
  const specificationVersion = version as AiSdkSpecificationVersion;
  const provider = options.provider ?? model.provider;
  const clock = options.clock ?? systemClock;
  // V2, V3 and V4 take the same call options for what a teamwire request carries (the type
  // tests hold `AiSdkCallOptions` against all three published types).
  const doStream = (
    model.doStream as (o: AiSdkCallOptions) => PromiseLike<{ stream: ReadableStream<unknown> }>
  ).bind(model);

  async function* run(request: ModelRequest): AsyncGenerator<ModelStreamEvent, void, undefined> {
    const { signal } = request;
    const callOptions = toCallOptions(request, options);
    const stream = await withRetries(options, {
      signal,
      halted: () => (signal?.aborted ? abortedError(provider, signal) : undefined),
      attempt: async (attempt) => {
        try {
          const result = await untilAborted(doStream(callOptions), signal, provider);
          return { ok: true, value: result.stream };
        } catch (error) {
          if (signal?.aborted) throw abortedError(provider, signal);
          const retryAfterMs = aiSdkRetryAfter(error, clock.now());
          const details = {
            attempts: attempt + 1,
            ...(retryAfterMs === undefined ? {} : { retryAfterMs }),
          };
          return {
            ok: false,
            error: mapAiSdkError(provider, error, details),
            retryable: isRetryableAiSdkError(error),
            retryAfterMs,
          };
        }
      },
    });
    yield* readAiSdkStream(provider, stream, signal, specificationVersion);
  }

  return {
    specificationVersion: 'v1',
    provider,
    modelId: model.modelId,
    stream: run,
  };
}

/** The `doStream` options of one request. */
function toCallOptions(request: ModelRequest, options: AiSdkModelOptions): AiSdkCallOptions {
  const { signal } = request;
  const providerOptions: ProviderOptions = { ...options.providerOptions };
  if (request.promptCacheKey !== undefined) {
    providerOptions.openai = {
      promptCacheKey: request.promptCacheKey,
      ...providerOptions.openai,
    };
  }
  return {
    prompt: buildPrompt(request, options),
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
    ...(request.maxOutputTokens === undefined ? {} : { maxOutputTokens: request.maxOutputTokens }),
    ...(signal ? { abortSignal: signal } : {}),
    ...(Object.keys(providerOptions).length > 0 ? { providerOptions } : {}),
  };
}
