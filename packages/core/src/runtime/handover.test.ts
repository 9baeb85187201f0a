import { describe, expect, it } from 'vitest';
import type { MemberPlacement, PlacementListener } from '../ports/placement.js';
import {
  createManualClock,
  createSequentialIds,
  type ManualClock,
} from '../testing/manual-clock.js';
import type { MemoryRuns, MemorySharedTeam } from '../testing/memory-shared.js';
import { createMemorySharedTeam } from '../testing/memory-shared.js';
import { createMemoryTranscriptStore } from '../testing/memory-stores.js';
import type { AgentScript, ScriptedModel } from '../testing/scripted-model.js';
import { createScriptedModel } from '../testing/scripted-model.js';
import { createSimpleFormat, createSimplePolicy } from '../testing/simple-format.js';
import { createAgentRegistry } from './agents.js';
import { openTeam } from './open-team.js';
import type { TeamService } from './service-types.js';
import type { RecordingSink } from './test-harness.js';
import { createRecordingSink, deferred, notedLead, TEAM_ID } from './test-harness.js';

/** One "process": its service, its events, and the listener its placement was started with. */
interface Process {
  service: TeamService;
  sink: RecordingSink;
  index: number;
  clock: ManualClock;
  listener(): PlacementListener;
}

/** The participant's placement, letting the test reach the listener the service gave it. */
function capturing(inner: MemberPlacement): {
  placement: MemberPlacement;
  listener(): PlacementListener;
} {
  let listener: PlacementListener | undefined;
  const placement: MemberPlacement = {
    specificationVersion: 'v1',
    start(options) {
      listener = options.listener;
      return inner.start(options);
    },
    runsHere: (memberId) => inner.runsHere(memberId),
    candidatesChanged: () => inner.candidatesChanged(),
    report: (activity, through) => inner.report?.(activity, through),
    view: () => inner.view?.() ?? { placed: new Map(), awaiting: new Set(), liveProcesses: 0 },
    close: () => inner.close(),
  };
  return {
    placement,
    listener: () => {
      if (listener === undefined) throw new Error('placement not started');
      return listener;
    },
  };
}

function world(scripts: Record<string, AgentScript>): {
  team: MemorySharedTeam;
  model: ScriptedModel;
  open(runs: MemoryRuns, ids: string, handoverTimeoutMs?: number): Promise<Process>;
} {
  const team = createMemorySharedTeam({ teamId: TEAM_ID });
  const transcripts = createMemoryTranscriptStore();
  const model = createScriptedModel({ scripts });
  return {
    team,
    model,
    async open(runs, ids, handoverTimeoutMs) {
      const participant = team.join({ runs });
      const sink = createRecordingSink();
      const clock = createManualClock();
      const { placement, listener } = capturing(participant.placement);
      const service = await openTeam({
        teamId: TEAM_ID,
        log: participant.log,
        placement,
        transcripts,
        format: createSimpleFormat(),
        policy: createSimplePolicy(),
        agents: createAgentRegistry([
          { type: 'lead', systemPrompt: 'You lead.', model },
          { type: 'worker', systemPrompt: 'You work.', model },
        ]),
        lead: { agentType: 'lead' },
        events: sink,
        clock,
        ids: createSequentialIds(ids),
        idleClaim: false,
        ...(handoverTimeoutMs === undefined ? {} : { handoverTimeoutMs }),
      });
      return { service, sink, index: participant.index, clock, listener };
    },
  };
}

function turnEnds(process: Process, agent: string): string[] {
  return process.sink.events.flatMap((e) =>
    e.agent === agent && e.event.type === 'turn.end' ? [e.event.stopReason] : [],
  );
}

/** A team whose teammate alice, running in process b, holds its second model call until `gate`. */
async function aliceMidTurn(handoverTimeoutMs?: number) {
  const gate = deferred();
  const started = deferred();
  const w = world({
    lead: notedLead,
    alice: ({ call }) => {
      if (call === 2) {
        started.resolve();
        return { text: 'working', gate: gate.promise };
      }
      return { text: `alice ${call}` };
    },
  });
  const a = await w.open({ lead: true, agentTypes: [] }, 'a');
  const b = await w.open({ lead: false }, 'b', handoverTimeoutMs);
  await a.service.spawnTeammate(a.service.lead, {
    name: 'alice',
    description: 'helps',
    prompt: 'Hi alice.',
    agentType: 'worker',
  });
  await b.service.idle();
  await a.service.idle();
  const aliceId = w.team
    .records()
    .flatMap((r) =>
      r.type === 'member' && r.member.name === 'alice' ? [r.member.id] : [],
    )[0] as string;
  expect(w.team.placementOf(aliceId)?.participant).toBe(b.index);
  await a.service.sendMessage(a.service.lead, { to: 'alice', text: 'one more thing' });
  await started.promise;
  return { w, a, b, gate, aliceId };
}

