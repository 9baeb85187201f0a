import { describe, expect, it, vi } from 'vitest';
import { TeamError } from '../errors.js';
import { createEventHub } from '../hub/event-hub.js';
import type { EventHub } from '../hub/types.js';
import type { TranscriptStore } from '../ports/transcript-store.js';
import { foldTeam } from '../state/fold.js';
import { createManualClock, createSequentialIds } from '../testing/manual-clock.js';
import type { MemoryParticipant, MemoryRuns, MemorySharedTeam } from '../testing/memory-shared.js';
import { createMemorySharedTeam } from '../testing/memory-shared.js';
import type { MemoryTranscriptStore } from '../testing/memory-stores.js';
import { createMemoryTranscriptStore } from '../testing/memory-stores.js';
import type { AgentScript, ScriptedModel } from '../testing/scripted-model.js';
import { createScriptedModel } from '../testing/scripted-model.js';
import { createSimpleFormat, createSimplePolicy } from '../testing/simple-format.js';
import type { AgentRef } from './agents.js';
import { createAgentRegistry } from './agents.js';
import { openTeam } from './open-team.js';
import type { MemberInfo, TeamService } from './service-types.js';
import type { RecordingSink, RefBook } from './test-harness.js';
import {
  createRecordingSink,
  deferred,
  describeTranscript,
  messageIdsIn,
  notedLead,
  TEAM_ID,
  whoamiTool,
} from './test-harness.js';

/** One "process" of a team spread over a memory shared log. */
interface Process {
  service: TeamService;
  sink: RecordingSink;
  index: number;
  participant: MemoryParticipant;
}

interface World {
  team: MemorySharedTeam;
  transcripts: MemoryTranscriptStore;
  model: ScriptedModel;
  refs: RefBook;
  /**
   * `fenced`: members whose transcript writes this process's store refuses as `FENCED`;
   * `idleClaim`: whether idle teammates claim ready tasks (off by default).
   */
  open(
    runs: MemoryRuns,
    ids: string,
    fenced?: ReadonlySet<string>,
    idleClaim?: boolean,
  ): Promise<Process>;
}

function world(scripts: Record<string, AgentScript>): World {
  const team = createMemorySharedTeam({ teamId: TEAM_ID });
  const transcripts = createMemoryTranscriptStore();
  const model = createScriptedModel({ scripts });
  const refs: RefBook = new Map();
  return {
    team,
    transcripts,
    model,
    refs,
    async open(runs, ids, fenced, idleClaim = false) {
      const participant = team.join({ runs });
      const sink = createRecordingSink();
      const service = await openTeam({
        teamId: TEAM_ID,
        log: participant.log,
        transcripts: fenced === undefined ? transcripts : fencing(transcripts, fenced),
        format: createSimpleFormat(),
        policy: createSimplePolicy(),
        agents: createAgentRegistry([
          { type: 'lead', systemPrompt: 'You lead.', model },
          { type: 'worker', systemPrompt: 'You work.', model, tools: [whoamiTool(refs)] },
        ]),
        lead: { agentType: 'lead' },
        events: sink,
        clock: createManualClock(),
        ids: createSequentialIds(ids),
        idleClaim,
      });
      return { service, sink, index: participant.index, participant };
    },
  };
}

/**
 * `store` as a process sees it whose lease on the members in `fenced` ran out before its
 * placement said so: their writes are refused as `FENCED`, as a shared store refuses them.
 */
function fencing(store: TranscriptStore, fenced: ReadonlySet<string>): TranscriptStore {
  return {
    specificationVersion: 'v1',
    append: (options) =>
      fenced.has(options.memberId)
        ? Promise.reject(new TeamError('FENCED', `${options.memberId} runs in another process`))
        : store.append(options),
    load: (options) => store.load(options),
    close: () => store.close(),
  };
}

/** The lead of `process` spawns the worker alice. */
async function spawnAlice(process: Process): Promise<void> {
  await process.service.spawnTeammate(process.service.lead, {
    name: 'alice',
    description: 'helps',
    prompt: 'Hi alice.',
    agentType: 'worker',
  });
}

/**
 * The lead of `lead` spawns the workers alice and bob, one after the other, each placed in one of
 * `workers` (one in each, when there are two), and resolves once each ended its first turn.
 */
async function spawnSpread(lead: Process, workers: readonly Process[]): Promise<void> {
  for (const name of ['alice', 'bob']) {
    await lead.service.spawnTeammate(lead.service.lead, {
      name,
      description: 'helps',
      prompt: `Hi ${name}.`,
      agentType: 'worker',
    });
    await turnsEnded(workers, name);
  }
}

