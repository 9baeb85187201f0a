import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { contentText } from '../content.js';
import { TeamError } from '../errors.js';
import type { AgentEvent } from '../ports/events.js';
import type { WorkspaceProvider } from '../ports/workspace.js';
import type { MemberRecord } from '../records.js';
import { TeamState } from '../state/index.js';
import type { MemoryTeamLog, MemoryTranscriptStore } from '../testing/memory-stores.js';
import { createMemoryTeamLog, createMemoryTranscriptStore } from '../testing/memory-stores.js';
import { createMemoryWorkspaces } from '../testing/memory-workspaces.js';
import { createScriptedModel } from '../testing/scripted-model.js';
import { createSimpleFormat } from '../testing/simple-format.js';
import { createAgentRegistry, defineTool } from './agents.js';
import { openTeam } from './open-team.js';
import type { Harness, HarnessOptions } from './test-harness.js';
import { deferred, describeTranscript, notedLead, openHarness, TEAM_ID } from './test-harness.js';

const TEAM_CWD = '/projects/app';
const ALICE_PATH = `/memory-workspaces/${TEAM_ID}/alice`;

/** A tool that records the directory each caller's context gives it. */
function whereTool(seen: Map<string, string[]>) {
  return defineTool({
    name: 'where',
    description: 'Says where you work.',
    inputSchema: z.object({}),
    async execute(_input, context) {
      const name = context.agent.name;
      seen.set(name, [...(seen.get(name) ?? []), context.cwd]);
      return context.cwd;
    },
  });
}

/** Calls `where` on its first call of every turn, then says done. */
const whereThenDone = () => {
  let asked = false;
  return () => {
    asked = !asked;
    return asked ? { toolCalls: [{ name: 'where' }] } : { text: 'done' };
  };
};

function memoryStores(): { log: MemoryTeamLog; transcripts: MemoryTranscriptStore } {
  return {
    log: createMemoryTeamLog({ teamId: TEAM_ID }),
    transcripts: createMemoryTranscriptStore(),
  };
}

async function open(options: Partial<HarnessOptions> & { seen: Map<string, string[]> }) {
  const { seen, ...rest } = options;
  return openHarness({
    cwd: TEAM_CWD,
    workerTools: [whereTool(seen)],
    coderTools: [whereTool(seen)],
    leadTools: [whereTool(seen)],
    ...rest,
    scripts: { lead: notedLead, ...rest.scripts },
  });
}

function spawn(h: Harness, name: string, agentType: string, prompt = `Hi ${name}.`) {
  return h.service.spawnTeammate(h.service.lead, {
    name,
    description: `${name} helps`,
    prompt,
    agentType,
  });
}

function memberRecords(h: Harness, name: string): MemberRecord['member'][] {
  return h.log
    .records()
    .flatMap((r) => (r.type === 'member' && r.member.name === name ? [r.member] : []));
}

function workspaceEvents(h: Harness): { agent: string; event: AgentEvent }[] {
  return h.sink.events.filter((e) => e.event.type === 'workspace');
}

