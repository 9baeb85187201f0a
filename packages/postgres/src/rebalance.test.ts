import type { PlacementCandidate } from '@teamwire/core';
import { REBALANCE_MARGIN } from '@teamwire/core';
import { afterEach, beforeEach, expect, it } from 'vitest';
import type { PostgresTeamStore } from './store.js';
import {
  describePg,
  eventually,
  expectNoBounce,
  heartbeats,
  PlacementNotes,
  Scratch,
} from './test-support.js';

const TEAM = '01JTEAMREBALANCE0000000000';
/**
 * Short, since rebalancing takes a few heartbeats (lease / 3) per move. A loaded machine may stall
 * a heartbeat past it; the checks tell that apart from a move (PlacementNotes.lapses).
 */
const FAST_LEASE_MS = 1500;

const lead: PlacementCandidate = { memberId: 'lead', agentType: 'lead', isLead: true };
const teammate = (memberId: string): PlacementCandidate => ({
  memberId,
  agentType: 'general',
  isLead: false,
});

/**
 * Starts a store's placement, noting what it is told; `release` stands for the runtime stopping a
 * member at its next turn boundary (at once by default: the member is idle).
 */
async function startPlacement(
  store: PostgresTeamStore,
  candidates: PlacementCandidate[],
  release: (memberId: string) => Promise<void> = () => Promise.resolve(),
): Promise<PlacementNotes> {
  const notes = PlacementNotes.of(store);
  await store.placement.start({
    candidates: () => candidates,
    listener: { acquired: () => {}, lost: () => {}, release },
  });
  return notes;
}

async function loads(scratch: Scratch): Promise<Map<string, string[]>> {
  const rows = await scratch.sql<{ process_id: string; member_id: string }>(
    `SELECT process_id, member_id FROM "${scratch.schema}".placements WHERE team_id = $1
      ORDER BY member_id`,
    [TEAM],
  );
  const out = new Map<string, string[]>();
  for (const row of rows.rows)
    out.set(row.process_id, [...(out.get(row.process_id) ?? []), row.member_id]);
  return out;
}

describePg('rebalancing members over the processes of a team', () => {
  let scratch: Scratch;
  beforeEach(() => {
    scratch = new Scratch();
  });
  afterEach(async () => {
    await scratch.cleanup();
  });

  it('gives a process that joins late members of its own, then moves nothing for many heartbeats', {
    timeout: 90_000,
  }, async () => {
    const team = [lead, ...['t1', 't2', 't3', 't4', 't5', 't6'].map(teammate)];
    const a = await scratch.open(TEAM, { leaseMs: FAST_LEASE_MS });
    const na = await startPlacement(a, team);
    expect((await loads(scratch)).get(a.processId)?.length).toBe(7);
    const b = await scratch.open(TEAM, { leaseMs: FAST_LEASE_MS });
    const nb = await startPlacement(b, team);
    const balanced = async () => {
      const now = await loads(scratch);
      const inA = now.get(a.processId)?.length ?? 0;
      const inB = now.get(b.processId)?.length ?? 0;
      return inA + inB === 7 && Math.abs(inA - inB) <= REBALANCE_MARGIN;
    };
    await eventually(balanced, 'the members spread over both processes', 60_000);
    const spread = await loads(scratch);
    const moved = spread.get(b.processId) ?? [];
    await eventually(() => moved.every((m) => b.placement.runsHere(m)), 'b running what it got');
    if (na.lapses().length + nb.lapses().length === 0) {
      // Every move was the rebalancer's: the lead stayed where it was, the moves stopped once the
      // loads were within the margin, and each asked the runtime first, then handed the row over.
      expect(spread.get(a.processId)).toContain('lead');
      expect(moved.length).toBe(3);
      const [ea, eb] = [na.list(), nb.list()];
      for (const memberId of moved) {
        expect(ea.lastIndexOf(`?${memberId}`)).toBeGreaterThan(-1);
        expect(ea.lastIndexOf(`-${memberId}`)).toBeGreaterThan(ea.lastIndexOf(`?${memberId}`));
        expect(eb).toContain(`+${memberId}`);
      }
    }
    // No bounce: over 20 more heartbeats of a (more than three rebalancing periods) and 5 of b,
    // no member changes process and no process is asked to release one.
    await expectNoBounce({
      settled: balanced,
      placements: async () =>
        Object.fromEntries(
          [...(await loads(scratch))].flatMap(([processId, members]) =>
            members.map((memberId) => [memberId, processId]),
          ),
        ),
      notes: [na, nb],
      window: async () => {
        await heartbeats(scratch, a.processId, 20);
        await heartbeats(scratch, b.processId, 5);
      },
      leaseMs: FAST_LEASE_MS,
    });
  });

  it('a process that closes hands its members over once the runtime released them, not after the lease', async () => {
    // A long lease: b can only take t1 because a handed it back.
    const team = [lead, teammate('t1')];
    let finishTurn = () => {};
    const turnEnded = new Promise<void>((resolve) => {
      finishTurn = resolve;
    });
    const a = await scratch.open(TEAM, { leaseMs: 60_000 });
    const ea = await startPlacement(a, team, (memberId) =>
      memberId === 't1' ? turnEnded : Promise.resolve(),
    );
    expect(ea.list().sort()).toEqual(['+lead', '+t1']);
    const b = await scratch.open(TEAM, { leaseMs: 60_000 });
    const eb = await startPlacement(b, team);
    const closed = a.close();
    await eventually(() => ea.list().includes('?t1'), 'a asking the runtime for t1');
    // t1's turn is still running: its row is still a's
    expect((await loads(scratch)).get(a.processId)).toContain('t1');
    finishTurn();
    await closed;
    await eventually(
      () => b.placement.runsHere('t1') && b.placement.runsHere('lead'),
      'b taking t1 and the lead over',
    );
    expect(eb.list().sort()).toEqual(['+lead', '+t1']);
  });
});
