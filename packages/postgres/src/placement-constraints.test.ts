import type { PlacementCandidate, PlacementView } from '@teamwire/core';
import { TeamError } from '@teamwire/core';
import { afterEach, beforeEach, expect, it } from 'vitest';
import type { PostgresPlacement } from './placement.js';
import { SCHEMA_VERSION } from './schema.js';
import type { PostgresTeamStore } from './store.js';
import { describePg, eventually, Scratch } from './test-support.js';

const TEAM = '01JTEAMCONSTRAINTS00000000';
const LEASE_MS = 3000;
const SHORT_LEASE_MS = 1000;

const fixer = (memberId: string): PlacementCandidate => ({
  memberId,
  agentType: 'fixer',
  isLead: false,
  requires: ['repo:app'],
});
const plain = (memberId: string): PlacementCandidate => ({
  memberId,
  agentType: 'general',
  isLead: false,
});

/** Starts a store's placement over `candidates`, recording what it is told. */
async function startPlacement(
  store: PostgresTeamStore,
  candidates: PlacementCandidate[],
  capabilities?: readonly string[],
) {
  const events: string[] = [];
  let changes = 0;
  await store.placement.start({
    candidates: () => candidates,
    listener: {
      acquired: (memberId) => events.push(`+${memberId}`),
      lost: (memberId) => events.push(`-${memberId}`),
      changed: () => {
        changes++;
      },
    },
    ...(capabilities === undefined ? {} : { capabilities }),
  });
  return {
    events,
    get changes() {
      return changes;
    },
    view: () => store.placement.view?.() as PlacementView,
  };
}

