import type { PlacementCandidate, TeamRecord, TranscriptEntry } from '@teamwire/core';
import { conformanceRecord } from '@teamwire/core/testing';
import { afterEach, beforeEach, expect, it } from 'vitest';
import type { PostgresPlacement } from './placement.js';
import type { PostgresTeamStore } from './store.js';
import { describePg, eventually, Scratch } from './test-support.js';

const TEAM = '01JTEAMPLACEMENT0000000000';
// Leases long enough that no heartbeat stall of a loaded machine outlasts one: these tests
// assert exact acquire/lose sequences. Tests about a lease running out use SHORT_LEASE_MS and
// assert only what eventually happens.
const LEASE_MS = 3000;
const SHORT_LEASE_MS = 1000;
const FENCE_LEASE_MS = 1500;

const lead: PlacementCandidate = { memberId: 'lead', agentType: 'lead', isLead: true };
const teammate = (memberId: string, agentType = 'general'): PlacementCandidate => ({
  memberId,
  agentType,
  isLead: false,
});

/** Starts a store's placement over a changeable candidate list, recording what it is told. */
async function startPlacement(store: PostgresTeamStore, candidates: PlacementCandidate[]) {
  const events: string[] = [];
  const list = { candidates };
  await store.placement.start({
    candidates: () => list.candidates,
    listener: {
      acquired: (memberId) => events.push(`+${memberId}`),
      lost: (memberId) => events.push(`-${memberId}`),
    },
  });
  return {
    events,
    set(next: PlacementCandidate[]) {
      list.candidates = next;
      store.placement.candidatesChanged();
    },
  };
}

function internals(store: PostgresTeamStore): PostgresPlacement {
  return store.placement as PostgresPlacement;
}

const entry: TranscriptEntry = {
  schemaVersion: 1,
  at: 1,
  message: { role: 'user', content: [{ type: 'text', text: 'work' }] },
};

function record(seq: number): TeamRecord {
  return conformanceRecord(TEAM, seq);
}

