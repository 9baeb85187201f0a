import { readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { createScriptedModel } from '@teamwire/core/testing';
import { describe, expect, it } from 'vitest';
import { edgeUsage } from './readme-usage.snippet.js';

const readme = readFileSync(new URL('../README.md', import.meta.url), 'utf8');

describe('packages/edge/README.md', () => {
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

  it('runs the usage example: the printed URLs open the dashboard and MCP on one port', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'teamwire-edge-readme-'));
    const lines: string[] = [];
    const model = createScriptedModel({ scripts: { lead: [{ text: 'ok' }] } });
    const { team, store, hub, edge } = await edgeUsage(model, dir, (l) => lines.push(l));
    try {
      expect(lines).toHaveLength(2);
      const pageUrl = /^dashboard: (\S+)$/.exec(lines[0] as string)?.[1] as string;
      const [, mcpUrl, token] = /^MCP: (\S+) with Authorization: Bearer (\S+)$/.exec(
        lines[1] as string,
      ) as RegExpExecArray;
      const origin = new URL(pageUrl).origin;
      expect(new URL(mcpUrl as string).origin).toBe(origin);
      const pageToken = new URL(pageUrl).searchParams.get('token');
      const snapshot = await fetch(`${origin}/api/snapshot?token=${pageToken}`);
      expect(snapshot.status).toBe(200);
      expect(await snapshot.json()).toMatchObject({ version: 1, teamId: 'team-1' });
      const alice = new Client({ name: 'readme', version: '1.0.0' });
      await alice.connect(
        new StreamableHTTPClientTransport(new URL(mcpUrl as string), {
          requestInit: { headers: { authorization: `Bearer ${token}` } },
        }),
      );
      const inbox = await alice.callTool({ name: 'read_inbox', arguments: {} });
      expect(JSON.stringify(inbox.content)).toContain('Write the parser, then tell me.');
      await alice.close();
    } finally {
      await edge.close();
      await team.dispose();
      hub.close();
      await store.close();
      await rm(dir, { recursive: true, force: true });
    }
  });
});
