import { type ModelAdapter, TeamError } from '@teamwire/core';
import { createAnthropic } from './anthropic.js';
import { createOpenAICompatible, OPENAI_DEFAULT_BASE_URL } from './openai-compatible.js';
import type { TransportOptions } from './transport.js';

/** Options of {@link createModel}: network behaviour plus overrides of what the spec implies. */
export interface CreateModelOptions extends TransportOptions {
  /** Overrides the API key the provider would read from its environment variable. */
  apiKey?: string | undefined;
  /** Overrides the base URL from the spec or the provider's default. */
  baseURL?: string | undefined;
  /** Extra request headers. */
  headers?: Record<string, string> | undefined;
}

interface CompatibleProvider {
  /** Default API root; `undefined` means the spec must carry `@<baseURL>`. */
  baseURL: string | undefined;
  /** Environment variable holding the key; `undefined` sends no key unless one is given. */
  apiKeyEnv: string | undefined;
  /** Environment variable that may override the base URL. */
  baseURLEnv?: string;
  /** False for APIs known to refuse fields they do not define. */
  sendPromptCacheKey?: boolean;
  includeUsage?: boolean;
  /** A hosted API that refuses every call without a key (at its default base URL). */
  needsKey?: boolean;
}

const COMPATIBLE: Record<string, CompatibleProvider> = {
  openai: {
    baseURL: OPENAI_DEFAULT_BASE_URL,
    apiKeyEnv: 'OPENAI_API_KEY',
    baseURLEnv: 'OPENAI_BASE_URL',
    needsKey: true,
  },
  'openai-compatible': {
    baseURL: undefined,
    apiKeyEnv: 'OPENAI_API_KEY',
    baseURLEnv: 'OPENAI_BASE_URL',
  },
  openrouter: {
    baseURL: 'https://openrouter.ai/api/v1',
    apiKeyEnv: 'OPENROUTER_API_KEY',
    needsKey: true,
  },
  groq: {
    baseURL: 'https://api.groq.com/openai/v1',
    apiKeyEnv: 'GROQ_API_KEY',
    sendPromptCacheKey: false,
    needsKey: true,
  },
  deepseek: {
    baseURL: 'https://api.deepseek.com/v1',
    apiKeyEnv: 'DEEPSEEK_API_KEY',
    needsKey: true,
  },
  mistral: {
    baseURL: 'https://api.mistral.ai/v1',
    apiKeyEnv: 'MISTRAL_API_KEY',
    sendPromptCacheKey: false,
    includeUsage: false,
    needsKey: true,
  },
  xai: { baseURL: 'https://api.x.ai/v1', apiKeyEnv: 'XAI_API_KEY', needsKey: true },
  ollama: {
    baseURL: 'http://127.0.0.1:11434/v1',
    apiKeyEnv: undefined,
    baseURLEnv: 'OLLAMA_BASE_URL',
  },
  llamacpp: { baseURL: 'http://127.0.0.1:8080/v1', apiKeyEnv: undefined },
  vllm: { baseURL: 'http://127.0.0.1:8000/v1', apiKeyEnv: 'VLLM_API_KEY' },
};

/** The provider prefixes {@link createModel} understands. */
export const MODEL_PROVIDERS: readonly string[] = ['anthropic', ...Object.keys(COMPATIBLE)];

/** A parsed model spec. */
export interface ModelSpec {
  /** One of {@link MODEL_PROVIDERS}, lower-cased. */
  provider: string;
  /** The model id as the provider knows it; may itself contain `:` (`qwen3:8b`). */
  model: string;
  /** The `@<baseURL>` of the spec, checked to be a URL; `undefined` when the spec has none. */
  baseURL: string | undefined;
}

function unknown(spec: string, reason: string): TeamError {
  return new TeamError('MODEL_UNKNOWN', `invalid model spec "${spec}": ${reason}`, {
    details: { spec, providers: MODEL_PROVIDERS },
  });
}