/** Resolves once `process` has seen the log up to the shared log's last record. */
async function caughtUp(process: Process, team: MemorySharedTeam): Promise<void> {
  const last = team.records().at(-1)?.seq ?? 0;
  await process.sink.waitUntil(() =>
    process.service.listMembers(process.service.lead).length > 0
      ? lastSeqOf(process) >= last
      : false,
  );
}

function lastSeqOf(process: Process): number {
  let seq = 0;
  for (const { event } of process.sink.events) {
    if (event.type === 'record' && event.record.seq > seq) seq = event.record.seq;
  }
  return seq;
}

/** Resolves once `agent` finished `count` turns in any of `processes`. */
function turnsEnded(processes: readonly Process[], agent: string, count = 1): Promise<void> {
  return Promise.race(
    processes.map((p) =>
      p.sink.waitFor((name, e) => name === agent && e.type === 'turn.end', count),
    ),
  );
}

/** Resolves once the hub published the record with seq `seq`. */
function caughtUpTo(hub: EventHub, seq: number): Promise<void> {
  return new Promise<void>((resolve) => {
    const subscription = hub.subscribe({});
    void (async () => {
      for await (const item of subscription) {
        if (item.type === 'event' && item.event.type === 'record' && item.event.record.seq >= seq) {
          subscription.close();
          resolve();
          return;
        }
      }
    })();
  });
}

function turnStarts(process: Process, agent: string): number {
  return process.sink.events.filter((e) => e.agent === agent && e.event.type === 'turn.start')
    .length;
}

