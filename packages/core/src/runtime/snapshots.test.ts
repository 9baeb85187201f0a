import { describe, expect, it } from 'vitest';
import { TeamState } from '../state/index.js';
import { createMemoryTeamLog, createMemoryTranscriptStore } from '../testing/memory-stores.js';
import { randomTeamRecords } from '../testing/random-team.js';
import { loadTeamState } from './snapshots.js';
import { notedLead, openHarness, spawnIdle, TEAM_ID } from './test-harness.js';

function canonical(state: TeamState): string {
  const snapshot = state.snapshot();
  return JSON.stringify({
    ...snapshot,
    delivered: String(snapshot.delivered).split('\n').sort(),
    tombstones: String(snapshot.tombstones).split('\n').sort(),
  });
}

describe('the README example', () => {
  it('restores a snapshot, folds the records after it, and gets the full fold', async () => {
    const records = randomTeamRecords(TEAM_ID, 300, 11);
    const teamId = TEAM_ID;
    const log = createMemoryTeamLog({ teamId, records });
    const state = TeamState.fromRecords(records.slice(0, 200), { teamId });
    // as in the README:
    const snapshot = state.snapshot();
    const restored = TeamState.fromSnapshot(JSON.parse(JSON.stringify(snapshot)), { teamId });
    for await (const record of log.read({ fromSeq: restored.lastSeq + 1 })) restored.apply(record);
    expect(canonical(restored)).toBe(canonical(TeamState.fromRecords(records, { teamId })));
    const loaded = await loadTeamState(log, { teamId });
    expect(loaded).toMatchObject({ snapshotSeq: 0, rejected: 0 });
    expect(canonical(loaded.state)).toBe(canonical(restored));
  });
});

describe('snapshots written by a running team', () => {
  it('writes them in the background, each equal to the fold of the log up to its seq', async () => {
    const log = createMemoryTeamLog({ teamId: TEAM_ID, snapshots: { everyRecords: 5 } });
    const transcripts = createMemoryTranscriptStore();
    const h = await openHarness({
      memory: { log, transcripts },
      scripts: { lead: notedLead, bob: () => ({ text: 'ok' }), carol: () => ({ text: 'ok' }) },
    });
    await spawnIdle(h, 'bob');
    await spawnIdle(h, 'carol');
    for (let i = 0; i < 6; i++) {
      await h.service.sendMessage(h.service.lead, { to: i % 2 ? 'bob' : 'carol', text: `m${i}` });
      await h.service.idle();
    }
    await h.service.dispose();
    const written = log.storedSnapshots();
    expect(written.length).toBeGreaterThan(2);
    for (const { seq, text } of written) {
      const fold = TeamState.fromRecords(log.records().slice(0, seq), { teamId: TEAM_ID });
      const restored = TeamState.fromSnapshot(JSON.parse(text), { teamId: TEAM_ID });
      expect(canonical(restored)).toBe(canonical(fold));
    }

    // a new process over the same log and snapshots starts from the newest one
    const again = createMemoryTeamLog({
      teamId: TEAM_ID,
      records: log.records(),
      snapshots: { everyRecords: 5, stored: written },
    });
    const loaded = await loadTeamState(again, { teamId: TEAM_ID });
    expect(loaded.snapshotSeq).toBe(written[written.length - 1]?.seq);
    expect(canonical(loaded.state)).toBe(
      canonical(TeamState.fromRecords(log.records(), { teamId: TEAM_ID })),
    );
  });

  it('falls back past a snapshot that fails validation, and tells the store', async () => {
    const records = randomTeamRecords(TEAM_ID, 200, 5);
    const good = TeamState.fromRecords(records.slice(0, 100), { teamId: TEAM_ID }).snapshot();
    const bad = { ...TeamState.fromRecords(records.slice(0, 150), { teamId: TEAM_ID }).snapshot() };
    bad.nextTaskNumber += 7;
    const log = createMemoryTeamLog({
      teamId: TEAM_ID,
      records,
      snapshots: {
        everyRecords: 1000,
        stored: [
          { seq: 100, text: JSON.stringify(good) },
          { seq: 150, text: JSON.stringify(bad) },
        ],
      },
    });
    const loaded = await loadTeamState(log, { teamId: TEAM_ID });
    expect(loaded).toMatchObject({ snapshotSeq: 100, rejected: 1 });
    expect(canonical(loaded.state)).toBe(
      canonical(TeamState.fromRecords(records, { teamId: TEAM_ID })),
    );
    // rejected ones are not offered again
    const offered: number[] = [];
    for await (const stored of log.snapshots?.list() ?? []) offered.push(stored.seq);
    expect(offered).toEqual([100]);
  });

  it('carries on when a snapshot cannot be written, and says so once per attempt', async () => {
    const log = createMemoryTeamLog({
      teamId: TEAM_ID,
      snapshots: { everyRecords: 3, failWrites: true },
    });
    const h = await openHarness({
      memory: { log, transcripts: createMemoryTranscriptStore() },
      scripts: { lead: notedLead, bob: () => ({ text: 'ok' }) },
    });
    await spawnIdle(h, 'bob');
    await h.service.sendMessage(h.service.lead, { to: 'bob', text: 'still works' });
    await h.service.idle();
    await h.service.dispose();
    const failures = h.sink.events.filter(
      (e) => e.event.type === 'error' && e.event.message.startsWith('snapshot at seq'),
    );
    expect(failures.length).toBeGreaterThan(0);
    expect(failures.every((e) => e.event.type === 'error' && e.event.code === 'STORAGE_IO')).toBe(
      true,
    );
    expect(log.storedSnapshots()).toEqual([]);
    expect(log.records().some((r) => r.type === 'message.delivered')).toBe(true);
  });
});
