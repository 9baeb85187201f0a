import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtemp, realpath, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { createAgentRegistry, openTeam, type TeamRecord, type TeamService } from '@teamwire/core';
import { createScriptedModel } from '@teamwire/core/testing';
import { openPostgresTeamStore, type PostgresTeamStore } from '@teamwire/postgres';
import { xmlFormat } from '@teamwire/protocol';
import pg from 'pg';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { BIN, runBin } from './test-support.js';

/*
 * Needs PostgreSQL at 127.0.0.1:5432 (user postgres, database test); runs under CI=true and is
 * skipped otherwise. Each test works in a schema of its own, dropped afterwards.
 */
const URL_ = 'postgres://postgres@127.0.0.1:5432/test';
const TEAM = 'team-cli-pg';
const coreTesting = pathToFileURL(
  path.join(path.dirname(BIN), '../node_modules/@teamwire/core/dist/testing/index.js'),
).href;
const cliApi = pathToFileURL(path.join(path.dirname(BIN), 'index.js')).href;

let work: string;
let schema: string;
let store: PostgresTeamStore | undefined;
let team: TeamService | undefined;
const children: ChildProcess[] = [];

beforeEach(async () => {
  work = await realpath(await mkdtemp(path.join(tmpdir(), 'teamwire-cli-pg-')));
  schema = `cli_test_${randomBytes(4).toString('hex')}`;
});
afterEach(async () => {
  for (const child of children.splice(0)) if (child.exitCode === null) child.kill('SIGKILL');
  await team?.dispose();
  await store?.close();
  team = undefined;
  store = undefined;
  const client = new pg.Client({ connectionString: URL_ });
  await client.connect();
  try {
    await client.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
  } finally {
    await client.end();
  }
  await rm(work, { recursive: true, force: true });
});

/** Opens the team in this process, running its lead only; `alice` external, `helper1` a helper. */
async function openLeadProcess(): Promise<TeamService> {
  store = await openPostgresTeamStore({
    teamId: TEAM,
    connectionString: URL_,
    schema,
    runs: { lead: true, agentTypes: [] },
    leaseMs: 1000,
  });
  const model = createScriptedModel({ scripts: { lead: () => ({ text: 'noted' }) } });
  team = await openTeam({
    teamId: TEAM,
    log: store.log,
    transcripts: store.transcripts,
    format: xmlFormat,
    agents: createAgentRegistry([
      { type: 'lead', systemPrompt: 'You lead.', model },
      { type: 'helper', systemPrompt: 'You help.', model },
      { type: 'coding-agent', external: true },
    ]),
    lead: { agentType: 'lead' },
    cwd: work,
    idleClaim: false,
  });
  return team;
}

/** Resolves with the first durable record `match` accepts (including those already in the log). */
function recordWhere(match: (record: TeamRecord) => boolean): Promise<TeamRecord> {
  return new Promise((resolve) => {
    const stop = store?.log.subscribe({
      listener: (record) => {
        if (!match(record)) return;
        stop?.();
        resolve(record);
      },
    });
  });
}

const storeArgs = () => ['--store', URL_, '--schema', schema, '--team', TEAM];

describe.skipIf(process.env.CI !== 'true')('teamwire on PostgreSQL', () => {
  it('a worker joins the team, runs the member of its agent type, and leaves on SIGTERM', async () => {
    const lead = await openLeadProcess();
    const greeted = recordWhere(
      (r) => r.type === 'message.queued' && r.message.senderName === 'helper1',
    );
    await lead.spawnTeammate(lead.lead, {
      name: 'helper1',
      description: 'Greets',
      prompt: 'Greet the lead.',
      agentType: 'helper',
    });
    await writeFile(
      path.join(work, 'agents.mjs'),
      `import { defineAgents } from ${JSON.stringify(cliApi)};
import { createScriptedModel } from ${JSON.stringify(coreTesting)};
const model = createScriptedModel({
  scripts: {
    helper1: [
      { toolCalls: [{ name: 'send_message', input: { to: 'lead', message: 'hello from the worker' } }] },
      { text: 'greeted' },
    ],
  },
});
export default defineAgents({ agents: [{ type: 'helper', systemPrompt: 'You help.', model }] });
`,
    );
    const child = spawn(
      process.execPath,
      [BIN, 'worker', ...storeArgs(), '--agents', 'agents.mjs'],
      { cwd: work, stdio: ['ignore', 'pipe', 'pipe'] },
    );
    children.push(child);
    let stdout = '';
    let stderr = '';
    child.stdout?.on('data', (c: Buffer) => {
      stdout += c.toString('utf8');
    });
    child.stderr?.on('data', (c: Buffer) => {
      stderr += c.toString('utf8');
    });
    const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));
    const record = await greeted;
    expect(record.type === 'message.queued' && record.message.targetId).toBe(TEAM);
    const turnEnded = new Promise<void>((resolve) => {
      const look = () => {
        if (stdout.includes('helper1: turn ended (end_turn')) resolve();
      };
      child.stdout?.on('data', look);
      look();
    });
    await turnEnded;
    child.kill('SIGTERM');
    expect(await exited).toBe(0);
    expect(stderr).toContain(`joined team ${TEAM}, running helper`);
    expect(stdout).toContain('helper1: turn ended (end_turn, 2 steps): greeted');

    const inspected = await runBin(['inspect', ...storeArgs(), '--json'], { cwd: work });
    expect(inspected.stderr).toBe('');
    const view = JSON.parse(inspected.stdout);
    expect(view.members.map((m: { name: string; phase: string }) => [m.name, m.phase])).toEqual([
      ['lead', 'active'],
      ['helper1', 'active'],
    ]);
    const verified = await runBin(['verify', ...storeArgs()], { cwd: work });
    expect(verified.stderr).toBe('');
    expect(verified.code).toBe(0);
  });

  it('serves an external member of a team in PostgreSQL over stdio', async () => {
    const lead = await openLeadProcess();
    await lead.spawnTeammate(lead.lead, {
      name: 'alice',
      description: 'Codes',
      prompt: 'Write the parser.',
      agentType: 'coding-agent',
    });
    const transport = new StdioClientTransport({
      command: process.execPath,
      args: [BIN, 'mcp', ...storeArgs(), '--member', 'alice'],
      cwd: work,
      stderr: 'pipe',
    });
    const client = new Client({ name: 'cli-pg-test', version: '1.0.0' });
    await client.connect(transport);
    try {
      const tools = (await client.listTools()).tools.map((t) => t.name);
      expect(tools).toContain('read_inbox');
      const inbox = await client.callTool({ name: 'read_inbox', arguments: {} });
      const page = inbox.structuredContent as { messages: { text: string }[] };
      expect(page.messages.map((m) => m.text)).toEqual([
        expect.stringContaining('Write the parser.'),
      ]);
      const sent = await client.callTool({
        name: 'send_message',
        arguments: { to: 'lead', message: 'on it' },
      });
      expect(sent.isError).toBeFalsy();
    } finally {
      await client.close();
    }
  });

  it('fails with TEAM_NOT_FOUND for a team the database does not hold', async () => {
    const run = await runBin(
      ['inspect', '--store', URL_, '--schema', schema, '--team', 'team-none'],
      { cwd: work },
    );
    expect(run.code).toBe(1);
    expect(run.stderr).toMatch(/^teamwire inspect: TEAM_NOT_FOUND: no team team-none in /);
  });
});
