import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { TERMINATED_TOOL_RESULT } from '../chat.js';
import type { TeamRecord } from '../records.js';
import { foldTeam } from '../state/index.js';
import { createManualClock, createSequentialIds } from '../testing/manual-clock.js';
import type { MemoryRuns } from '../testing/memory-shared.js';
import { createMemorySharedTeam } from '../testing/memory-shared.js';
import { createMemoryTranscriptStore } from '../testing/memory-stores.js';
import type { AgentScript } from '../testing/scripted-model.js';
import { createScriptedModel } from '../testing/scripted-model.js';
import { createSimpleFormat, createSimplePolicy } from '../testing/simple-format.js';
import { createAgentRegistry, defineTool } from './agents.js';
import { openTeam } from './open-team.js';
import type { CrashableStores, Harness } from './test-harness.js';
import {
  crashableStores,
  createRecordingSink,
  deferred,
  describeTranscript,
  notedLead,
  openHarness,
  TEAM_ID,
} from './test-harness.js';

/** A tool that counts its runs, needs approval, and can be held open mid-run. */
function commitTool(runs: string[], hold?: Promise<unknown>, started?: () => void) {
  return defineTool({
    name: 'commit',
    description: 'Commits the work.',
    inputSchema: z.object({ message: z.string() }),
    needsApproval: true,
    async execute(input) {
      runs.push(input.message);
      started?.();
      if (hold !== undefined) await hold;
      return `committed: ${input.message}`;
    },
  });
}

/** bob calls commit once (a call id unique across processes), then says done on every later call. */
const committingBob: AgentScript = ({ call }) =>
  call === 1
    ? { toolCalls: [{ name: 'commit', input: { message: 'fix' }, id: 'commit-call-1' }] }
    : { text: `done ${call}` };

async function spawnBob(h: Harness, agentType = 'worker'): Promise<string> {
  await h.service.spawnTeammate(h.service.lead, {
    name: 'bob',
    description: 'commits',
    prompt: 'Commit your work.',
    agentType,
  });
  await h.service.idle();
  return h.memberId('bob');
}

function recordsOf<T extends TeamRecord['type']>(
  h: { log: { records(): readonly TeamRecord[] } },
  type: T,
) {
  return h.log.records().filter((r): r is Extract<TeamRecord, { type: T }> => r.type === type);
}