describe('workspaces of isolated members', () => {
  it('records the workspace of an isolated member and hands it to its tools as ctx.cwd', async () => {
    const seen = new Map<string, string[]>();
    const workspaces = createMemoryWorkspaces();
    const h = await open({
      seen,
      workspaces,
      scripts: { lead: whereThenDone(), alice: whereThenDone(), bob: whereThenDone() },
    });
    await h.service.promptLead('Where are you?');
    await spawn(h, 'alice', 'coder');
    await spawn(h, 'bob', 'worker');
    await h.service.idle();

    const alice = memberRecords(h, 'alice');
    expect(alice.map((m) => m.phase)).toEqual(['provisioning', 'active']);
    expect(alice[0]?.workspace).toBeUndefined();
    expect(alice[1]?.workspace).toEqual({
      path: ALICE_PATH,
      branch: 'teamwire/alice',
      base: '0000000',
    });
    expect(seen.get('alice')).toEqual([ALICE_PATH]);
    // members without isolation, and the lead, work in the team's directory
    expect(seen.get('bob')).toEqual([TEAM_CWD]);
    expect(seen.get('lead')?.length).toBeGreaterThan(0);
    expect(new Set(seen.get('lead'))).toEqual(new Set([TEAM_CWD]));
    expect(memberRecords(h, 'bob').every((m) => m.workspace === undefined)).toBe(true);
    expect(workspaces.calls).toEqual([
      {
        method: 'acquire',
        teamId: TEAM_ID,
        member: { id: h.memberId('alice'), name: 'alice' },
      },
    ]);
    expect(workspaceEvents(h)).toEqual([
      {
        agent: 'alice',
        event: {
          type: 'workspace',
          memberId: h.memberId('alice'),
          action: 'acquired',
          path: ALICE_PATH,
          branch: 'teamwire/alice',
        },
      },
    ]);
    expect(h.service.listMembers(h.service.lead).find((m) => m.name === 'alice')).toMatchObject({
      workspace: { path: ALICE_PATH },
    });
    expect(h.sink.errors()).toEqual([]);
  });

  it('defaults the team directory to process.cwd()', async () => {
    const seen = new Map<string, string[]>();
    const h = await openHarness({
      workerTools: [whereTool(seen)],
      scripts: { lead: notedLead, bob: whereThenDone() },
    });
    await spawn(h, 'bob', 'worker');
    await h.service.idle();
    expect(seen.get('bob')).toEqual([process.cwd()]);
  });

  it('fails an isolated spawn without a provider (WORKSPACE_UNAVAILABLE), never using the shared directory', async () => {
    const seen = new Map<string, string[]>();
    const h = await open({ seen, scripts: { carol: whereThenDone() } });
    const error = await spawn(h, 'carol', 'coder').catch((e: unknown) => e);
    expect(TeamError.hasCode(error, 'WORKSPACE_UNAVAILABLE')).toBe(true);
    await h.service.idle();
    const carol = h.service.listMembers(h.service.lead).find((m) => m.name === 'carol');
    expect(carol).toMatchObject({ phase: 'failed', status: 'failed' });
    expect(carol?.error).toMatch(/^WORKSPACE_UNAVAILABLE: /);
    expect(carol?.workspace).toBeUndefined();
    // carol never ran: no model call, no tool saw any directory
    expect(h.model.calls('carol')).toBe(0);
    expect(seen.get('carol')).toBeUndefined();
    expect(workspaceEvents(h).map((e) => e.event)).toEqual([
      expect.objectContaining({
        action: 'acquire-failed',
        error: expect.objectContaining({ code: 'WORKSPACE_UNAVAILABLE' }),
      }),
    ]);
    // the log folds
    expect(() => TeamState.fromRecords(h.log.records(), { teamId: TEAM_ID })).not.toThrow();
  });

  it('fails the spawn with the code the provider throws, and cleans up what acquire left', async () => {
    const seen = new Map<string, string[]>();
    const workspaces = createMemoryWorkspaces();
    workspaces.failAcquire(
      new TeamError('WORKSPACE_TAKEN', 'branch teamwire/dave is checked out elsewhere'),
      'dave',
    );
    // the lead spawns through its tool: the failure comes back to it as a tool error with the code
    const h = await open({
      seen,
      workspaces,
      scripts: {
        lead: ({ call }) =>
          call === 1
            ? {
                toolCalls: [
                  {
                    name: 'spawn_teammate',
                    input: { name: 'dave', description: 'd', prompt: 'Go.', agentType: 'coder' },
                  },
                ],
              }
            : { text: 'Noted.' },
        dave: whereThenDone(),
      },
    });
    await h.service.promptLead('Spawn dave.');
    await h.service.idle();
    const toolResult = h.transcript('lead').find((line) => line.startsWith('tool spawn_teammate'));
    expect(toolResult).toMatch(/^tool spawn_teammate \(error\): .*"code":"WORKSPACE_TAKEN"/);
    const dave = h.service.listMembers(h.service.lead).find((m) => m.name === 'dave');
    expect(dave).toMatchObject({ phase: 'failed' });
    expect(dave?.error).toBe('WORKSPACE_TAKEN: branch teamwire/dave is checked out elsewhere');
    expect(workspaces.calls.map((c) => [c.method, c.member.name, c.recorded])).toEqual([
      ['acquire', 'dave', undefined],
      ['release', 'dave', undefined],
    ]);
    expect(h.model.calls('dave')).toBe(0);
    expect(workspaceEvents(h).map((e) => e.event)).toEqual([
      expect.objectContaining({
        action: 'acquire-failed',
        error: expect.objectContaining({ code: 'WORKSPACE_TAKEN' }),
      }),
      expect.objectContaining({ action: 'removed' }),
    ]);
    // its presence ends: a board does not show it running
    expect(h.sink.events.filter((e) => e.agent === 'dave' && e.event.type === 'status')).toEqual([
      { agent: 'dave', event: { type: 'status', status: 'failed' } },
    ]);
  });

  it('refuses a provider that returns a relative path (WORKSPACE_FAILED)', async () => {
    const seen = new Map<string, string[]>();
    const memory = createMemoryWorkspaces();
    const workspaces: WorkspaceProvider = {
      ...memory,
      acquire: async () => ({ path: 'relative/dir' }),
    };
    const h = await open({ seen, workspaces, scripts: { erin: whereThenDone() } });
    await expect(spawn(h, 'erin', 'coder')).rejects.toMatchObject({ code: 'WORKSPACE_FAILED' });
    expect(seen.get('erin')).toBeUndefined();
  });

  it('gives a revived member the workspace its record holds, after a reopen', async () => {
    const memory = memoryStores();
    const workspaces = createMemoryWorkspaces();
    const seen = new Map<string, string[]>();
    const a = await open({ seen, memory, workspaces, scripts: { alice: whereThenDone() } });
    await spawn(a, 'alice', 'coder');
    await a.service.idle();
    await a.service.dispose();
    const recorded = memberRecords(a, 'alice').at(-1)?.workspace;
    expect(recorded?.path).toBe(ALICE_PATH);

    const b = await open({
      seen,
      memory,
      workspaces,
      ids: 'b',
      scripts: { alice: whereThenDone() },
    });
    await b.service.sendMessage(b.service.lead, { to: 'alice', text: 'Again.' });
    await b.service.idle();
    expect(workspaces.calls.map((c) => [c.method, c.recorded])).toEqual([
      ['acquire', undefined],
      ['acquire', recorded],
    ]);
    expect(seen.get('alice')).toEqual([ALICE_PATH, ALICE_PATH]);
    // no second member record: the workspace stays as recorded
    expect(memberRecords(b, 'alice').map((m) => m.phase)).toEqual(['provisioning', 'active']);
    expect(b.sink.errors()).toEqual([]);
  });

  it('fails a revival whose workspace cannot be acquired: no turn, tasks released, lead told', async () => {
    const memory = memoryStores();
    const workspaces = createMemoryWorkspaces();
    const seen = new Map<string, string[]>();
    const a = await open({ seen, memory, workspaces, scripts: { alice: whereThenDone() } });
    await spawn(a, 'alice', 'coder');
    await a.service.idle();
    const task = await a.service.createTask(a.service.lead, { subject: 's', description: 'd' });
    await a.service.updateTask(a.service.lead, {
      taskId: task.id,
      action: { type: 'reassign', ownerId: a.memberId('alice') },
    });
    await a.service.dispose();

    workspaces.failAcquire(new TeamError('WORKSPACE_FAILED', 'git worktree add failed'));
    const b = await open({
      seen,
      memory,
      workspaces,
      ids: 'b',
      idleClaim: false,
      scripts: { alice: whereThenDone() },
    });
    await b.service.idle();
    expect(b.model.calls('alice')).toBe(0);
    expect(seen.get('alice')).toEqual([ALICE_PATH]);
    const alice = b.service.listMembers(b.service.lead).find((m) => m.name === 'alice');
    expect(alice).toMatchObject({
      phase: 'active',
      status: 'failed',
      failure: { code: 'WORKSPACE_FAILED' },
    });
    expect(b.service.getTask(b.service.lead, { taskId: task.id })).toMatchObject({
      status: 'pending',
    });
    expect(b.transcript('lead').join('\n')).toMatch(/alice stopped: WORKSPACE_FAILED/);
  });

  it('releases the workspace of a member a crash left provisioning', async () => {
    const memory = memoryStores();
    const inner = createMemoryWorkspaces();
    const hang = deferred<never>();
    const acquiring = deferred();
    const hanging: WorkspaceProvider = {
      ...inner,
      acquire: (options) => {
        acquiring.resolve();
        return inner.acquire(options).then(() => hang.promise);
      },
    };
    const seen = new Map<string, string[]>();
    const a = await open({
      seen,
      memory,
      workspaces: hanging,
      scripts: { alice: whereThenDone() },
    });
    void spawn(a, 'alice', 'coder').catch(() => undefined);
    await acquiring.promise;
    // the "process" dies here: alice is provisioning in the log, her worktree half made
    expect(memberRecords(a, 'alice').map((m) => m.phase)).toEqual(['provisioning']);
    expect(inner.workspaceOf('alice')).toBeDefined();

    const b = await open({ seen, memory, workspaces: inner, ids: 'b', scripts: {} });
    await b.service.idle();
    const alice = b.service.listMembers(b.service.lead).find((m) => m.name === 'alice');
    expect(alice).toMatchObject({ phase: 'failed', error: 'interrupted while provisioning' });
    expect(inner.calls.map((c) => [c.method, c.member.name, c.recorded])).toEqual([
      ['acquire', 'alice', undefined],
      ['release', 'alice', undefined],
    ]);
    expect(inner.workspaceOf('alice')).toBeUndefined();
    expect(seen.get('alice')).toBeUndefined();
  });
});

