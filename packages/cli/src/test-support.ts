import { spawn } from 'node:child_process';
import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { createAgentRegistry, openTeam } from '@teamwire/core';
import { createScriptedModel } from '@teamwire/core/testing';
import { xmlFormat } from '@teamwire/protocol';
import { openJsonlTeamStore } from '@teamwire/storage';

/*
 * Helpers of the tests: the built `teamwire` bin run as a real child process, and a JSONL team
 * made with the packages' own APIs.
 */

/** The built bin (run `pnpm build` first; turbo's `test` depends on it). */
export const BIN = fileURLToPath(new URL('../dist/cli.js', import.meta.url));

/** What a finished run of the bin printed, and its exit code. */
export interface BinRun {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs `teamwire <args>` in `cwd` until it exits. */
export function runBin(
  args: readonly string[],
  options: { cwd: string; env?: NodeJS.ProcessEnv },
): Promise<BinRun> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [BIN, ...args], {
      cwd: options.cwd,
      env: options.env ?? process.env,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => {
      stdout += chunk.toString('utf8');
    });
    child.stderr.on('data', (chunk: Buffer) => {
      stderr += chunk.toString('utf8');
    });
    child.once('error', reject);
    child.once('close', (code) => resolve({ code, stdout, stderr }));
  });
}

/** The agent type of the fixture's external member. */
export const EXTERNAL_TYPE = 'coding-agent';
/** The first message of alice's inbox (her prompt) and the lead's message after it. */
export const ALICE_PROMPT = 'Write the parser, then tell me.';
export const LEAD_NOTE = 'Start with the lexer.';

/**
 * Creates team `teamId` in `<stateDir>/teams/<teamId>`: a lead on a scripted model that is never
 * called, an external member `alice` with her prompt and a note from the lead pending, one task.
 * Returns the team folder.
 */
export async function createJsonlTeam(stateDir: string, teamId: string): Promise<string> {
  const dir = path.join(stateDir, 'teams', teamId);
  await mkdir(dir, { recursive: true });
  const store = await openJsonlTeamStore({ teamId, dir, create: true });
  try {
    const team = await openTeam({
      teamId,
      log: store.log,
      transcripts: store.transcripts,
      format: xmlFormat,
      agents: createAgentRegistry([
        { type: 'lead', systemPrompt: 'You lead a small team.', model: createScriptedModel() },
        { type: EXTERNAL_TYPE, description: 'Claude Code, Cursor, ...', external: true },
      ]),
      lead: { agentType: 'lead' },
      cwd: stateDir,
      idleClaim: false,
    });
    try {
      await team.spawnTeammate(team.lead, {
        name: 'alice',
        description: 'Writes the parser',
        prompt: ALICE_PROMPT,
        agentType: EXTERNAL_TYPE,
      });
      await team.createTask(team.lead, { subject: 'Parser', description: 'Write the parser.' });
      await team.sendMessage(team.lead, { to: 'alice', text: LEAD_NOTE, summary: 'the lexer' });
    } finally {
      await team.dispose();
    }
  } finally {
    await store.close();
  }
  return dir;
}

/**
 * Creates team `teamId` in `<stateDir>/teams/<teamId>` with approvals: members of the `announcer`
 * type need alice's (an external member's) approval to send a message. bob's message is approved
 * by alice with a reason, carl's is still pending; and alice's completion of task-1 was refused
 * by the task gate once. Returns the team folder.
 */
export async function createApprovalTeam(stateDir: string, teamId: string): Promise<string> {
  const dir = path.join(stateDir, 'teams', teamId);
  await mkdir(dir, { recursive: true });
  const store = await openJsonlTeamStore({ teamId, dir, create: true });
  const announcer = (message: string) => (turn: { call: number }) =>
    turn.call === 1
      ? { toolCalls: [{ name: 'send_message', input: { to: 'lead', message } }] }
      : { text: 'done' };
  const model = createScriptedModel({
    scripts: {
      lead: () => ({ text: 'Noted.' }),
      bob: announcer('prod is up'),
      carl: announcer('staging is up'),
    },
  });
  try {
    const team = await openTeam({
      teamId,
      log: store.log,
      transcripts: store.transcripts,
      format: xmlFormat,
      agents: createAgentRegistry([
        { type: 'lead', systemPrompt: 'You lead.', model },
        { type: EXTERNAL_TYPE, description: 'Reviews outside', external: true },
        {
          type: 'announcer',
          systemPrompt: 'You announce.',
          model,
          approval: { tools: ['send_message'], approver: 'alice', expiresInMs: 3_600_000 },
        },
      ]),
      lead: { agentType: 'lead' },
      cwd: stateDir,
      idleClaim: false,
      gates: { taskCompleted: async () => ({ allow: false, feedback: 'tests fail' }) },
    });
    try {
      const spawn = (name: string, agentType: string) =>
        team.spawnTeammate(team.lead, { name, description: name, prompt: 'Go.', agentType });
      await spawn('alice', EXTERNAL_TYPE);
      await spawn('bob', 'announcer');
      await team.idle();
      await spawn('carl', 'announcer');
      await team.idle();
      const alice = team.forMember(team.externalMember('alice'));
      const [bobs] = alice.approvals({ status: 'pending' });
      await alice.decide({
        approvalId: bobs?.id as string,
        decision: 'approved',
        reason: 'ship it',
      });
      await team.idle();
      const task = await alice.createTask({ subject: 'Parser', description: 'Write it.' });
      await alice.updateTask({ taskId: task.id, action: { type: 'claim' } });
      await alice
        .updateTask({ taskId: task.id, action: { type: 'complete' } })
        .catch((error: unknown) => {
          if ((error as { code?: string }).code !== 'GATE_REFUSED') throw error;
        });
    } finally {
      await team.dispose();
    }
  } finally {
    await store.close();
  }
  return dir;
}
