import { readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createScriptedModel } from '@teamwire/core/testing';
import { describe, expect, it } from 'vitest';
import { serveUsage } from './readme-usage.snippet.js';

const readme = readFileSync(new URL('../README.md', import.meta.url), 'utf8');

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

  it('runs the usage example: the routes answer the snapshot', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'teamwire-dashboard-readme-'));
    const lines: string[] = [];
    const model = createScriptedModel({ scripts: { lead: [{ text: 'ok' }] } });
    const { team, store, hub, dashboard } = await serveUsage(model, dir, (l) => lines.push(l));
    try {
      expect(lines).toEqual(['snapshot: 200']);
      const page = await dashboard.fetch(new Request('http://127.0.0.1/api/snapshot'));
      expect(await page.json()).toMatchObject({ version: 1, teamId: 'team-1', readOnly: false });
    } finally {
      dashboard.close();
      await team.dispose();
      hub.close();
      await store.close();
      await rm(dir, { recursive: true, force: true });
    }
  });
});
