import { describe, expect, it } from 'vitest';
import { TeamError } from '../errors.js';
import type { TeamRecord } from '../records.js';
import { randomTeamRecords } from '../testing/random-team.js';
import type { StoredText, TeamStateSnapshot } from './index.js';
import { joinTeamStateSnapshot, splitTeamStateSnapshot, TeamState } from './index.js';
import { olderSnapshotLayout } from './test-fixtures.js';

const TEAM = 'team-tombstones';

function refusal(run: () => unknown): TeamError {
  try {
    run();
  } catch (error) {
    if (error instanceof TeamError) return error;
    throw error;
  }
  throw new Error('expected a TeamError');
}

/** Tombstones as a store that kept them apart hands them back, counting the reads of the text. */
function storedApart(text: string): StoredText & { reads: number } {
  return {
    bytes: Buffer.byteLength(text, 'utf8'),
    reads: 0,
    text() {
      this.reads++;
      return text;
    },
  };
}

/** The snapshot after `records`, as JSON text would give it back. */
function snapshotOf(records: readonly TeamRecord[]): TeamStateSnapshot {
  const state = TeamState.fromRecords(records, { teamId: TEAM });
  return JSON.parse(JSON.stringify(state.snapshot())) as TeamStateSnapshot;
}

/** A snapshot after `records` whose tombstones are kept apart, and the count of their reads. */
function restoredApart(records: readonly TeamRecord[]) {
  const { state, parts } = splitTeamStateSnapshot(snapshotOf(records));
  const cold = storedApart(parts.tombstones);
  const delivered = storedApart(parts.delivered);
  const restored = TeamState.fromSnapshot(
    joinTeamStateSnapshot(state, { tombstones: cold, delivered }),
    { teamId: TEAM },
  );
  return { restored, cold, delivered };
}

