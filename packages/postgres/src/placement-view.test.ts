import type { MemberActivity, PlacementCandidate, PlacementView } from '@teamwire/core';
import pg from 'pg';
import { afterEach, beforeEach, expect, it } from 'vitest';
import { MAX_ACTIVITY_BYTES } from './limits.js';
import type { PostgresPlacement } from './placement.js';
import { SCHEMA_VERSION, tablesOf } from './schema.js';
import type { PostgresTeamStore } from './store.js';
import { describePg, eventually, PG_URL, Scratch } from './test-support.js';

const TEAM = '01JTEAMPLACEMENTVIEW000000';
// A lease no heartbeat stall of a loaded machine outlasts (see placement.test.ts); a process that
// must be seen dead gets PAUSE_LEASE_MS.
const LEASE_MS = 3000;
const PAUSE_LEASE_MS = 1500;
/** So long that a process's next heartbeat is not due while a test waits (ms). */
const NO_HEARTBEAT_LEASE_MS = 60_000;

const teammate = (memberId: string, agentType = 'general'): PlacementCandidate => ({
  memberId,
  agentType,
  isLead: false,
});

const activity = (entries: Record<string, MemberActivity>) => new Map(Object.entries(entries));

/**
 * Starts a store's placement and follows its view: `changed(predicate)` resolves with the view
 * the first time the listener hears `changed` and the view then satisfies `predicate`.
 */
async function follow(store: PostgresTeamStore, candidates: PlacementCandidate[]) {
  const placement = store.placement;
  const waiters = new Set<{
    predicate: (view: PlacementView) => boolean;
    resolve: (view: PlacementView) => void;
  }>();
  let changes = 0;
  await placement.start({
    candidates: () => candidates,
    listener: {
      acquired: () => {},
      lost: () => {},
      changed: () => {
        changes++;
        const view = placement.view!();
        for (const waiter of waiters) {
          if (!waiter.predicate(view)) continue;
          waiters.delete(waiter);
          waiter.resolve(view);
        }
      },
    },
  });
  return {
    get changes() {
      return changes;
    },
    view: () => placement.view!(),
    /** Resolves with the view once it satisfies `predicate`, now or after a `changed`. */
    until(
      predicate: (view: PlacementView) => boolean,
      what: string,
      timeoutMs = 10_000,
    ): Promise<PlacementView> {
      const now = placement.view!();
      return predicate(now) ? Promise.resolve(now) : this.changed(predicate, what, timeoutMs);
    },
    changed(
      predicate: (view: PlacementView) => boolean,
      what: string,
      timeoutMs = 10_000,
    ): Promise<PlacementView> {
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => {
          waiters.delete(waiter);
          reject(new Error(`timed out waiting for ${what}`));
        }, timeoutMs);
        const waiter = {
          predicate,
          resolve: (view: PlacementView) => {
            clearTimeout(timer);
            resolve(view);
          },
        };
        waiters.add(waiter);
      });
    },
  };
}

function internals(store: PostgresTeamStore): PostgresPlacement {
  return store.placement as PostgresPlacement;
}

