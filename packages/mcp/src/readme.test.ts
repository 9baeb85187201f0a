import { readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createScriptedModel } from '@teamwire/core/testing';
import { describe, expect, it } from 'vitest';
import { serveRoutes } from '../test/serve-http.mjs';
import { serveUsage } from './readme-usage.snippet.js';
import { call, connectHttp } from './test-clients.js';
import { externalMemberTools } from './tools.js';

const readme = readFileSync(new URL('../README.md', import.meta.url), 'utf8');

describe('packages/mcp/README.md', () => {
  it('shows the usage example verbatim', () => {
    const snippet = readFileSync(new URL('./readme-usage.snippet.ts', import.meta.url), 'utf8');
    const body = /\/\/ README:start\n([\s\S]*?)\n\s*\/\/ README:end/.exec(snippet)?.[1] as string;
    const expected = body
      .split('\n')
      .map((line) => line.replace(/^ {2}/, ''))
      .join('\n');
    const usage = readme.slice(readme.indexOf('## Usage'));
    const block = /```ts\n([\s\S]*?)\n```/.exec(usage)?.[1];
    expect(block).toBe(expected);
  });

  it('lists exactly the tools a member and a lead get', () => {
    const rows = [...readme.matchAll(/^\| `([a-z_]+)` \| (every member|lead) \|/gm)].map((m) => [
      m[1],
      m[2],
    ]);
    const member = externalMemberTools({ isLead: false }).map((t) => t.name);
    const lead = externalMemberTools({ isLead: true, agentTypes: ['x'] }).map((t) => t.name);
    expect(rows.filter(([, who]) => who === 'every member').map(([name]) => name)).toEqual(member);
    expect(rows.map(([name]) => name)).toEqual(lead);
  });

  it('runs the usage example: a client connects with the printed token', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'teamwire-mcp-readme-'));
    const lines: string[] = [];
    const model = createScriptedModel({ scripts: { lead: [{ text: 'Noted.' }] } });
    const { team, store, mcp, tokens } = await serveUsage(model, dir, (line) => lines.push(line));
    const http = await serveRoutes({ routes: mcp, tokens });
    try {
      const token = /^alice connects with: Authorization: Bearer (\S+)$/.exec(
        lines[0] as string,
      )?.[1];
      expect(lines).toHaveLength(1);
      const alice = await connectHttp(http.url, token);
      const page = await call(alice, 'read_inbox');
      expect(page.messages.map((m: { from: string; text: string }) => [m.from, m.text])).toEqual([
        ['lead', expect.stringContaining('Write the parser, then tell me.')],
      ]);
      await alice.close();
    } finally {
      await http.close();
      await team.dispose();
      await store.close();
      await rm(dir, { recursive: true, force: true });
    }
  });
});
