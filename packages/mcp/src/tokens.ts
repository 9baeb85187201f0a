import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import { MEMBER_NAME_PATTERN, TeamError } from '@teamwire/core';

const TOKEN_PREFIX = 'tw1';
/** Longer bearer values are refused before any parsing. */
const TOKEN_MAX = 256;
const SECRET_MIN_BYTES = 16;

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

/**
 * Tokens `tw1.<member>.<mac>`, where the mac is an HMAC-SHA256 of the team id and the member name
 * under `secret`: the server stores no token, a token names its member (so one member's token can
 * never act as another), and tokens survive a server restart as long as the secret does. Member
 * names are never reused within a team, so a retired member's token opens nothing again.
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
      const expected = mac(member);
      const actual = Buffer.from(given, 'base64url');
      if (actual.length !== expected.length || !timingSafeEqual(actual, expected)) return undefined;
      return member;
    },
  };
}
