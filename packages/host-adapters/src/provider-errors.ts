import { TeamError, type TeamErrorCode } from '@teamwire/core';

/** What a provider said about a failed call, extracted from its error body. */
export interface ProviderErrorInfo {
  /** The provider's own message, kept verbatim so users see what the provider said. */
  message: string;
  /** The provider's error type or code (`rate_limit_error`, `invalid_api_key`, ...), if any. */
  type: string | undefined;
  /**
   * The provider's error code when the error has one (OpenAI's `context_length_exceeded` beside
   * its type `invalid_request_error`, llama.cpp's `400`), as a string.
   */
  code?: string | undefined;
}

/** The most characters of a provider's message an error keeps. */
export const MAX_MESSAGE_CHARS = 2000;

const clip = (text: string): string => text.slice(0, MAX_MESSAGE_CHARS);

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** An error's `code` (a string, or a number as llama.cpp and vLLM send) as a string. */
function codeOf(error: Record<string, unknown>): string | undefined {
  const code = error.code;
  return typeof code === 'string' || typeof code === 'number' ? String(code) : undefined;
}

/** `info` with `code` set when there is one (so an absent code is no key at all). */
function withCode(info: ProviderErrorInfo, code: string | undefined): ProviderErrorInfo {
  return code === undefined ? info : { ...info, code };
}

/**
 * Reads the error of an error body or error event, keeping at most 2000 characters of its message. Handles the shapes the supported servers use:
 * `{error: {message, type|code}}` (OpenAI, Anthropic, vLLM, OpenRouter, llama.cpp),
 * `[{error: {message, code}}]` (Gemini's OpenAI-compatible endpoint), `{error: "..."}` (Ollama),
 * `{message, type, code}` and `{detail}` (FastAPI-based servers such as vLLM), or plain text.
 */
export function readProviderError(body: unknown): ProviderErrorInfo | undefined {
  let value = body;
  if (typeof value === 'string') {
    const text = value.trim();
    if (text === '') return undefined;
    try {
      value = JSON.parse(text);
    } catch {
      return { message: clip(text), type: undefined };
    }
  }
  // Gemini's OpenAI-compatible endpoint wraps its error body in a one-element array.
  if (Array.isArray(value)) value = value[0];
  if (!isRecord(value)) return undefined;
  const error = value.error;
  if (typeof error === 'string') return { message: clip(error), type: undefined };
  if (isRecord(error)) {
    const message = typeof error.message === 'string' ? error.message : JSON.stringify(error);
    const code = codeOf(error);
    const type = typeof error.type === 'string' ? error.type : code;
    return withCode({ message: clip(message), type }, code);
  }
  if (typeof value.message === 'string') {
    const type = typeof value.type === 'string' ? value.type : undefined;
    return withCode({ message: clip(value.message), type }, codeOf(value));
  }
  if (value.detail !== undefined) {
    const detail = typeof value.detail === 'string' ? value.detail : JSON.stringify(value.detail);
    return { message: clip(detail), type: undefined };
  }
  return undefined;
}

/** The TeamError code for an HTTP status the provider answered with. */
export function codeForStatus(status: number): TeamErrorCode {
  if (status === 401 || status === 403) return 'MODEL_AUTH';
  if (status === 429) return 'MODEL_RATE_LIMITED';
  if (status === 408 || status === 409 || status >= 500) return 'MODEL_UNAVAILABLE';
  return 'MODEL_BAD_REQUEST';
}

/**
 * The TeamError code for an error type reported inside a stream (no HTTP status to go by).
 * Unknown types count as unavailability: the request itself was accepted.
 */
export function codeForErrorType(type: string | undefined): TeamErrorCode {
  if (type === undefined) return 'MODEL_UNAVAILABLE';
  if (/^\d{3}$/.test(type)) return codeForStatus(Number(type));
  const t = type.toLowerCase();
  if (t.includes('rate_limit') || t.includes('rate-limit') || t.includes('quota')) {
    return 'MODEL_RATE_LIMITED';
  }
  if (t.includes('auth') || t.includes('permission') || t.includes('api_key')) return 'MODEL_AUTH';
  if (
    t.includes('invalid_request') ||
    t.includes('not_found') ||
    t.includes('too_large') ||
    t.includes('context_length')
  ) {
    return 'MODEL_BAD_REQUEST';
  }
  return 'MODEL_UNAVAILABLE';
}

/**
 * Error types and codes that by themselves say the prompt does not fit the model's context window
 * (compared in lower case):
 * - `context_length_exceeded`: the `code` of OpenAI, Azure OpenAI, Groq and other OpenAI-style
 *   servers (whose `type` is the generic `invalid_request_error`);
 * - `exceed_context_size_error`: the `type` of llama.cpp's server;
 * - `request_too_large`: the `type` of Anthropic's 413 (the request is over its size limit,
 *   which a shorter conversation also cures);
 * - `context_window_exceeded`: the same, in the spelling some gateways use.
 */
const CONTEXT_OVERFLOW_TYPES: ReadonlySet<string> = new Set([
  'context_length_exceeded',
  'exceed_context_size_error',
  'request_too_large',
  'context_window_exceeded',
]);

