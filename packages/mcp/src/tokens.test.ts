import { TeamError } from '@teamwire/core';
import { describe, expect, it } from 'vitest';
import { clientConfig } from './client-config.js';
import { createTokenIssuer, generateSecret } from './tokens.js';

function codeOf(run: () => unknown): string | undefined {
  try {
    run();
  } catch (error) {
    if (TeamError.isInstance(error)) return error.code;
    throw error;
  }
  return undefined;
}

describe('member tokens', () => {
  const issuer = createTokenIssuer({ secret: generateSecret(), teamId: 'team-1' });

  it('name their member, and only this issuer’s tokens are accepted', () => {
    const token = issuer.tokenFor('alice');
    expect(issuer.memberOf(token)).toBe('alice');
    expect(issuer.tokenFor('alice')).toBe(token);
    expect(issuer.memberOf(issuer.tokenFor('bob'))).toBe('bob');
    const otherSecret = createTokenIssuer({ secret: generateSecret(), teamId: 'team-1' });
    expect(otherSecret.memberOf(token)).toBeUndefined();
    const otherTeam = createTokenIssuer({ secret: 'x'.repeat(32), teamId: 'team-2' });
    expect(
      createTokenIssuer({ secret: 'x'.repeat(32), teamId: 'team-1' }).memberOf(
        otherTeam.tokenFor('alice'),
      ),
    ).toBeUndefined();
  });

  it('refuse a token whose name was swapped, cut, padded or malformed', () => {
    const token = issuer.tokenFor('alice');
    const [, , mac] = token.split('.');
    expect(issuer.memberOf(`tw1.bob.${mac}`)).toBeUndefined();
    expect(issuer.memberOf(token.slice(0, -2))).toBeUndefined();
    expect(issuer.memberOf(`${token}AA`)).toBeUndefined();
    expect(issuer.memberOf(`tw2.alice.${mac}`)).toBeUndefined();
    expect(issuer.memberOf(`tw1.Alice.${mac}`)).toBeUndefined();
    expect(issuer.memberOf('tw1.alice')).toBeUndefined();
    expect(issuer.memberOf(`tw1.alice.${'A'.repeat(300)}`)).toBeUndefined();
    expect(issuer.memberOf('')).toBeUndefined();
  });

  it('accept exactly one encoding of the mac: unpadded base64url, canonical', () => {
    // a fixed secret whose mac for alice holds a character the two alphabets spell differently
    const fixed = createTokenIssuer({ secret: 'y'.repeat(32), teamId: 'team-1' });
    const token = fixed.tokenFor('alice');
    const mac = token.split('.')[2] as string;
    expect(mac).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(mac).toMatch(/[-_]/);
    // padding, trailing characters a lenient decoder skips, the other alphabet
    expect(fixed.memberOf(`${token}=`)).toBeUndefined();
    expect(fixed.memberOf(`${token}!!`)).toBeUndefined();
    expect(fixed.memberOf(`${token} `)).toBeUndefined();
    const standard = mac.replaceAll('-', '+').replaceAll('_', '/');
    expect(fixed.memberOf(`tw1.alice.${standard}`)).toBeUndefined();
    // a last character whose two unused bits are set decodes to the same 32 bytes
    const last = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';
    const bits = last.indexOf(mac.slice(-1));
    const sloppy = `${mac.slice(0, -1)}${last[bits | 1]}`;
    expect(Buffer.from(sloppy, 'base64url')).toEqual(Buffer.from(mac, 'base64url'));
    expect(fixed.memberOf(`tw1.alice.${sloppy}`)).toBeUndefined();
    expect(fixed.memberOf(token)).toBe('alice');
  });

  it('seal inbox cursors for one member, opened only by the same secret, team and member', () => {
    const cursor = Buffer.from('{"v":1,"m":"m-1","ids":["a"]}').toString('base64url');
    const sealed = issuer.sealCursor('m-1', cursor);
    expect(sealed).toMatch(/^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]{43}$/);
    expect(issuer.openCursor('m-1', sealed)).toBe(cursor);
    const again = createTokenIssuer({ secret: 'x'.repeat(32), teamId: 'team-1' });
    expect(again.openCursor('m-1', again.sealCursor('m-1', cursor))).toBe(cursor);
    expect(
      createTokenIssuer({ secret: 'x'.repeat(32), teamId: 'team-1' }).sealCursor('m-1', cursor),
    ).toBe(again.sealCursor('m-1', cursor));
    const mac = sealed.slice(sealed.lastIndexOf('.') + 1);
    expect(issuer.openCursor('m-2', sealed)).toBeUndefined();
    expect(again.openCursor('m-1', sealed)).toBeUndefined();
    expect(
      createTokenIssuer({ secret: 'x'.repeat(32), teamId: 'team-2' }).openCursor(
        'm-1',
        again.sealCursor('m-1', cursor),
      ),
    ).toBeUndefined();
    expect(issuer.openCursor('m-1', cursor)).toBeUndefined();
    expect(issuer.openCursor('m-1', `${cursor}A.${mac}`)).toBeUndefined();
    expect(issuer.openCursor('m-1', `${sealed}=`)).toBeUndefined();
    expect(issuer.openCursor('m-1', `.${mac}`)).toBeUndefined();
    expect(issuer.openCursor('m-1', `${'A'.repeat(9000)}.${mac}`)).toBeUndefined();
  });

  it('need a secret of 16 bytes or more, a team id and a member name', () => {
    expect(codeOf(() => createTokenIssuer({ secret: 'short', teamId: 't' }))).toBe(
      'INVALID_ARGUMENT',
    );
    expect(codeOf(() => createTokenIssuer({ secret: 'x'.repeat(16), teamId: '' }))).toBe(
      'INVALID_ARGUMENT',
    );
    expect(codeOf(() => issuer.tokenFor('Not A Name'))).toBe('INVALID_NAME');
  });
});

describe('client configuration', () => {
  it('for HTTP carries the endpoint and the bearer header', () => {
    const config = clientConfig({
      name: 'teamwire-alice',
      url: 'http://127.0.0.1:4100/mcp',
      token: 'tw1.alice.abc',
    });
    expect(config.claudeCode).toBe(
      "claude mcp add --transport http teamwire-alice http://127.0.0.1:4100/mcp --header 'Authorization: Bearer tw1.alice.abc'",
    );
    expect(config.cursor).toEqual({
      mcpServers: {
        'teamwire-alice': {
          url: 'http://127.0.0.1:4100/mcp',
          headers: { Authorization: 'Bearer tw1.alice.abc' },
        },
      },
    });
  });

  it('for stdio carries the command line, quoted for a shell', () => {
    const config = clientConfig({
      name: 'teamwire-bob',
      command: 'teamwire-example',
      args: ['mcp', '--stdio', 'bob', '--dir', "/tmp/it's here"],
    });
    expect(config.claudeCode).toBe(
      "claude mcp add teamwire-bob -- teamwire-example mcp --stdio bob --dir '/tmp/it'\\''s here'",
    );
    expect(config.cursor.mcpServers['teamwire-bob']).toEqual({
      command: 'teamwire-example',
      args: ['mcp', '--stdio', 'bob', '--dir', "/tmp/it's here"],
    });
  });
});
