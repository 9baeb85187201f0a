import { type AnthropicOptions, createAnthropic } from '../anthropic.js';
import { createOpenAICompatible, type OpenAICompatibleOptions } from '../openai-compatible.js';

/** A server a test adapter talks to (a loopback server). */
interface Endpoint {
  readonly baseURL: string;
}

/** Adapter options aimed at `server`: its base URL, then a test key and model, then `overrides`. */
function aimedAt<T>(server: Endpoint, apiKey: string, model: string, overrides: Partial<T>) {
  return { baseURL: server.baseURL, apiKey, model, ...overrides };
}

/** An OpenAI-compatible adapter for `server` (test key, `gpt-4.1-mini`), with `overrides`. */
export function openAiAdapter(server: Endpoint, overrides: Partial<OpenAICompatibleOptions> = {}) {
  return createOpenAICompatible(aimedAt(server, 'sk-test', 'gpt-4.1-mini', overrides));
}

/** An Anthropic adapter for `server` (test key, `claude-sonnet-4-5`), with `overrides`. */
export function anthropicAdapter(server: Endpoint, overrides: Partial<AnthropicOptions> = {}) {
  return createAnthropic(aimedAt(server, 'sk-ant-test', 'claude-sonnet-4-5', overrides));
}