/**
 * Phrases that, found in a provider's message (in lower case), say the prompt does not fit the
 * model's context window. Plain substrings, so matching costs time in proportion to the message
 * and nothing more, whatever the message holds.
 */
const CONTEXT_OVERFLOW_PHRASES: readonly string[] = [
  // OpenAI, vLLM, OpenRouter, DeepSeek: "This model's maximum context length is 128000 tokens.
  // However, your messages resulted in 130412 tokens."; Mistral: "Prompt contains 40000 tokens
  // ... too large for model with 32768 maximum context length".
  'maximum context length',
  // xAI: "This model's maximum prompt length is 131072 but the request contains 150000 tokens."
  'maximum prompt length',
  // Anthropic (also on Bedrock): "prompt is too long: 209750 tokens > 200000 maximum".
  'prompt is too long',
  // Anthropic: "input length and `max_tokens` exceed context limit: 190000 + 20000 > 200000".
  'exceed context limit',
  // llama.cpp: "the request exceeds the available context size, try increasing it".
  'exceeds the available context size',
  // Gemini (OpenAI-compatible endpoint): "The input token count (N) exceeds the maximum number of
  // tokens allowed (M)".
  'exceeds the maximum number of tokens allowed',
  // Ollama: "the input length exceeds the context length".
  'exceeds the context length',
  // Bedrock: "Input is too long for requested model."
  'input is too long',
  // Azure and gateways that put the OpenAI code into the message.
  'context_length_exceeded',
  'context length exceeded',
];

/** A three-digit status a provider put in an error's type or code, if it did. */
function reportedStatus(value: string | undefined): number | undefined {
  return value !== undefined && /^\d{3}$/.test(value) ? Number(value) : undefined;
}

/**
 * Whether a provider's error says the prompt does not fit the model's context window: its type
 * or code is one of {@link CONTEXT_OVERFLOW_TYPES}, or its message contains one of
 * {@link CONTEXT_OVERFLOW_PHRASES} (case-insensitively).
 *
 * Only a refusal can be an overflow: an HTTP `status` other than 400 or 413 never is, and for an
 * error inside a stream (no `status`) neither is one whose type or code names another status, a
 * rate limit or an authentication failure.
 */
export function isContextOverflow(
  info: ProviderErrorInfo | undefined,
  status?: number | undefined,
): boolean {
  if (info === undefined) return false;
  const refusal = (code: number | undefined) => code === undefined || code === 400 || code === 413;
  if (status !== undefined) {
    if (!refusal(status)) return false;
  } else {
    if (!refusal(reportedStatus(info.type)) || !refusal(reportedStatus(info.code))) return false;
    const byType = codeForErrorType(info.type);
    if (byType === 'MODEL_RATE_LIMITED' || byType === 'MODEL_AUTH') return false;
  }
  for (const name of [info.type, info.code]) {
    if (name !== undefined && CONTEXT_OVERFLOW_TYPES.has(name.toLowerCase())) return true;
  }
  const message = clip(info.message).toLowerCase();
  return CONTEXT_OVERFLOW_PHRASES.some((phrase) => message.includes(phrase));
}

/**
 * The TeamError code for a provider's failure: MODEL_CONTEXT_OVERFLOW when
 * {@link isContextOverflow} says so, else by the HTTP `status` ({@link codeForStatus}) or, for an
 * error inside a stream (no status), by its type ({@link codeForErrorType}).
 */
export function codeForFailure(
  status: number | undefined,
  info: ProviderErrorInfo | undefined,
): TeamErrorCode {
  if (isContextOverflow(info, status)) return 'MODEL_CONTEXT_OVERFLOW';
  return status === undefined ? codeForErrorType(info?.type) : codeForStatus(status);
}

/**
 * Builds the TeamError for a provider's error response, keeping the provider's message (at most
 * 2000 characters of it, whoever built `info`).
 */
export function providerError(
  provider: string,
  code: TeamErrorCode,
  info: ProviderErrorInfo | undefined,
  details: Record<string, unknown> = {},
  cause?: unknown,
): TeamError {
  const status = typeof details.status === 'number' ? ` ${details.status}` : '';
  const providerMessage = info === undefined ? undefined : clip(info.message);
  return new TeamError(code, `${provider}${status}: ${providerMessage ?? 'no error message'}`, {
    cause,
    details: {
      provider,
      providerMessage,
      ...(info?.type === undefined ? {} : { providerErrorType: info.type }),
      ...(info?.code === undefined || info.code === info.type
        ? {}
        : { providerErrorCode: info.code }),
      ...details,
    },
  });
}

/** A MODEL_PROTOCOL error: the provider's response broke its wire format. */
export function protocolError(
  provider: string,
  message: string,
  details: Record<string, unknown> = {},
  cause?: unknown,
): TeamError {
  return new TeamError('MODEL_PROTOCOL', `${provider}: ${message}`, {
    cause,
    details: { provider, ...details },
  });
}

/** The ABORTED error every adapter throws when the caller's signal fires. */
export function abortedError(provider: string, signal: AbortSignal | undefined): TeamError {
  return new TeamError('ABORTED', `${provider}: model call aborted`, {
    cause: signal?.reason,
    details: { provider },
  });
}