describe('handing a member over at a turn boundary', () => {
  it('release waits for the running turn to end, and the member is not revived here after', async () => {
    const { w, a, b, gate, aliceId } = await aliceMidTurn();
    let endsWhenReleased: string[] | undefined;
    const released = (b.listener().release as (memberId: string) => Promise<void>)(aliceId).then(
      () => {
        endsWhenReleased = turnEnds(b, 'alice');
      },
    );
    gate.resolve();
    await released;
    // the turn finished normally before the release resolved: nothing was aborted
    expect(endsWhenReleased).toEqual(['end_turn', 'end_turn']);
    expect(w.model.calls('alice')).toBe(2);
    // mail for alice while the placement hands it over does not revive it in b
    await a.service.sendMessage(a.service.lead, { to: 'alice', text: 'and this' });
    await b.sink.waitUntil((events) =>
      events.some((e) => e.event.type === 'record' && JSON.stringify(e.event).includes('and this')),
    );
    await b.service.idle();
    expect(w.model.calls('alice')).toBe(2);
    // the placement hands it to c, which takes the waiting mail: no call redone
    const c = await w.open({ lead: false }, 'c');
    w.team.move(aliceId, c.index);
    await c.sink.waitFor((agent, event) => agent === 'alice' && event.type === 'turn.end');
    await c.service.idle();
    expect(w.model.calls('alice')).toBe(3);
    expect(turnEnds(c, 'alice')).toEqual(['end_turn']);
    await c.service.dispose();
    await b.service.dispose();
    await a.service.dispose();
  });

  it('a parked member is released at once', async () => {
    const w = world({ lead: notedLead, alice: ({ call }) => ({ text: `alice ${call}` }) });
    const a = await w.open({ lead: true, agentTypes: [] }, 'a');
    const b = await w.open({ lead: false }, 'b');
    await a.service.spawnTeammate(a.service.lead, {
      name: 'alice',
      description: 'helps',
      prompt: 'Hi alice.',
      agentType: 'worker',
    });
    await b.service.idle();
    const alice = b.service.listMembers(b.service.lead).find((m) => m.name === 'alice');
    expect(alice?.status).toBe('idle');
    await (b.listener().release as (memberId: string) => Promise<void>)(alice?.id as string);
    expect(b.service.listMembers(b.service.lead).find((m) => m.name === 'alice')?.status).not.toBe(
      'running',
    );
    await b.service.dispose();
    await a.service.dispose();
  });

  it('dispose lets the running turn end before handing the member over', async () => {
    const { w, a, b, gate, aliceId } = await aliceMidTurn();
    let endsWhenDisposed: string[] | undefined;
    const disposed = b.service.dispose().then(() => {
      endsWhenDisposed = turnEnds(b, 'alice');
    });
    gate.resolve();
    await disposed;
    expect(endsWhenDisposed).toEqual(['end_turn', 'end_turn']);
    expect(b.sink.events.filter((e) => e.event.type === 'error')).toEqual([]);
    const c = await w.open({ lead: false }, 'c');
    expect(w.team.placementOf(aliceId)?.participant).toBe(c.index);
    await a.service.sendMessage(a.service.lead, { to: 'alice', text: 'next' });
    await c.sink.waitFor((agent, event) => agent === 'alice' && event.type === 'turn.end');
    await c.service.idle();
    // two calls in b, one in c for the new mail: none redone
    expect(w.model.calls('alice')).toBe(3);
    await c.service.dispose();
    await a.service.dispose();
  });

  it('dispose hands over anyway after handoverTimeoutMs, and says so', async () => {
    const { w, a, b, aliceId } = await aliceMidTurn(1_000);
    const disposed = b.service.dispose();
    b.clock.advance(1_000);
    await disposed;
    const errors = b.sink.events.flatMap((e) => (e.event.type === 'error' ? [e] : []));
    expect(errors).toHaveLength(1);
    expect(errors[0]).toMatchObject({ agent: 'alice', event: { code: 'TIMEOUT' } });
    expect(turnEnds(b, 'alice')).toEqual(['end_turn', 'interrupted']);
    const c = await w.open({ lead: false }, 'c');
    expect(w.team.placementOf(aliceId)?.participant).toBe(c.index);
    await a.service.dispose();
    await c.service.dispose();
  });

  it('refuses a handoverTimeoutMs that is not a non-negative integer', async () => {
    const w = world({ lead: notedLead });
    await expect(w.open({ lead: true }, 'a', -1)).rejects.toMatchObject({
      code: 'INVALID_ARGUMENT',
    });
  });
});

