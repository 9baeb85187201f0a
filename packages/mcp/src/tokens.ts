import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import { MEMBER_NAME_PATTERN, TeamError } from '@teamwire/core';

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

/** Issues and checks the per-member bearer tokens of the HTTP transport. */
export interface TokenIssuer {
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
  const mac = (member: string) =>
    createHmac('sha256', secret).update(`${options.teamId}\0${member}`).digest();
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
  };
}