describe('tool approval', () => {
  it('parks the member without a model call until approved, then runs the call once and resumes', async () => {
    const runs: string[] = [];
    const h = await openHarness({
      scripts: { lead: notedLead, bob: committingBob },
      workerTools: [commitTool(runs)],
    });
    const bobId = await spawnBob(h);

    const [pending] = h.service.approvals({ status: 'pending' });
    expect(pending).toMatchObject({
      kind: 'tool',
      toolName: 'commit',
      requester: 'bob',
      approver: 'lead',
      input: '{"message":"fix"}',
    });
    expect(runs).toEqual([]);
    expect(h.model.calls('bob')).toBe(1);
    // The approver was asked by typed control mail naming the approval.
    const asked = recordsOf(h, 'message.queued').find((r) => r.message.kind === 'approval_request');
    expect(asked?.message).toMatchObject({ targetId: TEAM_ID, approvalId: pending?.id });
    expect(h.service.listMembers(h.service.lead).find((m) => m.name === 'bob')?.status).toBe(
      'idle',
    );

    const decided = await h.service.decide({
      approvalId: pending?.id as string,
      decision: 'approved',
    });
    expect(decided.status).toBe('approved');
    await h.service.idle();

    expect(runs).toEqual(['fix']);
    expect(h.model.calls('bob')).toBe(2);
    const lines = h.transcript('bob');
    const call = lines.findIndex((line) => line.includes('commit'));
    expect(lines[call + 1]).toBe('tool commit: committed: fix');
    // bob goes on from the call's result: the decision's message was delivered as that result.
    expect(lines[call + 2]).toBe('assistant: done 2');
    const decision = recordsOf(h, 'message.queued').find(
      (r) => r.message.kind === 'approval_decision',
    );
    expect(decision?.message).toMatchObject({ targetId: bobId, approvalId: pending?.id });
    expect(
      recordsOf(h, 'message.delivered').filter((r) => r.messageId === decision?.message.id),
    ).toHaveLength(1);
    const stored = h.transcripts.raw(bobId).find((e) => e.message.role === 'tool');
    expect(stored?.message.source).toMatchObject({ messageId: decision?.message.id });
    expect(recordsOf(h, 'approval.started').map((r) => r.approvalId)).toEqual([pending?.id]);
    expect(h.service.approvals({ requesterId: bobId })[0]?.started).toBe(true);
    expect(h.sink.errors()).toEqual([]);
  });

  it('counts a member parked on the asker decision as waiting for it, not as progress', async () => {
    const runs: string[] = [];
    const h = await openHarness({
      scripts: { lead: notedLead, bob: committingBob },
      workerTools: [commitTool(runs)],
    });
    await spawnBob(h);
    // bob has mail now, but takes none until the lead decides: the lead must not wait on him.
    await h.service.sendMessage(h.service.lead, { to: 'bob', text: 'status?' });
    const asLead = h.service.progress(h.service.lead);
    expect(asLead).toMatchObject({ progressing: false, awaitingYourDecision: ['bob'], woken: [] });
    expect(asLead.summary).toContain('waiting for your decision');
    // the team is idle while bob waits: his mail waits with him
    await h.service.idle();
    expect(h.model.calls('bob')).toBe(1);
    const [pending] = h.service.approvals({ status: 'pending' });
    await h.service.decide({ approvalId: pending?.id as string, decision: 'approved' });
    await h.service.idle();
    expect(runs).toEqual(['fix']);
    expect(h.transcript('bob').some((line) => line.includes('status?'))).toBe(true);
  });

  it('counts a member parked on the host decision as progress', async () => {
    const runs: string[] = [];
    const h = await openHarness({
      scripts: { lead: notedLead, bob: committingBob },
      workerTools: [commitTool(runs)],
      workerApproval: { approver: 'host' },
    });
    await spawnBob(h);
    expect(recordsOf(h, 'message.queued').some((r) => r.message.kind === 'approval_request')).toBe(
      false,
    );
    expect(h.service.progress(h.service.lead)).toMatchObject({
      progressing: true,
      awaitingApproval: ['bob'],
    });
    const [pending] = h.service.approvals({ status: 'pending' });
    expect(pending?.approver).toBeUndefined();
    await h.service.decide({ approvalId: pending?.id as string, decision: 'approved' });
    await h.service.idle();
    expect(runs).toEqual(['fix']);
    expect(h.service.progress(h.service.lead).progressing).toBe(false);
  });

  it('answers a rejected call with the reason and never runs it', async () => {
    const runs: string[] = [];
    const h = await openHarness({
      scripts: { lead: notedLead, bob: committingBob },
      workerTools: [commitTool(runs)],
    });
    await spawnBob(h);
    const [pending] = h.service.approvals({ status: 'pending' });
    await h.service.decide({
      approvalId: pending?.id as string,
      decision: 'rejected',
      reason: 'run the tests first',
    });
    await h.service.idle();
    expect(runs).toEqual([]);
    const result = h.transcript('bob').find((line) => line.startsWith('tool commit'));
    expect(result).toContain('run the tests first');
    expect(result).toContain('APPROVAL_REJECTED');
    expect(h.model.calls('bob')).toBe(2);
  });

  it('lets only the approver (or the host) decide, and only once', async () => {
    const runs: string[] = [];
    const h = await openHarness({
      scripts: { lead: notedLead, bob: committingBob },
      workerTools: [commitTool(runs)],
    });
    await spawnBob(h);
    const [pending] = h.service.approvals({ status: 'pending' });
    const id = pending?.id as string;
    const before = h.log.records().length;
    await expect(h.service.decide({ approvalId: 'nope', decision: 'approved' })).rejects.toThrow(
      expect.objectContaining({ code: 'APPROVAL_NOT_FOUND' }),
    );
    await expect(
      h.service.decide({ approvalId: id, decision: 'maybe' as 'approved' }),
    ).rejects.toThrow(expect.objectContaining({ code: 'INVALID_ARGUMENT' }));
    expect(h.log.records()).toHaveLength(before);
    await h.service.decide({ approvalId: id, decision: 'approved' }, h.service.lead);
    await expect(h.service.decide({ approvalId: id, decision: 'rejected' })).rejects.toThrow(
      expect.objectContaining({ code: 'APPROVAL_DECIDED' }),
    );
    await h.service.idle();
    expect(runs).toEqual(['fix']);
    expect(recordsOf(h, 'approval.decided')).toHaveLength(1);
  });

  it('refuses a decision from a member that is not the approver', async () => {
    const runs: string[] = [];
    const h = await openHarness({
      scripts: {
        lead: notedLead,
        bob: committingBob,
        carol: [{ toolCalls: [{ name: 'whoami' }] }, { text: 'Ready.' }],
      },
      workerTools: [commitTool(runs)],
    });
    await h.service.spawnTeammate(h.service.lead, {
      name: 'carol',
      description: 'watches',
      prompt: 'Hi.',
      agentType: 'worker',
    });
    await h.service.idle();
    await spawnBob(h);
    const [pending] = h.service.approvals({ status: 'pending' });
    const carol = h.refs.get('carol');
    expect(carol).toBeDefined();
    await expect(
      h.service.decide({ approvalId: pending?.id as string, decision: 'approved' }, carol),
    ).rejects.toThrow(expect.objectContaining({ code: 'NOT_THE_APPROVER' }));
    expect(h.service.approvals({ status: 'pending' })).toHaveLength(1);
    expect(runs).toEqual([]);
  });

  it('expires an undecided request, and a decision racing the expiry loses cleanly', async () => {
    const runs: string[] = [];
    const clock = createManualClock();
    const h = await openHarness({
      clock,
      scripts: { lead: notedLead, bob: committingBob },
      workerTools: [commitTool(runs)],
      workerApproval: { expiresInMs: 60_000 },
    });
    await spawnBob(h);
    const [pending] = h.service.approvals({ status: 'pending' });
    expect(pending?.expiresAt).toBe(clock.now() + 60_000);
    // The expiry fires, and a decision is made in the same tick: exactly one of them is recorded.
    clock.advance(60_000);
    const late = h.service.decide({ approvalId: pending?.id as string, decision: 'approved' });
    const outcome = await late.then(
      () => 'approved',
      (error: { code?: string }) => error.code,
    );
    await h.service.idle();
    const decisions = recordsOf(h, 'approval.decided');
    expect(decisions).toHaveLength(1);
    if (outcome === 'approved') {
      expect(decisions[0]?.decision).toBe('approved');
      expect(runs).toEqual(['fix']);
    } else {
      expect(outcome).toBe('APPROVAL_DECIDED');
      expect(decisions[0]?.decision).toBe('expired');
      expect(runs).toEqual([]);
      expect(h.transcript('bob').find((l) => l.startsWith('tool commit'))).toContain('expired');
    }
    expect(h.model.calls('bob')).toBe(2);
  });

  it('expires a request nobody decides, and the member goes on', async () => {
    const runs: string[] = [];
    const clock = createManualClock();
    const h = await openHarness({
      clock,
      scripts: { lead: notedLead, bob: committingBob },
      workerTools: [commitTool(runs)],
      workerApproval: { expiresInMs: 1_000 },
    });
    await spawnBob(h);
    clock.advance(1_000);
    await h.sink.waitFor((agent, e) => agent === 'bob' && e.type === 'turn.end', 2);
    await h.service.idle();
    expect(recordsOf(h, 'approval.decided').map((r) => r.decision)).toEqual(['expired']);
    expect(runs).toEqual([]);
    expect(h.transcript('bob').find((l) => l.startsWith('tool commit'))).toContain(
      'expired before anyone decided',
    );
  });

  it('cancels a pending request when the member is shut down', async () => {
    const runs: string[] = [];
    const h = await openHarness({
      scripts: { lead: notedLead, bob: committingBob },
      workerTools: [commitTool(runs)],
    });
    const bobId = await spawnBob(h);
    await h.service.shutdown(h.service.lead, { target: 'bob' });
    await h.service.idle();
    expect(h.service.approvals({ requesterId: bobId })[0]?.status).toBe('canceled');
    expect(runs).toEqual([]);
    const folded = foldTeam(h.log.records(), { teamId: TEAM_ID });
    expect(folded.roster.find((m) => m.id === bobId)?.phase).toBe('retired');
  });
});

