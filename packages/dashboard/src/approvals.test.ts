import {
  APPROVAL_REASON_MAX,
  createAgentRegistry,
  createEventHub,
  defineTool,
  type HubItem,
  openTeam,
  TeamError,
  type TeamGates,
  TeamRecord,
  type TeamService,
} from '@teamwire/core';
import {
  type AgentScript,
  createMemoryTeamLog,
  createMemoryTranscriptStore,
  createScriptedModel,
  type MemoryTeamLog,
} from '@teamwire/core/testing';
import { xmlFormat } from '@teamwire/protocol';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { z } from 'zod';
import { failure } from './http.js';
import { OPERATOR_AGENT } from './index.js';
import { APPROVAL_TEXT_KEEP, cutRecord, MAIL_TEXT_KEEP } from './snapshot-record.js';
import { at, fakePage, http, serveRoutes, type TestServer } from './test-helpers.js';
import {
  APPROVALS_DECIDED_KEEP,
  applyHubItem,
  applyRecord,
  type DashboardSnapshot,
  type DashboardState,
  decidedApprovals,
  emptyState,
  fromSnapshot,
  pendingApprovals,
  selectMail,
} from './view-model.js';

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/** bob and cat each call `commit` once, then answer with text. */
const committing: AgentScript = ({ call, agentName }) =>
  call === 1
    ? {
        toolCalls: [
          { name: 'commit', input: { message: `fix by ${agentName}` }, id: `c-${agentName}` },
        ],
      }
    : { text: `done ${call}` };

/**
 * A served team whose `commit` tool needs approval: a `worker` (bob) asks the operator, a
 * `careful` member (cat) asks the lead, as by default. The hub's items are recorded as the page
 * receives them.
 */
async function approvalTeam(
  options: { gates?: TeamGates; scripts?: Record<string, AgentScript> } = {},
) {
  const runs: string[] = [];
  const commit = defineTool({
    name: 'commit',
    description: 'Commits the work.',
    inputSchema: z.object({ message: z.string() }),
    needsApproval: true,
    async execute({ message }) {
      runs.push(message);
      return `committed: ${message}`;
    },
  });
  const model = createScriptedModel({
    scripts: {
      lead: () => ({ text: 'Noted.' }),
      bob: committing,
      cat: committing,
      ...options.scripts,
    },
  });
  const log = createMemoryTeamLog({ teamId: 't1' });
  const hub = createEventHub({ teamId: 't1', log });
  const items: HubItem[] = [];
  hub.listen((item) => items.push(item), { presence: true });
  const agents: Parameters<typeof createAgentRegistry>[0] = [
    { type: 'lead', systemPrompt: 'Lead.', model },
    {
      type: 'worker',
      systemPrompt: 'Work.',
      model,
      tools: [commit],
      approval: { approver: 'operator', expiresInMs: 3_600_000 },
    },
    { type: 'careful', systemPrompt: 'Work carefully.', model, tools: [commit] },
    OPERATOR_AGENT,
  ];
  const team = await openTeam({
    teamId: 't1',
    log,
    transcripts: createMemoryTranscriptStore(),
    format: xmlFormat,
    agents: createAgentRegistry(agents),
    lead: { agentType: 'lead' },
    events: hub,
    idleClaim: false,
    ...(options.gates === undefined ? {} : { gates: options.gates }),
  });
  const page = await fakePage();
  const server = await serveRoutes({ log, hub, team, assetsDir: page.dir });
  cleanups.push(
    page.remove,
    () => team.dispose(),
    () => server.close(),
    () => hub.close(),
  );
  const post = (action: string, body: unknown) =>
    http(at(server, `/api/actions/${action}`), {
      method: 'POST',
      headers: { 'x-teamwire-token': server.token, 'content-type': 'application/json' },
      body: typeof body === 'string' ? body : JSON.stringify(body),
    }).then((reply) => ({ status: reply.status, body: JSON.parse(reply.body) }));
  const spawn = async (name: string, agentType: string) => {
    await team.spawnTeammate(team.lead, {
      name,
      description: 'commits',
      prompt: 'Commit your work.',
      agentType,
    });
    await team.idle();
  };
  return { team, log, server, items, runs, post, spawn };
}

/** The page's view of `server`'s snapshot, and of the hub's items applied one by one. */
async function views(
  server: TestServer,
  items: readonly HubItem[],
): Promise<{ loaded: DashboardState; streamed: DashboardState }> {
  const snapshot = JSON.parse(
    (await http(at(server, `/api/snapshot?token=${server.token}`))).body,
  ) as DashboardSnapshot;
  const streamed = emptyState('t1');
  for (const item of items) applyHubItem(streamed, item);
  return { loaded: fromSnapshot(snapshot), streamed };
}

