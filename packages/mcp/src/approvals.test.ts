import {
  APPROVAL_REASON_MAX,
  createAgentRegistry,
  defineTool,
  openTeam,
  type TeamService,
} from '@teamwire/core';
import {
  createMemoryTeamLog,
  createMemoryTranscriptStore,
  createScriptedModel,
} from '@teamwire/core/testing';
import { xmlFormat } from '@teamwire/protocol';
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { type ServedRoutes, serveRoutes } from '../test/serve-http.mjs';
import { SECRET, TEAM_ID } from '../test/team-fixture.mjs';
import { createMcpRoutes, createTokenIssuer } from './index.js';
import { call, codeOf, connectHttp } from './test-clients.js';

const tokens = createTokenIssuer({ secret: SECRET, teamId: TEAM_ID });
const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup().catch(() => {});
});

/**
 * A team in memory: bob (a model-run worker) calls `deploy`, which needs the approval of alice,
 * an external member; carol is another external member. The lead is external when `externalLead`.
 */
async function openApprovalTeam(options: { externalLead?: boolean } = {}): Promise<{
  team: TeamService;
  http: ServedRoutes;
  deploys: string[];
  log: ReturnType<typeof createMemoryTeamLog>;
}> {
  const deploys: string[] = [];
  const deploy = defineTool({
    name: 'deploy',
    description: 'Deploys to an environment.',
    inputSchema: z.object({ target: z.string() }),
    needsApproval: true,
    async execute({ target }) {
      deploys.push(target);
      return `deployed to ${target}`;
    },
  });
  const model = createScriptedModel({
    scripts: {
      lead: () => ({ text: 'Noted.' }),
      bob: ({ call }) =>
        call === 1
          ? { toolCalls: [{ name: 'deploy', input: { target: 'prod' } }] }
          : { text: `done ${call}` },
    },
  });
  const log = createMemoryTeamLog({ teamId: TEAM_ID });
  const team = await openTeam({
    teamId: TEAM_ID,
    log,
    transcripts: createMemoryTranscriptStore(),
    format: xmlFormat,
    agents: createAgentRegistry([
      { type: 'lead', systemPrompt: 'You lead.', model },
      { type: 'client-lead', description: 'A lead in a client', external: true },
      { type: 'reviewer', description: 'Reviews outside teamwire', external: true },
      {
        type: 'deployer',
        systemPrompt: 'You deploy.',
        model,
        tools: [deploy],
        approval: { approver: 'alice', expiresInMs: 3_600_000 },
      },
    ]),
    lead: { agentType: options.externalLead === true ? 'client-lead' : 'lead' },
    idleClaim: false,
  });
  const http = await serveRoutes({
    routes: createMcpRoutes({ team, cursors: tokens, agentTypes: ['reviewer', 'deployer'] }),
    tokens,
  });
  cleanups.push(
    () => team.dispose(),
    () => http.close(),
  );
  for (const name of ['alice', 'carol']) {
    await team.spawnTeammate(team.lead, {
      name,
      description: 'reviews',
      prompt: 'Review what you are asked to.',
      agentType: 'reviewer',
    });
  }
  return { team, http, deploys, log };
}

async function parkBob(team: TeamService): Promise<void> {
  await team.spawnTeammate(team.lead, {
    name: 'bob',
    description: 'deploys',
    prompt: 'Deploy to prod.',
    agentType: 'deployer',
  });
  await team.idle();
}