describe('tool approval across a crash', () => {
  async function crashingTeam(hold?: Promise<unknown>, started?: () => void) {
    const runs: string[] = [];
    let stores: CrashableStores | undefined;
    const a = await openHarness({
      scripts: { lead: notedLead, bob: committingBob },
      workerTools: [commitTool(runs, hold, started)],
      wrap: (m) => {
        stores = crashableStores(m.log, m.transcripts);
        return stores;
      },
    });
    const memory = { log: a.log, transcripts: a.transcripts };
    const reopen = () =>
      openHarness({
        memory,
        ids: 'b',
        scripts: { lead: notedLead, bob: ({ call }) => ({ text: `after restart ${call}` }) },
        workerTools: [commitTool(runs)],
      });
    return { a, runs, memory, reopen, crash: () => stores?.crash() };
  }

  it('keeps a request pending through a kill, and the decision after it runs the call once', async () => {
    const { a, runs, crash, reopen } = await crashingTeam();
    const bobId = await spawnBob(a);
    crash();
    const b = await reopen();
    await b.service.idle();
    expect(b.model.calls('bob')).toBe(0);
    const [pending] = b.service.approvals({ status: 'pending' });
    expect(pending?.requesterId).toBe(bobId);
    await b.service.decide({ approvalId: pending?.id as string, decision: 'approved' });
    await b.service.idle();
    expect(runs).toEqual(['fix']);
    expect(b.model.calls('bob')).toBe(1);
    const lines = b.transcript('bob');
    expect(lines.filter((l) => l.startsWith('tool commit'))).toEqual([
      'tool commit: committed: fix',
    ]);
    expect(b.sink.errors()).toEqual([]);
  });

  it('applies a decision made before a kill once, after it', async () => {
    const { a, runs, crash, reopen } = await crashingTeam();
    await spawnBob(a);
    const [pending] = a.service.approvals({ status: 'pending' });
    // The decision is durable; the process dies before bob runs the call.
    crash();
    const decided = a.service.decide({ approvalId: pending?.id as string, decision: 'approved' });
    void decided.catch(() => undefined);
    const b = await reopen();
    await b.service.idle();
    const after = b.service.approvals({})[0];
    if (after?.status === 'pending') {
      // The dead process never made the decision durable: decide again here.
      await b.service.decide({ approvalId: after.id, decision: 'approved' });
      await b.service.idle();
    }
    expect(runs).toEqual(['fix']);
    expect(recordsOf(b, 'approval.started')).toHaveLength(1);
  });

  it('answers an approved call that started before a kill as unknown, and never runs it again', async () => {
    const hold = deferred();
    const running = deferred();
    const { a, runs, crash, reopen } = await crashingTeam(hold.promise, running.resolve);
    const bobId = await spawnBob(a);
    const [pending] = a.service.approvals({ status: 'pending' });
    await a.service.decide({ approvalId: pending?.id as string, decision: 'approved' });
    // The call started (its start is durable) and is still running when the process dies.
    await running.promise;
    expect(runs).toEqual(['fix']);
    crash();
    hold.resolve();
    const b = await reopen();
    await b.service.idle();
    expect(runs).toEqual(['fix']);
    const results = describeTranscript(b.transcripts.raw(bobId)).filter((l) =>
      l.startsWith('tool commit'),
    );
    expect(results).toEqual([]);
    // The stored transcript has no result; the runtime reads the repaired one and goes on.
    expect(b.model.calls('bob')).toBe(1);
    const sent = b.model.requests('bob')[0]?.messages ?? [];
    const answered = sent.find((m) => m.role === 'tool' && m.toolCallId === 'commit-call-1');
    expect(JSON.stringify(answered)).toContain(TERMINATED_TOOL_RESULT);
  });
});

