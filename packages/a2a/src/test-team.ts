import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  type ChatMessage,
  createAgentRegistry,
  openTeam,
  type TeamLog,
  type TeamService,
} from '@teamwire/core';
import { createScriptedModel, type ScriptedStep } from '@teamwire/core/testing';
import { startTeamEdge, type TeamEdge } from '@teamwire/edge';
import { xmlFormat } from '@teamwire/protocol';
import { openJsonlTeamStore } from '@teamwire/storage';
import {
  A2A_CLIENT_AGENT,
  A2A_PATH,
  type A2AServer,
  AGENT_CARD_PATH,
  createA2AServer,
} from './index.js';
import { openJsonlA2ATaskStore } from './task-store.js';

export const TEAM_ID = 'a2a-team';
export const EDGE_TOKEN = 'a-test-edge-token-long-enough';

function lastText(messages: readonly ChatMessage[]): { role: string; text: string } {
  const last = messages.at(-1);
  if (last === undefined) return { role: 'none', text: '' };
  const text = last.content.map((b) => (b.type === 'text' ? b.text : '')).join('');
  return { role: last.role, text };
}

/**
 * The lead's scripted answers to A2A mail: `ASK` in the client's text asks back, `HOLD` waits for
 * `hold` (a test's gate), `BOARD` creates a task first, anything else is answered `done: <text>`.
 */
export function leadScript(hold: () => Promise<unknown>) {
  return ({
    request,
  }: {
    request: { messages: readonly ChatMessage[] };
  }): ScriptedStep | Promise<ScriptedStep> => {
    const { role, text } = lastText(request.messages);
    const last = request.messages.at(-1);
    if (last?.role === 'tool' && last.toolName === 'task_create') {
      return {
        toolCalls: [{ name: 'send_message', input: { to: 'a2a', message: 'done with the board' } }],
      };
    }
    if (role === 'tool' || !text.includes('[A2A task')) return { text: 'ok' };
    const body = text.slice(text.indexOf('[A2A task'));
    const reply = (message: string, summary?: string): ScriptedStep => ({
      toolCalls: [
        { name: 'send_message', input: { to: 'a2a', message, ...(summary ? { summary } : {}) } },
      ],
    });
    if (body.includes('BOARD')) {
      return {
        toolCalls: [{ name: 'task_create', input: { subject: 'Plan', description: 'Plan it.' } }],
      };
    }
    if (body.includes('ASK')) return reply('Which colour?', 'input-required');
    if (body.includes('HOLD')) return { ...reply('done after hold'), gate: hold() };
    const said = body.replace(/^\[A2A task [^\]]*\]\s*/, '').split('<')[0] ?? '';
    return reply(`done: ${said.trim()}`);
  };
}

/** A team in a JSONL folder served over A2A on a loopback edge; reopened on the same folder. */
export interface A2ATestTeam {
  dir: string;
  team: TeamService;
  log: TeamLog;
  server: A2AServer;
  edge: TeamEdge;
  cardUrl: string;
  /** Closes the edge, the A2A server, the team and its stores (a restart's first half). */
  close(): Promise<void>;
}

export async function tempDir(): Promise<{ dir: string; remove(): Promise<void> }> {
  const dir = await mkdtemp(join(tmpdir(), 'teamwire-a2a-'));
  return { dir, remove: () => rm(dir, { recursive: true, force: true }) };
}

export async function openA2ATestTeam(
  dir: string,
  options: { hold?: () => Promise<unknown>; port?: number } = {},
): Promise<A2ATestTeam> {
  const store = await openJsonlTeamStore({ teamId: TEAM_ID, dir: join(dir, 'team'), create: true });
  const agents = createAgentRegistry([
    {
      type: 'lead',
      description: 'Plans the work and answers for the team.',
      systemPrompt: 'You lead.',
      model: createScriptedModel({
        scripts: { lead: leadScript(options.hold ?? (() => new Promise(() => {}))) },
      }),
    },
    A2A_CLIENT_AGENT,
  ]);
  const team = await openTeam({
    teamId: TEAM_ID,
    log: store.log,
    transcripts: store.transcripts,
    format: xmlFormat,
    agents,
    lead: { agentType: 'lead' },
  });
  const tasks = await openJsonlA2ATaskStore(join(dir, 'team'));
  const server = createA2AServer({ team, agents, store: tasks, log: store.log });
  await server.start();
  const edge = await startTeamEdge({
    team,
    token: EDGE_TOKEN,
    dashboard: false,
    port: options.port ?? 0,
    mounts: [
      { path: AGENT_CARD_PATH, access: 'public', fetch: (r) => server.fetchCard(r) },
      { path: A2A_PATH, jsonRpc: true, fetch: (r) => server.fetch(r) },
    ],
  });
  return {
    dir,
    team,
    log: store.log,
    server,
    edge,
    cardUrl: `${edge.origin}${AGENT_CARD_PATH}`,
    async close() {
      await edge.close();
      server.close();
      await team.dispose();
      await tasks.close();
      await store.close();
    },
  };
}

/** Messages the `a2a` member queued to the lead, by the team log. */
export async function mailFromA2A(log: TeamLog, team: TeamService): Promise<string[]> {
  const a2a = team.listMembers(team.lead).find((m) => m.name === 'a2a');
  const out: string[] = [];
  for await (const record of log.read()) {
    if (record.type === 'message.queued' && record.message.senderId === a2a?.id) {
      out.push(record.message.id);
    }
  }
  return out;
}
