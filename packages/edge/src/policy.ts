import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { TeamError } from '@teamwire/core';

/** The `Host` names accepted by default: loopback only, on any port. */
export const LOOPBACK_HOSTS: readonly string[] = Object.freeze(['127.0.0.1', 'localhost', '[::1]']);

/** Request bodies the edge reads at most by default (1 MiB). */
export const EDGE_BODY_MAX_DEFAULT = 1 << 20;

/** The header a page sends its token in when it cannot use `Authorization`. */
export const TOKEN_HEADER = 'x-teamwire-token';

/**
 * `Authorization: Bearer <token>`: the scheme in any case (RFC 9110 §11.1), spaces, then exactly
 * one token of RFC 6750's b64token syntax (§2.1), and nothing else.
 */
const BEARER = /^bearer +([A-Za-z0-9\-._~+/]+=*)$/i;
const TOKEN_TEXT = /^[A-Za-z0-9\-._~+/]+=*$/;
/** Shortest edge token accepted. */
const TOKEN_MIN = 16;
/** Longest token read from a request; a longer one is refused before any comparison. */
const TOKEN_MAX = 512;

/** A new random edge token (24 bytes, base64url: 32 characters). */
export function generateEdgeToken(): string {
  return randomBytes(24).toString('base64url');
}

/**
 * The token a request presents, by the edge's one rule:
 *
 * 1. an `Authorization` header, when present, decides: it must be `Bearer <token>`, else the
 *    request presents no token at all (a query or other header does not rescue it);
 * 2. else the `x-teamwire-token` header;
 * 3. else, for `GET` and `HEAD` only, the `token` query parameter: what a person opens from a
 *    printed link, and what a browser's `EventSource` (which cannot set headers) sends. A request
 *    that changes something never takes its token from the URL, so a link or a form on another
 *    site cannot carry it.
 */
export function presentedToken(request: Request): string | undefined {
  const authorization = request.headers.get('authorization');
  let token: string | undefined;
  if (authorization !== null) {
    token = BEARER.exec(authorization.trim())?.[1];
  } else {
    const header = request.headers.get(TOKEN_HEADER);
    if (header !== null) token = header.trim();
    else if (request.method === 'GET' || request.method === 'HEAD') {
      token = new URL(request.url).searchParams.get('token') ?? undefined;
    }
  }
  if (token === undefined || token.length > TOKEN_MAX || !TOKEN_TEXT.test(token)) return undefined;
  return token;
}

/**
 * A constant-time check against `expected`: both sides are hashed first, so the comparison is of
 * equal lengths and its time tells nothing of the token, not even its length.
 */
export function tokenMatcher(expected: string): (presented: string | undefined) => boolean {
  if (
    typeof expected !== 'string' ||
    expected.length < TOKEN_MIN ||
    expected.length > TOKEN_MAX ||
    !TOKEN_TEXT.test(expected)
  ) {
    throw new TeamError(
      'INVALID_ARGUMENT',
      `the edge token must be ${TOKEN_MIN} to ${TOKEN_MAX} characters of base64url or base64`,
      { details: { option: 'token' } },
    );
  }
  const digest = (text: string) => createHash('sha256').update(text, 'utf8').digest();
  const wanted = digest(expected);
  return (presented) => {
    // a missing token still costs one comparison, like a wrong one
    const same = timingSafeEqual(digest(presented ?? ''), wanted);
    return same && presented !== undefined;
  };
}

/** The Host/Origin policy of the edge; see {@link hostPolicy}. */
export interface HostPolicy {
  /** Why the request is refused (a sentence for its body), or `undefined` when it may go on. */
  refusal(host: string | null, origin: string | null): string | undefined;
}

/** `host` without its port, lower case: `127.0.0.1`, `localhost`, `[::1]`, `example.test`. */
function hostName(host: string): string {
  const lower = host.toLowerCase();
  if (lower.startsWith('[')) return lower.slice(0, lower.indexOf(']') + 1);
  return lower.replace(/:\d*$/, '');
}

/**
 * Against DNS rebinding (a page on another site reaching this server through a name of its own
 * that resolves to 127.0.0.1): the `Host` header must name one of `allowed` (an entry without a
 * port allows any port, one with a port only that port), and an `Origin`, when sent, must be this
 * very host, over `http` or `https`. Browsers send `Origin` with every request that changes
 * something and with every cross-origin one, so a page elsewhere can neither read nor act.
 */
export function hostPolicy(allowed: readonly string[]): HostPolicy {
  const names = new Set<string>();
  const exact = new Set<string>();
  for (const entry of allowed) {
    if (typeof entry !== 'string' || entry === '' || /[\s/@]/.test(entry)) {
      throw new TeamError('INVALID_ARGUMENT', `not a host name: ${JSON.stringify(entry)}`, {
        details: { option: 'allowedHosts' },
      });
    }
    const lower = entry.toLowerCase();
    if (hostName(lower) === lower) names.add(lower);
    else exact.add(lower);
  }
  return {
    refusal(host, origin) {
      const given = (host ?? '').toLowerCase();
      if (!(exact.has(given) || names.has(hostName(given)))) {
        return `host ${JSON.stringify(host ?? '')} is not allowed: reach this server by a name it serves`;
      }
      if (origin === null) return undefined;
      let parsed: URL | undefined;
      try {
        parsed = new URL(origin);
      } catch {
        parsed = undefined;
      }
      const sameHost =
        parsed !== undefined &&
        (parsed.protocol === 'http:' || parsed.protocol === 'https:') &&
        parsed.host === new URL(`http://${given}`).host;
      return sameHost ? undefined : `requests from origin ${JSON.stringify(origin)} are refused`;
    },
  };
}