describe('plan approval', () => {
  const writeTool = defineTool({
    name: 'write_file',
    description: 'Writes a file.',
    inputSchema: z.object({ path: z.string() }),
    async execute(input) {
      return `wrote ${input.path}`;
    },
  });
  const readTool = defineTool({
    name: 'read_file',
    description: 'Reads a file.',
    inputSchema: z.object({ path: z.string() }),
    readOnly: true,
    async execute(input) {
      return `contents of ${input.path}`;
    },
  });

  it('works read-only until its plan is approved; a rejection comes back as feedback', async () => {
    const h = await openHarness({
      plannerTools: [writeTool, readTool],
      scripts: {
        lead: notedLead,
        pat: ({ call }) =>
          call === 1
            ? { toolCalls: [{ name: 'submit_plan', input: { plan: 'Edit a.ts.' } }] }
            : call === 3
              ? { toolCalls: [{ name: 'submit_plan', input: { plan: 'Edit a.ts, test it.' } }] }
              : { text: `ok ${call}` },
      },
    });
    await h.service.spawnTeammate(h.service.lead, {
      name: 'pat',
      description: 'plans',
      prompt: 'Plan the change.',
      agentType: 'planner',
    });
    await h.service.idle();
    const offered = (call: number) =>
      (h.model.requests('pat')[call]?.tools ?? []).map((tool) => tool.name).sort();
    expect(offered(0)).toEqual(
      ['list_members', 'read_file', 'send_message', 'submit_plan', 'task_get', 'task_list'].sort(),
    );
    const [first] = h.service.approvals({ status: 'pending' });
    expect(first).toMatchObject({ kind: 'plan', plan: 'Edit a.ts.', approver: 'lead' });
    const asked = recordsOf(h, 'message.queued').filter(
      (r) => r.message.kind === 'approval_request',
    );
    expect(asked).toHaveLength(1);

    await h.service.decide({
      approvalId: first?.id as string,
      decision: 'rejected',
      reason: 'add a test',
    });
    await h.service.idle();
    const told = h.transcript('pat').find((l) => l.includes('add a test'));
    expect(told).toContain('Revise it');
    expect(offered(2)).not.toContain('write_file');
    const [second] = h.service.approvals({ status: 'pending' });
    expect(second?.plan).toBe('Edit a.ts, test it.');

    await h.service.decide({ approvalId: second?.id as string, decision: 'approved' });
    await h.service.idle();
    const last = h.model.calls('pat') - 1;
    expect(offered(last)).toContain('write_file');
    expect(offered(last)).not.toContain('submit_plan');
  });
});