describe('tombstones kept apart in a snapshot (version 4)', () => {
  const records = randomTeamRecords(TEAM, 400, 21);
  const full = TeamState.fromRecords(records, { teamId: TEAM });
  const deleted = full.listTasks({ status: 'deleted' });
  const live = full.listTasks();

  it('keeps only the live tasks in `tasks`, and every deleted one in `tombstones`', () => {
    expect(deleted.length).toBeGreaterThan(1);
    const snapshot = full.snapshot();
    expect(snapshot.version).toBe(4);
    expect(snapshot.tasks.map((t) => t.id)).toEqual(live.map((t) => t.id));
    const lines = String(snapshot.tombstones).trimEnd().split('\n');
    expect(lines.map((line) => JSON.parse(line).id).sort()).toEqual(
      deleted.map((t) => t.id).sort(),
    );
  });

  it('opens and folds the records after it without reading them', () => {
    const cut = 300;
    const { restored, cold } = restoredApart(records.slice(0, cut));
    for (const record of records.slice(cut)) restored.apply(record);
    expect(cold.reads).toBe(0);
    expect(restored.listTasks()).toEqual(full.listTasks());
    expect(cold.reads).toBe(0);
  });

  it('answers for a deleted task as the full fold does, reading them once', () => {
    const { restored, cold } = restoredApart(records);
    const first = deleted[0]?.id as string;
    expect(restored.getTask(first)).toEqual(full.getTask(first));
    expect(cold.reads).toBe(1);
    expect(restored.listTasks({ status: 'deleted' })).toEqual(deleted);
    expect(restored.allTasks()).toEqual(full.allTasks());
    expect(refusal(() => restored.getTask('task-999999')).code).toBe('TASK_NOT_FOUND');
    expect(cold.reads).toBe(1);
  });

  it('refuses a record that changes a deleted task, or is blocked by one, as the full fold does', () => {
    const target = deleted[0] as (typeof deleted)[number];
    const { ready: _r, warnings: _w, ...task } = target;
    const seq = records.length + 1;
    const change: TeamRecord = {
      ...(records.find((r) => r.type === 'task') as TeamRecord & { type: 'task' }),
      seq,
      task: { ...task, revision: task.revision + 1, status: 'deleted' },
    };
    const liveTask = live[0];
    expect(liveTask).toBeDefined();
    const { ready: _r2, warnings: _w2, ...other } = liveTask as (typeof live)[number];
    const blocked: TeamRecord = {
      ...change,
      task: { ...other, revision: other.revision + 1, blockedBy: [target.id] },
    };
    for (const record of [change, blocked]) {
      const expected = refusal(() => TeamState.fromRecords([...records, record], { teamId: TEAM }));
      const { restored } = restoredApart(records);
      const got = refusal(() => restored.apply(record));
      expect({ code: got.code, message: got.message }).toEqual({
        code: expected.code,
        message: expected.message,
      });
      expect(got.code).toBe('LOG_INVARIANT');
    }
  });

  it('writes the next snapshot from their text, which restores to the same state', () => {
    const cut = 300;
    const { restored, cold } = restoredApart(records.slice(0, cut));
    for (const record of records.slice(cut)) restored.apply(record);
    const again = JSON.parse(JSON.stringify(restored.snapshot())) as TeamStateSnapshot;
    expect(cold.reads).toBe(1);
    const reopened = TeamState.fromSnapshot(again, { teamId: TEAM });
    expect(reopened.allTasks()).toEqual(full.allTasks());
  });

  it('still reads the older layout, every task in `tasks`', () => {
    for (const version of [1, 2, 3] as const) {
      const older = olderSnapshotLayout(snapshotOf(records), version);
      expect(older.tasks.length).toBe(live.length + deleted.length);
      const restored = TeamState.fromSnapshot(older, { teamId: TEAM });
      expect(restored.allTasks()).toEqual(full.allTasks());
      expect(restored.snapshot().tasks).toEqual(full.snapshot().tasks);
    }
    const stray = { ...olderSnapshotLayout(snapshotOf(records), 3), tombstones: '' };
    expect(refusal(() => TeamState.fromSnapshot(stray, { teamId: TEAM })).code).toBe(
      'SNAPSHOT_INVALID',
    );
  });

  it('refuses tombstones that do not check out when they are first read', () => {
    const good = splitTeamStateSnapshot(snapshotOf(records));
    const lines = good.parts.tombstones.trimEnd().split('\n');
    const revived = JSON.parse(lines[0] as string);
    const cases: [string, string, Partial<TeamStateSnapshot>?][] = [
      ['one missing', `${lines.slice(1).join('\n')}\n`],
      ['one twice', `${lines.join('\n')}\n${lines[0]}\n`],
      ['not JSON', `${lines.join('\n')}\n{\n`],
      ['no final newline', lines.join('\n')],
      [
        'a live one',
        `${[JSON.stringify({ ...revived, status: 'completed' }), ...lines.slice(1)].join('\n')}\n`,
      ],
      [
        'a wrong next task number',
        good.parts.tombstones,
        { nextTaskNumber: full.snapshot().nextTaskNumber + 1 },
      ],
      [
        'a creator who is not a member',
        `${[JSON.stringify({ ...revived, creatorId: 'nobody' }), ...lines.slice(1)].join('\n')}\n`,
      ],
    ];
    for (const [what, text, change] of cases) {
      const restored = TeamState.fromSnapshot(
        joinTeamStateSnapshot(
          { ...good.state, ...change },
          { tombstones: storedApart(text), delivered: storedApart(good.parts.delivered) },
        ),
        { teamId: TEAM },
      );
      const error = refusal(() => restored.listTasks({ status: 'deleted' }));
      expect({ what, code: error.code }).toEqual({ what, code: 'SNAPSHOT_INVALID' });
    }
    // every number below the next one live: no text may stand for a tombstone
    const allLive = TeamState.fromSnapshot(
      { ...good.state, tasks: [], nextTaskNumber: 1, delivered: good.parts.delivered },
      { teamId: TEAM },
    );
    expect(allLive.listTasks({ status: 'deleted' })).toEqual([]);
    expect(
      refusal(() =>
        TeamState.fromSnapshot(
          {
            ...good.state,
            tasks: [],
            nextTaskNumber: 1,
            delivered: good.parts.delivered,
            tombstones: lines[0] + '\n',
          },
          { teamId: TEAM },
        ),
      ).code,
    ).toBe('SNAPSHOT_INVALID');
  });
});

