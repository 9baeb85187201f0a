import {
  createAgentRegistry,
  createEventHub,
  openTeam,
  TASK_BLOCKED_BY_MAX,
  type TeamService,
} from '@teamwire/core';
import {
  createMemoryTeamLog,
  createMemoryTranscriptStore,
  createScriptedModel,
  type MemoryTeamLog,
} from '@teamwire/core/testing';
import { xmlFormat } from '@teamwire/protocol';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { followTeamLog } from './follow.js';
import { OPERATOR_AGENT } from './index.js';
import { at, fakePage, http, serveRoutes, type TestServer } from './test-helpers.js';

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function assets(): Promise<string> {
  const page = await fakePage();
  cleanups.push(page.remove);
  return page.dir;
}

async function liveTeam(): Promise<{
  team: TeamService;
  server: TestServer;
  log: MemoryTeamLog;
  leadSaw: () => string;
}> {
  const model = createScriptedModel({ scripts: { lead: () => ({ text: 'Thanks, noted.' }) } });
  const log = createMemoryTeamLog({ teamId: 't1' });
  const hub = createEventHub({ teamId: 't1', log });
  const team = await openTeam({
    teamId: 't1',
    log,
    transcripts: createMemoryTranscriptStore(),
    format: xmlFormat,
    agents: createAgentRegistry([{ type: 'lead', systemPrompt: 'Lead.', model }, OPERATOR_AGENT]),
    lead: { agentType: 'lead' },
    events: hub,
  });
  const server = await serveRoutes({ log, hub, team, assetsDir: await assets() });
  cleanups.push(
    () => team.dispose(),
    () => server.close(),
  );
  const leadSaw = () =>
    JSON.stringify(
      model
        .requests('lead')
        .at(-1)
        ?.messages.map((m) => m.content) ?? [],
    );
  return { team, server, log, leadSaw };
}

