import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { brotliDecompressSync, gunzipSync } from 'node:zlib';
import { createEventHub } from '@teamwire/core';
import { createMemoryTeamLog } from '@teamwire/core/testing';
import { afterEach, describe, expect, it } from 'vitest';

import { at, fakePage, http, serveRoutes, type TestServer } from './test-helpers.js';

/** The page as this package's build leaves it (the test task builds first). */
const BUILT = fileURLToPath(new URL('../dist/ui', import.meta.url));

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function serve(assetsDir: string): Promise<TestServer> {
  const log = createMemoryTeamLog({ teamId: 't1' });
  const hub = createEventHub({ teamId: 't1', log });
  cleanups.push(() => hub.close());
  const server = await serveRoutes({ log, hub, assetsDir });
  cleanups.push(() => server.close());
  return server;
}

const decode = (raw: Buffer, encoding: unknown) =>
  encoding === 'br' ? brotliDecompressSync(raw) : encoding === 'gzip' ? gunzipSync(raw) : raw;

describe("the page's assets", () => {
  it('are kept by browsers for a year when built with a hash, and sent compressed as the build made them', async () => {
    const server = await serve(BUILT);
    const html = await readFile(join(BUILT, 'index.html'), 'utf8');
    const names = [...html.matchAll(/(?:src|href)="\.\/assets\/([^"?]+)"/g)].map((m) => m[1]);
    expect(names).toHaveLength(2); // the script and the stylesheet
    for (const name of names as string[]) {
      const file = await readFile(join(BUILT, 'assets', name));
      const accepts: [string | undefined, string | undefined][] = [
        ['gzip, deflate, br, zstd', 'br'],
        ['gzip', 'gzip'],
        ['br;q=0, gzip;q=0.5', 'gzip'],
        ['*', 'br'],
        ['identity', undefined],
        [undefined, undefined],
      ];
      for (const [accept, encoding] of accepts) {
        const reply = await http(at(server, `/assets/${name}`), {
          headers: accept === undefined ? {} : { 'accept-encoding': accept },
        });
        const label = `${name} for ${accept}`;
        expect(reply.status, label).toBe(200);
        expect(reply.headers, label).toMatchObject({
          'cache-control': 'public, max-age=31536000, immutable',
          vary: 'accept-encoding',
          'content-length': String(reply.raw.length),
        });
        expect(reply.headers['content-encoding'], label).toBe(encoding);
        expect(decode(reply.raw, encoding).equals(file), label).toBe(true);
      }
      // compressed once, by the build: what is sent is the build's own file
      const br = await http(at(server, `/assets/${name}`), {
        headers: { 'accept-encoding': 'br' },
      });
      expect(br.raw.equals(await readFile(join(BUILT, 'assets', `${name}.br`)))).toBe(true);
    }
    // the script is most of what a page load moves: brotli sends well under a third of it
    const script = names.find((name) => name?.endsWith('.js')) as string;
    const plain = (await readFile(join(BUILT, 'assets', script))).length;
    const sent = await http(at(server, `/assets/${script}`), {
      headers: { 'accept-encoding': 'br' },
    });
    expect(sent.raw.length).toBeLessThan(plain / 3);
    // the page itself is never kept
    expect((await http(server.url)).headers['cache-control']).toBe('no-store');
  });

  it('carry only the pure parts of core the page uses: no schemas, no Node modules', async () => {
    const html = await readFile(join(BUILT, 'index.html'), 'utf8');
    const script = /src="\.\/assets\/([^"?]+\.js)"/.exec(html)?.[1] as string;
    const text = await readFile(join(BUILT, 'assets', script), 'utf8');
    // core's rules are in (the backoff refuses a bad policy with this message)...
    expect(text).toContain('backoff jitter must be');
    // ...but neither its record schemas (zod) nor a stand-in for a Node built-in
    expect(text).not.toContain('$ZodType');
    expect(text).not.toContain('browser-external');
  });

  it('are sent as they are and never kept when the build did not list them', async () => {
    const page = await fakePage();
    cleanups.push(page.remove);
    const server = await serve(page.dir);
    const reply = await http(at(server, '/assets/index-a1.js'), {
      headers: { 'accept-encoding': 'gzip, br' },
    });
    expect(reply).toMatchObject({ status: 200, body: 'console.log(1)' });
    expect(reply.headers).toMatchObject({ 'cache-control': 'no-store', vary: 'accept-encoding' });
    expect(reply.headers['content-encoding']).toBeUndefined();
  });
});
