import { protocolError } from './provider-errors.js';

/** The most bytes read of a body that is not streamed: an error body, or JSON instead of SSE. */
export const MAX_ERROR_BODY_BYTES = 64 * 1024;

/** Same-origin redirects followed in a row before the call fails. */
export const MAX_REDIRECTS = 5;

const REDIRECT_STATUSES = new Set([301, 302, 303, 307, 308]);

/**
 * Reads at most `maxBytes` of a body as text, then cancels the rest. A server may send an
 * endless body; what was read is kept so the error can still quote the provider.
 */
export async function readCappedText(response: Response, maxBytes: number): Promise<string> {
  if (!response.body) return '';
  const reader = response.body.getReader();
  const decoder = new TextDecoder();
  let text = '';
  let read = 0;
  try {
    while (read < maxBytes) {
      const chunk = await reader.read();
      if (chunk.done) break;
      const piece = chunk.value.subarray(0, maxBytes - read);
      read += piece.length;
      text += decoder.decode(piece, { stream: true });
    }
    return text + decoder.decode();
  } finally {
    reader.cancel().catch(() => {});
  }
}

/**
 * POSTs with `fetch`, following redirects only to the origin the request was sent to, and only
 * 307 and 308 (the ones that keep the method and body), at most {@link MAX_REDIRECTS} times.
 *
 * The request carries the API key and the whole prompt; a redirect to another origin would hand
 * both to a host the caller never named, so it fails with MODEL_PROTOCOL instead.
 */
export async function postSameOrigin(
  fetchImpl: typeof globalThis.fetch,
  provider: string,
  url: string,
  init: RequestInit,
): Promise<Response> {
  let current = new URL(url);
  for (let redirects = 0; ; redirects++) {
    const response = await fetchImpl(current.href, { ...init, method: 'POST', redirect: 'manual' });
    const { status } = response;
    if (!REDIRECT_STATUSES.has(status)) return response;
    await response.body?.cancel().catch(() => {});
    const location = response.headers.get('location');
    if (location === null || !URL.canParse(location, current.href)) {
      throw protocolError(provider, `a ${status} redirect without a valid location`, { status });
    }
    const target = new URL(location, current);
    if (target.origin !== current.origin) {
      const why = 'the request carries credentials';
      throw protocolError(
        provider,
        `refused a ${status} redirect to another origin (${target.origin}): ${why}`,
        { status, location: target.origin },
      );
    }
    if (status !== 307 && status !== 308) {
      const why = 'it would turn the POST into a GET';
      throw protocolError(provider, `refused a ${status} redirect: ${why}`, { status });
    }
    if (redirects === MAX_REDIRECTS) {
      throw protocolError(provider, `too many redirects (more than ${MAX_REDIRECTS})`, { status });
    }
    current = target;
  }
}