function recordsOf<T extends TeamRecord['type']>(log: MemoryTeamLog, type: T) {
  return log.records().filter((r): r is Extract<TeamRecord, { type: T }> => r.type === type);
}

function pendingOnly(team: TeamService) {
  const pending = team.approvals({ status: 'pending' });
  expect(pending).toHaveLength(1);
  return pending[0] as (typeof pending)[number];
}

describe('POST api/actions/decide', () => {
  it('decides as the operator member when it is the approver: approve runs the call once, a second decision is refused', async () => {
    const { team, log, server, items, runs, post, spawn } = await approvalTeam();
    // the operator joins on the page's first action, before bob asks
    expect((await post('message', { to: 'lead', text: 'Starting.' })).status).toBe(200);
    await spawn('bob', 'worker');
    const pending = pendingOnly(team);
    expect(pending).toMatchObject({ requester: 'bob', approver: 'operator', toolName: 'commit' });

    // bad input: typed errors, nothing decided
    const bad = [
      {},
      { approvalId: pending.id },
      { approvalId: pending.id, decision: 'maybe' },
      { approvalId: pending.id, decision: 'approved', by: 'lead' },
      { approvalId: pending.id, decision: 'rejected', reason: 'x'.repeat(APPROVAL_REASON_MAX + 1) },
      { approvalId: '', decision: 'approved' },
    ];
    for (const body of bad) {
      const answer = await post('decide', body);
      expect(answer, JSON.stringify(body).slice(0, 80)).toMatchObject({
        status: 400,
        body: { error: { code: 'INVALID_ARGUMENT' } },
      });
    }
    expect((await post('decide', '{"approvalId":')).status).toBe(400);
    expect(await post('decide', { approvalId: 'no-such-approval', decision: 'approved' })).toEqual({
      status: 404,
      body: { error: { code: 'APPROVAL_NOT_FOUND', message: expect.any(String) } },
    });
    expect(team.approvals({ status: 'pending' }).map((a) => a.id)).toEqual([pending.id]);
    expect(recordsOf(log, 'approval.decided')).toEqual([]);
    expect(runs).toEqual([]);

    // the page shows it pending with the call's input, loaded or streamed
    for (const view of Object.values(await views(server, items))) {
      expect(pendingApprovals(view)).toEqual([
        expect.objectContaining({
          id: pending.id,
          kind: 'tool',
          requester: 'bob',
          approver: 'operator',
          toolName: 'commit',
          input: pending.input,
          inputMore: 0,
          status: 'pending',
          requestedAt: pending.requestedAt,
          expiresAt: pending.expiresAt,
        }),
      ]);
    }

    const approved = await post('decide', { approvalId: pending.id, decision: 'approved' });
    expect(approved).toEqual({
      status: 200,
      body: { approvalId: pending.id, status: 'approved', decider: 'operator' },
    });
    await team.idle();
    expect(runs).toEqual(['fix by bob']);
    const operatorId = team.listMembers(team.lead).find((m) => m.name === 'operator')?.memberId;
    expect(recordsOf(log, 'approval.decided')).toEqual([
      expect.objectContaining({
        approvalId: pending.id,
        decision: 'approved',
        deciderId: operatorId,
      }),
    ]);

    const again = await post('decide', { approvalId: pending.id, decision: 'rejected' });
    expect(again).toMatchObject({ status: 409, body: { error: { code: 'APPROVAL_DECIDED' } } });
    await team.idle();
    expect(runs).toEqual(['fix by bob']);
    expect(recordsOf(log, 'approval.decided')).toHaveLength(1);
    // the page acknowledged the request sent to the operator: nothing piles up in its inbox
    const operator = team.listMembers(team.lead).find((m) => m.name === 'operator');
    await vi.waitFor(() => {
      const request = recordsOf(log, 'message.queued').find(
        (r) => r.message.kind === 'approval_request',
      );
      expect(
        recordsOf(log, 'message.delivered').some((r) => r.messageId === request?.message.id),
      ).toBe(true);
    });
    expect(operator?.memberId).toBeDefined();

    const { loaded, streamed } = await views(server, items);
    for (const view of [loaded, streamed]) {
      expect(pendingApprovals(view)).toEqual([]);
      expect(decidedApprovals(view)).toEqual([
        expect.objectContaining({
          id: pending.id,
          status: 'approved',
          decider: 'operator',
          started: true,
          decidedAt: team.approvals()[0]?.decidedAt,
        }),
      ]);
      // the request and the decision are mail of their own kinds on the timeline
      expect(selectMail(view, { kind: 'approval_request' }).map((m) => [m.from, m.to])).toEqual([
        ['bob', 'operator'],
      ]);
      expect(selectMail(view, { kind: 'approval_decision' }).map((m) => [m.from, m.to])).toEqual([
        ['operator', 'bob'],
      ]);
    }
    expect(streamed.approvals).toEqual(loaded.approvals);
  });

  it('decides as the host when the lead is the approver, and a rejection keeps its reason', async () => {
    const { team, log, server, items, runs, post, spawn } = await approvalTeam();
    await spawn('cat', 'careful');
    const pending = pendingOnly(team);
    expect(pending).toMatchObject({ requester: 'cat', approver: 'lead' });

    const rejected = await post('decide', {
      approvalId: pending.id,
      decision: 'rejected',
      reason: 'Not on a Friday.',
    });
    expect(rejected).toEqual({
      status: 200,
      body: { approvalId: pending.id, status: 'rejected' },
    });
    await team.idle();
    expect(runs).toEqual([]);
    const [decided] = recordsOf(log, 'approval.decided');
    expect(decided).toMatchObject({ decision: 'rejected', reason: 'Not on a Friday.' });
    expect(decided?.deciderId).toBeUndefined();
    // an empty reason is none
    expect(
      (await post('decide', { approvalId: pending.id, decision: 'approved', reason: ' ' })).body
        .error.code,
    ).toBe('APPROVAL_DECIDED');

    for (const view of Object.values(await views(server, items))) {
      expect(decidedApprovals(view)).toEqual([
        expect.objectContaining({
          id: pending.id,
          requester: 'cat',
          approver: 'lead',
          status: 'rejected',
          reason: 'Not on a Friday.',
          reasonMore: 0,
          decider: 'host',
          started: false,
        }),
      ]);
    }
  });

  it('answers the approval codes with their statuses', () => {
    const status = (code: 'APPROVAL_DECIDED' | 'APPROVAL_NOT_FOUND' | 'NOT_THE_APPROVER') =>
      failure(new TeamError(code, 'no')).status;
    expect([
      status('APPROVAL_DECIDED'),
      status('APPROVAL_NOT_FOUND'),
      status('NOT_THE_APPROVER'),
    ]).toEqual([409, 404, 403]);
  });
});