describe('quality gates', () => {
  it('keeps a refused task in progress, tells the owner through its call, and the lead at the bound', async () => {
    const feedback: string[] = [];
    let allow = false;
    const h = await openHarness({
      idleClaim: true,
      gates: {
        maxRefusals: 2,
        taskCompleted: ({ task }) => {
          feedback.push(task.id);
          return allow ? { allow: true } : { allow: false, feedback: 'tests fail' };
        },
      },
      scripts: {
        lead: notedLead,
        bob: ({ call }) =>
          call === 1
            ? {
                toolCalls: [
                  {
                    name: 'task_update',
                    input: { taskId: 'task-1', action: 'claim' },
                    id: 'claim',
                  },
                ],
              }
            : call <= 4
              ? {
                  toolCalls: [
                    {
                      name: 'task_update',
                      input: { taskId: 'task-1', action: 'complete' },
                      id: `complete-${call}`,
                    },
                  ],
                }
              : { text: `stopping ${call}` },
      },
    });
    await h.service.createTask(h.service.lead, { subject: 'Fix', description: 'Fix it.' });
    await h.service.spawnTeammate(h.service.lead, {
      name: 'bob',
      description: 'fixes',
      prompt: 'Take the task.',
      agentType: 'worker',
    });
    await h.service.idle();
    const refusals = recordsOf(h, 'gate.refused');
    expect(refusals.map((r) => r.attempt)).toEqual([1, 2, 3]);
    expect(h.service.getTask(h.service.lead, { taskId: 'task-1' }).status).toBe('in_progress');
    const results = h.transcript('bob').filter((l) => l.startsWith('tool task_update'));
    expect(results[1]).toContain('GATE_REFUSED');
    expect(results[1]).toContain('tests fail');
    const toLead = recordsOf(h, 'message.queued').filter(
      (r) => r.message.kind === 'gate_feedback' && r.message.targetId === TEAM_ID,
    );
    expect(toLead).toHaveLength(1);
    expect(feedback).toEqual(['task-1', 'task-1', 'task-1']);
    allow = true;
    const done = await h.service.updateTask(h.service.lead, {
      taskId: 'task-1',
      action: { type: 'complete' },
    });
    expect(done.status).toBe('completed');
  });

  it('sends a teammate whose idle the gate refuses back to work, then lets it rest at the bound', async () => {
    let asked = 0;
    const h = await openHarness({
      gates: {
        maxRefusals: 2,
        teammateIdle: () => {
          asked++;
          return { allow: false, feedback: 'write the summary' };
        },
      },
      scripts: { lead: notedLead, bob: ({ call }) => ({ text: `turn ${call}` }) },
    });
    await spawnBob(h);
    expect(asked).toBe(2);
    expect(h.model.calls('bob')).toBe(3);
    expect(h.transcript('bob').filter((l) => l.includes('write the summary'))).toHaveLength(2);
    const idle = recordsOf(h, 'message.queued').filter(
      (r) => r.message.kind === 'idle_notification',
    );
    expect(idle).toHaveLength(1);
    const toLead = recordsOf(h, 'message.queued').filter(
      (r) => r.message.kind === 'gate_feedback' && r.message.targetId === TEAM_ID,
    );
    expect(toLead).toHaveLength(1);
    // The idle that passed cleared the count: the gate is asked again on the next idle.
    await h.service.sendMessage(h.service.lead, { to: 'bob', text: 'one more thing' });
    await h.service.idle();
    expect(asked).toBe(4);
  });
});

