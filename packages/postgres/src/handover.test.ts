import { type ChildProcess, fork } from 'node:child_process';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { TeamService } from '@teamwire/core';
import { createAgentRegistry, openTeam, REBALANCE_MARGIN } from '@teamwire/core';
import type { ScriptedModel } from '@teamwire/core/testing';
import {
  createScriptedModel,
  createSimpleFormat,
  createSimplePolicy,
} from '@teamwire/core/testing';
import { afterEach, beforeEach, expect, it } from 'vitest';
import type { PostgresTeamStore } from './store.js';
import {
  describePg,
  eventually,
  expectNoBounce,
  heartbeats,
  PG_URL,
  PlacementNotes,
  Scratch,
} from './test-support.js';

/*
 * Rebalancing and SIGTERM handover between real processes: this test's process runs the lead, the
 * others are forked workers (crash/handover-worker.mjs, over the built package).
 */

const TEAM = '01JTEAMHANDOVER00000000000';
const WORKER = fileURLToPath(new URL('../crash/handover-worker.mjs', import.meta.url));
const BUILT = fileURLToPath(new URL('../dist/index.js', import.meta.url));
const NAMES = ['lead', 'alice', 'bob', 'carol', 'dave'];

interface Worker {
  child: ChildProcess;
  processId: string;
  messages: {
    type: string;
    agent?: string;
    call?: number;
    stopReason?: string;
    code?: string;
    note?: string;
  }[];
  /** What its placement told its runtime (from its `placement` messages). */
  notes: PlacementNotes;
  exited: Promise<number | null>;
  /** Resolves once a message matching `predicate` came. */
  waitFor(predicate: (message: Worker['messages'][number]) => boolean): Promise<void>;
}