describe('a team spread over processes (shared log)', () => {
  it('shows every process a member as the process that runs it reports it, and progress with it', async () => {
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
    const b = await w.open({ lead: false }, 'b');
    await spawnAlice(a);
    await b.service.idle();
    await a.service.idle();
    const alice = () =>
      a.service.listMembers(a.service.lead).find((m) => m.name === 'alice') as MemberInfo;
    // Idle in b, and a sees it so: not inactive, and placed on b.
    expect(alice().status).toBe('idle');
    expect(alice().process).toEqual({ processId: 'participant-1', here: false });
    expect(a.service.progress(a.service.lead).progressing).toBe(false);
    await a.service.sendMessage(a.service.lead, { to: 'alice', text: 'one more thing' });
    await started.promise;
    expect(alice().status).toBe('running');
    const progress = a.service.progress(a.service.lead);
    expect(progress).toMatchObject({ progressing: true, working: ['alice'] });
    // The lead's wait_for_team waits rather than answering noProgress at once.
    const wait = a.service.forMember(a.service.lead).waitForChange({ timeoutMs: 60_000 });
    gate.resolve();
    await expect(wait).resolves.toMatchObject({ changed: true });
    await b.service.idle();
    await a.service.idle();
    expect(alice().status).toBe('idle');
    expect(a.service.progress(a.service.lead).summary).toMatch(/no other member is working/);
    await b.service.dispose();
    await a.service.dispose();
  });

  it('shows a member as running while the report of its process predates the mail it took', async () => {
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
    const b = await w.open({ lead: false }, 'b');
    await spawnAlice(a);
    await b.service.idle();
    await a.service.idle();
    const alice = () =>
      a.service.listMembers(a.service.lead).find((m) => m.name === 'alice') as MemberInfo;
    expect(alice().status).toBe('idle');
    // b's reports stall (a placement reports at most once per heartbeat interval)
    const reports = b.participant.holdReports();
    await a.service.sendMessage(a.service.lead, { to: 'alice', text: 'one more thing' });
    await started.promise;
    expect(w.team.records().some((r) => r.type === 'message.delivered')).toBe(true);
    await caughtUp(a, w.team);
    // a has not heard b report alice running, but it saw her take the mail: she works
    expect(a.service.progress(a.service.lead)).toMatchObject({
      progressing: true,
      working: ['alice'],
    });
    expect(alice().status).toBe('running');
    gate.resolve();
    await b.service.idle();
    // idle in b, unreported: a still counts her as working rather than as stalled
    await caughtUp(a, w.team);
    expect(alice().status).toBe('running');
    reports.release();
    expect(alice().status).toBe('idle');
    expect(a.service.progress(a.service.lead).progressing).toBe(false);
    await b.service.dispose();
    await a.service.dispose();
  });

  it('runs a teammate in the process its placement gives it, and mail crosses both ways', async () => {
    const w = world({
      lead: notedLead,
      alice: ({ call }) =>
        call === 1 ? { toolCalls: [{ name: 'whoami' }] } : { text: `alice done ${call}` },
    });
    const a = await w.open({ lead: true, agentTypes: [] }, 'a');
    const b = await w.open({ lead: false }, 'b');
    await spawnAlice(a);
    const aliceId = a.service.listMembers(a.service.lead).find((m) => m.name === 'alice')?.memberId;
    expect(w.team.placementOf(aliceId as string)?.participant).toBe(b.index);
    // alice's turn runs in b, and her idle notice wakes the lead in a
    await a.sink.waitFor((agent, e) => agent === 'lead' && e.type === 'turn.start');
    await b.service.idle();
    await a.service.idle();
    expect(turnStarts(b, 'alice')).toBe(1);
    expect(turnStarts(a, 'alice')).toBe(0);
    expect(describeTranscript(w.transcripts.raw(aliceId as string))[0]).toBe(
      'user: [message from lead]\nHi alice.',
    );
    // a message from b's member reaches the lead once
    const sent = await b.service.sendMessage(w.refs.get('alice') as AgentRef, {
      to: 'lead',
      text: 'from b',
    });
    await a.sink.waitFor((agent, e) => agent === 'lead' && e.type === 'turn.start', 2);
    await a.service.idle();
    expect(
      messageIdsIn(w.transcripts.raw(TEAM_ID)).filter((id) => id === sent.messageId),
    ).toHaveLength(1);
    expect(() => foldTeam(w.team.records(), { teamId: TEAM_ID })).not.toThrow();
    await b.service.dispose();
    await a.service.dispose();
  });

  it('a command that lost the race is decided again: two claims of one task give one owner and TASK_OWNED', async () => {
    const w = world({
      lead: notedLead,
      alice: () => ({ toolCalls: [{ name: 'whoami' }] }),
      bob: () => ({ toolCalls: [{ name: 'whoami' }] }),
    });
    const a = await w.open({ lead: true, agentTypes: [] }, 'a');
    const b = await w.open({ lead: false }, 'b');
    const c = await w.open({ lead: false }, 'c');
    await spawnSpread(a, [b, c]);
    const task = await a.service.createTask(a.service.lead, { subject: 's', description: 'd' });
    await caughtUp(b, w.team);
    await caughtUp(c, w.team);
    const alice = w.refs.get('alice') as AgentRef;
    const bob = w.refs.get('bob') as AgentRef;
    const placed = (ref: AgentRef) =>
      w.team.placementOf(ref.memberId)?.participant === b.index ? b : c;
    // spread: one teammate in each worker process
    expect(placed(alice)).not.toBe(placed(bob));
    // alice's claim is decided against revision 1 and held; bob's lands first
    const hold = placed(alice).participant.holdAppends();
    const late = placed(alice).service.updateTask(alice, {
      taskId: task.id,
      action: { type: 'claim' },
    });
    await placed(bob).service.updateTask(bob, { taskId: task.id, action: { type: 'claim' } });
    hold.release();
    // the lost race is caught up and decided again: exactly the one-process refusal
    await expect(late).rejects.toMatchObject({ code: 'TASK_OWNED' });
    const folded = foldTeam(w.team.records(), { teamId: TEAM_ID });
    expect(folded.tasks.find((t) => t.id === task.id)?.ownerId).toBe(bob.memberId);
    expect(folded.tasks.find((t) => t.id === task.id)?.revision).toBe(2);
    for (const p of [a, b, c]) await p.service.dispose();
  });

  it('a teammate whose claim another process won goes on to the next ready task at once', async () => {
    const working = () => ({ text: 'Working on it.' });
    const w = world({ lead: notedLead, alice: working, bob: working });
    const a = await w.open({ lead: true, agentTypes: [] }, 'a', undefined, true);
    const b = await w.open({ lead: false }, 'b', undefined, true);
    const c = await w.open({ lead: false }, 'c', undefined, true);
    await spawnSpread(a, [b, c]);
    const folded = () => foldTeam(w.team.records(), { teamId: TEAM_ID });
    const memberOf = (name: string) => folded().roster.find((m) => m.name === name)?.id as string;
    const placed = (memberId: string) =>
      w.team.placementOf(memberId)?.participant === b.index ? b : c;
    const alice = placed(memberOf('alice'));
    const bob = placed(memberOf('bob'));
    expect(alice).not.toBe(bob);
    // both claim task-1, each held in its own process; bob's lands first
    const holdAlice = alice.participant.holdAppends();
    const holdBob = bob.participant.holdAppends();
    const before = [alice.participant.appendAttempts, bob.participant.appendAttempts];
    await a.service.createTask(a.service.lead, { subject: 'One', description: 'one' });
    await vi.waitUntil(
      () =>
        alice.participant.appendAttempts > (before[0] as number) &&
        bob.participant.appendAttempts > (before[1] as number),
    );
    await a.service.createTask(a.service.lead, { subject: 'Two', description: 'two' });
    holdBob.release();
    await a.sink.waitUntil(
      () => folded().tasks.find((t) => t.id === 'task-1')?.ownerId === memberOf('bob'),
    );
    holdAlice.release();
    // alice lost task-1 to bob: she takes task-2 without waiting for the next change of the
    // board or the retry interval (the clocks here never move)
    await a.sink.waitUntil(
      () => folded().tasks.find((t) => t.id === 'task-2')?.ownerId === memberOf('alice'),
    );
    for (const p of [a, b, c]) await p.service.dispose();
  });

  it('a process that lost a member writes nothing more for it; the new holder revives it', async () => {
    const w = world({
      lead: notedLead,
      alice: ({ call }) =>
        call === 1 ? { toolCalls: [{ name: 'whoami' }] } : { text: `turn ${call}` },
    });
    const a = await w.open({ lead: true, agentTypes: [] }, 'a');
    const b = await w.open({ lead: false }, 'b');
    const c = await w.open({ lead: false }, 'c');
    await spawnAlice(a);
    await turnsEnded([b, c], 'alice');
    const alice = w.refs.get('alice') as AgentRef;
    const from = w.team.placementOf(alice.memberId)?.participant as number;
    const [old, next] = from === b.index ? [b, c] : [c, b];
    w.team.move(alice.memberId, next.index);
    await expect(
      old.service.sendMessage(alice, { to: 'lead', text: 'stale' }),
    ).rejects.toMatchObject({ code: 'FENCED' });
    const stale = w.team
      .records()
      .filter((r) => r.type === 'message.queued' && r.message.senderId === alice.memberId)
      .filter(
        (r) => r.type === 'message.queued' && JSON.stringify(r.message.content).includes('stale'),
      );
    expect(stale).toEqual([]);
    // mail to alice now runs her turn in the new holder
    await a.service.sendMessage(a.service.lead, { to: 'alice', text: 'again' });
    await next.sink.waitFor((agent, e) => agent === 'alice' && e.type === 'turn.start');
    await next.service.idle();
    expect(turnStarts(old, 'alice')).toBe(1);
    expect(turnStarts(next, 'alice')).toBe(1);
    for (const p of [a, b, c]) await p.service.dispose();
  });

  it('an observer that runs no member sees every durable record, in log order, through its hub', async () => {
    const w = world({
      lead: notedLead,
      alice: ({ call }) =>
        call === 1 ? { toolCalls: [{ name: 'whoami' }] } : { text: `alice ${call}` },
    });
    const a = await w.open({ lead: true, agentTypes: [] }, 'a');
    const b = await w.open({ lead: false }, 'b');
    const participant = w.team.join({ runs: { lead: false, agentTypes: [] } });
    const hub = createEventHub({ teamId: TEAM_ID, log: participant.log });
    const observer = await openTeam({
      teamId: TEAM_ID,
      log: participant.log,
      transcripts: w.transcripts,
      format: createSimpleFormat(),
      agents: createAgentRegistry([
        { type: 'lead', systemPrompt: 'You lead.', model: w.model },
        { type: 'worker', systemPrompt: 'You work.', model: w.model },
      ]),
      lead: { agentType: 'lead' },
      events: hub,
      clock: createManualClock(),
      ids: createSequentialIds('o'),
    });
    const seen: number[] = [];
    const subscription = hub.subscribe({});
    const reading = (async () => {
      for await (const item of subscription) {
        if (item.type === 'event' && item.event.type === 'record') seen.push(item.event.record.seq);
      }
    })();
    const openedAt = w.team.records().length;
    await spawnAlice(a);
    await turnsEnded([b], 'alice');
    await a.sink.waitFor((agent, e) => agent === 'lead' && e.type === 'turn.end');
    await a.service.idle();
    await b.service.idle();
    await caughtUpTo(hub, w.team.records().length);
    expect(seen).toEqual(
      w.team
        .records()
        .slice(openedAt)
        .map((r) => r.seq),
    );
    // no runner ever ran in the observer
    expect(observer.listMembers(observer.lead).map((m) => m.status)).not.toContain('running');
    hub.close();
    await reading;
    for (const service of [observer, a.service, b.service]) await service.dispose();
  });

  it('a prompt waiting for a lead that moves to another process is refused with NOT_PLACED_HERE', async () => {
    let open: () => void = () => {};
    const gate = new Promise<void>((resolve) => {
      open = resolve;
    });
    const w = world({ lead: ({ call }) => (call === 1 ? { text: 'slow', gate } : { text: 'ok' }) });
    const a = await w.open({ lead: true, agentTypes: [] }, 'a');
    const b = await w.open({ lead: true, agentTypes: [] }, 'b');
    const running = a.service.promptLead('first');
    const waiting = a.service.promptLead('second');
    await a.sink.waitFor((agent, e) => agent === 'lead' && e.type === 'turn.start');
    w.team.move(TEAM_ID, b.index);
    await expect(waiting).rejects.toMatchObject({ code: 'NOT_PLACED_HERE' });
    // the turn that was running ends as an interrupted one, like a turn cut by dispose
    await expect(running).resolves.toMatchObject({ stopReason: 'interrupted' });
    open();
    // the lead answers in its new process, and the old one reported no failure
    await expect(b.service.promptLead('third')).resolves.toMatchObject({ stopReason: 'end_turn' });
    expect(a.sink.errors()).toEqual([]);
    for (const p of [a, b]) await p.service.dispose();
  });

  it('a process that does not run the lead refuses to prompt it', async () => {
    const w = world({ lead: notedLead });
    await w.open({ lead: true, agentTypes: [] }, 'a');
    const b = await w.open({ lead: false }, 'b');
    await expect(b.service.promptLead('hi')).rejects.toMatchObject({ code: 'NOT_PLACED_HERE' });
    await b.service.dispose();
  });

  it('a turn whose transcript write is fenced before its placement moved stops quietly; the member finishes where it moves', async () => {
    const w = world({
      lead: notedLead,
      alice: ({ call }) => ({ text: `alice ${call}` }),
    });
    const fenced = new Set<string>();
    const a = await w.open({ lead: true, agentTypes: [] }, 'a');
    const b = await w.open({ lead: false }, 'b', fenced);
    await spawnAlice(a);
    await turnsEnded([b], 'alice');
    await b.service.idle();
    const aliceId = (
      a.service.listMembers(a.service.lead).find((m) => m.name === 'alice') as MemberInfo
    ).memberId;
    // b's lease on alice ran out; its placement has not said so yet
    fenced.add(aliceId);
    await a.service.sendMessage(a.service.lead, { to: 'alice', text: 'again' });
    await b.sink.waitFor(
      (agent, e) => agent === 'alice' && e.type === 'status' && e.status === 'inactive',
    );
    // nothing failed: the member runs elsewhere now, and b says nothing of it
    expect(b.sink.errors()).toEqual([]);
    expect(a.sink.errors()).toEqual([]);
    const c = await w.open({ lead: false }, 'c');
    w.team.move(aliceId, c.index);
    await turnsEnded([c], 'alice');
    await c.service.idle();
    // the message b could not write is read once, in c, with one model call
    expect(w.model.calls('alice')).toBe(2);
    const held = messageIdsIn(await w.transcripts.load({ memberId: aliceId }));
    expect(new Set(held).size).toBe(held.length);
    expect(c.sink.errors()).toEqual([]);
    for (const p of [a, b, c]) await p.service.dispose();
  });

  it('a process whose write for the lead is fenced stops its lead quietly and refuses the prompt; the lead answers where it moves', async () => {
    const w = world({ lead: ({ call }) => ({ text: `lead ${call}` }) });
    const fenced = new Set<string>();
    const a = await w.open({ lead: true, agentTypes: [] }, 'a', fenced);
    await expect(a.service.promptLead('first')).resolves.toMatchObject({ stopReason: 'end_turn' });
    fenced.add(TEAM_ID);
    await expect(a.service.promptLead('second')).rejects.toMatchObject({ code: 'FENCED' });
    expect(a.sink.errors()).toEqual([]);
    const b = await w.open({ lead: true, agentTypes: [] }, 'b');
    w.team.move(TEAM_ID, b.index);
    await b.service.idle();
    await expect(b.service.promptLead('third')).resolves.toMatchObject({ stopReason: 'end_turn' });
    expect(b.sink.errors()).toEqual([]);
    for (const p of [a, b]) await p.service.dispose();
  });
});