/**
 * Parses `provider:model[@baseURL]`. The model part may itself contain `:` (Ollama tags such as
 * `qwen3:8b`); a trailing `@http(s)://...` is the base URL.
 */
export function parseModelSpec(spec: string): ModelSpec {
  const colon = spec.indexOf(':');
  if (colon <= 0) throw unknown(spec, 'expected "<provider>:<model>"');
  const provider = spec.slice(0, colon).trim().toLowerCase();
  let model = spec.slice(colon + 1).trim();
  let baseURL: string | undefined;
  const at = model.search(/@https?:\/\//i);
  if (at !== -1) {
    baseURL = model.slice(at + 1);
    model = model.slice(0, at);
    try {
      new URL(baseURL);
    } catch {
      throw unknown(spec, `"${baseURL}" is not a URL`);
    }
  }
  if (!MODEL_PROVIDERS.includes(provider)) {
    throw unknown(spec, `unknown provider "${provider}" (known: ${MODEL_PROVIDERS.join(', ')})`);
  }
  if (model === '') throw unknown(spec, 'the model name is empty');
  return { provider, model, baseURL };
}

/**
 * Resolves a model from a string such as `openai:gpt-4.1-mini`,
 * `anthropic:claude-sonnet-4-5`, `openai-compatible:qwen3-8b@http://127.0.0.1:8000/v1`,
 * `ollama:qwen3:8b` or `openrouter:openai/gpt-4.1-mini`. Keys come from each provider's usual
 * environment variable unless `options.apiKey` is given. Bad specs throw `MODEL_UNKNOWN`; a hosted
 * provider at its own address with no key throws `MODEL_AUTH` here, before any call.
 */
export function createModel(spec: string, options: CreateModelOptions = {}): ModelAdapter {
  const parsed = parseModelSpec(spec);
  const { apiKey, baseURL, headers, ...transport } = options;
  if (parsed.provider === 'anthropic') {
    if ((baseURL ?? parsed.baseURL) === undefined) {
      requireKey(spec, apiKey ?? process.env.ANTHROPIC_API_KEY, 'ANTHROPIC_API_KEY');
    }
    return createAnthropic({
      ...transport,
      model: parsed.model,
      apiKey,
      headers,
      baseURL: baseURL ?? parsed.baseURL,
    });
  }
  const entry = COMPATIBLE[parsed.provider];
  if (entry === undefined) throw unknown(spec, `unknown provider "${parsed.provider}"`);
  const envBase = entry.baseURLEnv === undefined ? undefined : process.env[entry.baseURLEnv];
  const resolvedBase = baseURL ?? parsed.baseURL ?? (envBase || undefined) ?? entry.baseURL;
  if (resolvedBase === undefined) {
    throw unknown(
      spec,
      `"${parsed.provider}" needs a base URL: "${parsed.provider}:<model>@<baseURL>"`,
    );
  }
  const envKey = entry.apiKeyEnv === undefined ? undefined : process.env[entry.apiKeyEnv];
  if (entry.needsKey && resolvedBase === entry.baseURL) {
    requireKey(spec, apiKey ?? envKey, entry.apiKeyEnv as string);
  }
  return createOpenAICompatible({
    ...transport,
    model: parsed.model,
    baseURL: resolvedBase,
    apiKey: apiKey ?? envKey ?? '',
    provider: parsed.provider,
    sendPromptCacheKey: entry.sendPromptCacheKey,
    includeUsage: entry.includeUsage,
    headers,
  });
}

/**
 * A hosted API at its own address refuses every call without a key: say so when the model is
 * resolved, before a team is opened, instead of after the first call's retries.
 */
function requireKey(spec: string, key: string | undefined, envName: string): void {
  if (key !== undefined && key !== '') return;
  throw new TeamError(
    'MODEL_AUTH',
    `${spec} needs an API key: set ${envName} or pass apiKey (a base URL override, for a server that needs no key, skips this check)`,
    { details: { spec, env: envName } },
  );
}
