import { once } from 'node:events';
import { request } from 'node:http';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { TeamError } from '@teamwire/core';
import { afterEach, describe, expect, it } from 'vitest';
import { type StartTeamEdgeOptions, startTeamEdge, type TeamEdge } from './index.js';
import { openTestTeam, TEAM_ID, type TestTeam } from './test-team.js';

/*
 * The edge over real sockets: one port for the dashboard, its event stream and MCP, behind one
 * token rule, one Host/Origin policy and one body limit.
 */

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function start(
  options: Partial<StartTeamEdgeOptions> = {},
): Promise<{ edge: TeamEdge; fixture: TestTeam }> {
  const fixture = await openTestTeam();
  cleanups.push(() => fixture.close());
  const edge = await startTeamEdge({
    team: fixture.team,
    log: fixture.log,
    hub: fixture.hub,
    dashboard: { assetsDir: fixture.assetsDir, heartbeatMs: 0 },
    mcp: { tokens: fixture.tokens },
    ...options,
  });
  cleanups.push(() => edge.close());
  return { edge, fixture };
}

interface Reply {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
}

/** One request over `node:http`, which lets a test set `Host` and every other header. */
function http(
  url: string,
  options: { method?: string; headers?: Record<string, string>; body?: string } = {},
): Promise<Reply> {
  return new Promise((resolve, reject) => {
    const req = request(
      url,
      { method: options.method ?? 'GET', headers: options.headers },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('end', () =>
          resolve({
            status: res.statusCode ?? 0,
            headers: res.headers,
            body: Buffer.concat(chunks).toString('utf8'),
          }),
        );
      },
    );
    req.on('error', reject);
    req.end(options.body);
  });
}

const codeOf = (reply: Reply) =>
  (
    JSON.parse(reply.body) as {
      error: { code?: string; message?: string; data?: { code: string } };
    }
  ).error;

async function connectMcp(url: string, token: string): Promise<Client> {
  const client = new Client({ name: 'edge-test', version: '1.0.0' });
  await client.connect(
    new StreamableHTTPClientTransport(new URL(url), {
      requestInit: { headers: { authorization: `Bearer ${token}` } },
    }),
  );
  cleanups.push(() => client.close());
  return client;
}

