import { TeamError } from '@teamwire/core';
import { z } from 'zod';

/**
 * Sent with every response: the URLs carry the token, so no request the page makes may name them
 * to another site (`no-referrer`), and no response is read as another type than it says.
 */
export const COMMON_HEADERS: Readonly<Record<string, string>> = Object.freeze({
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
});

/**
 * The page's Content-Security-Policy: its one script and one stylesheet from this server, no
 * inline code, no eval, requests (snapshot, events, actions) to this server only, and no frame,
 * plugin, base URL or form target. The icon is an empty `data:` URL. React sets styles through
 * the CSSOM, which `style-src` does not govern.
 */
export const PAGE_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
  "object-src 'none'",
].join('; ');

/** A JSON answer is never a document: it loads nothing and is framed by no one. */
const JSON_CSP = "default-src 'none'; frame-ancestors 'none'";

const STATUS_OF_CODE: Record<string, number> = {
  INVALID_ARGUMENT: 400,
  MESSAGE_TOO_LARGE: 413,
  UNAUTHORIZED: 401,
  FORBIDDEN: 403,
  NOT_A_MEMBER: 403,
  LEAD_ONLY: 403,
  READ_ONLY: 403,
  UNKNOWN_TARGET: 404,
  UNKNOWN_MEMBER: 404,
  TASK_NOT_FOUND: 404,
  NOT_FOUND: 404,
  NOT_THE_APPROVER: 403,
  APPROVAL_NOT_FOUND: 404,
  REVISION_MISMATCH: 409,
  TASK_OWNED: 409,
  APPROVAL_DECIDED: 409,
  APPROVAL_STATE: 409,
  MAILBOX_FULL: 429,
  DISPOSED: 503,
  STORE_CLOSED: 503,
  STORE_UNAVAILABLE: 503,
  STORAGE_IO: 500,
  CORRUPT_LOG: 500,
};

/** `error` as `{error: {code, message}}` with the status of its `TeamError` code. */
export function failure(error: unknown): { status: number; body: unknown } {
  const failed = TeamError.isInstance(error)
    ? error
    : new TeamError('INVALID_ARGUMENT', error instanceof Error ? error.message : String(error));
  return {
    status: STATUS_OF_CODE[failed.code] ?? 400,
    body: { error: { code: failed.code, message: failed.message } },
  };
}

/** `{error: {code, message}}` with `status`. */
export function refusal(
  status: number,
  code: string,
  message: string,
): { status: number; body: unknown } {
  return { status, body: { error: { code, message } } };
}

/**
 * A web-standard JSON response, with the headers every JSON answer gets. The body is serialized
 * first, so a value that cannot be serialized is a 500, never a 200 cut short.
 */
export function jsonResponse(
  status: number,
  body: unknown,
  headers: Record<string, string> = {},
): Response {
  let json: string;
  try {
    json = JSON.stringify(body);
  } catch {
    status = 500;
    json = JSON.stringify({
      error: { code: 'INTERNAL', message: 'the answer cannot be serialized' },
    });
  }
  return jsonTextResponse(status, json, headers);
}

/** A web-standard response of an already serialized JSON body. */
export function jsonTextResponse(
  status: number,
  json: string,
  headers: Record<string, string> = {},
): Response {
  return new Response(json, {
    status,
    headers: {
      ...COMMON_HEADERS,
      'content-type': 'application/json; charset=utf-8',
      'cache-control': 'no-store',
      'content-security-policy': JSON_CSP,
      ...headers,
    },
  });
}

/** A web-standard `{error: {code, message}}` response with `status`. */
export function refusalResponse(status: number, code: string, message: string): Response {
  return jsonResponse(status, { error: { code, message } });
}

/** `body` checked against `schema`, else `INVALID_ARGUMENT`. */
export function parse<T>(schema: z.ZodType<T>, body: unknown): T {
  const parsed = schema.safeParse(body);
  if (!parsed.success) {
    throw new TeamError('INVALID_ARGUMENT', z.prettifyError(parsed.error), { cause: parsed.error });
  }
  return parsed.data;
}