describe('approvals survive a kill and a move', () => {
  it('keeps a plan under review through a kill; its approval after the restart frees the tools', async () => {
    const write = defineTool({
      name: 'write_file',
      description: 'Writes a file.',
      inputSchema: z.object({ path: z.string() }),
      async execute(input) {
        return `wrote ${input.path}`;
      },
    });
    let stores: CrashableStores | undefined;
    const a = await openHarness({
      plannerTools: [write],
      scripts: {
        lead: notedLead,
        pat: [
          { toolCalls: [{ name: 'submit_plan', input: { plan: 'Edit a.ts.' } }] },
          { text: 'Submitted.' },
        ],
      },
      wrap: (m) => {
        stores = crashableStores(m.log, m.transcripts);
        return stores;
      },
    });
    await a.service.spawnTeammate(a.service.lead, {
      name: 'pat',
      description: 'plans',
      prompt: 'Plan.',
      agentType: 'planner',
    });
    await a.service.idle();
    stores?.crash();
    const b = await openHarness({
      memory: { log: a.log, transcripts: a.transcripts },
      ids: 'b',
      plannerTools: [write],
      scripts: { lead: notedLead, pat: ({ call }) => ({ text: `carrying it out ${call}` }) },
    });
    await b.service.idle();
    const [plan] = b.service.approvals({ status: 'pending' });
    expect(plan).toMatchObject({ kind: 'plan', plan: 'Edit a.ts.' });
    await b.service.decide({ approvalId: plan?.id as string, decision: 'approved' });
    await b.service.idle();
    const offered =
      b.model
        .requests('pat')
        .at(-1)
        ?.tools.map((tool) => tool.name) ?? [];
    expect(offered).toContain('write_file');
    expect(recordsOf(b, 'approval.decided')).toHaveLength(1);
  });

  it('runs a call approved after its member moved to another process once, in the new holder', async () => {
    const runs: string[] = [];
    const team = createMemorySharedTeam({ teamId: TEAM_ID });
    const transcripts = createMemoryTranscriptStore();
    const model = createScriptedModel({ scripts: { lead: notedLead, bob: committingBob } });
    const open = async (runsHere: MemoryRuns, ids: string) => {
      const participant = team.join({ runs: runsHere });
      const sink = createRecordingSink();
      const service = await openTeam({
        teamId: TEAM_ID,
        log: participant.log,
        transcripts,
        format: createSimpleFormat(),
        policy: createSimplePolicy(),
        agents: createAgentRegistry([
          { type: 'lead', systemPrompt: 'You lead.', model },
          { type: 'worker', systemPrompt: 'You work.', model, tools: [commitTool(runs)] },
        ]),
        lead: { agentType: 'lead' },
        events: sink,
        clock: createManualClock(),
        ids: createSequentialIds(ids),
        idleClaim: false,
      });
      return { service, sink, index: participant.index };
    };
    const a = await open({ lead: true, agentTypes: [] }, 'a');
    const b = await open({ lead: false }, 'b');
    const c = await open({ lead: false }, 'c');
    const { memberId } = await a.service.spawnTeammate(a.service.lead, {
      name: 'bob',
      description: 'commits',
      prompt: 'Commit.',
      agentType: 'worker',
    });
    await a.sink.waitUntil(() => a.service.approvals({ status: 'pending' }).length === 1);
    const from = team.placementOf(memberId)?.participant;
    const [old, next] = from === b.index ? [b, c] : [c, b];
    await old.sink.waitFor((agent, e) => agent === 'bob' && e.type === 'turn.end');
    team.move(memberId, next.index);
    const [pending] = a.service.approvals({ status: 'pending' });
    await a.service.decide({ approvalId: pending?.id as string, decision: 'approved' });
    await next.sink.waitFor((agent, e) => agent === 'bob' && e.type === 'tool.result');
    await next.service.idle();
    expect(runs).toEqual(['fix']);
    expect(team.records().filter((r) => r.type === 'approval.started')).toHaveLength(1);
    expect(
      old.sink.events.filter((e) => e.agent === 'bob' && e.event.type === 'tool.result'),
    ).toEqual([]);
    for (const p of [a, b, c]) await p.service.dispose();
  });
});

