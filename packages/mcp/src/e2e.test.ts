import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { StreamableHTTPError } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ResourceUpdatedNotificationSchema } from '@modelcontextprotocol/sdk/types.js';
import { spawnTeammateToolInput, TaskUpdateToolInput } from '@teamwire/core';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { z } from 'zod';
import { type ServedRoutes, serveRoutes } from '../test/serve-http.mjs';
import {
  EXTERNAL_TYPE,
  type FixtureTeam,
  openFixtureTeam,
  PLAN,
  SECRET,
  TEAM_ID,
} from '../test/team-fixture.mjs';
import { createMcpRoutes, createTokenIssuer } from './index.js';
import {
  call,
  codeOf,
  connectHttp,
  connectStdio,
  deliveredCount,
  exited,
  kill,
  logRecords as readLog,
  startServer,
  urlFrom,
  workTheBoard,
} from './test-clients.js';

const tokens = createTokenIssuer({ secret: SECRET, teamId: TEAM_ID });
let dir: string;
const cleanups: (() => Promise<void>)[] = [];

beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'teamwire-mcp-'));
});
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup().catch(() => {});
  await rm(dir, { recursive: true, force: true });
});

/** Opens the fixture team in `dir` and serves it over HTTP, both closed after the test. */
async function serveTeam(
  options: Parameters<typeof openFixtureTeam>[0] = { dir },
): Promise<{ fixture: FixtureTeam; http: ServedRoutes }> {
  const fixture = await openFixtureTeam(options);
  const http = await serveRoutes({
    routes: createMcpRoutes({
      team: fixture.team,
      cursors: tokens,
      agentTypes: fixture.agentTypes,
    }),
    tokens,
  });
  cleanups.push(
    () => fixture.close(),
    () => http.close(),
  );
  return { fixture, http };
}

const logRecords = () => readLog(dir);

