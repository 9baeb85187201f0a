import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { TeamError } from '@teamwire/core';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { type ServedRoutes, serveRoutes } from '../test/serve-http.mjs';
import {
  EXTERNAL_TYPE,
  type FixtureTeam,
  openFixtureTeam,
  SECRET,
  TEAM_ID,
} from '../test/team-fixture.mjs';
import { createMcpRoutes, createTokenIssuer, type McpRoutesOptions } from './index.js';

type LimitOptions = Omit<McpRoutesOptions, 'team' | 'cursors'>;

/*
 * The Streamable HTTP routes over raw requests: the sessions each member may hold. A session is busy while a request of it is in progress; an open notification stream
 * (a GET) is such a request, and stays open until the test ends it.
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
  options: LimitOptions = {},
  extra: readonly string[] = [],
): Promise<{ fixture: FixtureTeam; http: ServedRoutes }> {
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
  const http = await serveRoutes({
    routes: createMcpRoutes({ team: fixture.team, cursors: tokens, ...options }),
    tokens,
  });
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

/** Opens `member`'s session; fails the test unless it is admitted. */
async function open(url: string, member: string): Promise<string> {
  const answer = await initialize(url, bearer(member));
  expect(answer).toMatchObject({ status: 200, code: undefined });
  return answer.sessionId as string;
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

/** Opens the session's notification stream and keeps it open (busy) until the test ends. */
async function holdBusy(url: string, member: string, sessionId: string): Promise<void> {
  const stop = new AbortController();
  const response = await fetch(url, {
    headers: {
      authorization: bearer(member),
      'mcp-session-id': sessionId,
      accept: 'text/event-stream',
    },
    signal: stop.signal,
  });
  expect(response.status).toBe(200);
  cleanups.push(() => stop.abort());
}

describe('the Streamable HTTP routes', () => {
  it('lets one member open sessions without end, closing its own idle ones, and never locks another out', async () => {
    const { http } = await serveTeam();
    const ids: string[] = [];
    // the defaults: 64 sessions, 8 a member; none of these is ever closed by its client
    for (let i = 0; i < 64; i++) ids.push(await open(http.url, 'alice'));
    const bob = await open(http.url, 'bob');
    expect(await ping(http.url, 'bob', bob)).toBe(200);
    // alice's newest eight are open; each older one yielded to a newer one
    for (const [i, id] of ids.entries()) {
      expect(await ping(http.url, 'alice', id)).toBe(i < 56 ? 404 : 200);
    }
    expect(http.sessionCount()).toBe(9);
  });

  it('refuses a member whose sessions are all busy, and only that member', async () => {
    const { http } = await serveTeam({ maxSessions: 5, maxSessionsPerMember: 2 }, ['carol']);
    const [a1, a2] = [await open(http.url, 'alice'), await open(http.url, 'alice')];
    await holdBusy(http.url, 'alice', a1);
    await holdBusy(http.url, 'alice', a2);
    expect(await initialize(http.url, bearer('alice'))).toMatchObject({
      status: 503,
      code: 'MEMBER_SESSION_LIMIT',
    });
    const [b1, b2] = [await open(http.url, 'bob'), await open(http.url, 'bob')];
    // bob's third: his own session idle the longest yields, alice's busy ones stay
    const b3 = await open(http.url, 'bob');
    expect([await ping(http.url, 'bob', b1), await ping(http.url, 'bob', b2)]).toEqual([404, 200]);
    const c1 = await open(http.url, 'carol');
    expect(http.sessionCount()).toBe(5);
    for (const id of [a1, a2]) expect(await ping(http.url, 'alice', id)).toBe(200);
    for (const id of [b2, b3]) expect(await ping(http.url, 'bob', id)).toBe(200);
    expect(await ping(http.url, 'carol', c1)).toBe(200);
  });

  it('when every session is taken, closes the longest idle one of the member holding the most, or refuses', async () => {
    const { http } = await serveTeam({ maxSessions: 4, maxSessionsPerMember: 3 }, [
      'carol',
      'dave',
    ]);
    const a1 = await open(http.url, 'alice');
    const b1 = await open(http.url, 'bob');
    const b2 = await open(http.url, 'bob');
    const b3 = await open(http.url, 'bob');
    // bob holds the most: carol takes the place of his session idle the longest (pinged last)
    expect(await ping(http.url, 'bob', b1)).toBe(200);
    const c1 = await open(http.url, 'carol');
    expect(await ping(http.url, 'bob', b2)).toBe(404);
    for (const id of [b1, b3]) expect(await ping(http.url, 'bob', id)).toBe(200);
    // now alice, bob and carol hold 1, 2, 1: for dave, bob holds the most, and he is busy
    await holdBusy(http.url, 'bob', b1);
    await holdBusy(http.url, 'bob', b3);
    expect(await initialize(http.url, bearer('dave'))).toMatchObject({
      status: 503,
      code: 'SESSION_LIMIT',
    });
    // alice counts with her new session: 2, as many as bob, and her idle one yields
    const a2 = await open(http.url, 'alice');
    expect([await ping(http.url, 'alice', a1), await ping(http.url, 'alice', a2)]).toEqual([
      404, 200,
    ]);
    expect(await ping(http.url, 'carol', c1)).toBe(200);
    expect(http.sessionCount()).toBe(4);
  });

  it('needs a share per member from 1 to the global cap', async () => {
    const fixture = await openFixtureTeam({ dir });
    cleanups.push(() => fixture.close());
    const codeOf = async (options: LimitOptions) => {
      try {
        createMcpRoutes({ team: fixture.team, cursors: tokens, ...options }).close();
        return 'served';
      } catch (error) {
        return TeamError.isInstance(error) ? error.code : String(error);
      }
    };
    expect(await codeOf({ maxSessions: 4, maxSessionsPerMember: 5 })).toBe('INVALID_ARGUMENT');
    expect(await codeOf({ maxSessionsPerMember: 0 })).toBe('INVALID_ARGUMENT');
    expect(await codeOf({ maxSessionsPerMember: 1.5 })).toBe('INVALID_ARGUMENT');
    expect(await codeOf({ maxSessions: 4, maxSessionsPerMember: 4 })).toBe('served');
    // a global cap below the default share lowers the share with it
    expect(await codeOf({ maxSessions: 2 })).toBe('served');
  });
});
