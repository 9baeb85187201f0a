import type { PlacementCandidate } from '@teamwire/core';
import { REBALANCE_MARGIN } from '@teamwire/core';
import { afterEach, beforeEach, expect, it } from 'vitest';
import type { PostgresTeamStore } from './store.js';
import { describePg, eventually, Scratch } from './test-support.js';

const TEAM = '01JTEAMREBALANCE0000000000';
/**
 * Short, since rebalancing takes a few heartbeats (lease / 3) per move, but long enough that no
 * heartbeat stall of a loaded machine outlasts it (the test asserts where each member ends up).
 */
const FAST_LEASE_MS = 1500;

const lead: PlacementCandidate = { memberId: 'lead', agentType: 'lead', isLead: true };
const teammate = (memberId: string): PlacementCandidate => ({
  memberId,
  agentType: 'general',
  isLead: false,
});

/**
 * Starts a store's placement, recording what it is told; `release` stands for the runtime
 * stopping a member at its next turn boundary (at once by default: the member is idle).
 */
async function startPlacement(
  store: PostgresTeamStore,
  candidates: PlacementCandidate[],
  release: (memberId: string) => Promise<void> = () => Promise.resolve(),
) {
  const events: string[] = [];
  await store.placement.start({
    candidates: () => candidates,
    listener: {
      acquired: (memberId) => events.push(`+${memberId}`),
      lost: (memberId) => events.push(`-${memberId}`),
      release: (memberId) => {
        events.push(`?${memberId}`);
        return release(memberId);
      },
    },
  });
  return events;
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

/** How many times a process was asked to release a member (a rebalancing move, or a stop). */
const releases = (events: readonly string[]) => events.filter((e) => e.startsWith('?')).length;

/** Resolves once `store`'s process wrote `beats` more heartbeats (read from the database). */
async function heartbeats(scratch: Scratch, store: PostgresTeamStore, beats: number) {
  const read = async () =>
    (
      await scratch.sql<{ at: string }>(
        `SELECT heartbeat_at::text AS at FROM "${scratch.schema}".processes WHERE process_id = $1`,
        [store.processId],
      )
    ).rows[0]?.at;
  let last = await read();
  let seen = 0;
  await eventually(
    async () => {
      const now = await read();
      if (now !== last) {
        seen++;
        last = now;
      }
      return seen >= beats;
    },
    `${beats} heartbeats`,
    60_000,
  );
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
    const ea = await startPlacement(a, team);
    expect((await loads(scratch)).get(a.processId)?.length).toBe(7);
    const b = await scratch.open(TEAM, { leaseMs: FAST_LEASE_MS });
    const eb = await startPlacement(b, team);
    await eventually(
      async () => {
        const now = await loads(scratch);
        const na = now.get(a.processId)?.length ?? 0;
        const nb = now.get(b.processId)?.length ?? 0;
        return na + nb === 7 && Math.abs(na - nb) <= REBALANCE_MARGIN;
      },
      'the members spread over both processes',
      60_000,
    );
    const spread = await loads(scratch);
    // the lead stays where it was; each move asked the runtime first, then handed the row over
    expect(spread.get(a.processId)).toContain('lead');
    const moved = spread.get(b.processId) ?? [];
    expect(moved.length).toBe(3);
    await eventually(() => moved.every((m) => b.placement.runsHere(m)), 'b running what it got');
    for (const memberId of moved) {
      // the last time a lost it, it had asked the runtime to release it first (a lease that
      // lapsed under load earlier may have moved it and given it back before)
      expect(ea.lastIndexOf(`?${memberId}`)).toBeGreaterThan(-1);
      expect(ea.lastIndexOf(`-${memberId}`)).toBeGreaterThan(ea.lastIndexOf(`?${memberId}`));
      expect(eb).toContain(`+${memberId}`);
    }
    // No bounce: over 20 more heartbeats (more than three rebalancing periods) no member moves
    // to the other process and no process is asked to release one (every rebalancing move asks
    // first). A lease that lapses under load may have a process take its own member again,
    // with a new token: that is not a move.
    const settled = await loads(scratch);
    const asked = [releases(ea), releases(eb)];
    await heartbeats(scratch, a, 20);
    await heartbeats(scratch, b, 5);
    expect(await loads(scratch)).toEqual(settled);
    expect([releases(ea), releases(eb)]).toEqual(asked);
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
    expect(ea.sort()).toEqual(['+lead', '+t1']);
    const b = await scratch.open(TEAM, { leaseMs: 60_000 });
    const eb = await startPlacement(b, team);
    const closed = a.close();
    await eventually(() => ea.includes('?t1'), 'a asking the runtime for t1');
    // t1's turn is still running: its row is still a's
    expect((await loads(scratch)).get(a.processId)).toContain('t1');
    finishTurn();
    await closed;
    await eventually(
      () => b.placement.runsHere('t1') && b.placement.runsHere('lead'),
      'b taking t1 and the lead over',
    );
    expect(eb.sort()).toEqual(['+lead', '+t1']);
  });
});