describePg('placement constraints', () => {
  let scratch: Scratch;
  beforeEach(() => {
    scratch = new Scratch();
  });
  afterEach(async () => {
    await scratch.cleanup();
  });

  it('places a member that requires a capability only on a process that has it', async () => {
    // a, the least loaded and first by id, has no repository; b has it
    const a = await scratch.open(TEAM, { leaseMs: LEASE_MS, processId: 'process-a' });
    const b = await scratch.open(TEAM, {
      leaseMs: LEASE_MS,
      processId: 'process-b',
      runs: { capabilities: ['repo:app', 'label:gpu'] },
    });
    const team = [fixer('f1'), fixer('f2'), plain('g1')];
    const pa = await startPlacement(a, team);
    const pb = await startPlacement(b, team);
    await eventually(
      () => team.every((c) => a.placement.runsHere(c.memberId) || b.placement.runsHere(c.memberId)),
      'every member placed',
    );
    expect(pb.events.sort()).toEqual(['+f1', '+f2']);
    expect(pa.events).toEqual(['+g1']);
    const row = await scratch.sql<{ capabilities: string[] | null }>(
      `SELECT capabilities FROM "${scratch.schema}".processes WHERE process_id = 'process-b'`,
    );
    expect(row.rows).toEqual([{ capabilities: ['repo:app', 'label:gpu'] }]);
  });

  it('adds the capabilities the team gives at start to those of runs', async () => {
    const a = await scratch.open(TEAM, {
      leaseMs: LEASE_MS,
      runs: { capabilities: ['label:gpu'] },
    });
    const pa = await startPlacement(a, [fixer('f1')], ['repo:app']);
    expect(pa.events).toEqual(['+f1']);
  });

  it('lets only a capable process take a dead process over', async () => {
    const capable = { capabilities: ['repo:app'] };
    const a = await scratch.open(TEAM, {
      leaseMs: SHORT_LEASE_MS,
      processId: 'process-a',
      runs: capable,
    });
    const team = [fixer('f1')];
    await startPlacement(a, team);
    expect(a.placement.runsHere('f1')).toBe(true);
    const b = await scratch.open(TEAM, { leaseMs: SHORT_LEASE_MS, processId: 'process-b' });
    const pb = await startPlacement(b, team);
    const c = await scratch.open(TEAM, {
      leaseMs: SHORT_LEASE_MS,
      processId: 'process-c',
      runs: capable,
    });
    const pc = await startPlacement(c, team);
    // a freezes: its lease runs out and f1 moves, to c (b has no repository)
    await (a.placement as PostgresPlacement).pause();
    await eventually(() => c.placement.runsHere('f1'), 'c taking f1 over', 8 * SHORT_LEASE_MS);
    expect(pc.events).toEqual(['+f1']);
    expect(pb.events).toEqual([]);
    // b, with every other look it made meanwhile, never claimed it
    const rows = await scratch.sql<{ process_id: string }>(
      `SELECT process_id FROM "${scratch.schema}".placements WHERE member_id = 'f1'`,
    );
    expect(rows.rows).toEqual([{ process_id: 'process-c' }]);
  });

  it('shows a member no live process can host, with the capabilities it waits for', async () => {
    const a = await scratch.open(TEAM, { leaseMs: LEASE_MS, processId: 'process-a' });
    const team = [fixer('f1'), plain('g1')];
    const pa = await startPlacement(a, team);
    expect(pa.events).toEqual(['+g1']);
    expect(pa.view().unhostable).toEqual(new Map([['f1', ['repo:app']]]));
    expect(pa.view().awaiting.has('f1')).toBe(false);
    // a process with the repository joins: f1 goes there and waits for nothing
    const b = await scratch.open(TEAM, {
      leaseMs: LEASE_MS,
      processId: 'process-b',
      runs: { lead: false, capabilities: ['repo:app'] },
    });
    await startPlacement(b, team);
    expect(b.placement.runsHere('f1')).toBe(true);
    a.placement.candidatesChanged();
    await eventually(() => pa.view().placed.get('f1')?.processId === 'process-b', 'a sees f1');
    expect(pa.view().unhostable?.size).toBe(0);
  });

  it('refuses bad capabilities with INVALID_ARGUMENT before anything is written', async () => {
    for (const capabilities of [['no-colon'], 'repo:app', ['repo:with space'], [1]]) {
      const error = await scratch
        // biome-ignore lint/suspicious/noExplicitAny: malformed input on purpose
        .open(TEAM, { runs: { capabilities: capabilities as any } })
        .then(
          () => undefined,
          (e: unknown) => e,
        );
      expect(TeamError.hasCode(error, 'INVALID_ARGUMENT')).toBe(true);
    }
    const present = await scratch.sql<{ present: boolean }>(
      'SELECT to_regclass($1) IS NOT NULL AS present',
      [`"${scratch.schema}".processes`],
    );
    expect(present.rows).toEqual([{ present: false }]);
  });

  it('reads a row with capabilities that are not valid as a process with none', async () => {
    const a = await scratch.open(TEAM, { leaseMs: LEASE_MS, processId: 'process-a' });
    const pa = await startPlacement(a, [plain('g1')]);
    await scratch.sql(
      `INSERT INTO "${scratch.schema}".processes (team_id, process_id, runs_lead, capabilities)
       VALUES ($1, 'forged', false, ARRAY['repo:app', 'not a capability'])`,
      [TEAM],
    );
    const b = await scratch.open(TEAM, { leaseMs: LEASE_MS, processId: 'process-b' });
    const pb = await startPlacement(b, [plain('g1'), fixer('f1')]);
    expect(pb.events).toEqual([]);
    // the forged row hosts nothing that requires repo:app: f1 waits for it
    expect(pb.view().unhostable).toEqual(new Map([['f1', ['repo:app']]]));
    expect(pa.events).toEqual(['+g1']);
  });

  it('migrates a version-4 schema: processes get capabilities, null in existing rows', async () => {
    const first = await scratch.open(TEAM);
    await first.close();
    const s = `"${scratch.schema}"`;
    await scratch.sql(`ALTER TABLE ${s}.processes DROP COLUMN capabilities`);
    await scratch.sql(`DELETE FROM ${s}.schema_version WHERE version >= 5`);
    await scratch.sql(
      `INSERT INTO ${s}.processes (team_id, process_id, runs_lead, heartbeat_at, reported_through)
       VALUES ($1, 'version-4-process', false, now(), 3)`,
      [TEAM],
    );
    const a = await scratch.open(TEAM, { leaseMs: LEASE_MS, processId: 'process-a' });
    expect(a.migrated).toEqual({ from: 4, to: SCHEMA_VERSION });
    expect(SCHEMA_VERSION).toBe(7);
    const old = await scratch.sql(
      `SELECT capabilities, reported_through FROM ${s}.processes WHERE process_id = 'version-4-process'`,
    );
    expect(old.rows).toEqual([{ capabilities: null, reported_through: '3' }]);
    // the version-4 process hosts what requires nothing, and nothing that requires a capability
    const pa = await startPlacement(a, [fixer('f1')]);
    expect(pa.events).toEqual([]);
    expect(pa.view().unhostable).toEqual(new Map([['f1', ['repo:app']]]));
  });
});