describePg('placement view and activity reports', () => {
  let scratch: Scratch;
  beforeEach(() => {
    scratch = new Scratch();
  });
  afterEach(async () => {
    await scratch.cleanup();
  });

  it('shows a member where it runs, with the activity its process reported, through a notice', async () => {
    const options = { leaseMs: NO_HEARTBEAT_LEASE_MS };
    const a = await scratch.open(TEAM, { ...options, processId: 'process-a' });
    const b = await scratch.open(TEAM, { ...options, processId: 'process-b' });
    const team = [teammate('m')];
    const va = await follow(a, team);
    const vb = await follow(b, team);
    expect(a.placement.runsHere('m')).toBe(true);
    expect(b.placement.runsHere('m')).toBe(false);
    expect(vb.view().placed.get('m')).toEqual({
      memberId: 'm',
      processId: 'process-a',
      here: false,
      activity: undefined,
    });
    expect(vb.view().awaiting.size).toBe(0);
    expect(vb.view().liveProcesses).toBe(2);
    let appended = 0;
    const unlisten = b.log.shared!.onAppended(() => appended++);

    const seen = vb.changed((v) => v.placed.get('m')?.activity === 'running', 'B seeing m run');
    a.placement.report!(activity({ m: 'running' }));
    // Neither process heartbeats again within a minute: B learns of the report from its notice.
    const view = await seen;
    expect(view.placed.get('m')).toEqual({
      memberId: 'm',
      processId: 'process-a',
      here: false,
      activity: 'running',
    });
    expect(va.view().placed.get('m')).toEqual({
      memberId: 'm',
      processId: 'process-a',
      here: true,
      activity: 'running',
    });
    // The notice rang the placement only: the log's listeners heard nothing (nothing was appended).
    expect(appended).toBe(0);
    unlisten();
  });

  it('carries the seq a report was made through, and announces a report whose activity is unchanged but whose seq moved', async () => {
    // a short lease: the second report goes out within a heartbeat interval of the first
    const options = { leaseMs: LEASE_MS };
    const a = await scratch.open(TEAM, { ...options, processId: 'process-a' });
    const b = await scratch.open(TEAM, { ...options, processId: 'process-b' });
    const team = [teammate('m')];
    const va = await follow(a, team);
    const vb = await follow(b, team);

    let seen = vb.changed((v) => v.placed.get('m')?.reportedThrough === 7, 'B seeing through 7');
    a.placement.report!(activity({ m: 'idle' }), 7);
    expect((await seen).placed.get('m')?.activity).toBe('idle');
    expect(va.view().placed.get('m')?.reportedThrough).toBe(7);

    // the same activity, seen through a later record: the others hear of it
    seen = vb.changed((v) => v.placed.get('m')?.reportedThrough === 12, 'B seeing through 12');
    a.placement.report!(activity({ m: 'idle' }), 12);
    expect((await seen).placed.get('m')?.activity).toBe('idle');
    const row = await scratch.sql<{ reported_through: string }>(
      `SELECT reported_through FROM "${scratch.schema}".processes WHERE process_id = 'process-a'`,
    );
    expect(row.rows).toEqual([{ reported_through: '12' }]);

    for (const bad of [-1, 1.5, Number.NaN, Number.MAX_SAFE_INTEGER + 2]) {
      expect(() => a.placement.report!(activity({ m: 'running' }), bad)).toThrow(
        expect.objectContaining({ code: 'INVALID_ARGUMENT' }),
      );
    }
    expect(va.view().placed.get('m')).toMatchObject({ activity: 'idle', reportedThrough: 12 });
  });

  it("answers a report of its own members without deriving again what the last look gave: the others' entries are kept as they were", async () => {
    const options = { leaseMs: NO_HEARTBEAT_LEASE_MS };
    const a = await scratch.open(TEAM, { ...options, processId: 'process-a' });
    const b = await scratch.open(TEAM, { ...options, processId: 'process-b' });
    // A runs m; n joins once B is live too, and goes to whichever process runs the fewest.
    const team = [teammate('m')];
    const va = await follow(a, team);
    team.push(teammate('n'));
    const vb = await follow(b, team);
    a.placement.candidatesChanged();
    const placedN = await vb.until((v) => v.placed.has('n'), 'n placed');
    const mine = placedN.placed.get('n')?.here === true ? b : a;
    const view = mine === b ? vb : va;
    const own = mine === b ? 'n' : 'm';
    const other = own === 'n' ? 'm' : 'n';
    await view.until((v) => v.placed.has(other), `${other} seen elsewhere`);

    const before = view.view();
    const changes = view.changes;
    mine.placement.report!(activity({ [own]: 'running' }), 3);
    await view.until((v) => v.placed.get(own)?.activity === 'running', 'the report in the view');
    const after = view.view();
    expect(after).not.toBe(before);
    expect(view.changes).toBe(changes + 1);
    // the other process's member is the very entry the look gave, not one derived again
    expect(after.placed.get(other)).toBe(before.placed.get(other));
    expect(after.placed.get(own)).toEqual({
      memberId: own,
      processId: mine === b ? 'process-b' : 'process-a',
      here: true,
      activity: 'running',
      reportedThrough: 3,
    });
    expect(after.awaiting).toBe(before.awaiting);

    // the same report again changes nothing: same view, no `changed`
    mine.placement.report!(activity({ [own]: 'running' }), 3);
    await Promise.resolve();
    expect(view.view()).toBe(after);
    expect(view.changes).toBe(changes + 1);
  });

  it('migrates a version-3 schema: processes get reported_through, null in existing rows', async () => {
    const first = await scratch.open(TEAM);
    await first.close();
    const s = `"${scratch.schema}"`;
    await scratch.sql(
      `ALTER TABLE ${s}.processes DROP COLUMN reported_through, DROP COLUMN capabilities`,
    );
    await scratch.sql(`DELETE FROM ${s}.schema_version WHERE version >= 4`);
    await scratch.sql(
      `INSERT INTO ${s}.processes (team_id, process_id, runs_lead, heartbeat_at, activity)
       VALUES ($1, 'version-3-process', false, now(), '{"m":"idle"}')`,
      [TEAM],
    );
    const a = await scratch.open(TEAM, { leaseMs: LEASE_MS, processId: 'process-a' });
    expect(a.migrated).toEqual({ from: 3, to: SCHEMA_VERSION });
    const old = await scratch.sql(
      `SELECT reported_through FROM ${s}.processes WHERE process_id = 'version-3-process'`,
    );
    expect(old.rows).toEqual([{ reported_through: null }]);
    await expect(
      scratch.sql(
        `UPDATE ${s}.processes SET reported_through = -1 WHERE process_id = 'version-3-process'`,
      ),
    ).rejects.toMatchObject({ code: '23514' });
  });

  it('shows a member going idle and wakes the listener; reports are written at most about once per heartbeat interval', async () => {
    const a = await scratch.open(TEAM, { leaseMs: LEASE_MS, processId: 'process-a' });
    const b = await scratch.open(TEAM, { leaseMs: LEASE_MS, processId: 'process-b' });
    const team = [teammate('m')];
    await follow(a, team);
    const vb = await follow(b, team);

    // Count the report notices process A sends.
    const listener = new pg.Client({ connectionString: PG_URL });
    await listener.connect();
    let notices = 0;
    listener.on('notification', (message) => {
      if (message.payload === JSON.stringify([TEAM, 'report', 'process-a'])) notices++;
    });
    await listener.query(`LISTEN "${tablesOf(scratch.schema).channel}"`);
    try {
      const interval = LEASE_MS / 3;
      const started = performance.now();
      const running = vb.changed((v) => v.placed.get('m')?.activity === 'running', 'm running');
      a.placement.report!(activity({ m: 'running' }));
      await running;
      const changesBefore = vb.changes;
      const idle = vb.changed((v) => v.placed.get('m')?.activity === 'idle', 'B seeing m idle');
      a.placement.report!(activity({ m: 'idle' }));
      const view = await idle;
      expect(vb.changes).toBeGreaterThan(changesBefore);
      expect(view.placed.get('m')).toEqual({
        memberId: 'm',
        processId: 'process-a',
        here: false,
        activity: 'idle',
      });

      // A burst of reports: each replaces the last, and at most one write (and notice) goes out
      // per heartbeat interval besides the heartbeats.
      for (let i = 0; i < 20; i++) {
        a.placement.report!(activity({ m: i % 2 === 0 ? 'running' : 'idle' }));
        await new Promise((resolve) => setTimeout(resolve, 25));
      }
      a.placement.report!(activity({ m: 'running' }));
      const stored = async () => {
        const row = await scratch.sql<{ activity: unknown; reported: boolean }>(
          `SELECT activity, reported_at IS NOT NULL AS reported
             FROM "${scratch.schema}".processes WHERE process_id = 'process-a'`,
        );
        return row.rows[0];
      };
      await eventually(
        async () => JSON.stringify((await stored())?.activity) === '{"m":"running"}',
        'the last report stored',
      );
      expect(await stored()).toEqual({ activity: { m: 'running' }, reported: true });
      await vb.until((v) => v.placed.get('m')?.activity === 'running', 'B seeing the last report');
      const elapsed = performance.now() - started;
      expect(notices).toBeGreaterThanOrEqual(2);
      expect(notices).toBeLessThanOrEqual(Math.ceil(elapsed / interval) + 1);
    } finally {
      await listener.end();
    }
  });

  it('stops placing a member on a process that stopped heartbeating, and shows it awaiting a willing one', async () => {
    const a = await scratch.open(TEAM, { leaseMs: PAUSE_LEASE_MS, processId: 'process-a' });
    const b = await scratch.open(TEAM, { leaseMs: PAUSE_LEASE_MS, processId: 'process-b' });
    const team = [teammate('m')];
    await follow(a, team);
    const vb = await follow(b, team);
    const running = vb.changed((v) => v.placed.get('m')?.activity === 'running', 'm running on A');
    a.placement.report!(activity({ m: 'running' }));
    await running;

    // A live process that claims nothing: the least loaded, so B leaves m to it for a while
    // (a takeover in progress, as B sees it).
    await scratch.sql(
      `INSERT INTO "${scratch.schema}".processes (team_id, process_id, runs_lead, heartbeat_at)
       VALUES ($1, 'process-0', false, now() + interval '1 hour')`,
      [TEAM],
    );
    const awaiting = vb.changed(
      (v) => !v.placed.has('m') && v.awaiting.has('m'),
      'm awaiting once A looks dead',
      6 * PAUSE_LEASE_MS,
    );
    await internals(a).pause();
    const view = await awaiting;
    expect(view.liveProcesses).toBe(2);
    expect(b.placement.runsHere('m')).toBe(false);

    // Left unplaced for three leases, m is claimed by B, the willing process that looks.
    const here = await vb.changed(
      (v) => v.placed.get('m')?.here === true,
      'B running m',
      12 * PAUSE_LEASE_MS,
    );
    expect(here.placed.get('m')).toEqual({
      memberId: 'm',
      processId: 'process-b',
      here: true,
      activity: undefined,
    });
    expect(here.awaiting.has('m')).toBe(false);
    const idle = vb.changed((v) => v.placed.get('m')?.activity === 'idle', 'B reporting m idle');
    b.placement.report!(activity({ m: 'idle' }));
    expect((await idle).placed.get('m')).toMatchObject({ processId: 'process-b', here: true });
  });

  it('does not show members awaiting when no live process is willing to run them', async () => {
    const a = await scratch.open(TEAM, {
      leaseMs: LEASE_MS,
      runs: { lead: false, agentTypes: ['reviewer'] },
    });
    const va = await follow(a, [teammate('g1'), teammate('r1', 'reviewer')]);
    expect(a.placement.runsHere('r1')).toBe(true);
    expect([...va.view().placed.keys()]).toEqual(['r1']);
    expect([...va.view().awaiting]).toEqual([]);
    expect(va.view().liveProcesses).toBe(1);
  });

  it('reports only members the process runs, keeps a prefix in member-id order within the byte bound, and refuses bad reports', async () => {
    const a = await scratch.open(TEAM, { leaseMs: LEASE_MS, processId: 'process-a' });
    const b = await scratch.open(TEAM, {
      leaseMs: LEASE_MS,
      processId: 'process-b',
      runs: { agentTypes: [] },
    });
    // Long ids, so twenty members' report is well over the bound.
    const ids = Array.from(
      { length: 20 },
      (_, i) => `m${String(i).padStart(2, '0')}-${'x'.repeat(4000)}`,
    );
    const team = ids.map((id) => teammate(id));
    const va = await follow(a, team);
    expect(ids.every((id) => a.placement.runsHere(id))).toBe(true);
    const vb = await follow(b, team);

    const seen = vb.changed(
      (v) => v.placed.get(ids[0]!)?.activity === 'running',
      'B seeing the report',
    );
    a.placement.report!(
      new Map<string, MemberActivity>([
        ...ids.map((id) => [id, 'running'] as const),
        ['not-run-here', 'idle'],
      ]),
    );
    const view = await seen;

    const row = await scratch.sql<{ activity: Record<string, string> }>(
      `SELECT activity FROM "${scratch.schema}".processes WHERE process_id = 'process-a'`,
    );
    const stored = Object.keys(row.rows[0]!.activity).sort();
    const bytes = (keys: string[]) =>
      Buffer.byteLength(JSON.stringify(Object.fromEntries(keys.map((k) => [k, 'running']))));
    // a prefix in member-id order: the longest that fits
    expect(stored.length).toBeGreaterThan(0);
    expect(stored.length).toBeLessThan(ids.length);
    expect(stored).toEqual(ids.slice(0, stored.length));
    expect(bytes(stored)).toBeLessThanOrEqual(MAX_ACTIVITY_BYTES);
    expect(bytes(ids.slice(0, stored.length + 1))).toBeGreaterThan(MAX_ACTIVITY_BYTES);
    // the members left out read as not reported, in every process
    for (const [i, id] of ids.entries()) {
      const expected = i < stored.length ? 'running' : undefined;
      expect(view.placed.get(id)?.activity).toBe(expected);
      expect(va.view().placed.get(id)?.activity).toBe(expected);
    }
    expect(view.placed.has('not-run-here')).toBe(false);

    const bad = [
      new Map([[ids[0]!, 'busy']]) as unknown as Map<string, MemberActivity>,
      null as unknown as Map<string, MemberActivity>,
      { m: 'running' } as unknown as Map<string, MemberActivity>,
    ];
    for (const report of bad) {
      expect(() => a.placement.report!(report)).toThrow(
        expect.objectContaining({ code: 'INVALID_ARGUMENT' }),
      );
    }
  });

  it('leaves out of a report a member id jsonb cannot hold, and keeps heartbeating', async () => {
    const a = await scratch.open(TEAM, { leaseMs: LEASE_MS, processId: 'process-a' });
    const b = await scratch.open(TEAM, { leaseMs: LEASE_MS, processId: 'process-b' });
    const lone = 'lone-\ud800';
    const team = [teammate('good'), teammate(lone)];
    const va = await follow(a, team);
    expect(a.placement.runsHere(lone)).toBe(true);
    const vb = await follow(b, team);
    const seen = vb.changed((v) => v.placed.get('good')?.activity === 'running', 'good running');
    a.placement.report!(activity({ good: 'running', [lone]: 'running' }));
    await seen;
    const row = await scratch.sql(
      `SELECT activity FROM "${scratch.schema}".processes WHERE process_id = 'process-a'`,
    );
    expect(row.rows).toEqual([{ activity: { good: 'running' } }]);
    expect(va.view().placed.get(lone)).toMatchObject({ here: true, activity: undefined });
  });

  it('migrates a version-2 schema: processes get activity and reported_at, and reports work', async () => {
    const first = await scratch.open(TEAM);
    await first.close();
    const s = `"${scratch.schema}"`;
    // Back to what version 2 created, with a process row written by version-2 code.
    await scratch.sql(
      `ALTER TABLE ${s}.processes DROP COLUMN activity, DROP COLUMN reported_at, DROP COLUMN reported_through, DROP COLUMN capabilities`,
    );
    await scratch.sql(`DELETE FROM ${s}.schema_version WHERE version >= 3`);
    await scratch.sql(
      `INSERT INTO ${s}.processes (team_id, process_id, runs_lead, heartbeat_at)
       VALUES ($1, 'version-2-process', true, now() - interval '30 seconds')`,
      [TEAM],
    );

    const a = await scratch.open(TEAM, { leaseMs: LEASE_MS, processId: 'process-a' });
    expect(a.migrated).toEqual({ from: 2, to: SCHEMA_VERSION });
    expect(SCHEMA_VERSION).toBe(7);
    const old = await scratch.sql(
      `SELECT activity, reported_at FROM ${s}.processes WHERE process_id = 'version-2-process'`,
    );
    expect(old.rows).toEqual([{ activity: null, reported_at: null }]);
    await expect(
      scratch.sql(
        `UPDATE ${s}.processes SET activity = '[]' WHERE process_id = 'version-2-process'`,
      ),
    ).rejects.toMatchObject({ code: '23514' });

    const b = await scratch.open(TEAM, { leaseMs: LEASE_MS, processId: 'process-b' });
    expect(b.migrated).toEqual({ from: SCHEMA_VERSION, to: SCHEMA_VERSION });
    const team = [teammate('m')];
    await follow(a, team);
    const vb = await follow(b, team);
    const seen = vb.changed((v) => v.placed.get('m')?.activity === 'idle', 'B seeing m idle');
    a.placement.report!(activity({ m: 'idle' }));
    expect((await seen).placed.get('m')?.processId).toBe('process-a');
  });
});
