import { spawn } from 'node:child_process';
import { mkdir, mkdtemp, readFile, realpath, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { COMMANDS } from './commands/registry.js';
import {
  ALICE_PROMPT,
  BIN,
  createApprovalTeam,
  createJsonlTeam,
  LEAD_NOTE,
  runBin,
} from './test-support.js';

const repo = fileURLToPath(new URL('../../..', import.meta.url));
const TEAM = 'team-cli-1';
let work: string;

beforeEach(async () => {
  work = await realpath(await mkdtemp(path.join(tmpdir(), 'teamwire-cli-')));
  expect(path.relative(repo, work).startsWith('..')).toBe(true);
});
afterEach(async () => {
  await rm(work, { recursive: true, force: true });
});

describe('the teamwire bin', () => {
  it('prints its help and each command’s help', async () => {
    const main = await runBin(['--help'], { cwd: work });
    expect(main.code).toBe(0);
    for (const command of COMMANDS) {
      expect(main.stdout).toContain(`  ${command.name} `);
      const help = await runBin([command.name, '--help'], { cwd: work });
      expect(help.code).toBe(0);
      expect(help.stdout).toMatch(new RegExp(`^teamwire ${command.name} — `));
      expect(help.stdout).toContain('--dir <path>');
      expect(help.stderr).toBe('');
    }
  });

  it.each([
    ['', [], /Usage:/],
    ['nope', ['nope'], /^teamwire: INVALID_ARGUMENT: unknown command "nope"/],
    [
      'inspect',
      ['inspect'],
      /^teamwire inspect: INVALID_ARGUMENT: --dir <state folder> or --store/,
    ],
    [
      'inspect --dir . --bogus',
      ['inspect', '--dir', '.', '--bogus'],
      /^teamwire inspect: INVALID_ARGUMENT: Unknown option '--bogus'/,
    ],
    [
      'verify --dir . --store postgres://x/y',
      ['verify', '--dir', '.', '--store', 'postgres://x/y'],
      /not both/,
    ],
    [
      'inspect --store mysql://x/y --team t',
      ['inspect', '--store', 'mysql://x/y', '--team', 't'],
      /postgres:\/\//,
    ],
    [
      'mcp --dir state --team ../x',
      ['mcp', '--dir', 'state', '--team', '../x'],
      /--team must be a team id/,
    ],
    [
      'worker --dir state --team t --agents a.mjs',
      ['worker', '--dir', 'state', '--team', 't', '--agents', 'a.mjs'],
      /PostgreSQL \(--store\)/,
    ],
    [
      'worker --store postgres://127.0.0.1:1/x --team t',
      ['worker', '--store', 'postgres://127.0.0.1:1/x', '--team', 't'],
      /--agents <module> is required/,
    ],
    [
      'inspect --dir <5000 bytes>',
      ['inspect', '--dir', 'x'.repeat(5000)],
      /longer than 4096 bytes/,
    ],
  ])('refuses `teamwire %s` with exit code 2 and one line', async (_label, args, pattern) => {
    const run = await runBin(args as string[], { cwd: work });
    expect(run.code).toBe(2);
    expect(run.stdout).toBe('');
    if (args.length > 0) {
      expect(run.stderr.trimEnd().split('\n')).toHaveLength(1);
    }
    expect(run.stderr).toMatch(pattern);
  });

  it('inspects and verifies a JSONL team from another folder, by relative and absolute path', async () => {
    const state = path.join(work, 'state');
    await createJsonlTeam(state, TEAM);
    const elsewhere = await mkdtemp(path.join(work, 'elsewhere-'));
    const text = await runBin(['inspect', '--dir', '../state', '--team', TEAM], {
      cwd: elsewhere,
    });
    expect(text.stderr).toBe('');
    expect(text.code).toBe(0);
    expect(text.stdout).toMatch(/alice\s+active\s+coding-agent \(external\)/);
    expect(text.stdout).toContain('Pending mail (2):');
    const json = await runBin(['inspect', '--dir', state, '--team', TEAM, '--json'], {
      cwd: elsewhere,
    });
    expect(json.code).toBe(0);
    const view = JSON.parse(json.stdout);
    expect(view.members.map((m: { name: string }) => m.name)).toEqual(['lead', 'alice']);
    expect(view.tasks).toEqual([
      expect.objectContaining({ id: 'task-1', subject: 'Parser', status: 'pending' }),
    ]);
    expect(view.pendingMail.map((m: { text: string; to: string }) => [m.to, m.text])).toEqual([
      ['alice', ALICE_PROMPT],
      ['alice', LEAD_NOTE],
    ]);
    expect(view.deadLetters).toEqual([]);
    // the team folder itself works too, its name being the team id
    const verified = await runBin(['verify', '--dir', path.join(state, 'teams', TEAM)], {
      cwd: elsewhere,
    });
    expect(verified.stderr).toBe('');
    expect(verified.code).toBe(0);
    expect(verified.stdout).toMatch(/records folded strictly/);
    expect(verified.stdout).toMatch(/\nok\n/);
  });

  it('inspects approvals, pending first, and gate refusals in a row', async () => {
    const state = path.join(work, 'state');
    await createApprovalTeam(state, TEAM);
    const json = await runBin(['inspect', '--dir', state, '--team', TEAM, '--json'], { cwd: work });
    expect(json.stderr).toBe('');
    expect(json.code).toBe(0);
    const view = JSON.parse(json.stdout);
    expect(view.approvals).toEqual([
      expect.objectContaining({
        kind: 'tool',
        status: 'pending',
        requester: 'carl',
        approver: 'alice',
        toolName: 'send_message',
        input: '{"to":"lead","message":"staging is up"}',
      }),
      expect.objectContaining({
        status: 'approved',
        requester: 'bob',
        input: '{"to":"lead","message":"prod is up"}',
        decider: 'alice',
        reason: 'ship it',
        started: true,
      }),
    ]);
    const [pending, approved] = view.approvals;
    expect(pending.decidedAt).toBeUndefined();
    expect(Date.parse(pending.expiresAt)).toBeGreaterThan(Date.parse(pending.requestedAt));
    expect(Date.parse(approved.decidedAt)).toBeGreaterThanOrEqual(Date.parse(approved.requestedAt));
    expect(view.gateRefusals).toEqual([{ gate: 'task_completed', task: 'task-1', inARow: 1 }]);

    const text = await runBin(['inspect', '--dir', state, '--team', TEAM], { cwd: work });
    expect(text.code).toBe(0);
    const lines = text.stdout.split('\n');
    const at = lines.indexOf('Approvals (2, 1 pending):');
    expect(at).toBeGreaterThan(0);
    expect(lines[at + 1]).toMatch(
      new RegExp(
        `^  ${pending.id}  pending +carl -> alice  tool send_message  asked \\d+s ago, expires in (59m|1h)  \\{"to":"lead","message":"staging is up"\\}$`,
      ),
    );
    expect(lines[at + 2]).toMatch(
      new RegExp(
        `^  ${approved.id}  approved +bob -> alice  tool send_message  asked \\d+s ago, approved by alice \\d+s ago: ship it  \\{"to":"lead","message":"prod is up"\\}$`,
      ),
    );
    expect(text.stdout).toContain('Gate refusals in a row (1):\n  task_completed  task-1  1\n');
    // the approval records are folded strictly like the others
    const verified = await runBin(['verify', '--dir', state, '--team', TEAM], { cwd: work });
    expect(verified.stderr).toBe('');
    expect(verified.code).toBe(0);
    expect(verified.stdout).toMatch(/\nok\n/);
  });

  it('fails with TEAM_NOT_FOUND naming the teams that are there', async () => {
    const state = path.join(work, 'state');
    await createJsonlTeam(state, TEAM);
    const run = await runBin(['inspect', '--dir', 'state', '--team', 'team-x'], { cwd: work });
    expect(run.code).toBe(1);
    expect(run.stderr).toMatch(
      /^teamwire inspect: TEAM_NOT_FOUND: no team team-x in .*teams there: team-cli-1\n$/,
    );
  });

  it('verify fails naming a corrupted log line', async () => {
    const state = path.join(work, 'state');
    const dir = await createJsonlTeam(state, TEAM);
    const logFile = path.join(dir, 'log.jsonl');
    const lines = (await readFile(logFile, 'utf8')).split('\n');
    expect(lines.length).toBeGreaterThan(4);
    lines[2] = '{"type":"member","broken":';
    await writeFile(logFile, lines.join('\n'));
    const run = await runBin(['verify', '--dir', state, '--team', TEAM], { cwd: work });
    expect(run.code).toBe(1);
    expect(run.stderr).toMatch(/^teamwire verify: CORRUPT_LOG: .*log\.jsonl.*\n$/);
  });

  it('verify fails on a transcript line that is not a transcript entry', async () => {
    const state = path.join(work, 'state');
    const dir = await createJsonlTeam(state, TEAM);
    const inspected = JSON.parse(
      (await runBin(['inspect', '--dir', state, '--team', TEAM, '--json'], { cwd: work })).stdout,
    );
    const alice = inspected.members.find((m: { name: string }) => m.name === 'alice');
    await mkdir(path.join(dir, 'transcripts'), { recursive: true });
    await writeFile(
      path.join(dir, 'transcripts', `${alice.id}.jsonl`),
      '{"not":"an entry"}\n{"also":"not"}\n',
    );
    const run = await runBin(['verify', '--dir', state, '--team', TEAM, '--json'], { cwd: work });
    expect(run.code).toBe(1);
    expect(JSON.parse(run.stdout).problems).toEqual([
      expect.objectContaining({
        code: 'INVALID_RECORD',
        message: expect.stringMatching(/^transcript of alice: line 1/),
      }),
    ]);
    expect(run.stderr).toMatch(/^teamwire verify: INVALID_RECORD: transcript of alice: line 1/);
  });

  it('serves the dashboard, its snapshot and MCP on one port, from another folder, until SIGTERM', async () => {
    await createJsonlTeam(path.join(work, 'state'), TEAM);
    const elsewhere = path.join(work, 'elsewhere');
    await mkdir(elsewhere);
    const child = spawn(
      process.execPath,
      [BIN, 'serve', '--dir', path.join(work, 'state'), '--team', TEAM],
      { cwd: elsewhere, stdio: ['ignore', 'pipe', 'pipe'] },
    );
    const exited = new Promise<number | null>((resolve) => child.once('close', resolve));
    let stdout = '';
    let stderr = '';
    child.stderr.on('data', (chunk: Buffer) => {
      stderr += chunk.toString('utf8');
    });
    const printed = new Promise<string>((resolve, reject) => {
      child.stdout.on('data', (chunk: Buffer) => {
        stdout += chunk.toString('utf8');
        if (/^ {2}alice: .*\n/m.test(stdout)) resolve(stdout);
      });
      child.once('close', () => reject(new Error(`serve exited: ${stderr}`)));
    });
    try {
      const lines = await printed;
      const page = new URL(/^dashboard: (\S+)$/m.exec(lines)?.[1] ?? '');
      const mcpUrl = /^MCP: (\S+)$/m.exec(lines)?.[1] ?? '';
      expect(page.hostname).toBe('127.0.0.1');
      expect(new URL(mcpUrl).port).toBe(page.port);
      const token = page.searchParams.get('token') ?? '';
      const snapshotUrl = new URL('/api/snapshot', page);
      expect((await fetch(snapshotUrl)).status).toBe(401);
      const snapshot = await fetch(snapshotUrl, { headers: { authorization: `Bearer ${token}` } });
      expect(snapshot.status).toBe(200);
      const body = (await snapshot.json()) as { teamId: string; usage?: Record<string, unknown> };
      expect(body.teamId).toBe(TEAM);
      expect(Object.keys(body.usage ?? {}).sort()).toEqual(['alice', 'lead']);

      const aliceToken = /Bearer ([A-Za-z0-9._~+/=-]+)/.exec(
        /^ {2}alice: (.*)$/m.exec(lines)?.[1] ?? '',
      )?.[1];
      expect(aliceToken).toBeDefined();
      const client = new Client({ name: 'alice', version: '1.0.0' });
      await client.connect(
        new StreamableHTTPClientTransport(new URL(mcpUrl), {
          requestInit: { headers: { Authorization: `Bearer ${aliceToken}` } },
        }),
      );
      const inbox = await client.callTool({ name: 'read_inbox', arguments: {} });
      expect(JSON.stringify(inbox.structuredContent)).toContain(ALICE_PROMPT);
      await client.close();
    } finally {
      child.kill('SIGTERM');
    }
    expect(await exited).toBe(0);
  });

  it('serve --a2a prints the Agent Card URL and takes A2A messages with the edge token', async () => {
    await createJsonlTeam(path.join(work, 'state'), TEAM);
    const child = spawn(
      process.execPath,
      [BIN, 'serve', '--dir', path.join(work, 'state'), '--team', TEAM, '--a2a'],
      { cwd: work, stdio: ['ignore', 'pipe', 'pipe'] },
    );
    const exited = new Promise<number | null>((resolve) => child.once('close', resolve));
    let stdout = '';
    let stderr = '';
    child.stderr.on('data', (chunk: Buffer) => {
      stderr += chunk.toString('utf8');
    });
    const printed = new Promise<string>((resolve, reject) => {
      child.stdout.on('data', (chunk: Buffer) => {
        stdout += chunk.toString('utf8');
        if (/^A2A agent card: \S+\n/m.test(stdout)) resolve(stdout);
      });
      child.once('close', () => reject(new Error(`serve exited: ${stderr}`)));
    });
    try {
      const lines = await printed;
      const page = new URL(/^dashboard: (\S+)$/m.exec(lines)?.[1] ?? '');
      const cardUrl = new URL(/^A2A agent card: (\S+)$/m.exec(lines)?.[1] ?? '');
      expect(cardUrl.pathname).toBe('/.well-known/agent-card.json');
      const card = (await (await fetch(cardUrl)).json()) as { name: string };
      expect(card.name).toBe(TEAM);
      const rpc = (headers: Record<string, string>) =>
        fetch(new URL('/a2a', page), {
          method: 'POST',
          headers: { 'content-type': 'application/json', ...headers },
          body: JSON.stringify({
            jsonrpc: '2.0',
            id: 1,
            method: 'message/send',
            params: {
              message: {
                kind: 'message',
                messageId: 'cli-1',
                role: 'user',
                parts: [{ kind: 'text', text: 'hi' }],
              },
              configuration: { blocking: false },
            },
          }),
        });
      expect((await rpc({})).status).toBe(401);
      const token = page.searchParams.get('token') ?? '';
      const sent = (await (await rpc({ authorization: `Bearer ${token}` })).json()) as {
        result: { kind: string; status: { state: string } };
      };
      expect(sent.result.kind).toBe('task');
      expect(sent.result.status.state).toBe('working');
    } finally {
      child.kill('SIGTERM');
    }
    expect(await exited).toBe(0);
    await expect(
      readFile(path.join(work, 'state', 'teams', TEAM, 'a2a-tasks.jsonl'), 'utf8'),
    ).resolves.toContain('cli-1');
  });

  it('serves a member over stdio to the official MCP client, from another folder', async () => {
    const state = path.join(work, 'state');
    await createJsonlTeam(state, TEAM);
    const transport = new StdioClientTransport({
      command: process.execPath,
      args: [BIN, 'mcp', '--dir', state, '--team', TEAM],
      cwd: work,
      stderr: 'pipe',
    });
    let stderr = '';
    transport.stderr?.on('data', (chunk: Buffer) => {
      stderr += chunk.toString('utf8');
    });
    const client = new Client({ name: 'cli-test', version: '1.0.0' });
    await client.connect(transport);
    try {
      const tools = (await client.listTools()).tools.map((t) => t.name);
      expect(tools).toEqual(expect.arrayContaining(['read_inbox', 'ack_inbox', 'send_message']));
      expect(tools).not.toContain('spawn_teammate');
      const inbox = await client.callTool({ name: 'read_inbox', arguments: {} });
      expect(inbox.isError).toBeFalsy();
      const page = inbox.structuredContent as {
        messages: { text: string }[];
        cursor: string;
      };
      expect(page.messages).toHaveLength(2);
      expect(page.messages[0]?.text).toContain(ALICE_PROMPT);
      expect(page.messages[1]?.text).toContain(LEAD_NOTE);
      const acked = await client.callTool({
        name: 'ack_inbox',
        arguments: { cursor: page.cursor },
      });
      expect(acked.structuredContent).toMatchObject({ acknowledged: 2 });
      expect(stderr).toContain(`serving alice of team ${TEAM} over stdio`);
      const sent = await client.callTool({
        name: 'send_message',
        arguments: { to: 'lead', message: 'The lexer is done.' },
      });
      expect(sent.isError).toBeFalsy();
    } finally {
      await client.close();
    }
    // the acknowledgement is durable: the lock is free again and alice's mail is gone
    const after = JSON.parse(
      (await runBin(['inspect', '--dir', state, '--team', TEAM, '--json'], { cwd: work })).stdout,
    );
    // the lead runs on a model this process does not have: it was left stopped, its mail kept
    expect(after.pendingMail).toEqual([
      expect.objectContaining({ from: 'alice', to: 'lead', text: 'The lexer is done.' }),
    ]);
    expect(after.members).toEqual([
      expect.objectContaining({ name: 'lead', phase: 'active' }),
      expect.objectContaining({ name: 'alice', phase: 'active' }),
    ]);
  });

  it('mcp --agents also runs the members of the agent types the module defines', async () => {
    const state = path.join(work, 'state');
    await createJsonlTeam(state, TEAM);
    const testing = pathToFileURL(
      path.join(path.dirname(BIN), '../node_modules/@teamwire/core/dist/testing/index.js'),
    ).href;
    await writeFile(
      path.join(work, 'agents.mjs'),
      `import { createScriptedModel } from ${JSON.stringify(testing)};
const model = createScriptedModel({
  scripts: {
    lead: ({ call }) =>
      call === 1
        ? { toolCalls: [{ name: 'send_message', input: { to: 'alice', message: 'Thanks, alice.' } }] }
        : { text: 'noted' },
  },
});
export default { agents: [{ type: 'lead', systemPrompt: 'You lead.', model }] };
`,
    );
    const transport = new StdioClientTransport({
      command: process.execPath,
      args: [BIN, 'mcp', '--dir', 'state', '--team', TEAM, '--agents', 'agents.mjs'],
      cwd: work,
      stderr: 'pipe',
    });
    const client = new Client({ name: 'cli-test', version: '1.0.0' });
    await client.connect(transport);
    try {
      const first = await client.callTool({ name: 'read_inbox', arguments: {} });
      const { cursor } = first.structuredContent as { cursor: string };
      await client.callTool({ name: 'ack_inbox', arguments: { cursor } });
      await client.callTool({
        name: 'send_message',
        arguments: { to: 'lead', message: 'The lexer is done.' },
      });
      // the lead's answer is the next mail: wait_for_change returns at once when mail is pending
      const texts: string[] = [];
      for (let change = 0; change < 10 && texts.length === 0; change++) {
        await client.callTool({ name: 'wait_for_change', arguments: { timeoutSeconds: 20 } });
        const page = await client.callTool({ name: 'read_inbox', arguments: {} });
        texts.push(
          ...(page.structuredContent as { messages: { text: string }[] }).messages.map(
            (m) => m.text,
          ),
        );
      }
      expect(texts).toEqual([expect.stringContaining('Thanks, alice.')]);
    } finally {
      await client.close();
    }
  });

  it('mcp refuses a member that is not external, and one that does not exist', async () => {
    const state = path.join(work, 'state');
    await createJsonlTeam(state, TEAM);
    const lead = await runBin(['mcp', '--dir', state, '--team', TEAM, '--member', 'lead'], {
      cwd: work,
    });
    expect(lead.code).toBe(1);
    expect(lead.stderr).toMatch(/^teamwire mcp: NOT_EXTERNAL: lead runs on a model/);
    const bob = await runBin(['mcp', '--dir', state, '--team', TEAM, '--member', 'bob'], {
      cwd: work,
    });
    expect(bob.code).toBe(1);
    expect(bob.stderr).toMatch(
      /^teamwire mcp: UNKNOWN_MEMBER: the team has no member bob \(external members: alice\)/,
    );
  });
});
