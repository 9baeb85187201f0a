import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import type { Server } from 'node:http';
import { request } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createAdaptorServer } from '@hono/node-server';
import { DEFAULT_TEAM_LIMITS, type TeamLog, type TeamRecord } from '@teamwire/core';
import { createDashboardRoutes, type DashboardRoutesOptions } from './routes.js';

/** One HTTP answer, its body both as bytes and as text. */
export interface Reply {
  status: number;
  raw: Buffer;
  body: string;
  headers: Record<string, string | string[] | undefined>;
}

/** One request over `node:http`, which leaves `accept-encoding` and every header to the test. */
export function http(
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
        res.on('end', () => {
          const raw = Buffer.concat(chunks);
          resolve({
            status: res.statusCode ?? 0,
            raw,
            body: raw.toString('utf8'),
            headers: res.headers,
          });
        });
      },
    );
    req.on('error', reject);
    req.end(options.body);
  });
}

/** The routes served for a test; see {@link serveRoutes}. */
export interface TestServer {
  /** The page's URL, with its token. */
  readonly url: string;
  readonly port: number;
  readonly token: string;
  close(): Promise<void>;
}

/** A token of the length the edge generates. */
export const TEST_TOKEN = 'test-token-0123456789abcdefghijk';

/**
 * The routes on `node:http` (127.0.0.1), behind a stand-in for the edge that mounts them: a
 * request but an asset's must carry `token` as `Authorization: Bearer`, `x-teamwire-token`, or
 * `?token=` on a GET, else 401. `@teamwire/edge` owns the real policy (and its tests the forms of
 * the token, Host, Origin and body limits); these tests are about the routes.
 */