const base = (seq: number) => ({ seq, at: 1_700_000_000_000 + seq * 1000, teamId: 't1' });

/** A lead and a member `ann`, as their records say. */
function roster(): TeamRecord[] {
  return ['lead', 'ann'].map((name, i) => ({
    ...base(i + 1),
    schemaVersion: 1,
    type: 'member',
    member: {
      id: name === 'lead' ? 't1' : 'ann-id',
      name,
      description: name,
      agentType: name === 'lead' ? 'lead' : 'worker',
      provider: 'scripted',
      context: 'fresh',
      phase: 'active',
    },
  }));
}

function requested(seq: number, id: string, extra: Record<string, unknown>): TeamRecord {
  return {
    ...base(seq),
    schemaVersion: 3,
    type: 'approval.requested',
    approval: { id, requesterId: 'ann-id', approverId: 't1', ...extra },
  } as TeamRecord;
}

function decided(seq: number, approvalId: string, reason?: string): TeamRecord {
  return {
    ...base(seq),
    schemaVersion: 3,
    type: 'approval.decided',
    approvalId,
    decision: 'rejected',
    ...(reason === undefined ? {} : { reason }),
  };
}

function snapshotOf(records: readonly TeamRecord[]): DashboardSnapshot {
  return {
    version: 1,
    teamId: 't1',
    records: records.map(cutRecord),
    truncated: 0,
    readOnly: true,
  };
}

