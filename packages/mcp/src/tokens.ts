import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import { INBOX_CURSOR_MAX, MEMBER_NAME_PATTERN, TeamError } from '@teamwire/core';

const TOKEN_PREFIX = 'tw1';
/** Longer bearer values are refused before any parsing. */
const TOKEN_MAX = 256;
const SECRET_MIN_BYTES = 16;
/**
 * The one accepted spelling of an HMAC-SHA256: unpadded base64url of its 32 bytes, 43 characters,
 * the last carrying 4 bits and two zero bits. A lenient decoder would also take padding, the `+/`
 * alphabet, stray characters or set unused bits, so the text is checked before anything else.
 */
const MAC_TEXT = /^[A-Za-z0-9_-]{42}[AEIMQUYcgkosw048]$/;
const MAC_CHARS = 43;
/** Longest sealed inbox cursor: core's longest cursor, a dot and the mac. */
export const SEALED_CURSOR_MAX = INBOX_CURSOR_MAX + 1 + MAC_CHARS;
/** Sets the cursor key apart from the token key, so no cursor mac is ever a token mac. */
const CURSOR_KEY_LABEL = 'teamwire-mcp inbox cursor v1';

/**
 * Seals the inbox cursors a server hands out, so that it takes back only cursors it issued, and
 * only from the member it issued them to. Core's own cursors are not authenticated.
 */
export interface InboxCursorSeal {
  /** Core's `cursor`, sealed for the member `memberId` (the same for the same secret). */
  sealCursor(memberId: string, cursor: string): string;
  /** Core's cursor inside `sealed`, or `undefined` unless this seal sealed it for `memberId`. */
  openCursor(memberId: string, sealed: string): string | undefined;
}

/**
 * Issues and checks the per-member bearer tokens of the HTTP transport, and seals the inbox
 * cursors handed out to the members, under one secret.
 */
export interface TokenIssuer extends InboxCursorSeal {
  /** The bearer token of `member` (the same for the same secret, team and name). */
  tokenFor(member: string): string;
  /** The member a token belongs to, or `undefined` for anything this issuer did not issue. */
  memberOf(token: string): string | undefined;
}

/** A new random secret for {@link createTokenIssuer} (32 bytes, base64url). Keep it private. */
export function generateSecret(): string {
  return randomBytes(32).toString('base64url');
}

/** Whether `given` is exactly the text of `expected`, compared in constant time. */
function macMatches(given: string, expected: Buffer): boolean {
  if (!MAC_TEXT.test(given)) return false;
  return timingSafeEqual(Buffer.from(given, 'latin1'), Buffer.from(expected.toString('base64url')));
}

/**
 * Tokens `tw1.<member>.<mac>`, where the mac is an HMAC-SHA256 of the team id and the member name
 * under `secret`: the server stores no token, a token names its member (so one member's token can
 * never act as another), and tokens survive a server restart as long as the secret does. Member
 * names are never reused within a team, so a retired member's token opens nothing again. The mac
 * is accepted in one spelling only (unpadded base64url), compared in constant time.
 *
 * Inbox cursors are sealed as `<core cursor>.<mac>`, the mac an HMAC-SHA256 of the team id, the
 * member id and the cursor under a key derived from `secret`: like tokens, they survive a restart
 * as long as the secret does, and one member's cursor is nothing to another.
 */
export function createTokenIssuer(options: {
  secret: string | Uint8Array;
  teamId: string;
}): TokenIssuer {
  const secret =
    typeof options.secret === 'string'
      ? Buffer.from(options.secret, 'utf8')
      : Buffer.from(options.secret);
  if (secret.length < SECRET_MIN_BYTES) {
    throw new TeamError(
      'INVALID_ARGUMENT',
      `the token secret needs at least ${SECRET_MIN_BYTES} bytes`,
      {
        details: { option: 'secret' },
      },
    );
  }
  if (typeof options.teamId !== 'string' || options.teamId === '') {
    throw new TeamError('INVALID_ARGUMENT', 'the token issuer needs a team id', {
      details: { option: 'teamId' },
    });
  }
  const { teamId } = options;
  const mac = (member: string) =>
    createHmac('sha256', secret).update(`${teamId}\0${member}`).digest();
  const cursorKey = createHmac('sha256', secret).update(CURSOR_KEY_LABEL).digest();
  const cursorMac = (memberId: string, cursor: string) =>
    createHmac('sha256', cursorKey).update(`${teamId}\0${memberId}\0${cursor}`).digest();
  return {
    tokenFor(member) {
      if (typeof member !== 'string' || !MEMBER_NAME_PATTERN.test(member)) {
        throw new TeamError('INVALID_NAME', `not a member name: ${JSON.stringify(member)}`);
      }
      return `${TOKEN_PREFIX}.${member}.${mac(member).toString('base64url')}`;
    },
    memberOf(token) {
      if (typeof token !== 'string' || token.length > TOKEN_MAX) return undefined;
      const parts = token.split('.');
      if (parts.length !== 3 || parts[0] !== TOKEN_PREFIX) return undefined;
      const [, member, given] = parts as [string, string, string];
      if (!MEMBER_NAME_PATTERN.test(member)) return undefined;
      return macMatches(given, mac(member)) ? member : undefined;
    },
    sealCursor(memberId, cursor) {
      return `${cursor}.${cursorMac(memberId, cursor).toString('base64url')}`;
    },
    openCursor(memberId, sealed) {
      if (typeof sealed !== 'string' || sealed.length > SEALED_CURSOR_MAX) return undefined;
      const dot = sealed.length - MAC_CHARS - 1;
      if (dot < 1 || sealed[dot] !== '.') return undefined;
      const cursor = sealed.slice(0, dot);
      return macMatches(sealed.slice(dot + 1), cursorMac(memberId, cursor)) ? cursor : undefined;
    },
  };
}