describe('delivered ids kept apart in a snapshot (version 4)', () => {
  const records = randomTeamRecords(TEAM, 400, 22);
  const fold = (more: readonly TeamRecord[] = []) =>
    TeamState.fromRecords([...records, ...more], { teamId: TEAM });
  const seq = records.length + 1;
  const queuedRecords = records.filter(
    (r): r is TeamRecord & { type: 'message.queued' } => r.type === 'message.queued',
  );
  /** A queued record the full fold accepts at the end, with `id` as the message id. */
  const queueAs = (id: string): TeamRecord => {
    for (const record of [...queuedRecords].reverse()) {
      const candidate = { ...record, seq, message: { ...record.message, id } };
      try {
        fold([candidate]);
        return candidate;
      } catch {}
    }
    throw new Error('no message can be queued at the end');
  };
  const full = fold();
  const last = full.snapshot().deliveredLast as string;

  it('carries the greatest delivered id, and reads none to queue an id past it', () => {
    expect(last).toBe(String(full.snapshot().delivered).split('\n').sort().at(-1));
    const record = queueAs(`${last}~`);
    const { restored, delivered } = restoredApart(records);
    restored.apply(record);
    expect(delivered.reads).toBe(0);
    expect(restored.wasQueued(`${last}~`)).toBe(true);
    expect(restored.wasQueued(last)).toBe(true);
    expect(delivered.reads).toBe(1);
  });

  it('refuses to queue or deliver a delivered id again, as the full fold does', () => {
    const fresh = queueAs(`${last}~`) as TeamRecord & { type: 'message.queued' };
    // a record the full fold would take, but for its id: one already delivered
    const again: TeamRecord = { ...fresh, message: { ...fresh.message, id: last } };
    const deliveredAgain: TeamRecord = {
      ...(records.find((r) => r.type === 'message.delivered') as TeamRecord),
      seq,
    };
    for (const record of [again, deliveredAgain]) {
      const expected = refusal(() => fold([record]));
      const { restored } = restoredApart(records);
      const got = refusal(() => restored.apply(record));
      expect({ code: got.code, message: got.message }).toEqual({
        code: expected.code,
        message: expected.message,
      });
    }
  });

  it('writes the next snapshot with the same ids as the full fold', () => {
    const more = [queueAs(`${last}~`)];
    const { restored } = restoredApart(records);
    for (const record of more) restored.apply(record);
    const expected = fold(more).snapshot();
    const got = restored.snapshot();
    expect(got.delivered).toBe(expected.delivered);
    expect(got.deliveredLast).toBe(expected.deliveredLast);
  });

  it('refuses delivered ids that do not check out when they are first needed', () => {
    const good = splitTeamStateSnapshot(snapshotOf(records));
    const ids = good.parts.delivered.split('\n');
    const pendingId = good.state.pending[0]?.id as string;
    expect(pendingId).toBeDefined();
    const cases: [string, string, Partial<TeamStateSnapshot>?][] = [
      ['out of order', [...ids].reverse().join('\n')],
      ['a repeat', [ids[0], ...ids].join('\n')],
      ['another last id', ids.slice(0, -1).join('\n')],
      [
        'a pending id',
        [...ids, pendingId].sort().join('\n'),
        { deliveredLast: [...ids, pendingId].sort().at(-1) as string },
      ],
    ];
    for (const [what, text, change] of cases) {
      const restored = TeamState.fromSnapshot(
        joinTeamStateSnapshot(
          { ...good.state, ...change },
          { tombstones: storedApart(good.parts.tombstones), delivered: storedApart(text) },
        ),
        { teamId: TEAM },
      );
      const error = refusal(() => restored.wasQueued(ids[0] as string));
      expect({ what, code: error.code }).toEqual({ what, code: 'SNAPSHOT_INVALID' });
    }
    const { deliveredLast: _, ...withoutLast } = good.state;
    expect(
      refusal(() =>
        TeamState.fromSnapshot(
          joinTeamStateSnapshot(withoutLast, { delivered: storedApart(good.parts.delivered) }),
          { teamId: TEAM },
        ),
      ).code,
    ).toBe('SNAPSHOT_INVALID');
  });
});
