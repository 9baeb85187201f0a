import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { createAgentRegistry, openTeam, type TeamLog, type TeamService } from '@teamwire/core';
import { createScriptedModel } from '@teamwire/core/testing';
import { xmlFormat } from '@teamwire/protocol';
import { openJsonlTeamStore } from '@teamwire/storage';
import { afterEach, describe, expect, it } from 'vitest';
import { type A2ABridge, type A2ABridgeRetry, remoteAgentType, startA2ABridge } from './bridge.js';
import { type RemoteAgent, startRemoteAgent } from './remote-agent.js';
import { tempDir } from './test-team.js';

const TOKEN = 'remote-secret-token-1234';
const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

interface Side {
  team: TeamService;
  log: TeamLog;
  bridge: A2ABridge;
  close(): Promise<void>;
}

async function openSide(
  dir: string,
  cardUrl: string,
  options: {
    retry?: A2ABridgeRetry;
    sleep?: (ms: number, signal: AbortSignal) => Promise<void>;
  } = {},
): Promise<Side> {
  const store = await openJsonlTeamStore({ teamId: 'bridge-team', dir, create: true });
  const remote = { type: 'echo-agent', cardUrl, headers: { authorization: `Bearer ${TOKEN}` } };
  const team = await openTeam({
    teamId: 'bridge-team',
    log: store.log,
    transcripts: store.transcripts,
    format: xmlFormat,
    agents: createAgentRegistry([
      {
        type: 'lead',
        systemPrompt: 'You lead.',
        model: createScriptedModel({ scripts: { lead: () => ({ text: 'ok' }) } }),
      },
      remoteAgentType(remote),
    ]),
    lead: { agentType: 'lead' },
  });
  const bridge = startA2ABridge({
    team,
    agents: [remote],
    log: store.log,
    ...(options.retry === undefined ? {} : { retry: options.retry }),
    ...(options.sleep === undefined ? {} : { sleep: options.sleep }),
  });
  return {
    team,
    log: store.log,
    bridge,
    async close() {
      await bridge.close();
      await team.dispose();
      await store.close();
    },
  };
}

/** Mail the member `echo` sent, by the log: [summary, text]. */
async function mailFromEcho(side: Side): Promise<{ summary: string; text: string }[]> {
  const echo = side.team.listMembers(side.team.lead).find((m) => m.name === 'echo');
  const out: { summary: string; text: string }[] = [];
  for await (const r of side.log.read()) {
    if (r.type === 'message.queued' && r.message.senderId === echo?.id) {
      const text = r.message.content.map((b) => (b.type === 'text' ? b.text : '')).join('');
      out.push({ summary: r.message.summary ?? '', text });
    }
  }
  return out;
}

async function spawnEcho(side: Side, prompt: string): Promise<string> {
  const spawned = await side.team.spawnTeammate(side.team.lead, {
    name: 'echo',
    description: 'the remote echo agent',
    prompt,
    agentType: 'echo-agent',
  });
  return spawned.messageId;
}

async function everything(dir: string): Promise<string> {
  let all = '';
  for (const entry of await readdir(dir, { recursive: true, withFileTypes: true })) {
    if (entry.isFile()) all += await readFile(join(entry.parentPath, entry.name), 'utf8');
  }
  return all;
}

async function start(options: Parameters<typeof startRemoteAgent>[0] = {}) {
  const remote = await startRemoteAgent({ token: TOKEN, ...options });
  cleanups.push(() => remote.close());
  const { dir, remove } = await tempDir();
  cleanups.push(remove);
  return { remote, dir };
}