describe('approvals over MCP', () => {
  it('the approver lists a parked call, approves it, and it runs once; a non-approver is refused', async () => {
    const { team, http, deploys, log } = await openApprovalTeam();
    await parkBob(team);
    expect(deploys).toEqual([]);
    const alice = await connectHttp(http.url, tokens.tokenFor('alice'));
    const carol = await connectHttp(http.url, tokens.tokenFor('carol'));
    cleanups.push(
      () => alice.close(),
      () => carol.close(),
    );

    const listed = await call(alice, 'list_approvals');
    expect(listed.more).toBe(0);
    expect(listed.approvals).toHaveLength(1);
    const [pending] = listed.approvals;
    expect(pending).toMatchObject({
      kind: 'tool',
      requester: 'bob',
      approver: 'alice',
      toolName: 'deploy',
      input: '{"target":"prod"}',
      status: 'pending',
    });
    const [held] = team.approvals({ status: 'pending' });
    expect(pending.approvalId).toBe(held?.id);
    expect(pending.expiresAt).toBe(new Date(held?.expiresAt as number).toISOString());
    const lifetime = Date.parse(pending.expiresAt) - Date.parse(pending.requestedAt);
    expect(Math.abs(lifetime - 3_600_000)).toBeLessThan(1_000);
    // alice was asked by mail naming the approval
    const mail = await call(alice, 'read_inbox');
    const asked = mail.messages.filter((m: { kind: string }) => m.kind === 'approval_request');
    expect(asked).toHaveLength(1);
    expect(asked[0].text).toContain(pending.approvalId);
    // carol decides nothing of alice's: nothing listed as hers, and her decision is refused
    expect((await call(carol, 'list_approvals')).approvals).toEqual([]);
    expect((await call(carol, 'list_approvals', { scope: 'team' })).approvals).toHaveLength(1);
    const before = log.records().length;
    expect(
      await codeOf(
        call(carol, 'decide_approval', { approvalId: pending.approvalId, decision: 'approved' }),
      ),
    ).toBe('NOT_THE_APPROVER');
    expect(
      await codeOf(
        call(alice, 'decide_approval', {
          approvalId: pending.approvalId,
          decision: 'approved',
          reason: 'x'.repeat(APPROVAL_REASON_MAX + 1),
        }),
      ),
    ).toBe('INVALID_ARGUMENT');
    expect(
      await codeOf(call(alice, 'decide_approval', { approvalId: 'nope', decision: 'approved' })),
    ).toBe('APPROVAL_NOT_FOUND');
    expect(log.records().length).toBe(before);
    expect(deploys).toEqual([]);

    const decided = await call(alice, 'decide_approval', {
      approvalId: pending.approvalId,
      decision: 'approved',
      reason: 'ship it',
    });
    expect(decided).toMatchObject({ status: 'approved', decider: 'alice', reason: 'ship it' });
    await team.idle();
    expect(deploys).toEqual(['prod']);
    expect(
      await codeOf(
        call(alice, 'decide_approval', { approvalId: pending.approvalId, decision: 'rejected' }),
      ),
    ).toBe('APPROVAL_DECIDED');
    await team.idle();
    expect(deploys).toEqual(['prod']);
    expect((await call(alice, 'list_approvals')).approvals).toEqual([]);
    const history = await call(alice, 'list_approvals', { status: 'any' });
    expect(history.approvals).toMatchObject([
      { approvalId: pending.approvalId, status: 'approved', decider: 'alice' },
    ]);
    expect(await codeOf(call(alice, 'list_approvals', { limit: 51 }))).toBe('INVALID_ARGUMENT');
  });

  it('a rejection by the approver never runs the call', async () => {
    const { team, http, deploys } = await openApprovalTeam();
    await parkBob(team);
    const alice = await connectHttp(http.url, tokens.tokenFor('alice'));
    cleanups.push(() => alice.close());
    const [pending] = (await call(alice, 'list_approvals')).approvals;
    const decided = await call(alice, 'decide_approval', {
      approvalId: pending.approvalId,
      decision: 'rejected',
      reason: 'not on a Friday',
    });
    expect(decided.status).toBe('rejected');
    await team.idle();
    expect(deploys).toEqual([]);
    expect(team.approvals({ status: 'rejected' })).toHaveLength(1);
  });

  it('offers one decide_approval to an external lead, next to its lead tools', async () => {
    const { http } = await openApprovalTeam({ externalLead: true });
    const lead = await connectHttp(http.url, tokens.tokenFor('lead'));
    cleanups.push(() => lead.close());
    const names = (await lead.listTools()).tools.map((t) => t.name);
    expect(names.filter((name) => name === 'decide_approval')).toHaveLength(1);
    expect(names).toEqual(expect.arrayContaining(['list_approvals', 'spawn_teammate']));
  });
});