describe('external members over MCP', () => {
  it('over HTTP: two clients and the scripted lead complete a task DAG together', async () => {
    const { fixture, http } = await serveTeam();
    await fixture.team.promptLead('Plan the work and get two coding agents on it.');
    const alice = await connectHttp(http.url, tokens.tokenFor('alice'));
    const bob = await connectHttp(http.url, tokens.tokenFor('bob'));
    cleanups.push(
      () => alice.close(),
      () => bob.close(),
    );
    const [a, b] = await Promise.all([
      workTheBoard(alice, 'alice', PLAN.length),
      workTheBoard(bob, 'bob', PLAN.length),
    ]);
    expect([...a.completed, ...b.completed].sort()).toEqual([
      'task-1',
      'task-2',
      'task-3',
      'task-4',
    ]);
    // each read its prompt from the lead exactly once, acknowledged on the next read
    expect(new Set(a.read).size).toBe(a.read.length);
    expect(new Set(b.read).size).toBe(b.read.length);
    await fixture.team.idle();
    // the lead read every report, in its own conversation
    const leadSaw = fixture.model
      .requests('lead')
      .at(-1)
      ?.messages.map((m) => JSON.stringify(m.content))
      .join('\n');
    for (const id of ['task-1', 'task-2', 'task-3', 'task-4']) expect(leadSaw).toContain(id);
    const roster = fixture.team.listMembers(fixture.team.lead);
    expect(roster.find((m) => m.name === 'alice')).toMatchObject({
      provider: 'external',
      status: 'running',
    });
  });

  it('over stdio and HTTP of one server process: the DAG gets done the same way', async () => {
    const alice = await connectStdio(dir, 'alice', [
      '--http',
      '--prompt',
      'Plan the work and get two coding agents on it.',
    ]);
    cleanups.push(() => alice.client.close());
    const url = await urlFrom(alice.stderr);
    const bob = await connectHttp(url, tokens.tokenFor('bob'));
    cleanups.push(() => bob.close());
    const [a, b] = await Promise.all([
      workTheBoard(alice.client, 'alice', PLAN.length),
      workTheBoard(bob, 'bob', PLAN.length),
    ]);
    expect([...a.completed, ...b.completed].sort()).toEqual([
      'task-1',
      'task-2',
      'task-3',
      'task-4',
    ]);
    await alice.client.close();
    const records = await logRecords();
    const completed = records.filter(
      (r) => r.type === 'task' && (r.task as { status: string }).status === 'completed',
    );
    expect(completed).toHaveLength(4);
  });

  it('over stdio: a client killed between read and acknowledge gets its mail again, and only once after acknowledging', async () => {
    // the first server process spawns alice and bob; then it is killed
    const first = startServer(dir, ['--prompt', 'Plan the work.']);
    let said = '';
    first.stderr?.on('data', (chunk: Buffer) => {
      said += chunk.toString('utf8');
    });
    await vi.waitUntil(() => said.includes('"ready"'), { timeout: 30_000, interval: 20 });
    await kill(first.pid as number);
    await exited(first);

    const second = await connectStdio(dir, 'alice');
    const read = await call(second.client, 'read_inbox');
    expect(read.messages).toHaveLength(1);
    const prompt = read.messages[0];
    expect(prompt).toMatchObject({ from: 'lead', kind: 'message' });
    expect(prompt.text).toContain('take ready tasks');
    // the whole process dies before the acknowledgement
    await kill(second.transport.pid as number);
    await second.client.close();
    expect(deliveredCount(await logRecords(), prompt.id)).toBe(0);

    const third = await connectStdio(dir, 'alice');
    const again = await call(third.client, 'read_inbox');
    expect(again.messages.map((m: { id: string }) => m.id)).toEqual([prompt.id]);
    expect(again.messages[0].text).toBe(prompt.text);
    expect(await call(third.client, 'ack_inbox', { cursor: again.cursor })).toEqual({
      acknowledged: 1,
      retired: false,
    });
    await kill(third.transport.pid as number);
    await third.client.close();

    const fourth = await connectStdio(dir, 'alice');
    cleanups.push(() => fourth.client.close());
    expect(await call(fourth.client, 'read_inbox')).toEqual({ messages: [], remaining: 0 });
    expect(deliveredCount(await logRecords(), prompt.id)).toBe(1);
  });

  it('over HTTP: a server restart in the middle changes nothing that was acknowledged', async () => {
    const first = await serveTeam();
    await first.fixture.team.promptLead('Plan the work.');
    await first.fixture.team.sendMessage(first.fixture.team.lead, { to: 'alice', text: 'one' });
    await first.fixture.team.sendMessage(first.fixture.team.lead, { to: 'alice', text: 'two' });
    const alice = await connectHttp(first.http.url, tokens.tokenFor('alice'));
    const page = await call(alice, 'read_inbox', { limit: 2 });
    expect(page.remaining).toBe(1);
    await call(alice, 'ack_inbox', { cursor: page.cursor });
    await call(alice, 'task_update', { taskId: 'task-1', action: 'claim' });
    const unacked = await call(alice, 'read_inbox');
    expect(unacked.messages.map((m: { text: string }) => m.text)).toEqual([
      expect.stringContaining('two'),
    ]);
    await alice.close();
    await first.http.close();
    await first.fixture.close();
    cleanups.splice(0);

    const second = await serveTeam();
    const again = await connectHttp(second.http.url, tokens.tokenFor('alice'));
    cleanups.push(() => again.close());
    const after = await call(again, 'read_inbox');
    expect(after.messages.map((m: { id: string }) => m.id)).toEqual(
      unacked.messages.map((m: { id: string }) => m.id),
    );
    const task = await call(again, 'task_get', { taskId: 'task-1' });
    expect(task).toMatchObject({ status: 'in_progress', owner: 'alice' });
    // a cursor from before the restart still acknowledges, once
    expect(await call(again, 'ack_inbox', { cursor: unacked.cursor })).toEqual({
      acknowledged: 1,
      retired: false,
    });
    expect(await call(again, 'ack_inbox', { cursor: unacked.cursor })).toEqual({
      acknowledged: 0,
      retired: false,
    });
    const ids = [...page.messages, ...unacked.messages].map((m: { id: string }) => m.id);
    const records = await logRecords();
    for (const id of ids) expect(deliveredCount(records, id)).toBe(1);
  });

  it('two sessions of one member acknowledging the same page at once deliver it once, round after round', async () => {
    const { fixture, http } = await serveTeam();
    await fixture.team.promptLead('Plan the work.');
    const one = await connectHttp(http.url, tokens.tokenFor('alice'));
    const two = await connectHttp(http.url, tokens.tokenFor('alice'));
    cleanups.push(
      () => one.close(),
      () => two.close(),
    );
    const ids: string[] = [];
    for (let round = 0; round < 25; round++) {
      if (round > 0) {
        await fixture.team.sendMessage(fixture.team.lead, { to: 'alice', text: `round ${round}` });
      }
      const [a, b] = await Promise.all([call(one, 'read_inbox'), call(two, 'read_inbox')]);
      expect(a.messages.map((m: { id: string }) => m.id)).toEqual(
        b.messages.map((m: { id: string }) => m.id),
      );
      ids.push(...a.messages.map((m: { id: string }) => m.id));
      // one acknowledges explicitly, the other by reading on after the cursor
      const [acked, next] = await Promise.all([
        call(one, 'ack_inbox', { cursor: a.cursor }),
        call(two, 'read_inbox', { after: b.cursor }),
      ]);
      expect(acked.acknowledged === 1 || acked.acknowledged === 0).toBe(true);
      expect(next.messages).toEqual([]);
    }
    const records = await logRecords();
    expect(ids).toHaveLength(25);
    for (const id of ids) expect(deliveredCount(records, id)).toBe(1);
  });

  it('offers lead-only tools to a lead client only, and refuses them for a teammate', async () => {
    const { fixture, http } = await serveTeam({ dir, externalLead: true });
    const lead = await connectHttp(http.url, tokens.tokenFor('lead'));
    cleanups.push(() => lead.close());
    const leadTools = (await lead.listTools()).tools.map((t) => t.name);
    expect(leadTools).toEqual(
      expect.arrayContaining(['spawn_teammate', 'shutdown_teammate', 'interrupt_teammate']),
    );
    await call(lead, 'spawn_teammate', {
      name: 'alice',
      description: 'codes outside',
      prompt: 'Hello alice.',
      agentType: EXTERNAL_TYPE,
    });
    await call(lead, 'task_create', { subject: 'A', description: 'Do A.' });
    const alice = await connectHttp(http.url, tokens.tokenFor('alice'));
    cleanups.push(() => alice.close());
    const aliceTools = (await alice.listTools()).tools.map((t) => t.name);
    expect(aliceTools).not.toContain('spawn_teammate');
    expect(aliceTools).not.toContain('shutdown_teammate');
    expect(aliceTools).toEqual(expect.arrayContaining(['read_inbox', 'ack_inbox', 'task_update']));
    const before = (await logRecords()).length;
    expect(
      await codeOf(
        call(alice, 'spawn_teammate', {
          name: 'mallory',
          description: 'x',
          prompt: 'x',
          agentType: EXTERNAL_TYPE,
        }),
      ),
    ).toBe('UNKNOWN_TOOL');
    expect(await codeOf(call(alice, 'shutdown_teammate', { name: 'lead' }))).toBe('UNKNOWN_TOOL');
    // the lead's rights live in the state too: a teammate cannot reassign a task
    expect(
      await codeOf(
        call(alice, 'task_update', { taskId: 'task-1', action: 'reassign', owner: 'alice' }),
      ),
    ).toBe('NOT_ALLOWED_TO_REASSIGN');
    expect((await logRecords()).length).toBe(before);
    // the lead shuts alice down: she reads the request first and, acknowledging it, retires
    await call(lead, 'shutdown_teammate', { name: 'alice', reason: 'done' });
    const page = await call(alice, 'read_inbox');
    expect(page.messages.map((m: { kind: string }) => m.kind)).toEqual([
      'shutdown_request',
      'message',
    ]);
    expect(await call(alice, 'ack_inbox', { cursor: page.cursor })).toEqual({
      acknowledged: 2,
      retired: true,
    });
    expect(await codeOf(call(alice, 'read_inbox'))).toBe('NOT_A_MEMBER');
    const roster = fixture.team.listMembers(fixture.team.lead);
    expect(roster.find((m) => m.name === 'alice')?.phase).toBe('retired');
  });

  it('refuses a missing, wrong or another member’s token with nothing changed', async () => {
    const { fixture, http } = await serveTeam();
    await fixture.team.promptLead('Plan the work.');
    const before = await readFile(join(dir, 'log.jsonl'), 'utf8');
    const statusOf = async (token: string | undefined) => {
      try {
        const client = await connectHttp(http.url, token);
        await client.close();
        return 200;
      } catch (error) {
        if (error instanceof StreamableHTTPError) return error.code;
        throw error;
      }
    };
    expect(await statusOf(undefined)).toBe(401);
    expect(await statusOf('tw1.alice.AAAA')).toBe(401);
    const otherTeam = createTokenIssuer({ secret: SECRET, teamId: 'another-team' });
    expect(await statusOf(otherTeam.tokenFor('alice'))).toBe(401);
    const forged = tokens.tokenFor('alice').replace('tw1.alice.', 'tw1.bob.');
    expect(await statusOf(forged)).toBe(401);

    // bob's token on alice's session is refused, whatever it carries
    const alice = await connectHttp(http.url, tokens.tokenFor('alice'));
    cleanups.push(() => alice.close());
    const transport = alice.transport as { sessionId?: string } | undefined;
    const response = await fetch(http.url, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${tokens.tokenFor('bob')}`,
        'mcp-session-id': transport?.sessionId as string,
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
      },
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: 9,
        method: 'tools/call',
        params: { name: 'ack_inbox', arguments: { cursor: 'x' } },
      }),
    });
    expect(response.status).toBe(403);
    // (Host, Origin and body size are the policy of the server that mounts the routes:
    // @teamwire/edge, whose tests cover them)
    expect(await readFile(join(dir, 'log.jsonl'), 'utf8')).toBe(before);
    expect(http.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/mcp$/);
  });

  it('pushes a resource-updated notification when mail arrives', async () => {
    const { fixture, http } = await serveTeam();
    await fixture.team.promptLead('Plan the work.');
    const alice = await connectHttp(http.url, tokens.tokenFor('alice'));
    cleanups.push(() => alice.close());
    const updates: string[] = [];
    let rang: () => void = () => {};
    const ring = new Promise<void>((resolve) => {
      rang = resolve;
    });
    alice.setNotificationHandler(ResourceUpdatedNotificationSchema, (notification) => {
      updates.push(notification.params.uri);
      rang();
    });
    const resources = await alice.listResources();
    expect(resources.resources.map((r) => r.uri)).toEqual(['teamwire://inbox']);
    await alice.subscribeResource({ uri: 'teamwire://inbox' });
    await fixture.team.sendMessage(fixture.team.lead, { to: 'alice', text: 'new work for you' });
    await ring;
    expect(updates).toEqual(['teamwire://inbox']);
    const view = await alice.readResource({ uri: 'teamwire://inbox' });
    const contents = view.contents[0] as { text: string };
    expect(JSON.parse(contents.text).pending).toBe(2);
    // reading the resource acknowledges nothing
    expect((await call(alice, 'read_inbox')).messages).toHaveLength(2);
    const shutdowns = await call(alice, 'read_inbox', { kinds: ['shutdown_request'] });
    expect(shutdowns).toEqual({ messages: [], remaining: 0 });
    expect(await codeOf(call(alice, 'read_inbox', { kinds: ['bogus'] }))).toBe('INVALID_ARGUMENT');
  });

  it('lists the JSON Schema of core’s zod schemas, and answers errors with their TeamError code', async () => {
    const { fixture, http } = await serveTeam({ dir, externalLead: true });
    const lead = await connectHttp(http.url, tokens.tokenFor('lead'));
    cleanups.push(() => lead.close());
    const listed = new Map((await lead.listTools()).tools.map((t) => [t.name, t.inputSchema]));
    expect(listed.get('task_update')).toEqual(
      JSON.parse(JSON.stringify(z.toJSONSchema(TaskUpdateToolInput, { io: 'input' }))),
    );
    expect(listed.get('spawn_teammate')).toEqual(
      JSON.parse(
        JSON.stringify(z.toJSONSchema(spawnTeammateToolInput([EXTERNAL_TYPE]), { io: 'input' })),
      ),
    );
    expect(await codeOf(call(lead, 'task_update', { taskId: 'nope', action: 'claim' }))).toBe(
      'INVALID_ARGUMENT',
    );
    expect(await codeOf(call(lead, 'task_get', { taskId: 'task-9' }))).toBe('TASK_NOT_FOUND');
    expect(await codeOf(call(lead, 'read_inbox', { after: 'bogus' }))).toBe('INVALID_CURSOR');
    expect(await codeOf(call(lead, 'read_inbox', { limit: 500 }))).toBe('INVALID_ARGUMENT');
    await call(lead, 'task_create', { subject: 'A', description: 'Do A.' });
    await call(lead, 'task_create', { subject: 'B', description: 'Do B.', blockedBy: ['task-1'] });
    const blocked = await lead.callTool({
      name: 'task_update',
      arguments: { taskId: 'task-2', action: 'claim' },
    });
    expect(blocked.isError).toBe(true);
    expect(blocked.content).toEqual([
      { type: 'text', text: expect.stringMatching(/^TASK_BLOCKED: /) },
    ]);
    expect(fixture.team.getTask(fixture.team.lead, { taskId: 'task-2' }).status).toBe('pending');
  });
});