describe('a remote A2A agent as a teammate', () => {
  it('gets its mail as A2A messages keyed by the team message id, and answers the lead once', async () => {
    const { remote, dir } = await start();
    const side = await openSide(dir, remote.cardUrl);
    cleanups.push(() => side.close());
    const id = await spawnEcho(side, 'say hi');
    await side.bridge.settled();
    expect(Object.fromEntries(remote.received)).toEqual({ [id]: 1 });
    expect(remote.refused).toBe(0);
    const mail = await mailFromEcho(side);
    expect(mail).toHaveLength(1);
    expect(mail[0]?.summary).toBe(`a2a-answer:${id}`);
    expect(mail[0]?.text).toContain('echo:');
    // the remote's credentials reach neither the log nor a transcript
    expect(await everything(dir)).not.toContain(TOKEN);
  });

  it('a question of the remote reaches the lead; the lead answer continues the same A2A task', async () => {
    const { remote, dir } = await start({ streaming: false });
    const side = await openSide(dir, remote.cardUrl);
    cleanups.push(() => side.close());
    await spawnEcho(side, 'a QUESTION for you');
    await side.bridge.settled();
    expect((await mailFromEcho(side)).map((m) => m.text)).toEqual(['echo asks: Which one?']);
    await side.team.sendMessage(side.team.lead, { to: 'echo', text: 'the red one' });
    await side.bridge.settled();
    const mail = await mailFromEcho(side);
    expect(mail).toHaveLength(2);
    expect(mail[1]?.summary).toMatch(/^a2a-answer:/);
    expect(mail[1]?.text).toContain('the red one');
  });

  it('retries a remote that is down with doubling waits, and delivers once when it is back', async () => {
    const { remote, dir } = await start();
    const port = remote.port;
    await remote.close();
    let back: RemoteAgent | undefined;
    const waits: number[] = [];
    const side = await openSide(dir, remote.cardUrl, {
      retry: { initialDelayMs: 10, maxDelayMs: 1000, maxAttempts: 10 },
      sleep: async (ms) => {
        waits.push(ms);
        if (waits.length === 3) {
          back = await startRemoteAgent({ token: TOKEN, port });
          cleanups.push(() => (back as RemoteAgent).close());
        }
      },
    });
    cleanups.push(() => side.close());
    const id = await spawnEcho(side, 'are you there');
    await side.bridge.settled();
    expect(waits.slice(0, 3)).toEqual([10, 20, 40]);
    expect(Object.fromEntries(back?.received ?? [])).toEqual({ [id]: 1 });
    expect(await mailFromEcho(side)).toHaveLength(1);
  });

  it('a remote killed mid-exchange and restarted gets the same messageId again; the answer is recorded once', async () => {
    const { remote, dir } = await start();
    remote.hold();
    let back: RemoteAgent | undefined;
    const side = await openSide(dir, remote.cardUrl, {
      retry: { initialDelayMs: 10, maxDelayMs: 1000, maxAttempts: 10 },
      sleep: async () => {
        if (back === undefined) {
          back = await startRemoteAgent({ token: TOKEN, port: remote.port });
          cleanups.push(() => (back as RemoteAgent).close());
        }
      },
    });
    cleanups.push(() => side.close());
    const id = await spawnEcho(side, 'long job');
    await expect.poll(() => remote.texts.length).toBe(1);
    await remote.close(); // killed while the answer is held
    await side.bridge.settled();
    expect(Object.fromEntries(remote.received)).toEqual({ [id]: 1 });
    expect(Object.fromEntries(back?.received ?? [])).toEqual({ [id]: 1 });
    const mail = await mailFromEcho(side);
    expect(mail.map((m) => m.summary)).toEqual([`a2a-answer:${id}`]);
  });

  it('past the bound, the member tells the lead why and is shut down', async () => {
    const { remote, dir } = await start();
    await remote.close();
    const side = await openSide(dir, remote.cardUrl, {
      retry: { initialDelayMs: 1, maxDelayMs: 4, maxAttempts: 3 },
      sleep: async () => {},
    });
    cleanups.push(() => side.close());
    const id = await spawnEcho(side, 'hello?');
    await side.bridge.settled();
    const mail = await mailFromEcho(side);
    expect(mail).toHaveLength(1);
    expect(mail[0]?.summary).toBe(`a2a-failure:${id}`);
    expect(mail[0]?.text).toMatch(/did not answer after 3 attempts/);
    const echo = side.team.listMembers(side.team.lead).find((m) => m.name === 'echo');
    expect(echo?.phase).toBe('retired');
  });

  it('a team restarted mid-exchange resends the same messageId, and the answer is recorded once', async () => {
    const { remote, dir } = await start();
    remote.hold();
    let side = await openSide(dir, remote.cardUrl);
    const id = await spawnEcho(side, 'slow work');
    await expect.poll(() => remote.texts.length).toBe(1);
    await side.close(); // the in-flight request is cut; the mail stays unacknowledged
    remote.release();
    side = await openSide(dir, remote.cardUrl);
    cleanups.push(() => side.close());
    await side.bridge.settled();
    // sent until acknowledged: the same id again, never a new one
    expect([...remote.received.keys()]).toEqual([id]);
    expect(remote.received.get(id)).toBe(2);
    expect(await mailFromEcho(side)).toHaveLength(1);
    // and once acknowledged, never again
    await side.close();
    side = await openSide(dir, remote.cardUrl);
    await side.bridge.settled();
    expect(remote.received.get(id)).toBe(2);
    expect(await mailFromEcho(side)).toHaveLength(1);
  });
});