describe('startTeamEdge', () => {
  it('binds 127.0.0.1, prints the page URL with its token, and refuses a token it was not given', async () => {
    const { edge } = await start();
    expect(edge.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/\?token=[\w-]{32}$/);
    expect(edge.mcpUrl).toBe(`http://127.0.0.1:${edge.port}/mcp`);
    const fixture = await openTestTeam();
    cleanups.push(() => fixture.close());
    const code = async (token: string) => {
      try {
        await startTeamEdge({ log: fixture.log, hub: fixture.hub, token });
        return 'started';
      } catch (error) {
        return TeamError.isInstance(error) ? error.code : String(error);
      }
    };
    expect(await code('short')).toBe('INVALID_ARGUMENT');
    expect(await code('sixteen chars but spaces')).toBe('INVALID_ARGUMENT');
  });

  it('takes the dashboard token as a Bearer header, the x-teamwire-token header, or ?token= on a GET', async () => {
    const { edge, fixture } = await start();
    const snapshot = `${edge.origin}/api/snapshot`;
    expect((await http(snapshot)).status).toBe(401);
    const missing = await http(snapshot);
    expect(missing.headers['www-authenticate']).toBe('Bearer realm="teamwire"');
    expect(codeOf(missing).code).toBe('UNAUTHORIZED');
    for (const scheme of ['Bearer', 'bearer', 'BEARER']) {
      const ok = await http(snapshot, { headers: { authorization: `${scheme} ${edge.token}` } });
      expect(ok.status, scheme).toBe(200);
    }
    expect((await http(snapshot, { headers: { 'x-teamwire-token': edge.token } })).status).toBe(
      200,
    );
    expect((await http(`${snapshot}?token=${edge.token}`)).status).toBe(200);
    expect((await http(`${edge.origin}/?token=${edge.token}`)).body).toContain('the page');
    for (const authorization of [
      edge.token,
      `Bearer ${edge.token} ${edge.token}`,
      `Bearer ${edge.token}x`,
      `Basic ${edge.token}`,
    ]) {
      expect((await http(snapshot, { headers: { authorization } })).status, authorization).toBe(
        401,
      );
    }
    // a header that is present decides: a right query token does not rescue a wrong header
    const both = await http(`${snapshot}?token=${edge.token}`, {
      headers: { authorization: 'Bearer not-the-token-at-all' },
    });
    expect(both.status).toBe(401);
    // a member's MCP token opens nothing of the dashboard
    const member = await http(snapshot, {
      headers: { authorization: `Bearer ${fixture.tokens.tokenFor('alice')}` },
    });
    expect(member.status).toBe(401);
  });

  it('refuses every request without the token but an asset, with the headers of every answer', async () => {
    const { edge } = await start();
    for (const path of ['/', '/index.html', '/api/snapshot', '/api/events', '/api/messages/1']) {
      for (const query of ['', '?token=wrong-token-of-some-length']) {
        const refused = await http(`${edge.origin}${path}${query}`);
        expect(refused.status, path + query).toBe(401);
        expect(refused.headers).toMatchObject({
          'x-content-type-options': 'nosniff',
          'referrer-policy': 'no-referrer',
          'cache-control': 'no-store',
        });
        expect(refused.headers['access-control-allow-origin']).toBeUndefined();
      }
    }
    const asset = await http(`${edge.origin}/assets/index-a1.js`);
    expect(asset).toMatchObject({ status: 200, body: 'console.log(1)' });
  });

  it('serves MCP alone, without a dashboard, and needs a log and hub for the dashboard', async () => {
    const fixture = await openTestTeam();
    cleanups.push(() => fixture.close());
    const edge = await startTeamEdge({
      team: fixture.team,
      dashboard: false,
      mcp: { tokens: fixture.tokens },
    });
    cleanups.push(() => edge.close());
    const alice = await connectMcp(edge.mcpUrl, fixture.tokens.tokenFor('alice'));
    expect((await alice.listTools()).tools.length).toBeGreaterThan(0);
    const page = await http(`${edge.origin}/api/snapshot`, {
      headers: { authorization: `Bearer ${edge.token}` },
    });
    expect(page.status).toBe(404);
    await expect(startTeamEdge({ team: fixture.team })).rejects.toMatchObject({
      code: 'INVALID_ARGUMENT',
    });
    await expect(
      startTeamEdge({ log: fixture.log, hub: fixture.hub, mcp: { tokens: fixture.tokens } }),
    ).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
  });

  it('takes an action only with the token in a header, never from the URL', async () => {
    const { edge } = await start();
    const body = JSON.stringify({ to: 'lead', text: 'hello from the page' });
    const viaQuery = await http(`${edge.origin}/api/actions/message?token=${edge.token}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body,
    });
    expect(viaQuery.status).toBe(401);
    const viaHeader = await http(`${edge.origin}/api/actions/message`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-teamwire-token': edge.token },
      body,
    });
    expect(viaHeader.status).toBe(200);
    expect(JSON.parse(viaHeader.body)).toEqual({
      messageId: expect.any(String),
      status: 'accepted',
    });
  });

  it('serves MCP only to members holding their own token', async () => {
    const { edge, fixture } = await start();
    const init = (authorization: string) =>
      http(edge.mcpUrl, {
        method: 'POST',
        headers: {
          authorization,
          'content-type': 'application/json',
          accept: 'application/json, text/event-stream',
        },
        body: JSON.stringify({
          jsonrpc: '2.0',
          id: 1,
          method: 'initialize',
          params: {
            protocolVersion: '2025-06-18',
            capabilities: {},
            clientInfo: { name: 'raw', version: '1.0.0' },
          },
        }),
      });
    const withEdgeToken = await init(`Bearer ${edge.token}`);
    expect(withEdgeToken.status).toBe(401);
    expect(codeOf(withEdgeToken).data?.code).toBe('UNAUTHORIZED');
    const forged = `${fixture.tokens.tokenFor('alice').slice(0, -2)}AA`;
    expect((await init(`Bearer ${forged}`)).status).toBe(401);
    const token = fixture.tokens.tokenFor('alice');
    for (const scheme of ['Bearer', 'bearer', 'BEARER', 'bEaReR']) {
      const alice = await init(`${scheme} ${token}`);
      expect(alice.status, scheme).toBe(200);
      expect(alice.headers['mcp-session-id']).toEqual(expect.any(String));
    }
    for (const authorization of [
      token,
      'Bearer',
      `Bearer ${token} ${token}`,
      `Bearer ${token},x`,
      `Bearer\t${token}`,
      `Bearer${token}`,
      `Bearer "${token}"`,
      `Basic ${token}`,
      `Bearer ${token}=`,
      `Bearer ${token}!!`,
    ]) {
      const refused = await init(authorization);
      expect(refused.status, authorization).toBe(401);
      expect(codeOf(refused).data?.code).toBe('UNAUTHORIZED');
    }
    expect(edge.sessionCount()).toBe(4);
  });

  it('refuses a Host it does not serve and an Origin that is not itself, with a clear body', async () => {
    const { edge } = await start();
    const snapshot = `${edge.origin}/api/snapshot`;
    const auth = { authorization: `Bearer ${edge.token}` };
    const rebound = await http(snapshot, {
      headers: { ...auth, host: `evil.example:${edge.port}` },
    });
    expect(rebound.status).toBe(403);
    expect(codeOf(rebound)).toEqual({
      code: 'FORBIDDEN',
      message: expect.stringContaining('host "evil.example'),
    });
    const mcpRebound = await http(edge.mcpUrl, { headers: { host: 'evil.example' } });
    expect(mcpRebound.status).toBe(403);
    expect(codeOf(mcpRebound).data?.code).toBe('FORBIDDEN');
    const mcpForeign = await http(edge.mcpUrl, {
      method: 'POST',
      headers: { authorization: `Bearer ${edge.token}`, origin: 'https://evil.example' },
      body: '{}',
    });
    expect(mcpForeign.status).toBe(403);
    const crossSite = await http(snapshot, { headers: { ...auth, origin: 'http://evil.example' } });
    expect(crossSite.status).toBe(403);
    expect(codeOf(crossSite).message).toContain('origin "http://evil.example"');
    // another port of the same name is another origin
    const otherPort = await http(snapshot, {
      headers: { ...auth, origin: `http://127.0.0.1:${edge.port + 1}` },
    });
    expect(otherPort.status).toBe(403);
    const sameOrigin = await http(snapshot, { headers: { ...auth, origin: edge.origin } });
    expect(sameOrigin.status).toBe(200);
    const localhost = await http(snapshot, {
      headers: { ...auth, host: `localhost:${edge.port}` },
    });
    expect(localhost.status).toBe(200);
    // even the assets, which need no token, are not served to another host
    expect((await http(`${edge.origin}/assets/index-a1.js`)).status).toBe(200);
    expect(
      (await http(`${edge.origin}/assets/index-a1.js`, { headers: { host: 'evil.example' } }))
        .status,
    ).toBe(403);
  });

  it('serves the names of an allow-list, and only those', async () => {
    const { edge } = await start({ allowedHosts: ['team.example'] });
    const auth = { authorization: `Bearer ${edge.token}` };
    const snapshot = `${edge.origin}/api/snapshot`;
    expect((await http(snapshot, { headers: { ...auth, host: 'team.example:8443' } })).status).toBe(
      200,
    );
    expect((await http(snapshot, { headers: auth })).status).toBe(403);
  });

  it('refuses a body over the limit with 413 before reading it all', async () => {
    const { edge, fixture } = await start({ maxBodyBytes: 1024 });
    // a declared length over the limit: answered after the headers, with only 10 bytes sent
    const declared = await new Promise<Reply>((resolve, reject) => {
      const req = request(`${edge.origin}/api/actions/message`, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          'content-length': String(10 * 1024 * 1024),
          'x-teamwire-token': edge.token,
        },
      });
      req.on('response', (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => {
          resolve({
            status: res.statusCode ?? 0,
            headers: res.headers,
            body: Buffer.concat(chunks).toString('utf8'),
          });
          req.destroy();
        });
      });
      req.on('error', (error) => {
        if (!req.destroyed) reject(error);
      });
      req.write('{"to":"le');
    });
    expect(declared.status).toBe(413);
    expect(codeOf(declared).code).toBe('MESSAGE_TOO_LARGE');
    expect(declared.headers.connection).toBe('close');
    // a chunked body is cut as soon as it passes the limit, for MCP as for the dashboard
    const chunked = await new Promise<Reply>((resolve, reject) => {
      const req = request(edge.mcpUrl, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          accept: 'application/json, text/event-stream',
          authorization: `Bearer ${fixture.tokens.tokenFor('alice')}`,
          'transfer-encoding': 'chunked',
        },
      });
      req.on('response', (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => {
          resolve({
            status: res.statusCode ?? 0,
            headers: res.headers,
            body: Buffer.concat(chunks).toString('utf8'),
          });
          req.destroy();
        });
      });
      req.on('error', (error) => {
        if (!req.destroyed) reject(error);
      });
      req.write('x'.repeat(2048)); // over the limit, and the request never ends
    });
    expect(chunked.status).toBe(413);
    expect(codeOf(chunked).data?.code).toBe('MESSAGE_TOO_LARGE');
    expect(fixture.team.listMembers(fixture.team.lead).map((m) => m.name)).not.toContain(
      'operator',
    );
  });

  it('serves the snapshot, the event stream and an MCP round trip on one port', async () => {
    const { edge, fixture } = await start();
    const snapshot = JSON.parse(
      (
        await http(`${edge.origin}/api/snapshot`, {
          headers: { authorization: `Bearer ${edge.token}` },
        })
      ).body,
    ) as {
      teamId: string;
      records: { type: string; member?: { name: string } }[];
      readOnly: boolean;
    };
    expect(snapshot.teamId).toBe(TEAM_ID);
    expect(snapshot.readOnly).toBe(false);
    expect(
      snapshot.records.filter((r) => r.type === 'member').map((r) => r.member?.name),
    ).toContain('alice');

    // the page's event stream, with the token in its URL as EventSource sends it
    const stop = new AbortController();
    cleanups.push(() => stop.abort());
    const events = await fetch(`${edge.origin}/api/events?token=${edge.token}`, {
      signal: stop.signal,
    });
    expect(events.status).toBe(200);
    expect(events.headers.get('content-type')).toBe('text/event-stream; charset=utf-8');
    const reader = (events.body as ReadableStream<Uint8Array>).getReader();
    const decoder = new TextDecoder();
    let seen = '';
    const readUntil = async (pattern: RegExp) => {
      while (!pattern.test(seen)) {
        const next = await reader.read();
        if (next.done) throw new Error(`the stream ended before ${pattern}: ${seen}`);
        seen += decoder.decode(next.value, { stream: true });
      }
    };
    await readUntil(/: connected\n\n/);

    // alice over MCP, through the same port
    const alice = await connectMcp(edge.mcpUrl, fixture.tokens.tokenFor('alice'));
    const tools = (await alice.listTools()).tools.map((t) => t.name);
    expect(tools).toEqual(expect.arrayContaining(['read_inbox', 'ack_inbox', 'send_message']));
    const inbox = await alice.callTool({ name: 'read_inbox', arguments: {} });
    expect(JSON.stringify(inbox.content)).toContain('Hi alice.');
    const sent = await alice.callTool({
      name: 'send_message',
      arguments: { to: 'lead', message: 'ready to go' },
    });
    expect(sent.isError).not.toBe(true);
    expect(edge.sessionCount()).toBe(1);

    // what alice did reaches the page's stream
    await readUntil(/ready to go/);
    expect(seen).toMatch(/id: [\w-]+:\d+\ndata: /);
  });

  it('closes open event streams and MCP sessions when it closes', async () => {
    const { edge, fixture } = await start();
    const events = await fetch(`${edge.origin}/api/events?token=${edge.token}`);
    const reader = (events.body as ReadableStream<Uint8Array>).getReader();
    await reader.read(); // connected
    await connectMcp(edge.mcpUrl, fixture.tokens.tokenFor('alice'));
    expect(edge.sessionCount()).toBe(1);
    const ended = (async () => {
      for (;;) {
        try {
          if ((await reader.read()).done) return 'ended';
        } catch {
          return 'ended';
        }
      }
    })();
    await edge.close();
    expect(await ended).toBe('ended');
    expect(edge.sessionCount()).toBe(0);
    const refused = request(edge.origin);
    refused.end();
    const [error] = (await once(refused, 'error')) as [NodeJS.ErrnoException];
    expect(error.code).toBe('ECONNREFUSED');
  });
});