describe('a kill while a retiring member hands its workspace back', () => {
  it('leaves the shutdown pending, and the reopened team retires the member once', async () => {
    const memory = memoryStores();
    const workspaces = createMemoryWorkspaces();
    const stalled = deferred<void>();
    const releasing = deferred<void>();
    let stall = true;
    // The first release never finishes while the process lives: the kill lands in it.
    const provider: WorkspaceProvider = {
      specificationVersion: 'v1',
      name: workspaces.name,
      acquire: (options) => workspaces.acquire(options),
      release: async (options) => {
        if (stall) {
          stall = false;
          releasing.resolve();
          await stalled.promise;
        }
        return workspaces.release(options);
      },
    };
    const seen = new Map<string, string[]>();
    const a = await open({
      seen,
      memory,
      workspaces: provider,
      scripts: { alice: whereThenDone() },
    });
    await spawn(a, 'alice', 'coder');
    await a.service.idle();
    await a.service.shutdown(a.service.lead, { target: 'alice' });
    await releasing.promise;
    const disposing = a.service.dispose();
    const shutdownId = a.log
      .records()
      .flatMap((r) =>
        r.type === 'message.queued' && r.message.kind === 'shutdown_request' ? [r.message.id] : [],
      )[0] as string;
    // Nothing after the transcript line is durable yet: the request is still pending.
    expect(memberRecords(a, 'alice').at(-1)?.phase).toBe('active');
    expect(
      a.log.records().some((r) => r.type === 'message.delivered' && r.messageId === shutdownId),
    ).toBe(false);
    stalled.resolve();
    await disposing;

    const b = await open({ seen, memory, workspaces: provider, ids: 'b' });
    await b.service.idle();
    expect(memberRecords(b, 'alice').at(-1)?.phase).toBe('retired');
    const delivered = b.log
      .records()
      .filter((r) => r.type === 'message.delivered' && r.messageId === shutdownId);
    expect(delivered).toHaveLength(1);
    const aliceId = b.memberId('alice');
    const inTranscript = (await memory.transcripts.load({ memberId: aliceId })).filter(
      (e) =>
        e.message.role === 'user' &&
        e.message.source?.kind === 'team-message' &&
        e.message.source.messageId === shutdownId,
    );
    expect(inTranscript).toHaveLength(1);
    await b.service.dispose();
  });
});