describe('the view model of approvals and gates', () => {
  it('shows an input, a plan, a reason and a feedback the snapshot cut as the whole records show them', () => {
    const input = JSON.stringify({ patch: 'line of a patch\n'.repeat(1200) });
    const plan = `1. Read everything.\n${'2. Then think it over. '.repeat(900)}`;
    const reason = 'Because. '.repeat(300);
    const feedback = 'The tests fail: '.repeat(200);
    const records: TeamRecord[] = [
      ...roster(),
      requested(3, 'a-tool', {
        kind: 'tool',
        toolCallId: 'call-1',
        toolName: 'apply_patch',
        input,
        taskId: 'task-1',
        expiresAt: 1_700_000_900_000,
      }),
      requested(4, 'a-plan', { kind: 'plan', plan }),
      decided(5, 'a-plan', reason),
      {
        ...base(6),
        schemaVersion: 3,
        type: 'gate.refused',
        gate: 'teammate_idle',
        memberId: 'ann-id',
        feedback,
        attempt: 1,
      },
    ];
    // records of core's schema, long texts within its bounds
    for (const record of records) expect(TeamRecord.parse(record)).toEqual(record);
    expect(input.length).toBeGreaterThan(APPROVAL_TEXT_KEEP);
    expect(plan.length).toBeGreaterThan(APPROVAL_TEXT_KEEP);
    const cut = records.map(cutRecord);
    expect(cut[2]).toMatchObject({ cut: { 'approval.input': input.length } });
    expect(cut[3]).toMatchObject({ cut: { 'approval.plan': plan.length } });
    expect(cut[4]).toMatchObject({ cut: { 'approval.reason': reason.length } });
    expect(cut[5]).toMatchObject({ cut: { 'gate.feedback': feedback.length } });

    const whole = emptyState('t1');
    for (const record of records) applyRecord(whole, record);
    const loaded = fromSnapshot(snapshotOf(records));
    expect(loaded.approvals).toEqual(whole.approvals);
    expect(loaded.gateRefusals).toEqual(whole.gateRefusals);

    expect(pendingApprovals(loaded)).toEqual([
      expect.objectContaining({
        id: 'a-tool',
        requester: 'ann',
        approver: 'lead',
        toolName: 'apply_patch',
        input: input.slice(0, APPROVAL_TEXT_KEEP),
        inputMore: input.length - APPROVAL_TEXT_KEEP,
        taskId: 'task-1',
        expiresAt: 1_700_000_900_000,
      }),
    ]);
    expect(decidedApprovals(loaded)).toEqual([
      expect.objectContaining({
        id: 'a-plan',
        kind: 'plan',
        plan: plan.slice(0, APPROVAL_TEXT_KEEP),
        planMore: plan.length - APPROVAL_TEXT_KEEP,
        status: 'rejected',
        reason: reason.slice(0, MAIL_TEXT_KEEP),
        reasonMore: reason.length - MAIL_TEXT_KEEP,
        // without a member, a rejection is the host's
        decider: 'host',
      }),
    ]);
    expect(loaded.gateRefusals).toEqual([
      {
        seq: 6,
        at: base(6).at,
        gate: 'teammate_idle',
        member: 'ann',
        taskId: undefined,
        feedback: feedback.slice(0, MAIL_TEXT_KEEP),
        feedbackMore: feedback.length - MAIL_TEXT_KEEP,
        attempt: 1,
      },
    ]);
  });

  it('keeps every pending approval and the newest decided ones', () => {
    const records: TeamRecord[] = [...roster()];
    const total = APPROVALS_DECIDED_KEEP + 10;
    records.push(requested(3, 'kept-pending', { kind: 'tool', toolCallId: 'c', toolName: 't' }));
    for (let i = 0; i < total; i++) {
      const id = `a-${String(i).padStart(3, '0')}`;
      records.push(
        requested(records.length + 1, id, { kind: 'tool', toolCallId: id, toolName: 't' }),
      );
      records.push(decided(records.length + 1, id));
    }
    const state = emptyState('t1');
    for (const record of records) applyRecord(state, record);
    expect(pendingApprovals(state).map((a) => a.id)).toEqual(['kept-pending']);
    const kept = decidedApprovals(state).map((a) => a.id);
    expect(kept).toHaveLength(APPROVALS_DECIDED_KEEP);
    // the latest decision first, the oldest ones gone
    expect(kept[0]).toBe(`a-${String(total - 1).padStart(3, '0')}`);
    expect(kept.at(-1)).toBe(`a-${String(total - APPROVALS_DECIDED_KEEP).padStart(3, '0')}`);
  });

  it("shows a real team's gate refusals as core records them", async () => {
    const { team, log, server, items } = await approvalTeam({
      gates: { taskCompleted: () => ({ allow: false, feedback: 'npm test fails' }) },
      scripts: {
        lead: ({ call }) =>
          call === 1
            ? {
                toolCalls: [
                  { name: 'task_create', input: { subject: 'Fix', description: 'Fix it.' } },
                  { name: 'task_update', input: { taskId: 'task-1', action: 'claim' } },
                  { name: 'task_update', input: { taskId: 'task-1', action: 'complete' } },
                  { name: 'task_update', input: { taskId: 'task-1', action: 'complete' } },
                ],
              }
            : { text: 'Noted.' },
      },
    });
    await team.promptLead('Fix it.');
    await team.idle();
    const truth = recordsOf(log, 'gate.refused');
    expect(truth.map((r) => r.attempt)).toEqual([1, 2]);
    for (const view of Object.values(await views(server, items))) {
      expect(view.gateRefusals).toEqual(
        truth.map((r) => ({
          seq: r.seq,
          at: r.at,
          gate: 'task_completed',
          member: 'lead',
          taskId: 'task-1',
          feedback: 'npm test fails',
          feedbackMore: 0,
          attempt: r.attempt,
        })),
      );
    }
  });
});
