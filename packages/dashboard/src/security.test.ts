import { createEventHub } from '@teamwire/core';
import { createMemoryTeamLog } from '@teamwire/core/testing';
import { afterEach, describe, expect, it } from 'vitest';

import { at, fakePage, head, http, serveRoutes, type TestServer } from './test-helpers.js';

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function serve(): Promise<TestServer> {
  const page = await fakePage();
  const log = createMemoryTeamLog({ teamId: 't1' });
  const hub = createEventHub({ teamId: 't1', log });
  cleanups.push(page.remove, () => hub.close());
  const server = await serveRoutes({ log, hub, assetsDir: page.dir });
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

describe('the dashboard routes: headers', () => {
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