describePg('placement and fencing', () => {
  let scratch: Scratch;
  beforeEach(() => {
    scratch = new Scratch();
  });
  afterEach(async () => {
    await scratch.cleanup();
  });

  it('runs the lead when start resolves, in the first process willing to', async () => {
    const a = await scratch.open(TEAM, { leaseMs: LEASE_MS });
    const b = await scratch.open(TEAM, { leaseMs: LEASE_MS });
    const pa = await startPlacement(a, [lead]);
    expect(a.placement.runsHere('lead')).toBe(true);
    expect(pa.events).toEqual(['+lead']);
    expect(a.log.shared?.placement).toBe(a.placement);
    const pb = await startPlacement(b, [lead]);
    expect(b.placement.runsHere('lead')).toBe(false);
    expect(pb.events).toEqual([]);
  });

  it('places only what a process is willing to run', async () => {
    const a = await scratch.open(TEAM, {
      leaseMs: LEASE_MS,
      runs: { lead: false, agentTypes: ['reviewer'] },
    });
    const pa = await startPlacement(a, [lead, teammate('g1'), teammate('r1', 'reviewer')]);
    expect(pa.events).toEqual(['+r1']);
  });

  it('spreads teammates over the live processes willing to run them', async () => {
    const a = await scratch.open(TEAM, { leaseMs: LEASE_MS, processId: 'process-a' });
    const b = await scratch.open(TEAM, { leaseMs: LEASE_MS, processId: 'process-b' });
    const pa = await startPlacement(a, []);
    const pb = await startPlacement(b, []);
    const team = ['t1', 't2', 't3', 't4'].map((id) => teammate(id));
    pa.set(team);
    pb.set(team);
    const count = (store: PostgresTeamStore) =>
      team.filter((c) => store.placement.runsHere(c.memberId)).length;
    await eventually(() => count(a) + count(b) === 4, 'every teammate placed');
    expect([count(a), count(b)]).toEqual([2, 2]);
  });

  it('fences a process that lost its member: its log and transcript writes are FENCED, nothing written', async () => {
    // A longer lease: A must keep its member until it is paused, and on a loaded machine a
    // heartbeat can stall for longer than the short lease of the other tests (A would then give
    // the member up on its own, as it should).
    const a = await scratch.open(TEAM, { leaseMs: FENCE_LEASE_MS });
    const b = await scratch.open(TEAM, { leaseMs: FENCE_LEASE_MS });
    const team = [teammate('m1')];
    await startPlacement(a, team);
    expect(a.placement.runsHere('m1')).toBe(true);
    const pb = await startPlacement(b, team);
    expect(b.placement.runsHere('m1')).toBe(false);
    await a.log.append({ records: [record(1)], actorId: 'm1' });
    await a.transcripts.append({ memberId: 'm1', entries: [entry] });

    // A freezes (a long pause, a partition): it still believes it runs m1.
    await internals(a).pause();
    await eventually(() => b.placement.runsHere('m1'), 'B taking m1 over', 6 * FENCE_LEASE_MS);
    expect(pb.events).toEqual(['+m1']);
    expect(a.placement.runsHere('m1')).toBe(true);

    await expect(a.log.append({ records: [record(2)], actorId: 'm1' })).rejects.toMatchObject({
      code: 'FENCED',
      details: { memberId: 'm1' },
    });
    await expect(a.transcripts.append({ memberId: 'm1', entries: [entry] })).rejects.toMatchObject({
      code: 'FENCED',
      details: { memberId: 'm1' },
    });
    expect(a.log.lastSeq()).toBe(1);
    expect(await a.transcripts.load({ memberId: 'm1' })).toHaveLength(1);

    // The new owner writes; a write of A for no member at all is not fenced.
    await b.log.append({ records: [record(2)], actorId: 'm1' });
    await b.transcripts.append({ memberId: 'm1', entries: [entry] });
    await a.log.append({ records: [record(3)] });
    const rows = await scratch.sql(
      `SELECT seq, actor_id, process_id FROM "${scratch.schema}".team_log ORDER BY seq`,
    );
    expect(rows.rows).toEqual([
      { seq: '1', actor_id: 'm1', process_id: a.processId },
      { seq: '2', actor_id: 'm1', process_id: b.processId },
      { seq: '3', actor_id: null, process_id: a.processId },
    ]);

    // Once A looks again it learns it lost m1.
    internals(a).resume();
    await eventually(() => !a.placement.runsHere('m1'), 'A noticing the loss');
  });

  it('refuses writes for a member this process does not run, before asking the database', async () => {
    const a = await scratch.open(TEAM, { leaseMs: LEASE_MS, runs: { agentTypes: [] } });
    await startPlacement(a, [teammate('m1')]);
    expect(a.placement.runsHere('m1')).toBe(false);
    await expect(a.transcripts.append({ memberId: 'm1', entries: [entry] })).rejects.toMatchObject({
      code: 'FENCED',
    });
    await expect(a.log.append({ records: [record(1)], actorId: 'm1' })).rejects.toMatchObject({
      code: 'FENCED',
    });
  });

  it('hands members over at once when a process closes', async () => {
    // A long lease: B can only take m1 because A released it.
    const a = await scratch.open(TEAM, { leaseMs: 60_000 });
    const b = await scratch.open(TEAM, { leaseMs: 60_000 });
    const team = [lead, teammate('m1')];
    await startPlacement(a, team);
    const pb = await startPlacement(b, team);
    expect(pb.events).toEqual([]);
    await a.close();
    const rows = await scratch.sql(
      `SELECT count(*)::int AS n FROM "${scratch.schema}".processes WHERE process_id = $1`,
      [a.processId],
    );
    expect(rows.rows).toEqual([{ n: 0 }]);
    pb.set(team);
    await eventually(
      () => b.placement.runsHere('lead') && b.placement.runsHere('m1'),
      'B taking over',
    );
  });

  it('forgets processes dead for ten leases (at least a minute) when a process starts', async () => {
    const a = await scratch.open(TEAM, { leaseMs: 300 });
    const insert = (id: string, agoMs: number) =>
      scratch.sql(
        `INSERT INTO "${scratch.schema}".processes (team_id, process_id, runs_lead, heartbeat_at)
         VALUES ($1, $2, true, now() - $3 * interval '1 millisecond')`,
        [TEAM, id, agoMs],
      );
    await insert('gone-long-ago', 120_000);
    await insert('gone-recently', 20_000);
    await startPlacement(a, [lead]);
    const rows = await scratch.sql<{ process_id: string }>(
      `SELECT process_id FROM "${scratch.schema}".processes WHERE team_id = $1 ORDER BY process_id`,
      [TEAM],
    );
    expect(rows.rows.map((r) => r.process_id)).toEqual([a.processId, 'gone-recently'].sort());
  });

  it('releases members that are no longer candidates', async () => {
    const a = await scratch.open(TEAM, { leaseMs: LEASE_MS });
    const pa = await startPlacement(a, [teammate('m1'), teammate('m2')]);
    expect(pa.events.sort()).toEqual(['+m1', '+m2']);
    pa.set([teammate('m2')]);
    await eventually(() => !a.placement.runsHere('m1'), 'm1 released');
    const rows = await scratch.sql(
      `SELECT member_id FROM "${scratch.schema}".placements ORDER BY member_id`,
    );
    expect(rows.rows).toEqual([{ member_id: 'm2' }]);
    expect(pa.events.sort()).toEqual(['+m1', '+m2']);
  });

  it('keeps its members while a look waits on the database: heartbeats go on their own', async () => {
    const a = await scratch.open(TEAM, { leaseMs: SHORT_LEASE_MS });
    const pa = await startPlacement(a, [teammate('m1')]);
    expect(pa.events).toEqual(['+m1']);
    const locker = await scratch.pool().connect();
    try {
      await locker.query('BEGIN');
      await locker.query(`LOCK TABLE "${scratch.schema}".placements IN ACCESS EXCLUSIVE MODE`);
      const locked = (await locker.query<{ at: Date }>('SELECT now() AS at')).rows[0]?.at;
      // A's next look reads placements, and waits for the lock far longer than a lease.
      a.placement.candidatesChanged();
      await eventually(async () => {
        const beat = await scratch.sql<{ later: boolean }>(
          `SELECT heartbeat_at > $1::timestamptz + $2 * interval '1 millisecond' AS later
             FROM "${scratch.schema}".processes`,
          [locked, 3 * SHORT_LEASE_MS],
        );
        return beat.rows[0]?.later === true;
      }, 'heartbeats for three leases while the look waits');
      expect(pa.events).toEqual(['+m1']);
      expect(a.placement.runsHere('m1')).toBe(true);
    } finally {
      await locker.query('ROLLBACK');
      locker.release();
    }
  });

  it('gives up its members when heartbeats fail for a whole lease', async () => {
    const a = await scratch.open(TEAM, { leaseMs: SHORT_LEASE_MS });
    const pa = await startPlacement(a, [teammate('m1')]);
    expect(pa.events).toEqual(['+m1']);
    // Heartbeats now fail (the table is gone); after a lease A must stop running m1.
    await scratch.sql(`ALTER TABLE "${scratch.schema}".processes RENAME TO processes_away`);
    await eventually(() => pa.events.includes('-m1'), 'A giving m1 up');
    expect(a.placement.runsHere('m1')).toBe(false);
    await scratch.sql(`ALTER TABLE "${scratch.schema}".processes_away RENAME TO processes`);
    // Heartbeats work again: A runs m1 again under a new token.
    await eventually(() => a.placement.runsHere('m1'), 'A claiming m1 again');
    await a.transcripts.append({ memberId: 'm1', entries: [entry] });
  });
});
