import { describe, expect, it } from 'vitest';
import { recordDigest } from '../record-digest.js';
import type { TeamRecord } from '../records.js';
import { isSnapshotDue, resolveSnapshotPolicy, TeamState } from '../state/index.js';
import { olderSnapshotLayout } from '../state/test-fixtures.js';
import { createMemoryTeamLog } from '../testing/memory-stores.js';
import { randomTeamRecords } from '../testing/random-team.js';
import { loadTeamState } from './snapshots.js';

const TEAM = 'team-identity';

function snapshotAt(records: readonly TeamRecord[], seq: number) {
  const snapshot = TeamState.fromRecords(records.slice(0, seq), { teamId: TEAM }).snapshot();
  return { seq, text: JSON.stringify(snapshot) };
}

/** The state as comparable JSON. */
function canonical(state: TeamState): string {
  const snapshot = state.snapshot();
  return JSON.stringify({
    ...snapshot,
    delivered: String(snapshot.delivered).split('\n').sort(),
    tombstones: String(snapshot.tombstones).split('\n').sort(),
  });
}

/**
 * What an operator's repair leaves: the log cut back to `keep` records (a corrupt record and
 * everything after it deleted), then the team went on and wrote other records after the cut.
 */
function rewrittenAfter(records: readonly TeamRecord[], keep: number): TeamRecord[] {
  const state = TeamState.fromRecords(records.slice(0, keep), { teamId: TEAM });
  const lead = state.leadId as string;
  const out = records.slice(0, keep);
  while (out.length < records.length) {
    out.push(
      state.createTask(lead, { subject: `other history ${out.length}`, description: 'rewritten' }),
    );
  }
  return out;
}

describe('a snapshot belongs to the log whose record it was taken after', () => {
  it('digests a record by its content, whatever the order of its keys', () => {
    const [record] = randomTeamRecords(TEAM, 1, 3) as [TeamRecord];
    const reordered = JSON.parse(
      JSON.stringify(Object.fromEntries(Object.entries(record).reverse())),
    ) as TeamRecord;
    expect(recordDigest(reordered)).toBe(recordDigest(record));
    expect(recordDigest({ ...record, at: record.at + 1 })).not.toBe(recordDigest(record));
    expect(recordDigest(record)).toMatch(/^[0-9a-f]{64}$/);
  });

  it('passes over a snapshot of another history and folds from an older one that matches', async () => {
    const original = randomTeamRecords(TEAM, 200, 21);
    const log = createMemoryTeamLog({
      teamId: TEAM,
      records: rewrittenAfter(original, 120),
      snapshots: {
        everyRecords: 1000,
        stored: [snapshotAt(original, 100), snapshotAt(original, 150)],
      },
    });
    const loaded = await loadTeamState(log, { teamId: TEAM });
    expect(loaded).toMatchObject({ snapshotSeq: 100, rejected: 1 });
    expect(canonical(loaded.state)).toBe(
      canonical(TeamState.fromRecords(log.records(), { teamId: TEAM })),
    );
    expect(loaded.state.listTasks({}).some((t) => t.subject.startsWith('other history'))).toBe(
      true,
    );
  });

  it('folds the whole log when no snapshot matches it', async () => {
    const original = randomTeamRecords(TEAM, 160, 4);
    const log = createMemoryTeamLog({
      teamId: TEAM,
      records: rewrittenAfter(original, 50),
      snapshots: { everyRecords: 1000, stored: [snapshotAt(original, 150)] },
    });
    const loaded = await loadTeamState(log, { teamId: TEAM });
    expect(loaded).toMatchObject({ snapshotSeq: 0, rejected: 1 });
    expect(canonical(loaded.state)).toBe(
      canonical(TeamState.fromRecords(log.records(), { teamId: TEAM })),
    );
  });

  it('uses a version 1 snapshot (no digest) only when the store vouches for it', async () => {
    const records = randomTeamRecords(TEAM, 120, 8);
    const v2 = JSON.parse(snapshotAt(records, 100).text);
    const { record: _digest, ...v1 } = olderSnapshotLayout(v2, 1);
    const stored = [{ seq: 100, text: JSON.stringify(v1) }];
    const plain = createMemoryTeamLog({
      teamId: TEAM,
      records,
      snapshots: { everyRecords: 1000, stored },
    });
    expect(await loadTeamState(plain, { teamId: TEAM })).toMatchObject({
      snapshotSeq: 0,
      rejected: 1,
    });
    const vouched = createMemoryTeamLog({
      teamId: TEAM,
      records,
      snapshots: { everyRecords: 1000, stored, anchored: true },
    });
    const loaded = await loadTeamState(vouched, { teamId: TEAM });
    expect(loaded).toMatchObject({ snapshotSeq: 100, rejected: 0 });
    expect(canonical(loaded.state)).toBe(
      canonical(TeamState.fromRecords(records, { teamId: TEAM })),
    );
  });
});

describe('the snapshot policy', () => {
  const policy = resolveSnapshotPolicy({ everyRecords: 10, everyBytes: 1000 }) as Exclude<
    ReturnType<typeof resolveSnapshotPolicy>,
    false
  >;

  it('is due after everyRecords records or everyBytes bytes, never before the log grew by the snapshot', () => {
    const none = { seq: 0, bytes: 0 };
    expect(isSnapshotDue({ seq: 9, newest: none, bytesSince: 900, policy })).toBe(false);
    expect(isSnapshotDue({ seq: 10, newest: none, bytesSince: 900, policy })).toBe(true);
    expect(isSnapshotDue({ seq: 3, newest: none, bytesSince: 1000, policy })).toBe(true);
    const big = { seq: 100, bytes: 5000 };
    expect(isSnapshotDue({ seq: 150, newest: big, bytesSince: 4999, policy })).toBe(false);
    expect(isSnapshotDue({ seq: 150, newest: big, bytesSince: 5000, policy })).toBe(true);
    expect(isSnapshotDue({ seq: 100, newest: big, bytesSince: 9999, policy })).toBe(false);
  });

  it('takes the defaults, and refuses an unknown option or a value that is not an integer >= 1', () => {
    expect(resolveSnapshotPolicy(undefined)).toEqual({
      everyRecords: 4096,
      everyBytes: 4 * 1024 * 1024,
      keep: 2,
    });
    expect(resolveSnapshotPolicy(false)).toBe(false);
    for (const bad of [{ keep: 0 }, { everyRecords: 1.5 }, { everyBytes: '1' }, { every: 1 }, []]) {
      expect(() => resolveSnapshotPolicy(bad as never)).toThrow(
        expect.objectContaining({ code: 'INVALID_ARGUMENT' }),
      );
    }
  });
});
