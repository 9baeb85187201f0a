export type {
  AiSdkLanguageModel,
  AiSdkModelOptions,
  LanguageModelV3Like,
  LanguageModelV4Like,
} from './ai-sdk.js';
export { createAiSdkModel, toAiSdkPrompt } from './ai-sdk.js';
export type { AnthropicOptions, AnthropicWireBlock, AnthropicWireMessage } from './anthropic.js';
export {
  ANTHROPIC_DEFAULT_BASE_URL,
  ANTHROPIC_MAX_CACHE_BREAKPOINTS,
  createAnthropic,
  toAnthropicMessages,
} from './anthropic.js';
export type { CreateModelOptions, ModelSpec } from './create-model.js';
export { createModel, MODEL_PROVIDERS, parseModelSpec } from './create-model.js';
export type { OpenAICompatibleOptions } from './openai-compatible.js';
export {
  createOpenAICompatible,
  OPENAI_DEFAULT_BASE_URL,
  toOpenAIMessages,
} from './openai-compatible.js';
export type { RetryOptions, RetrySettings, SleepFunction } from './retry.js';
export type { SseEnd, SseEvent, SseParser, SseParserOptions } from './sse.js';
export { createSseParser } from './sse.js';
export type { TransportOptions } from './transport.js';