/** The idle notices alice's turns sent the lead, as the shared log holds them. */
function noticesOf(team: MemorySharedTeam, memberId: string): string[] {
  return team
    .records()
    .flatMap((r) =>
      r.type === 'message.queued' &&
      r.message.kind === 'idle_notification' &&
      r.message.senderId === memberId
        ? [r.message.id]
        : [],
    );
}

describe('a member taken over in the middle of a turn', () => {
  it('finishes the turn in the process that takes it, so the lead hears its idle notice', async () => {
    const started = deferred();
    const w = world({
      lead: notedLead,
      alice: ({ call }) => {
        // the first call, on the spawn prompt, is held until b loses alice
        if (call === 1) {
          started.resolve();
          return { text: 'never finished', gate: new Promise(() => {}) };
        }
        return { text: `alice ${call}` };
      },
    });
    const a = await w.open({ lead: true, agentTypes: [] }, 'a');
    const b = await w.open({ lead: false }, 'b');
    const { memberId: aliceId } = await a.service.spawnTeammate(a.service.lead, {
      name: 'alice',
      description: 'helps',
      prompt: 'Hi alice.',
      agentType: 'worker',
    });
    await started.promise;
    expect(w.team.placementOf(aliceId)?.participant).toBe(b.index);
    expect(noticesOf(w.team, aliceId)).toEqual([]);
    // b's lease runs out mid-turn, after the prompt was delivered into alice's transcript: c
    // takes alice with no mail and no task left to give her
    const c = await w.open({ lead: false }, 'c');
    w.team.move(aliceId, c.index);
    await a.sink.waitFor(
      (_agent, event) =>
        event.type === 'record' &&
        event.record.type === 'message.queued' &&
        event.record.message.kind === 'idle_notification' &&
        event.record.message.senderId === aliceId,
    );
    await c.service.idle();
    expect(noticesOf(w.team, aliceId)).toHaveLength(1);
    expect(w.model.calls('alice')).toBe(2);
    expect(turnEnds(c, 'alice')).toEqual(['end_turn']);
    expect(c.sink.errors()).toEqual([]);
    await c.service.dispose();
    await b.service.dispose();
    await a.service.dispose();
  });

  it('does not run again a turn whose end the lead was told of', async () => {
    const w = world({
      lead: notedLead,
      // the second call (on the lead's message) fails: the turn ends without a reply
      alice: ({ call }) => (call === 2 ? { error: new Error('model down') } : { text: 'ready' }),
    });
    const a = await w.open({ lead: true, agentTypes: [] }, 'a');
    const b = await w.open({ lead: false }, 'b');
    const { memberId: aliceId } = await a.service.spawnTeammate(a.service.lead, {
      name: 'alice',
      description: 'helps',
      prompt: 'Hi alice.',
      agentType: 'worker',
    });
    await a.service.sendMessage(a.service.lead, { to: 'alice', text: 'one more thing' });
    await b.sink.waitFor((agent, event) => agent === 'alice' && event.type === 'error');
    await b.service.idle();
    await a.service.idle();
    expect(noticesOf(w.team, aliceId)).toHaveLength(2);
    const c = await w.open({ lead: false }, 'c');
    w.team.move(aliceId, c.index);
    await c.service.idle();
    expect(w.model.calls('alice')).toBe(2);
    expect(turnEnds(c, 'alice')).toEqual([]);
    expect(noticesOf(w.team, aliceId)).toHaveLength(2);
    await c.service.dispose();
    await b.service.dispose();
    await a.service.dispose();
  });
});
