import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  EXTERNAL_TYPE,
  type FixtureTeam,
  openFixtureTeam,
  SECRET,
  TEAM_ID,
} from '../test/team-fixture.mjs';
import { createTokenIssuer, type HttpServing, type ServeHttpOptions, serveHttp } from './index.js';

/*
 * The HTTP transport over raw requests: the bearer scheme.
 */

const tokens = createTokenIssuer({ secret: SECRET, teamId: TEAM_ID });
let dir: string;
const cleanups: (() => Promise<void> | void)[] = [];

beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'teamwire-mcp-http-'));
});
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  await rm(dir, { recursive: true, force: true });
});

/** The fixture team (lead, alice, bob), plus external `extra` members, served over HTTP. */
async function serveTeam(
  options: Partial<ServeHttpOptions> = {},
  extra: readonly string[] = [],
): Promise<{ fixture: FixtureTeam; http: HttpServing }> {
  const fixture = await openFixtureTeam({ dir });
  cleanups.push(() => fixture.close());
  await fixture.team.promptLead('Plan the work.');
  for (const name of extra) {
    await fixture.team.spawnTeammate(fixture.team.lead, {
      name,
      description: `${name} codes outside`,
      prompt: `Hi ${name}.`,
      agentType: EXTERNAL_TYPE,
    });
  }
  const http = await serveHttp({ team: fixture.team, tokens, ...options });
  cleanups.push(() => http.close());
  return { fixture, http };
}

const bearer = (member: string) => `Bearer ${tokens.tokenFor(member)}`;

interface Answer {
  status: number;
  sessionId: string | undefined;
  /** The stable code of a refusal (`error.data.code`). */
  code: string | undefined;
}

async function post(url: string, headers: Record<string, string>, body: object): Promise<Answer> {
  const response = await fetch(url, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      ...headers,
    },
    body: JSON.stringify(body),
  });
  const text = await response.text();
  const json = response.headers.get('content-type')?.startsWith('application/json')
    ? (JSON.parse(text) as { error?: { data?: { code?: string } } })
    : undefined;
  return {
    status: response.status,
    sessionId: response.headers.get('mcp-session-id') ?? undefined,
    code: json?.error?.data?.code,
  };
}

/** A raw `initialize`, with `authorization` as given. */
function initialize(url: string, authorization: string): Promise<Answer> {
  return post(
    url,
    { authorization },
    {
      jsonrpc: '2.0',
      id: 1,
      method: 'initialize',
      params: {
        protocolVersion: '2025-06-18',
        capabilities: {},
        clientInfo: { name: 'raw', version: '1.0.0' },
      },
    },
  );
}

/** A `ping` on a session: 200 while it is open, 404 once it was closed. */
async function ping(url: string, member: string, sessionId: string): Promise<number> {
  const answer = await post(
    url,
    { authorization: bearer(member), 'mcp-session-id': sessionId },
    { jsonrpc: '2.0', id: 2, method: 'ping' },
  );
  return answer.status;
}

describe('the HTTP transport', () => {
  it('takes the bearer scheme in any case, followed by exactly one token', async () => {
    const { http } = await serveTeam();
    const token = tokens.tokenFor('alice');
    for (const scheme of ['Bearer', 'bearer', 'BEARER', 'bEaReR']) {
      const answer = await initialize(http.url, `${scheme} ${token}`);
      expect(answer.status, scheme).toBe(200);
      expect(await ping(http.url, 'alice', answer.sessionId as string)).toBe(200);
    }
    const refused = [
      token,
      'Bearer',
      `Bearer ${token} ${token}`,
      `Bearer ${token},x`,
      `Bearer\t${token}`,
      `Bearer${token}`,
      `Bearer "${token}"`,
      `Basic ${token}`,
      `Bearer ${token}=`,
      `Bearer ${token}!!`,
    ];
    for (const authorization of refused) {
      expect(await initialize(http.url, authorization), authorization).toMatchObject({
        status: 401,
        code: 'UNAUTHORIZED',
      });
    }
  });
});