describe('retiring an isolated member', () => {
  async function retire(options: { work?: boolean; failRelease?: TeamError }) {
    const workspaces = createMemoryWorkspaces();
    const seen = new Map<string, string[]>();
    const h = await open({ seen, workspaces, scripts: { alice: whereThenDone() } });
    await spawn(h, 'alice', 'coder');
    await h.service.idle();
    if (options.work) {
      workspaces.setWork('alice', { commitsAhead: 2, changedFiles: ['src/a.ts', 'README.md'] });
    }
    if (options.failRelease) workspaces.failRelease(options.failRelease);
    await h.service.shutdown(h.service.lead, { target: 'alice' });
    await h.service.idle();
    const aliceId = h.memberId('alice');
    const fromAliceAfterShutdown = (() => {
      const records = h.log.records();
      const shutdownAt = records.findIndex(
        (r) => r.type === 'message.queued' && r.message.kind === 'shutdown_request',
      );
      return records
        .slice(shutdownAt)
        .flatMap((r) =>
          r.type === 'message.queued' && r.message.senderId === aliceId ? [r.message] : [],
        );
    })();
    return { h, workspaces, aliceId, notices: fromAliceAfterShutdown };
  }

  it('keeps a workspace with work: the lead gets a notice and observers a kept event', async () => {
    const { h, workspaces, aliceId, notices } = await retire({ work: true });
    expect(memberRecords(h, 'alice').at(-1)).toMatchObject({
      phase: 'retired',
      workspace: { path: ALICE_PATH },
    });
    expect(workspaces.calls.at(-1)).toEqual({
      method: 'release',
      teamId: TEAM_ID,
      member: { id: aliceId, name: 'alice' },
      recorded: { path: ALICE_PATH, branch: 'teamwire/alice', base: '0000000' },
    });
    expect(workspaceEvents(h).at(-1)).toEqual({
      agent: 'alice',
      event: {
        type: 'workspace',
        memberId: aliceId,
        action: 'kept',
        path: ALICE_PATH,
        branch: 'teamwire/alice',
        commitsAhead: 2,
        changedFiles: ['src/a.ts', 'README.md'],
      },
    });
    expect(notices).toHaveLength(1);
    expect(notices[0]?.kind).toBe('idle_notification');
    const text = contentText(notices[0]?.content ?? []);
    expect(text).toBe(
      `alice retired and its workspace was kept: branch teamwire/alice, 2 commits ahead, 2 changed files not committed, at ${ALICE_PATH}. Changed: src/a.ts, README.md. Merge or remove it when you are done with it.`,
    );
    // the lead reads it, and the workspace is still there
    expect(describeTranscript(h.transcripts.raw(TEAM_ID)).join('\n')).toContain(text);
    expect(workspaces.workspaceOf('alice')?.path).toBe(ALICE_PATH);
  });

  it('removes a workspace without work: a removed event and no notice', async () => {
    const { h, workspaces, notices } = await retire({});
    expect(memberRecords(h, 'alice').at(-1)?.phase).toBe('retired');
    expect(workspaceEvents(h).at(-1)?.event).toMatchObject({
      action: 'removed',
      path: ALICE_PATH,
      commitsAhead: 0,
      changedFiles: [],
    });
    expect(notices).toEqual([]);
    expect(workspaces.workspaceOf('alice')).toBeUndefined();
    // the event comes before the retired status: observers see it while alice is present
    const kinds = h.sink.events
      .filter((e) => e.agent === 'alice')
      .map((e) => (e.event.type === 'status' ? `status:${e.event.status}` : e.event.type));
    expect(kinds.lastIndexOf('workspace')).toBeLessThan(kinds.lastIndexOf('status:retired'));
  });

  it('still retires when the release fails, and says so in an event and the notice', async () => {
    const { h, notices } = await retire({
      failRelease: new TeamError('WORKSPACE_FAILED', 'git worktree remove failed'),
    });
    expect(memberRecords(h, 'alice').at(-1)?.phase).toBe('retired');
    expect(workspaceEvents(h).at(-1)?.event).toMatchObject({
      action: 'release-failed',
      path: ALICE_PATH,
      error: { code: 'WORKSPACE_FAILED', message: 'git worktree remove failed' },
    });
    expect(contentText(notices[0]?.content ?? [])).toBe(
      `alice retired, but its workspace could not be released (WORKSPACE_FAILED: git worktree remove failed); it may still be at ${ALICE_PATH} on branch teamwire/alice.`,
    );
    expect(() => TeamState.fromRecords(h.log.records(), { teamId: TEAM_ID })).not.toThrow();
    expect(h.sink.errors()).toEqual([]);
  });
});

describe('openTeam workspace options', () => {
  const base = () => {
    const model = createScriptedModel();
    return {
      teamId: TEAM_ID,
      log: createMemoryTeamLog({ teamId: TEAM_ID }),
      transcripts: createMemoryTranscriptStore(),
      format: createSimpleFormat(),
      agents: createAgentRegistry([{ type: 'lead', systemPrompt: '', model }]),
      lead: { agentType: 'lead' },
    };
  };

  it('refuses a provider that is not v1 or lacks a method, and a relative cwd', async () => {
    const { release: _release, ...noRelease } = createMemoryWorkspaces();
    await expect(
      openTeam({ ...base(), workspaces: noRelease as unknown as WorkspaceProvider }),
    ).rejects.toMatchObject({ code: 'INVALID_ARGUMENT', details: { option: 'workspaces' } });
    await expect(
      openTeam({
        ...base(),
        workspaces: {
          ...createMemoryWorkspaces(),
          specificationVersion: 'v2',
        } as unknown as WorkspaceProvider,
      }),
    ).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
    await expect(openTeam({ ...base(), cwd: 'relative' })).rejects.toMatchObject({
      code: 'INVALID_ARGUMENT',
      details: { option: 'cwd' },
    });
  });
});
