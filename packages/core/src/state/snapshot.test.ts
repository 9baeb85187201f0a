import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { z } from 'zod';
import { TeamError } from '../errors.js';
import type { Member, Task, TeamRecord } from '../records.js';
import { randomTeamRecords } from '../testing/random-team.js';
import type { TeamStateSnapshot } from './index.js';
import { parseTeamStateSnapshot, TEAM_STATE_SNAPSHOT_VERSION, TeamState } from './index.js';
import { compiledSnapshot, Snapshot } from './snapshot.js';

const TEAM = 'team-snapshots';

/** The state as comparable JSON (delivered ids in a set's order are not part of equality). */
function canonical(state: TeamState): string {
  const snapshot = state.snapshot();
  return JSON.stringify({
    ...snapshot,
    delivered: String(snapshot.delivered).split('\n').sort(),
    tombstones: String(snapshot.tombstones).split('\n').sort(),
  });
}

/** Restores `records[0..cut)` from a snapshot (through JSON, as a store keeps it). */
function restored(records: readonly TeamRecord[], cut: number): TeamState {
  const before = TeamState.fromRecords(records.slice(0, cut), { teamId: TEAM });
  return TeamState.fromSnapshot(JSON.parse(JSON.stringify(before.snapshot())), { teamId: TEAM });
}

/** Whether the compiled `schema` answered `value` from its generated code (see `records.test.ts`). */
function takenFast(schema: z.ZodType, value: unknown): boolean {
  const ctx = { async: false } as Record<PropertyKey, unknown>;
  schema._zod.run({ value, issues: [] }, ctx as never);
  return ctx[Symbol.for('zod.compile.fallback')] !== true;
}

function refusal(run: () => unknown): TeamError {
  try {
    run();
  } catch (error) {
    if (error instanceof TeamError) return error;
    throw error;
  }
  throw new Error('expected a TeamError');
}