describe('mounts', () => {
  const mounts: StartTeamEdgeOptions['mounts'] = [
    { path: '/card.json', access: 'public', fetch: () => new Response('{"card":true}') },
    {
      path: '/rpc',
      jsonRpc: true,
      fetch: async (r) => new Response(`got ${(await r.text()).length} bytes`),
    },
  ];

  it('serves a public mount without a token and a token mount only with the edge token', async () => {
    const { edge } = await start({ mounts, maxBodyBytes: 1024 });
    expect(await (await fetch(`${edge.origin}/card.json`)).json()).toEqual({ card: true });
    const refused = await fetch(`${edge.origin}/rpc`, { method: 'POST', body: 'x' });
    expect(refused.status).toBe(401);
    const error = (await refused.json()) as { jsonrpc: string; error: { data: { code: string } } };
    expect(error.jsonrpc).toBe('2.0');
    expect(error.error.data.code).toBe('UNAUTHORIZED');
    const ok = await fetch(`${edge.origin}/rpc`, {
      method: 'POST',
      headers: { authorization: `Bearer ${edge.token}` },
      body: 'hello',
    });
    expect(await ok.text()).toBe('got 5 bytes');
    // the one body limit and the Host policy hold on mounts too
    const large = await http(`${edge.origin}/rpc`, {
      method: 'POST',
      headers: { authorization: `Bearer ${edge.token}`, 'content-length': '2048' },
      body: 'y'.repeat(2048),
    });
    expect(large.status).toBe(413);
    const foreign = await http(`${edge.origin}/card.json`, { headers: { host: 'evil.example' } });
    expect(foreign.status).toBe(403);
  });

  it('refuses a mount on a path the edge owns', async () => {
    const fixture = await openTestTeam();
    cleanups.push(() => fixture.close());
    for (const path of ['/mcp', '/api/snapshot', '/assets/x.js', 'relative']) {
      await expect(
        startTeamEdge({
          team: fixture.team,
          dashboard: false,
          mounts: [{ path, fetch: () => new Response('') }],
        }),
      ).rejects.toSatisfy((e) => TeamError.isInstance(e) && e.code === 'INVALID_ARGUMENT');
    }
  });
});