describe('a refused completion across a kill', () => {
  it('stays in progress with its count after a restart, and the next refusal is the next attempt', async () => {
    const gates = {
      maxRefusals: 2,
      taskCompleted: () => ({ allow: false as const, feedback: 'tests fail' }),
    };
    let stores: CrashableStores | undefined;
    const a = await openHarness({
      gates,
      scripts: { lead: notedLead, bob: [{ toolCalls: [{ name: 'whoami' }] }, { text: 'Ready.' }] },
      wrap: (m) => {
        stores = crashableStores(m.log, m.transcripts);
        return stores;
      },
    });
    const task = await a.service.createTask(a.service.lead, {
      subject: 'Fix',
      description: 'Fix.',
    });
    await spawnBob(a);
    const bob = a.refs.get('bob');
    expect(bob).toBeDefined();
    await a.service.updateTask(bob ?? a.service.lead, {
      taskId: task.id,
      action: { type: 'claim' },
    });
    await expect(
      a.service.updateTask(bob ?? a.service.lead, {
        taskId: task.id,
        action: { type: 'complete' },
      }),
    ).rejects.toThrow(expect.objectContaining({ code: 'GATE_REFUSED' }));
    stores?.crash();
    const b = await openHarness({
      gates,
      memory: { log: a.log, transcripts: a.transcripts },
      ids: 'b',
      scripts: { lead: notedLead, bob: ({ call }) => ({ text: `again ${call}` }) },
    });
    await b.service.idle();
    expect(b.service.getTask(b.service.lead, { taskId: task.id }).status).toBe('in_progress');
    // the lead completing it is refused too: the count went on from before the kill
    await expect(
      b.service.updateTask(b.service.lead, { taskId: task.id, action: { type: 'complete' } }),
    ).rejects.toThrow(expect.objectContaining({ code: 'GATE_REFUSED' }));
    expect(recordsOf(b, 'gate.refused').map((r) => r.attempt)).toEqual([1, 2]);
    // at the bound the lead was told (here the lead itself completed it, so only the owner is)
    const toBob = recordsOf(b, 'message.queued').filter(
      (r) => r.message.kind === 'gate_feedback' && r.message.targetId === b.memberId('bob'),
    );
    expect(toBob).toHaveLength(1);
  });
});