describe('team state snapshots', () => {
  it('a snapshot plus the records after it gives the full fold, at any cut (property)', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 1_000_000 }),
        fc.integer({ min: 1, max: 500 }),
        fc.double({ min: 0, max: 1, noNaN: true }),
        (seed, count, at) => {
          const records = randomTeamRecords(TEAM, count, seed);
          const cut = Math.floor(at * records.length);
          const state = restored(records, cut);
          expect(state.lastSeq).toBe(cut);
          for (const record of records.slice(cut)) state.apply(record);
          expect(canonical(state)).toBe(
            canonical(TeamState.fromRecords(records, { teamId: TEAM })),
          );
        },
      ),
      { numRuns: 150, seed: 18 },
    );
  });

  it('stays as strict as the full fold: a record refused after the cut is refused after a restore', () => {
    const records = randomTeamRecords(TEAM, 300, 7);
    const queued = records.find((r) => r.type === 'message.queued') as TeamRecord;
    const delivered = records.find(
      (r) =>
        r.type === 'message.delivered' &&
        queued.type === 'message.queued' &&
        r.messageId === queued.message.id,
    );
    expect(delivered).toBeDefined();
    // the same message queued again after it was delivered, just after the cut
    const again = { ...queued, seq: records.length + 1 };
    const full = TeamState.fromRecords(records, { teamId: TEAM });
    const state = restored(records, records.length);
    expect(refusal(() => full.apply(again)).code).toBe('LOG_INVARIANT');
    expect(refusal(() => state.apply(again)).code).toBe('LOG_INVARIANT');
  });

  it('refuses a snapshot this version did not write, or one that is inconsistent', () => {
    const records = randomTeamRecords(TEAM, 400, 3);
    const good = TeamState.fromRecords(records, { teamId: TEAM }).snapshot();
    const copy = () => JSON.parse(JSON.stringify(good)) as TeamStateSnapshot;
    const refuse = (value: unknown) =>
      refusal(() => TeamState.fromSnapshot(value, { teamId: TEAM }));
    expect(good.tasks.length).toBeGreaterThan(2);
    expect(good.pending.length).toBeGreaterThan(0);

    expect(refuse(null).code).toBe('SNAPSHOT_INVALID');
    expect(refuse({ ...copy(), format: 'other' }).code).toBe('SNAPSHOT_INVALID');
    expect(refuse({ ...copy(), version: TEAM_STATE_SNAPSHOT_VERSION + 1 }).code).toBe(
      'UNSUPPORTED_SCHEMA_VERSION',
    );
    expect(refuse({ ...copy(), teamId: 'another-team' }).code).toBe('SNAPSHOT_INVALID');
    // shapes the schema refuses
    expect(refuse({ ...copy(), members: {} }).code).toBe('SNAPSHOT_INVALID');
    expect(refuse({ ...copy(), delivered: [] }).code).toBe('SNAPSHOT_INVALID');
    expect(refuse({ ...copy(), seq: -1 }).code).toBe('SNAPSHOT_INVALID');
    const badStatus = copy();
    (badStatus.tasks[0] as { status: string }).status = 'archived';
    expect(refuse(badStatus).code).toBe('SNAPSHOT_INVALID');
    const longName = copy();
    (longName.members[0] as { name: string }).name = 'x'.repeat(65);
    expect(refuse(longName).message).toMatch(/not a team state snapshot/);
    // what is accepted is read exactly: restoring and snapshotting again gives the same JSON
    expect(JSON.stringify(TeamState.fromSnapshot(copy(), { teamId: TEAM }).snapshot())).toBe(
      JSON.stringify(good),
    );
    const cases: [string, (s: TeamStateSnapshot) => void][] = [
      ['a member twice', (s) => s.members.push({ ...(s.members[1] as Member), name: 'other' })],
      ['a name twice', (s) => s.members.push({ ...(s.members[1] as Member), id: 'other-id' })],
      ['tasks out of order', (s) => s.tasks.reverse()],
      ['a next task number below a live task', (s) => (s.nextTaskNumber = 1)],
      [
        'a task without its creator',
        (s) => ((s.tasks[0] as { creatorId: string }).creatorId = 'x'),
      ],
      [
        'an in-progress task without owner',
        (s) => {
          const task = s.tasks.find((t) => t.status === 'pending') as { status: string };
          task.status = 'in_progress';
        },
      ],
      [
        'a blocker cycle',
        (s) => {
          const live = s.tasks.filter((t) => t.status !== 'deleted');
          const [a, b] = live as [Task, Task];
          a.blockedBy = [b.id];
          b.blockedBy = [a.id];
        },
      ],
      ['mail from nobody', (s) => ((s.pending[0] as { senderId: string }).senderId = 'nobody')],
      [
        'mail both pending and delivered',
        (s) => {
          const ids = [...String(s.delivered).split('\n'), s.pending[0]?.id as string].sort();
          s.delivered = ids.join('\n');
          s.deliveredLast = ids[ids.length - 1] as string;
        },
      ],
      [
        'delivered ids out of order',
        (s) => (s.delivered = String(s.delivered).split('\n').reverse().join('\n')),
      ],
      [
        'a last delivered id that is not the last',
        (s) => (s.deliveredLast = String(s.delivered).split('\n')[0] as string),
      ],
      ['mail pending twice', (s) => s.pending.push(s.pending[0] as never)],
    ];
    for (const [what, change] of cases) {
      const broken = copy();
      change(broken);
      const error = refuse(broken);
      expect({ what, code: error.code }).toEqual({ what, code: 'SNAPSHOT_INVALID' });
    }
    expect(TeamState.fromSnapshot(copy(), { teamId: TEAM }).lastSeq).toBe(records.length);
  });

  it('is read by the compiled schema, which agrees with the schema on every field', () => {
    const records = randomTeamRecords(TEAM, 300, 5);
    const good = JSON.parse(
      JSON.stringify(TeamState.fromRecords(records, { teamId: TEAM }).snapshot()),
    ) as TeamStateSnapshot;
    expect(good.pending.length).toBeGreaterThan(0);
    const withDeadLetters = {
      ...good,
      deadLetters: [{ message: good.pending[0], reason: 'TARGET_RETIRED', detail: 'gone', at: 5 }],
    };
    const compiled = compiledSnapshot();
    expect(compiled).not.toBe(Snapshot);
    for (const value of [good, withDeadLetters]) {
      expect(takenFast(compiled, value)).toBe(true);
      expect(parseTeamStateSnapshot(value)).toStrictEqual(Snapshot.parse(value));
    }
    // one edit at a time, at every key of the header and of the first element of each list
    const probes: unknown[] = [undefined, '', 'x', 0, -1, 1.5, null, [], {}, 'x'.repeat(65)];
    const places = [
      [],
      ['members', 0],
      ['tasks', 0],
      ['pending', 0],
      ['pending', 0, 'content', 0],
      ['deadLetters', 0],
    ];
    let cases = 0;
    for (const path of places) {
      const keys = Object.keys(
        path.reduce<Record<PropertyKey, unknown>>(
          (o, k) => o[k] as Record<PropertyKey, unknown>,
          withDeadLetters,
        ),
      );
      for (const key of keys) {
        for (const probe of ['drop', ...probes]) {
          const value = structuredClone(withDeadLetters) as Record<PropertyKey, unknown>;
          const target = path.reduce<Record<PropertyKey, unknown>>(
            (o, k) => o[k] as Record<PropertyKey, unknown>,
            value,
          );
          if (probe === 'drop') delete target[key];
          else target[key] = probe;
          const zod = Snapshot.safeParse(value);
          expect(takenFast(compiled, value)).toBe(zod.success);
          if (zod.success) expect(compiled.parse(value)).toStrictEqual(zod.data);
          else expect(refusal(() => parseTeamStateSnapshot(value)).code).toBe('SNAPSHOT_INVALID');
          cases++;
        }
      }
    }
    expect(cases).toBeGreaterThan(400);
  });

  it('is taken only of a settled state', () => {
    const records = randomTeamRecords(TEAM, 50, 4);
    const state = TeamState.fromRecords(records.slice(0, 40), { teamId: TEAM });
    state.startJournal();
    for (const record of records.slice(40)) state.apply(record);
    expect(refusal(() => state.snapshot()).code).toBe('INVALID_ARGUMENT');
    state.settle(50);
    expect(state.snapshot().seq).toBe(50);
  });
});
