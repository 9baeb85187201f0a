// Run by the consumer test in a folder where @teamwire/cli was installed from the registry: makes
// a JSONL team with the installed packages, then drives the installed `teamwire` bin from another
// folder, as a coding agent's configuration would: MCP over stdio with the official SDK client
// (initialize, tools/list, read_inbox, ack_inbox), then `inspect --json` and `verify`, then
// `serve` over HTTP (the dashboard's snapshot with its token, and without). Prints one JSON line
// of what it saw; the check decides.
import { spawn, spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { createAgentRegistry, openTeam } from '@teamwire/core';
import { createScriptedModel } from '@teamwire/core/testing';
import { xmlFormat } from '@teamwire/protocol';
import { openJsonlTeamStore } from '@teamwire/storage';

const bin = join(process.cwd(), 'node_modules', '.bin', 'teamwire');
const state = join(process.cwd(), 'state');
const teamId = 'consumer-cli';
const dir = join(state, 'teams', teamId);
mkdirSync(dir, { recursive: true });

const store = await openJsonlTeamStore({ teamId, dir, create: true });
const team = await openTeam({
  teamId,
  log: store.log,
  transcripts: store.transcripts,
  format: xmlFormat,
  agents: createAgentRegistry([
    { type: 'lead', systemPrompt: 'You lead.', model: createScriptedModel() },
    { type: 'coding-agent', external: true },
  ]),
  lead: { agentType: 'lead' },
  cwd: process.cwd(),
  idleClaim: false,
});
await team.spawnTeammate(team.lead, {
  name: 'alice',
  description: 'Writes the parser',
  prompt: 'Write the parser, then tell me.',
  agentType: 'coding-agent',
});
await team.sendMessage(team.lead, { to: 'alice', text: 'Start with the lexer.' });
await team.dispose();
await store.close();

// The client starts the server in a folder of its own: the state is found by its absolute path.
const elsewhere = mkdtempSync(join(tmpdir(), 'teamwire-cli-client-'));
const transport = new StdioClientTransport({
  command: bin,
  args: ['mcp', '--dir', state, '--team', teamId, '--member', 'alice'],
  cwd: elsewhere,
  stderr: 'pipe',
});
let serverStderr = '';
transport.stderr?.on('data', (chunk) => {
  serverStderr += chunk.toString('utf8');
});
const client = new Client({ name: 'consumer-cli', version: '1.0.0' });
let tools;
let inbox;
let acknowledged;
try {
  await client.connect(transport);
  tools = (await client.listTools()).tools.map((tool) => tool.name).sort();
  const read = await client.callTool({ name: 'read_inbox', arguments: {} });
  inbox = read.structuredContent.messages.map((message) => message.text);
  const ack = await client.callTool({
    name: 'ack_inbox',
    arguments: { cursor: read.structuredContent.cursor },
  });
  acknowledged = ack.structuredContent.acknowledged;
} finally {
  await client.close();
}

const run = (args) => {
  const result = spawnSync(bin, [...args, '--dir', state, '--team', teamId], {
    cwd: elsewhere,
    encoding: 'utf8',
  });
  return { status: result.status, stdout: result.stdout, stderr: result.stderr };
};
const inspected = run(['inspect', '--json']);
const verified = run(['verify']);

// `teamwire serve`: the team's edge on a free port until SIGTERM
const served = await new Promise((resolve) => {
  const child = spawn(bin, ['serve', '--dir', state, '--team', teamId], { cwd: elsewhere });
  let out = '';
  let err = '';
  const seen = {};
  child.stderr.on('data', (chunk) => {
    err += chunk.toString('utf8');
  });
  child.stdout.on('data', async (chunk) => {
    out += chunk.toString('utf8');
    const url = /^dashboard: (\S+)$/m.exec(out)?.[1];
    if (url === undefined || seen.url !== undefined) return;
    seen.url = url;
    const page = new URL(url);
    const snapshot = new URL('/api/snapshot', page);
    seen.withoutToken = (await fetch(snapshot)).status;
    const answer = await fetch(snapshot, {
      headers: { authorization: `Bearer ${page.searchParams.get('token')}` },
    });
    seen.withToken = answer.status;
    seen.teamId = (await answer.json()).teamId;
    child.kill('SIGTERM');
  });
  child.once('close', (code) => resolve({ ...seen, code, stderr: err.trim() }));
});
const view = inspected.status === 0 ? JSON.parse(inspected.stdout) : undefined;
console.log(
  JSON.stringify({
    serverStderr: serverStderr.trim(),
    tools,
    inbox,
    acknowledged,
    inspect: {
      status: inspected.status,
      stderr: inspected.stderr,
      members: view?.members.map((member) => member.name),
      pendingMail: view?.pendingMail.length,
    },
    verify: { status: verified.status, stdout: verified.stdout, stderr: verified.stderr },
    serve: served,
  }),
);
