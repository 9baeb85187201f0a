import { type ChildProcess, fork } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import {
  createAgentRegistry,
  createEventHub,
  type EventHub,
  type HubItem,
  openTeam,
  type TeamService,
} from '@teamwire/core';
import {
  createScriptedModel,
  createSimpleFormat,
  createSimplePolicy,
} from '@teamwire/core/testing';
import { openPostgresTeamStore, type PostgresTeamStore } from '@teamwire/postgres';
import pg from 'pg';
import { type Browser, chromium, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { serveRoutes, type TestServer } from './test-helpers.js';

/*
 * A page served by one process follows a team whose teammates run in two other processes (real
 * child processes, over a real PostgreSQL): their streamed output and presence reach the page
 * through the live relay, and after one worker is killed (SIGKILL) its member shows up live again
 * on the survivor. Without Chromium or PostgreSQL the suite is skipped with a message, except
 * under CI=true, where it fails.
 */

const CHROMIUM = process.env.TEAMWIRE_CHROMIUM ?? '/usr/bin/chromium';
const PG_URL = process.env.TEAMWIRE_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
const ASSETS = fileURLToPath(new URL('../dist/ui', import.meta.url));
const WORKER = fileURLToPath(new URL('../test/live-worker.mjs', import.meta.url));
const TEAM = '01JLIVEDASHBOARD0000000000';

async function pgReachable(): Promise<boolean> {
  const client = new pg.Client({ connectionString: PG_URL, connectionTimeoutMillis: 3000 });
  client.on('error', () => {});
  try {
    await client.connect();
    await client.end();
    return true;
  } catch {
    await client.end().catch(() => undefined);
    return false;
  }
}

const missing = [
  existsSync(CHROMIUM) ? undefined : `no Chromium at ${CHROMIUM}`,
  (await pgReachable()) ? undefined : `PostgreSQL not reachable at TEAMWIRE_PG_URL`,
].filter((reason) => reason !== undefined);
if (missing.length > 0) {
  if (process.env.CI === 'true') throw new Error(`${missing.join('; ')}: CI runs this test`);
  console.warn(`${missing.join('; ')}; skipping the multi-process dashboard test`);
}

interface Worker {
  child: ChildProcess;
  processId: string;
  exited: Promise<void>;
}

function startWorker(schema: string, slot: number): Promise<Worker> {
  const child = fork(WORKER, [PG_URL, schema, TEAM, String(slot)], {
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  return new Promise((resolve, reject) => {
    child.once('message', (message: { type: string; processId: string }) => {
      if (message.type === 'ready') resolve({ child, processId: message.processId, exited });
    });
    child.once('exit', (code) => reject(new Error(`worker ${slot} exited (${code}) before ready`)));
  });
}

/** Resolves once `hub` publishes an item `matches` accepts (items before the call do not count). */
function next(hub: EventHub, matches: (item: HubItem) => boolean): Promise<HubItem> {
  return new Promise((resolve) => {
    const stop = hub.listen(
      (item) => {
        if (!matches(item)) return;
        stop();
        resolve(item);
      },
      { presence: true },
    );
  });
}

describe.skipIf(missing.length > 0)('a dashboard following members of other processes', () => {
  const schema = `tw_test_${randomBytes(8).toString('hex')}`;
  let browser: Browser;
  let store: PostgresTeamStore;
  let team: TeamService;
  let hub: EventHub;
  let server: TestServer;
  const workers: Worker[] = [];

  beforeAll(async () => {
    browser = await chromium.launch({
      executablePath: CHROMIUM,
      args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking'],
    });
    // the page's process runs the lead only
    store = await openPostgresTeamStore({
      teamId: TEAM,
      connectionString: PG_URL,
      schema,
      runs: { lead: true, agentTypes: [] },
      leaseMs: 600,
      pollMs: 100,
    });
    hub = createEventHub({ teamId: TEAM, log: store.log });
    const model = createScriptedModel({ scripts: { lead: () => ({ text: 'Noted.' }) } });
    team = await openTeam({
      teamId: TEAM,
      log: store.log,
      transcripts: store.transcripts,
      format: createSimpleFormat(),
      policy: createSimplePolicy(),
      agents: createAgentRegistry([
        { type: 'lead', systemPrompt: 'You lead.', model },
        { type: 'worker', systemPrompt: 'You work.', model },
      ]),
      lead: { agentType: 'lead' },
      events: hub,
      live: { sink: hub },
      idleClaim: false,
    });
    server = await serveRoutes({ log: store.log, hub, team, assetsDir: ASSETS });
  });
  afterAll(async () => {
    for (const worker of workers) worker.child.kill('SIGKILL');
    await Promise.all(workers.map((worker) => worker.exited));
    await server?.close();
    await team?.dispose();
    hub?.close();
    await store?.close();
    await browser?.close();
    const admin = new pg.Client({ connectionString: PG_URL });
    await admin.connect();
    await admin.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
    await admin.end();
  });

  const member = (page: Page, name: string, extra = '') =>
    page.locator(`[data-testid="member"][data-name="${name}"]${extra}`);
  const output = (page: Page, name: string, text: string) =>
    member(page, name).locator('[data-testid="member-output"]', { hasText: text });

  it('shows their streamed output live, and a killed worker’s member live again on the survivor', async () => {
    const page = await browser.newPage();
    await page.goto(server.url);
    await page.locator('[data-testid="connection"]', { hasText: 'live' }).waitFor();
    // one worker at a time, so each runs one of them (a process with fewer members claims first)
    const spawn = (name: string) =>
      team.spawnTeammate(team.lead, {
        name,
        description: 'helps',
        prompt: `Hi ${name}.`,
        agentType: 'worker',
      });
    workers.push(await startWorker(schema, 1));
    await spawn('alice');
    await output(page, 'alice', 'alice on 1, turn 1').waitFor();
    workers.push(await startWorker(schema, 2));
    await spawn('bob');
    await output(page, 'bob', 'bob on 2, turn 1').waitFor();
    expect(await member(page, 'alice').getAttribute('data-active')).toBe('true');
    expect(await member(page, 'bob').getAttribute('data-active')).toBe('true');

    // the page's server goes away (its stream with it) while alice's process dies without a
    // word: the hub the page follows shows her stopped once her lease ran out
    await server.close();
    await page.locator('[data-testid="connection"]', { hasText: 'reconnecting' }).waitFor();
    const [victim] = workers as [Worker, Worker];
    const stopped = next(
      hub,
      (item) => item.type === 'presence' && item.agent === 'alice' && item.state === 'stopped',
    );
    victim.child.kill('SIGKILL');
    await victim.exited;
    await stopped;
    // the survivor takes her over; mail gives her a turn there, all while the page is away
    const again = 'alice on 2, turn 1';
    const turnThere = next(
      hub,
      (item) =>
        item.type === 'event' &&
        item.agent === 'alice' &&
        item.event.type === 'model.text-delta' &&
        item.event.text.includes(again),
    );
    await team.sendMessage(team.lead, { to: 'alice', text: 'Again, please.' });
    await turnThere;
    // back on the same port: the page resumes from its cursor (same hub, same epoch) and gets
    // what it missed, live output of another process included
    server = await serveRoutes({
      log: store.log,
      hub,
      team,
      assetsDir: ASSETS,
      port: server.port,
    });
    await page.locator('[data-testid="connection"]', { hasText: 'live' }).waitFor();
    await output(page, 'alice', again).waitFor();
    await member(page, 'alice', '[data-active="true"]').waitFor();
    // bob went on on the survivor all along
    expect(await member(page, 'bob').getAttribute('data-active')).toBe('true');
    await page.close();
  });
});