export async function serveRoutes(
  options: DashboardRoutesOptions & { port?: number | undefined; token?: string | undefined },
): Promise<TestServer> {
  const token = options.token ?? TEST_TOKEN;
  const routes = createDashboardRoutes({ heartbeatMs: 0, ...options });
  const server = createAdaptorServer({
    fetch: (request: Request) => {
      const url = new URL(request.url);
      const authorization = request.headers.get('authorization');
      const presented =
        authorization !== null
          ? /^bearer +(\S+)$/i.exec(authorization)?.[1]
          : (request.headers.get('x-teamwire-token') ??
            (request.method === 'GET' ? url.searchParams.get('token') : null));
      if (!url.pathname.startsWith('/assets/') && presented !== token) {
        return new Response(JSON.stringify({ error: { code: 'UNAUTHORIZED', message: 'no' } }), {
          status: 401,
          headers: { 'content-type': 'application/json' },
        });
      }
      return routes.fetch(request);
    },
  }) as Server;
  await new Promise<void>((resolve) => server.listen(options.port ?? 0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/?token=${token}`,
    port,
    token,
    async close() {
      routes.close();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** `path` (with its own query, if any) on `server`, without the page URL's token. */
export function at(server: TestServer, path: string): string {
  return (
    new URL(path, server.url).toString().replace(/\?.*$/, '') +
    (path.includes('?') ? `?${path.split('?')[1]}` : '')
  );
}

/** A page folder as a build would leave it, without the build's manifest. */
export async function fakePage(): Promise<{ dir: string; remove(): Promise<void> }> {
  const dir = await mkdtemp(join(tmpdir(), 'dashboard-assets-'));
  await mkdir(join(dir, 'assets'));
  await writeFile(
    join(dir, 'index.html'),
    '<html><head><script type="module" crossorigin src="./assets/index-a1.js"></script><link rel="stylesheet" href="./assets/index-b2.css"></head><body></body></html>',
  );
  await writeFile(join(dir, 'assets', 'index-a1.js'), 'console.log(1)');
  await writeFile(join(dir, 'assets', 'index-b2.css'), 'body{}');
  return { dir, remove: () => rm(dir, { recursive: true, force: true }) };
}

/**
 * A team log of a lead, a member `ann` and `messages` messages from the lead to ann, each `text`:
 * made as it is read, so a log far larger than the memory a test may use costs nothing to hold.
 */
export function chattyLog(options: {
  teamId: string;
  messages: number;
  text: (seq: number) => string;
  /** Changes one record as it is read. */
  change?: (record: TeamRecord) => TeamRecord;
}): Pick<TeamLog, 'read' | 'lastSeq'> {
  const { teamId } = options;
  const base = (seq: number) =>
    ({ seq, at: 1_700_000_000_000 + seq, teamId, schemaVersion: 1 }) as const;
  const member = (seq: number, id: string, name: string): TeamRecord => ({
    ...base(seq),
    type: 'member',
    member: {
      id,
      name,
      description: `${name} of the team`,
      agentType: 'worker',
      provider: 'scripted',
      context: 'fresh',
      phase: 'active',
    },
  });
  const record = (seq: number): TeamRecord => {
    if (seq === 1) return member(1, teamId, 'lead');
    if (seq === 2) return member(2, 'ann-id', 'ann');
    return {
      ...base(seq),
      type: 'message.queued',
      message: {
        id: `m-${seq}`,
        senderId: teamId,
        senderName: 'lead',
        targetId: 'ann-id',
        kind: 'message',
        delivery: 'wakeup',
        content: [{ type: 'text', text: options.text(seq) }],
      },
    };
  };
  const last = options.messages + 2;
  return {
    lastSeq: () => last,
    async *read(readOptions) {
      for (let seq = readOptions?.fromSeq ?? 1; seq <= last; seq++) {
        const made = record(seq);
        yield options.change?.(made) ?? made;
      }
    },
  };
}

/** Whether a message of this text is one a team accepts (its content within `maxMessageBytes`). */
export function isLegalMessage(text: string): boolean {
  const bytes = Buffer.byteLength(JSON.stringify([{ type: 'text', text }]));
  return bytes <= DEFAULT_TEAM_LIMITS.maxMessageBytes;
}

/** Opens a response that may never end (an event stream): its status and headers, then closes. */
export function head(
  url: string,
  headers: Record<string, string> = {},
): Promise<{ status: number; headers: Record<string, string | string[] | undefined> }> {
  return new Promise((resolve, reject) => {
    const req = request(url, { headers, agent: false }, (res) => {
      resolve({ status: res.statusCode ?? 0, headers: res.headers });
      req.destroy();
    });
    req.on('error', (error) => {
      if (!req.destroyed) reject(error);
    });
    req.end();
  });
}

/** A task of {@link boardLog}: its number, subject and the numbers of its blockers. */
export interface BoardTask {
  n: number;
  subject: string;
  blockedBy?: number[];
  status?: 'pending' | 'in_progress' | 'completed';
  /** The owner's name. */
  owner?: string;
}

/**
 * A team log of a lead, members `names` and `tasks` as the board holds them: what a page that
 * follows the team is given.
 */
export function boardLog(options: {
  teamId: string;
  names: readonly string[];
  tasks: readonly BoardTask[];
}): Pick<TeamLog, 'read' | 'lastSeq'> {
  const { teamId } = options;
  const records: TeamRecord[] = [];
  const base = () =>
    ({
      seq: records.length + 1,
      at: 1_700_000_000_000 + records.length * 1000,
      teamId,
      schemaVersion: 1,
    }) as const;
  const idOf = (name: string) => (name === 'lead' ? teamId : `${name}-id`);
  for (const name of ['lead', ...options.names]) {
    records.push({
      ...base(),
      type: 'member',
      member: {
        id: idOf(name),
        name,
        description: `${name} of the team`,
        agentType: name === 'lead' ? 'lead' : 'worker',
        provider: 'scripted',
        context: 'fresh',
        phase: 'active',
      },
    });
  }
  for (const task of options.tasks) {
    records.push({
      ...base(),
      type: 'task',
      task: {
        id: `task-${task.n}`,
        revision: 1,
        subject: task.subject,
        description: `${task.subject}.`,
        status: task.status ?? 'pending',
        creatorId: teamId,
        ...(task.owner === undefined ? {} : { ownerId: idOf(task.owner) }),
        blockedBy: (task.blockedBy ?? []).map((n) => `task-${n}`),
        writeScopes: [],
      },
    });
  }
  return {
    lastSeq: () => records.length,
    async *read(readOptions) {
      for (const record of records.slice((readOptions?.fromSeq ?? 1) - 1)) yield record;
    },
  };
}
