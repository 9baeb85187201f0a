import { readFileSync } from 'node:fs';
import { createServer, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { runExample } from './run-example.js';

// Streams recorded from the real APIs, kept with @teamwire/host-adapters' tests (see the README
// of that folder): one SSE `data:` payload per line.
const recorded = (path: string): string[] =>
  readFileSync(
    fileURLToPath(
      new URL(
        `../../packages/host-adapters/src/__fixtures__/provider-streams/${path}`,
        import.meta.url,
      ),
    ),
    'utf8',
  )
    .split('\n')
    .filter((line) => line !== '');
const anthropicSse = recorded('anthropic-messages/anthropic-text.chunks.txt')
  .map((line) => `event: ${JSON.parse(line).type}\ndata: ${line}\n\n`)
  .join('');
const openaiSse = `${recorded('openai-chat/mistral-text.chunks.txt')
  .map((line) => `data: ${line}\n\n`)
  .join('')}data: [DONE]\n\n`;

interface Seen {
  path: string;
  headers: IncomingHttpHeaders;
  // biome-ignore lint/suspicious/noExplicitAny: the request body, checked field by field
  body: any;
}
const seen: Seen[] = [];
const server = createServer((req, res) => {
  let body = '';
  req.setEncoding('utf8').on('data', (chunk: string) => {
    body += chunk;
  });
  req.on('end', () => {
    seen.push({ path: req.url ?? '', headers: req.headers, body: JSON.parse(body) });
    const stream = req.url === '/v1/messages' ? anthropicSse : openaiSse;
    res.writeHead(200, { 'content-type': 'text/event-stream' }).end(stream);
  });
});
let base = '';
beforeAll(async () => {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`;
});
afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));
beforeEach(() => {
  seen.length = 0;
});
// Nothing of the machine's own provider setup reaches the example.
const clean = {
  TEAMWIRE_MODEL: undefined,
  ANTHROPIC_API_KEY: undefined,
  ANTHROPIC_BASE_URL: undefined,
  OPENAI_API_KEY: undefined,
  OPENAI_BASE_URL: undefined,
};

describe('real-provider.ts, replaying recorded provider streams from a loopback server', () => {
  it('takes Anthropic when ANTHROPIC_API_KEY is set', async () => {
    const run = await runExample('real-provider.ts', [], {
      ...clean,
      ANTHROPIC_API_KEY: 'test-anthropic-key',
      ANTHROPIC_BASE_URL: base,
    });
    expect(run.stderr).toBe('');
    expect(run.code).toBe(0);
    expect(run.stdout.split('\n')).toEqual([
      'model: anthropic:claude-sonnet-4-5',
      "lead: Hello! I'm doing well, thank you for asking. How are you doing today? Is there anything I can help you with?",
      'lead answered (end_turn, 1 steps)',
      '',
    ]);
    expect(seen).toHaveLength(1);
    expect(seen[0]?.path).toBe('/v1/messages');
    expect(seen[0]?.headers['x-api-key']).toBe('test-anthropic-key');
    expect(seen[0]?.body).toMatchObject({ model: 'claude-sonnet-4-5', stream: true });
    const tools = seen[0]?.body.tools.map((tool: { name: string }) => tool.name);
    expect(tools).toEqual(
      expect.arrayContaining(['spawn_teammate', 'send_message', 'wait_for_team']),
    );
  });

  it('takes an OpenAI-compatible server from TEAMWIRE_MODEL and OPENAI_BASE_URL', async () => {
    const run = await runExample('real-provider.ts', [], {
      ...clean,
      TEAMWIRE_MODEL: 'openai:gpt-4.1-mini',
      OPENAI_API_KEY: 'test-openai-key',
      OPENAI_BASE_URL: base,
    });
    expect(run.stderr).toBe('');
    expect(run.code).toBe(0);
    expect(run.stdout.split('\n')).toEqual([
      'model: openai:gpt-4.1-mini',
      'lead: Hello, world! This is a test response.',
      'lead answered (end_turn, 1 steps)',
      '',
    ]);
    expect(seen).toHaveLength(1);
    expect(seen[0]?.path).toBe('/v1/chat/completions');
    expect(seen[0]?.headers.authorization).toBe('Bearer test-openai-key');
    expect(seen[0]?.body).toMatchObject({ model: 'gpt-4.1-mini', stream: true });
  });

  it('refuses to start without a key, naming the variable', async () => {
    const run = await runExample('real-provider.ts', [], clean);
    expect(run.code).not.toBe(0);
    expect(run.stderr).toContain('OPENAI_API_KEY');
    expect(seen).toHaveLength(0);
  });
});
