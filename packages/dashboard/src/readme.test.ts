import { readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createScriptedModel } from '@teamwire/core/testing';
import { describe, expect, it } from 'vitest';
import { serveUsage } from './readme-usage.snippet.js';

const readme = readFileSync(new URL('../README.md', import.meta.url), 'utf8');

function get(url: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    request(url, (res) => {
      let body = '';
      res.on('data', (chunk) => {
        body += chunk;
      });
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    })
      .on('error', reject)
      .end();
  });
}

describe('packages/dashboard/README.md', () => {
  it('shows the usage example verbatim', () => {
    const snippet = readFileSync(new URL('./readme-usage.snippet.ts', import.meta.url), 'utf8');
    const body = /\/\/ README:start\n([\s\S]*?)\n\s*\/\/ README:end/.exec(snippet)?.[1] as string;
    const expected = body
      .split('\n')
      .map((line) => line.replace(/^ {2}/, ''))
      .join('\n');
    const usage = readme.slice(readme.indexOf('## Usage'));
    expect(/```ts\n([\s\S]*?)\n```/.exec(usage)?.[1]).toBe(expected);
  });

  it('runs the usage example: the printed URL opens the snapshot', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'teamwire-dashboard-readme-'));
    const lines: string[] = [];
    const model = createScriptedModel({ scripts: { lead: [{ text: 'ok' }] } });
    const { team, store, hub, dashboard } = await serveUsage(model, dir, (l) => lines.push(l));
    try {
      expect(lines).toEqual([`open ${dashboard.url}`]);
      const token = new URL(dashboard.url).searchParams.get('token');
      const snapshot = await get(new URL(`/api/snapshot?token=${token}`, dashboard.url).toString());
      expect(snapshot.status).toBe(200);
      expect(JSON.parse(snapshot.body)).toMatchObject({ version: 1, teamId: 'team-1' });
    } finally {
      await dashboard.close();
      await team.dispose();
      hub.close();
      await store.close();
      await rm(dir, { recursive: true, force: true });
    }
  });
});
