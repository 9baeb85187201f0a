import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { type ServedRoutes, serveRoutes } from '../test/serve-http.mjs';
import { type FixtureTeam, openFixtureTeam, SECRET, TEAM_ID } from '../test/team-fixture.mjs';
import { createMcpRoutes, createTokenIssuer } from './index.js';
import { call, codeOf, connectHttp, deliveredCount, logRecords } from './test-clients.js';

let dir: string;
const cleanups: (() => Promise<void>)[] = [];

beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'teamwire-mcp-cursors-'));
});
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup().catch(() => {});
  await rm(dir, { recursive: true, force: true });
});

/** The fixture team in `dir`, served over HTTP with a token issuer of its own (same secret). */
async function serveTeam(): Promise<{ fixture: FixtureTeam; http: ServedRoutes }> {
  const fixture = await openFixtureTeam({ dir });
  const tokens = createTokenIssuer({ secret: SECRET, teamId: TEAM_ID });
  const http = await serveRoutes({
    routes: createMcpRoutes({
      team: fixture.team,
      cursors: tokens,
      agentTypes: fixture.agentTypes,
    }),
    tokens,
  });
  cleanups.push(
    () => fixture.close(),
    () => http.close(),
  );
  return { fixture, http };
}

/** A cursor in core's own (unauthenticated) format, as anyone can write one. */
function coreCursor(memberId: string, ids: string[]): string {
  return Buffer.from(JSON.stringify({ v: 1, m: memberId, ids })).toString('base64url');
}

describe('inbox cursors over MCP', () => {
  it('refuse any cursor the server did not issue to the member, whatever mail it names, before and after a restart', async () => {
    const tokens = createTokenIssuer({ secret: SECRET, teamId: TEAM_ID });
    const first = await serveTeam();
    await first.fixture.team.promptLead('Plan the work.');
    const aliceId = first.fixture.team.externalMember('alice').memberId;
    const bobId = first.fixture.team.externalMember('bob').memberId;
    const alice = await connectHttp(first.http.url, tokens.tokenFor('alice'));
    const bob = await connectHttp(first.http.url, tokens.tokenFor('bob'));
    cleanups.push(
      () => alice.close(),
      () => bob.close(),
    );
    const page = await call(alice, 'read_inbox');
    const aliceMail = page.messages[0].id as string;
    expect(await call(alice, 'ack_inbox', { cursor: page.cursor })).toEqual({
      acknowledged: 1,
      retired: false,
    });
    const bobPage = await call(bob, 'read_inbox');
    expect(bobPage.messages).toHaveLength(1);
    const coreOfBob = (bobPage.cursor as string).slice(0, (bobPage.cursor as string).indexOf('.'));

    const refusals = async () => {
      const log = await readFile(join(dir, 'log.jsonl'), 'utf8');
      const refused = [
        // bob names alice's delivered mail in a cursor of core's format, made out to himself
        coreCursor(bobId, [aliceMail]),
        // ... or a message that never was
        coreCursor(bobId, ['msg-never-queued']),
        // alice's own cursor, in bob's hands
        page.cursor,
        // alice's cursor stripped of its seal, and one made out to her
        page.cursor.slice(0, page.cursor.indexOf('.')),
        coreCursor(aliceId, [aliceMail]),
        // bob's own page, unsealed, or with the seal of another page
        coreOfBob,
        `${coreCursor(bobId, [aliceMail])}.${(page.cursor as string).split('.')[1]}`,
      ];
      for (const cursor of refused) {
        expect(await codeOf(call(bob, 'ack_inbox', { cursor }))).toBe('INVALID_CURSOR');
        expect(await codeOf(call(bob, 'read_inbox', { after: cursor }))).toBe('INVALID_CURSOR');
      }
      expect(await readFile(join(dir, 'log.jsonl'), 'utf8')).toBe(log);
    };
    await refusals();
    // alice acknowledging her delivered mail again is nothing to do
    expect(await call(alice, 'ack_inbox', { cursor: page.cursor })).toEqual({
      acknowledged: 0,
      retired: false,
    });

    await alice.close();
    await bob.close();
    await first.http.close();
    await first.fixture.close();
    cleanups.splice(0);
    const second = await serveTeam();
    const aliceAgain = await connectHttp(second.http.url, tokens.tokenFor('alice'));
    const bobAgain = await connectHttp(second.http.url, tokens.tokenFor('bob'));
    cleanups.push(
      () => aliceAgain.close(),
      () => bobAgain.close(),
    );
    // the seal survives the restart: alice's old cursor still means nothing to do
    expect(await call(aliceAgain, 'ack_inbox', { cursor: page.cursor })).toEqual({
      acknowledged: 0,
      retired: false,
    });
    const log = await readFile(join(dir, 'log.jsonl'), 'utf8');
    for (const cursor of [coreCursor(bobId, [aliceMail]), page.cursor]) {
      expect(await codeOf(call(bobAgain, 'ack_inbox', { cursor }))).toBe('INVALID_CURSOR');
    }
    // bob's own cursor from before the restart still acknowledges his mail, once
    expect(await call(bobAgain, 'read_inbox', { after: bobPage.cursor })).toEqual({
      messages: [],
      remaining: 0,
    });
    expect(await call(bobAgain, 'ack_inbox', { cursor: bobPage.cursor })).toEqual({
      acknowledged: 0,
      retired: false,
    });
    const records = await logRecords(dir);
    expect(records.length).toBe(log.split('\n').filter((line) => line !== '').length + 1);
    expect(deliveredCount(records, aliceMail)).toBe(1);
    expect(deliveredCount(records, bobPage.messages[0].id)).toBe(1);
  });
});
