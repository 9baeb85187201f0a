import { TeamError, type TeamErrorCode } from '@teamwire/core';

/** What a provider said about a failed call, extracted from its error body. */
export interface ProviderErrorInfo {
  /** The provider's own message, kept verbatim so users see what the provider said. */
  message: string;
  /** The provider's error type or code (`rate_limit_error`, `invalid_api_key`, ...), if any. */
  type: string | undefined;
}

/** The most characters of a provider's message an error keeps. */
export const MAX_MESSAGE_CHARS = 2000;

const clip = (text: string): string => text.slice(0, MAX_MESSAGE_CHARS);

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * Reads the error of an error body or error event, keeping at most 2000 characters of its message. Handles the shapes the supported servers use:
 * `{error: {message, type|code}}` (OpenAI, Anthropic, vLLM, OpenRouter, llama.cpp),
 * `{error: "..."}` (Ollama), `{message}` and `{detail}` (FastAPI-based servers), or plain text.
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
  if (!isRecord(value)) return undefined;
  const error = value.error;
  if (typeof error === 'string') return { message: clip(error), type: undefined };
  if (isRecord(error)) {
    const message = typeof error.message === 'string' ? error.message : JSON.stringify(error);
    const type =
      typeof error.type === 'string'
        ? error.type
        : typeof error.code === 'string' || typeof error.code === 'number'
          ? String(error.code)
          : undefined;
    return { message: clip(message), type };
  }
  if (typeof value.message === 'string') {
    return {
      message: clip(value.message),
      type: typeof value.type === 'string' ? value.type : undefined,
    };
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
