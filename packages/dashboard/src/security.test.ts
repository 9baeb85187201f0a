import { createEventHub } from '@teamwire/core';
import { createMemoryTeamLog } from '@teamwire/core/testing';
import { afterEach, describe, expect, it } from 'vitest';
import { type DashboardServer, serveDashboard } from './index.js';
import { at, fakePage, head, http } from './test-helpers.js';

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function serve(): Promise<DashboardServer> {
  const page = await fakePage();
  const log = createMemoryTeamLog({ teamId: 't1' });
  const hub = createEventHub({ teamId: 't1', log });
  cleanups.push(page.remove, () => hub.close());
  const server = await serveDashboard({ log, hub, assetsDir: page.dir });
  cleanups.push(() => server.close());
  return server;
}

/** A Content-Security-Policy header as its directives, each with its sources. */
function directives(header: unknown): Record<string, string[]> {
  expect(typeof header).toBe('string');
  return Object.fromEntries(
    (header as string)
      .split(';')
      .map((part) => part.trim().split(/\s+/))
      .filter((words) => words[0] !== '')
      .map(([name = '', ...sources]) => [name, sources]),
  );
}

describe('the dashboard server: access and headers', () => {
  it('takes the token as Authorization: Bearer in any case of the scheme, one token, nothing else', async () => {
    const server = await serve();
    const snapshot = at(server, '/api/snapshot');
    const events = at(server, '/api/events');
    for (const scheme of ['Bearer', 'bearer', 'BEARER', 'bEaReR']) {
      const authorization = `${scheme} ${server.token}`;
      expect((await http(snapshot, { headers: { authorization } })).status, scheme).toBe(200);
      expect((await head(events, { authorization })).status, scheme).toBe(200);
    }
    for (const authorization of [
      'Bearer',
      `Bearer ${server.token} ${server.token}`,
      `Bearer\t${server.token}`,
      `Bearer ${server.token}x`,
      `Basic ${server.token}`,
      `Token ${server.token}`,
    ]) {
      const label = JSON.stringify(authorization);
      expect((await http(snapshot, { headers: { authorization } })).status, label).toBe(401);
      expect((await head(events, { authorization })).status, label).toBe(401);
    }
    // a header that is present decides, for the snapshot as for the event stream
    const both = { authorization: 'Bearer not-the-token-at-all' };
    expect((await http(`${snapshot}?token=${server.token}`, { headers: both })).status).toBe(401);
    expect((await head(`${events}?token=${server.token}`, both)).status).toBe(401);
  });

  it('sends the page under a strict Content-Security-Policy, and nosniff and no-referrer with every answer', async () => {
    const server = await serve();
    const page = await http(server.url);
    expect(page.status).toBe(200);
    expect(directives(page.headers['content-security-policy'])).toMatchObject({
      'default-src': ["'none'"],
      'script-src': ["'self'"],
      'style-src': ["'self'"],
      'connect-src': ["'self'"],
      'object-src': ["'none'"],
      'base-uri': ["'none'"],
      'frame-ancestors': ["'none'"],
      'form-action': ["'none'"],
    });
    expect(page.headers).toMatchObject({
      'cache-control': 'no-store',
      'x-frame-options': 'DENY',
    });
    const answers = {
      page,
      snapshot: await http(at(server, `/api/snapshot?token=${server.token}`)),
      refused: await http(at(server, '/api/snapshot')),
      missing: await http(at(server, `/api/messages/1?token=${server.token}`)),
      asset: await http(at(server, '/assets/index-a1.js')),
      events: await head(at(server, `/api/events?token=${server.token}`)),
    };
    for (const [name, answer] of Object.entries(answers)) {
      expect(answer.headers, name).toMatchObject({
        'x-content-type-options': 'nosniff',
        'referrer-policy': 'no-referrer',
      });
    }
    // a JSON answer opened as a document loads nothing
    expect(directives(answers.snapshot.headers['content-security-policy'])).toMatchObject({
      'default-src': ["'none'"],
      'frame-ancestors': ["'none'"],
    });
  });
});