describe('the dashboard server', () => {
  it('serves the page as built and its assets without the token, and no CORS header anywhere', async () => {
    const { server } = await liveTeam();
    const page = await http(server.url);
    expect(page.status).toBe(200);
    // the page names its assets as built: they hold no team data, and need no token
    expect(page.body).toContain('src="./assets/index-a1.js"');
    expect(page.body).not.toContain(server.token);
    expect(page.headers['access-control-allow-origin']).toBeUndefined();
    const script = await http(at(server, '/assets/index-a1.js'));
    expect(script).toMatchObject({ status: 200, body: 'console.log(1)' });
    expect(script.headers['access-control-allow-origin']).toBeUndefined();
    for (const path of [
      '/assets/..%2f..%2fetc%2fpasswd',
      '/assets/sub/index-a1.js',
      '/assets/x.js',
    ]) {
      expect((await http(at(server, path))).status, path).toBe(404);
    }
  });

  it('acts as a distinct operator member: a message reaches the lead, and the lead answers it', async () => {
    const { team, server, log, leadSaw } = await liveTeam();
    const post = (action: string, body: unknown, headers: Record<string, string> = {}) =>
      http(at(server, `/api/actions/${action}`), {
        method: 'POST',
        headers: {
          'x-teamwire-token': server.token,
          'content-type': 'application/json',
          ...headers,
        },
        body: typeof body === 'string' ? body : JSON.stringify(body),
      });
    const sent = await post('message', { to: 'lead', text: 'Please summarise.' });
    expect(sent.status).toBe(200);
    await team.idle();
    expect(leadSaw()).toContain('Please summarise.');
    const members = team.listMembers(team.lead);
    expect(members.find((m) => m.name === 'operator')).toMatchObject({
      agentType: 'dashboard-operator',
      provider: 'external',
    });
    const task = await post('task', { subject: 'Check', description: 'Check it.' });
    expect(JSON.parse(task.body)).toEqual({ id: 'task-1', revision: 1 });
    expect(team.getTask(team.lead, { taskId: 'task-1' }).creatorId).toBe(
      members.find((m) => m.name === 'operator')?.memberId,
    );
    // bad input: typed errors, nothing written
    expect(JSON.parse((await post('message', { to: 'nobody', text: 'x' })).body).error.code).toBe(
      'UNKNOWN_TARGET',
    );
    expect((await post('message', { to: 'lead' })).status).toBe(400);
    expect((await post('message', '{not json')).status).toBe(400);
    expect((await post('message', { to: 'lead', text: 'x'.repeat(70_000) })).status).toBe(413);
    expect((await post('nonsense', {})).status).toBe(404);
    // a task's blockers are checked by core's bounds: task ids, at most TASK_BLOCKED_BY_MAX
    const blocked = (blockedBy: string[]) =>
      post('task', { subject: 'Later', description: 'After the check.', blockedBy });
    expect(JSON.parse((await blocked(['not-a-task'])).body).error.code).toBe('INVALID_ARGUMENT');
    const tooMany = Array.from({ length: TASK_BLOCKED_BY_MAX + 1 }, (_, i) => `task-${i + 2}`);
    expect(JSON.parse((await blocked(tooMany)).body).error.code).toBe('INVALID_ARGUMENT');
    // more blockers than the dashboard once allowed (64): core decides, here that they exist
    const many = Array.from({ length: 65 }, (_, i) => `task-${i + 2}`);
    expect(JSON.parse((await blocked(many)).body).error.code).toBe('INVALID_DEPENDENCY');
    expect(
      (await post('message', { to: 'lead', text: 'x' }, { 'content-type': 'text/plain' })).status,
    ).toBe(415);
    // the lead cannot shut the person out: the page keeps working after a shutdown request
    await team.shutdown(team.lead, { target: 'operator', reason: 'the run is over' });
    const after = await team.sendMessage(team.lead, { to: 'operator', text: 'Bye.' });
    // the page's inbox drain has handled what came after the request
    await vi.waitUntil(
      () =>
        log
          .records()
          .some((r) => r.type === 'message.delivered' && r.messageId === after.messageId),
      { timeout: 5000 },
    );
    expect((await post('message', { to: 'lead', text: 'Still here.' })).status).toBe(200);
    expect(team.listMembers(team.lead).find((m) => m.name === 'operator')?.phase).toBe('active');
    const snapshot = JSON.parse(
      (await http(at(server, `/api/snapshot?token=${server.token}`))).body,
    );
    expect(snapshot).toMatchObject({
      version: 1,
      teamId: 't1',
      readOnly: false,
      operator: 'operator',
    });
    expect(snapshot.records.filter((r: { type: string }) => r.type === 'task')).toHaveLength(1);
  });

  it('is read-only without a team: the snapshot and stream follow a log another process writes', async () => {
    const log = createMemoryTeamLog({ teamId: 't2' });
    const followed = followTeamLog({
      teamId: 't2',
      read: (fromSeq) => log.read({ fromSeq }),
      pollMs: 10,
    });
    cleanups.push(() => followed.close());
    const server = await serveRoutes({
      log: followed.log,
      hub: followed.hub,
      assetsDir: await assets(),
    });
    cleanups.push(() => server.close());
    const model = createScriptedModel({ scripts: { lead: [{ text: 'ok' }] } });
    const team = await openTeam({
      teamId: 't2',
      log,
      transcripts: createMemoryTranscriptStore(),
      format: xmlFormat,
      agents: createAgentRegistry([{ type: 'lead', systemPrompt: 'Lead.', model }]),
      lead: { agentType: 'lead' },
    });
    cleanups.push(() => team.dispose());
    await team.createTask(team.lead, { subject: 'A', description: 'a' });
    const seen = () =>
      http(at(server, `/api/snapshot?token=${server.token}`)).then((r) => JSON.parse(r.body));
    // the follower polls every 10 ms: wait until it has read the task
    await vi.waitUntil(() => followed.log.lastSeq() >= log.lastSeq(), { timeout: 5000 });
    const snapshot = await seen();
    expect(snapshot.readOnly).toBe(true);
    expect(snapshot.records.map((r: { seq: number }) => r.seq)).toEqual(
      log.records().map((r) => r.seq),
    );
    expect(snapshot.records.at(-1).type).toBe('task');
    const action = await http(at(server, '/api/actions/message'), {
      method: 'POST',
      headers: { 'x-teamwire-token': server.token, 'content-type': 'application/json' },
      body: JSON.stringify({ to: 'lead', text: 'hi' }),
    });
    expect(JSON.parse(action.body).error.code).toBe('READ_ONLY');
    expect(followed.hub.lastSeq()).toBeGreaterThanOrEqual(2);
  });
});