describePg('handing members over between processes', () => {
  let scratch: Scratch;
  const children: ChildProcess[] = [];
  const services: TeamService[] = [];

  beforeEach(() => {
    if (!existsSync(BUILT)) {
      throw new Error('these tests fork processes over dist/: build @teamwire/postgres first');
    }
    scratch = new Scratch();
  });
  afterEach(async () => {
    for (const child of children.splice(0)) child.kill('SIGKILL');
    for (const service of services.splice(0)) await service.dispose().catch(() => undefined);
    await scratch.cleanup();
  });

  function startWorker(processId: string, leaseMs: number, turnMs: number): Worker {
    const child = fork(
      WORKER,
      [
        ...['--url', PG_URL, '--schema', scratch.schema, '--team-id', TEAM],
        ...['--process-id', processId, '--lease-ms', String(leaseMs)],
        ...['--turn-ms', String(turnMs)],
      ],
      { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] },
    );
    children.push(child);
    const messages: Worker['messages'] = [];
    const notes = new PlacementNotes();
    const waiters = new Set<() => void>();
    child.on('message', (message) => {
      const received = message as Worker['messages'][number];
      messages.push(received);
      if (received.type === 'placement' && received.note !== undefined) notes.add(received.note);
      for (const waiter of waiters) waiter();
    });
    const exited = new Promise<number | null>((resolve) => child.on('exit', resolve));
    return {
      child,
      processId,
      messages,
      notes,
      exited,
      waitFor(predicate) {
        return new Promise<void>((resolve, reject) => {
          const look = () => {
            if (messages.some(predicate)) {
              waiters.delete(look);
              resolve();
            }
          };
          waiters.add(look);
          exited.then(() => {
            look();
            if (waiters.delete(look)) reject(new Error(`${processId} exited first`));
          });
          look();
        });
      },
    };
  }

  /** This test's process: the lead (and, when willing, teammates), with a counting model. */
  async function openHere(
    leaseMs: number,
    agentTypes: 'all' | string[],
  ): Promise<{
    store: PostgresTeamStore;
    team: TeamService;
    model: ScriptedModel;
    notes: PlacementNotes;
  }> {
    const store = await scratch.open(TEAM, {
      leaseMs,
      processId: 'here',
      runs: { lead: true, agentTypes },
    });
    const notes = PlacementNotes.of(store);
    const model = createScriptedModel({
      scripts: Object.fromEntries(
        NAMES.map((name) => [name, ({ call }: { call: number }) => ({ text: `${name} ${call}` })]),
      ),
    });
    const team = await openTeam({
      teamId: TEAM,
      log: store.log,
      transcripts: store.transcripts,
      format: createSimpleFormat(),
      policy: createSimplePolicy(),
      agents: createAgentRegistry([
        { type: 'lead', systemPrompt: 'You lead.', model },
        { type: 'worker', systemPrompt: 'You work.', model },
      ]),
      lead: { agentType: 'lead' },
      idleClaim: false,
    });
    services.push(team);
    return { store, team, model, notes };
  }

  async function placements(): Promise<Map<string, string>> {
    const rows = await scratch.sql<{ member_id: string; process_id: string }>(
      `SELECT member_id, process_id FROM "${scratch.schema}".placements WHERE team_id = $1`,
      [TEAM],
    );
    return new Map(rows.rows.map((row) => [row.member_id, row.process_id]));
  }

  it('on SIGTERM a worker lets the running turn end, and the survivor takes the member at once, redoing nothing', {
    timeout: 60_000,
  }, async () => {
    // A lease far longer than the test: a takeover can only come from the handover.
    const lease = 120_000;
    const here = await openHere(lease, 'all');
    const b = startWorker('worker-b', lease, 1_500);
    await b.waitFor((m) => m.type === 'ready');
    const spawned = await here.team.spawnTeammate(here.team.lead, {
      name: 'alice',
      description: 'helps',
      prompt: 'Hi alice.',
      agentType: 'worker',
    });
    const aliceId = spawned.memberId;
    // here runs the lead: alice goes to the least loaded process, b
    await b.waitFor((m) => m.type === 'turn' && m.agent === 'alice');
    expect((await placements()).get(aliceId)).toBe('worker-b');
    await here.team.sendMessage(here.team.lead, { to: 'alice', text: 'one more thing' });
    await b.waitFor((m) => m.type === 'call' && m.agent === 'alice' && m.call === 2);
    // mid-turn (the model call takes 1.5 s): stop the worker
    b.child.kill('SIGTERM');
    expect(await b.exited).toBe(0);
    const turns = b.messages.filter((m) => m.type === 'turn' && m.agent === 'alice');
    expect(turns.map((m) => m.stopReason)).toEqual(['end_turn', 'end_turn']);
    expect(b.messages.filter((m) => m.type === 'error')).toEqual([]);
    await eventually(() => here.store.placement.runsHere(aliceId), 'here taking alice over');
    // nothing was left to redo: alice has no work here until new mail comes
    await here.team.idle();
    expect(here.model.calls('alice')).toBe(0);
    await here.team.sendMessage(here.team.lead, { to: 'alice', text: 'and this' });
    await eventually(() => here.model.calls('alice') === 1, 'alice answering here');
    await here.team.idle();
    const calls = b.messages.filter((m) => m.type === 'call' && m.agent === 'alice').length;
    expect(calls + here.model.calls('alice')).toBe(3);
    // every message once in alice's transcript
    const entries = await here.store.transcripts.load({ memberId: aliceId });
    const ids = entries.flatMap((entry) =>
      entry.message.source?.kind === 'team-message' ? [entry.message.source.messageId] : [],
    );
    expect(new Set(ids).size).toBe(ids.length);
    expect(ids).toHaveLength(3);
  });

  it('a worker that joins late gets members, and none moves back and forth after', {
    timeout: 120_000,
  }, async () => {
    // short, so that rebalancing takes seconds; a loaded machine may stall a heartbeat past it,
    // which the checks tell apart from a move (PlacementNotes.lapses)
    const lease = 1_500;
    const here = await openHere(lease, 'all');
    for (const name of ['alice', 'bob', 'carol', 'dave']) {
      await here.team.spawnTeammate(here.team.lead, {
        name,
        description: 'helps',
        prompt: `Hi ${name}.`,
        agentType: 'worker',
      });
    }
    await here.team.idle();
    expect([...(await placements()).values()].every((p) => p === 'here')).toBe(true);
    const b = startWorker('worker-b', lease, 0);
    await b.waitFor((m) => m.type === 'ready');
    const spread = async () => {
      const counts = new Map<string, number>();
      for (const p of (await placements()).values()) counts.set(p, (counts.get(p) ?? 0) + 1);
      return counts;
    };
    const balanced = async () => {
      const counts = await spread();
      return (
        Math.abs((counts.get('here') ?? 0) - (counts.get('worker-b') ?? 0)) <= REBALANCE_MARGIN
      );
    };
    await eventually(balanced, 'the teammates spreading over both processes', 60_000);
    if (here.notes.lapses().length + b.notes.lapses().length === 0) {
      // every move was the rebalancer's: it stopped once the loads were within the margin
      expect((await spread()).get('worker-b')).toBe(2);
    }
    // No bounce: over 20 more heartbeats of the worker (more than three rebalancing periods), no
    // member changes process and no process is asked to release one.
    await expectNoBounce({
      settled: balanced,
      placements: async () => Object.fromEntries(await placements()),
      notes: [here.notes, b.notes],
      window: () => heartbeats(scratch, 'worker-b', 20),
      leaseMs: lease,
    });
    expect(b.messages.filter((m) => m.type === 'error')).toEqual([]);
    b.child.kill('SIGTERM');
    expect(await b.exited).toBe(0);
    await eventually(
      async () => [...(await placements()).values()].every((p) => p === 'here'),
      'here taking the worker members back',
    );
  });
});
