import type { StoredSnapshot, TeamLog, TeamRecord } from '@teamwire/core';
import { loadTeamState, TEAM_STATE_SNAPSHOT_VERSION, TeamState } from '@teamwire/core';
import { randomTeamRecords } from '@teamwire/core/testing';
import { afterEach, beforeEach, expect, it } from 'vitest';
import { checksumOf } from './snapshots.js';
import type { PostgresTeamStore } from './store.js';
import { describePg, Scratch } from './test-support.js';

const TEAM = '01JTEAMSNAPSHOTS0000000000';

/**
 * A team's history made by the state's own commands, so it folds strictly: a lead, a worker,
 * tasks created and worked on, mail queued and delivered (some left pending).
 */
function history(teamId: string, count: number): TeamRecord[] {
  const state = new TeamState({ teamId });
  const records: TeamRecord[] = [
    ...state.createLead({ id: 'lead-id', agentType: 'lead', provider: 'scripted' }),
    state.spawnMember('lead-id', {
      id: 'worker-id',
      name: 'worker',
      description: 'works',
      agentType: 'worker',
      provider: 'scripted',
      context: 'fresh',
    }),
  ];
  for (let i = 0; records.length < count; i++) {
    switch (i % 4) {
      case 0:
        records.push(
          state.createTask('lead-id', { subject: `task ${i}`, description: `do thing ${i}` }),
        );
        break;
      case 1: {
        const taskId = state.allTasks().at(-1)!.id;
        records.push(state.updateTask('worker-id', { taskId, action: { type: 'claim' } }));
        break;
      }
      default: {
        const oldest = state.pending('worker-id')[0];
        if (oldest !== undefined && state.pendingCount('worker-id') >= 30) {
          records.push(state.markDelivered({ messageId: oldest.id }));
          break;
        }
        const id = `msg-${i}`;
        records.push(
          state.queueMessage({
            id,
            senderId: 'lead-id',
            targetId: 'worker-id',
            kind: 'message',
            delivery: 'quiet',
            content: [{ type: 'text', text: `message ${i}` }],
          }),
        );
        if (i % 3 !== 0) records.push(state.markDelivered({ messageId: id }));
      }
    }
  }
  return records.slice(0, count);
}

async function append(log: TeamLog, records: readonly TeamRecord[]): Promise<void> {
  for (let i = 0; i < records.length; i += 100) {
    await log.append({ records: records.slice(i, i + 100) });
  }
}

/** The parts of a state a fold decides, for comparing two states. */
function view(state: TeamState) {
  return {
    lastSeq: state.lastSeq,
    leadId: state.leadId,
    members: state.members(),
    tasks: state.allTasks(),
    pending: state.pendingMail(),
  };
}

async function snapshotsOf(store: PostgresTeamStore): Promise<StoredSnapshot[]> {
  const out: StoredSnapshot[] = [];
  for await (const snapshot of store.log.snapshots!.list()) out.push(snapshot);
  return out;
}

describePg('PostgreSQL team snapshots', () => {
  let scratch: Scratch;
  beforeEach(() => {
    scratch = new Scratch();
  });
  afterEach(async () => {
    await scratch.cleanup();
  });

  const table = () => `"${scratch.schema}".team_snapshots`;
  const storedSeqs = async () =>
    (await scratch.sql<{ seq: string }>(`SELECT seq FROM ${table()} ORDER BY seq DESC`)).rows.map(
      (row) => Number(row.seq),
    );

  /** A store holding `count` records, with a snapshot after `at` (each given seq). */
  async function seeded(count: number, at: readonly number[]) {
    const records = history(TEAM, count);
    const writer = await scratch.open(TEAM);
    await append(writer.log, records);
    for (const seq of at) {
      await writer.log.snapshots!.write(
        TeamState.fromRecords(records.slice(0, seq), { teamId: TEAM }).snapshot(),
      );
    }
    return { records, writer };
  }

  it('opens a joining process from the newest snapshot and the records after it', async () => {
    const { records } = await seeded(600, [400, 500]);
    // Nothing before the snapshot's record is left: a full read would fail on the missing seqs.
    await scratch.sql(`DELETE FROM "${scratch.schema}".team_log WHERE seq < 500`);
    const joining = await scratch.open(TEAM);
    const loaded = await loadTeamState(joining.log, { teamId: TEAM });
    expect(loaded.snapshotSeq).toBe(500);
    expect(loaded.rejected).toBe(0);
    expect(view(loaded.state)).toEqual(view(TeamState.fromRecords(records, { teamId: TEAM })));
    expect(joining.snapshots).toMatchObject({ skipped: 0, rejected: 0, newestSeq: 500 });
  });

  it('restores a version 4 row: its deleted tasks answer as before, and a record changing one is refused as before', async () => {
    const records = randomTeamRecords(TEAM, 400, 21);
    const writer = await scratch.open(TEAM);
    await append(writer.log, records);
    const full = TeamState.fromRecords(records, { teamId: TEAM });
    await writer.log.snapshots!.write(full.snapshot());
    const joining = await scratch.open(TEAM);
    const loaded = await loadTeamState(joining.log, { teamId: TEAM });
    expect(loaded.snapshotSeq).toBe(400);
    const deleted = full.listTasks({ status: 'deleted' });
    expect(deleted.length).toBeGreaterThan(0);
    const { ready: _r, warnings: _w, ...task } = deleted[0] as (typeof deleted)[number];
    expect(loaded.state.getTask(task.id)).toEqual(full.getTask(task.id));
    expect(view(loaded.state)).toEqual(view(full));
    const change = {
      ...(records.find((r) => r.type === 'task') as TeamRecord & { type: 'task' }),
      seq: records.length + 1,
      task: { ...task, revision: task.revision + 1 },
    };
    const refusal = (state: TeamState) => {
      try {
        state.apply(change);
      } catch (error) {
        return (error as Error).message;
      }
      return 'accepted';
    };
    expect(refusal(loaded.state)).toBe(refusal(TeamState.fromRecords(records, { teamId: TEAM })));
    expect(refusal(loaded.state)).toMatch(/deleted/);
  });

  it('skips a snapshot whose checksum does not match for an older one, and counts it', async () => {
    const { records } = await seeded(300, [100, 200]);
    await scratch.sql(
      `UPDATE ${table()} SET state = replace(state, '"seq":200', '"seq":201') WHERE seq = 200`,
    );
    const joining = await scratch.open(TEAM);
    const loaded = await loadTeamState(joining.log, { teamId: TEAM });
    expect(loaded.snapshotSeq).toBe(100);
    expect(view(loaded.state)).toEqual(view(TeamState.fromRecords(records, { teamId: TEAM })));
    expect(joining.snapshots?.skipped).toBe(1);
    expect(joining.snapshots?.problems.join('\n')).toMatch(
      /seq 200 .* does not match its checksum/,
    );
  });

  it('rejects a snapshot that checks out but holds an invalid state, and folds the whole log when none is left', async () => {
    const { records } = await seeded(300, [100, 200]);
    // Both rows get a consistent envelope around a state that is not what it claims to be.
    for (const [seq, state] of [
      [200, TeamState.fromRecords(records.slice(0, 150), { teamId: TEAM }).snapshot()],
      [
        100,
        {
          ...TeamState.fromRecords(records.slice(0, 100), { teamId: TEAM }).snapshot(),
          members: 'none',
        },
      ],
    ] as const) {
      const text = JSON.stringify(state);
      await scratch.sql(
        `UPDATE ${table()} SET state = $2, checksum = $3, bytes = $4 WHERE seq = $1`,
        [seq, text, checksumOf(text), Buffer.byteLength(text)],
      );
    }
    const joining = await scratch.open(TEAM);
    const loaded = await loadTeamState(joining.log, { teamId: TEAM });
    expect(loaded).toMatchObject({ snapshotSeq: 0, rejected: 2 });
    expect(view(loaded.state)).toEqual(view(TeamState.fromRecords(records, { teamId: TEAM })));
    expect(joining.snapshots).toMatchObject({ rejected: 2, skipped: 0, newestSeq: 0 });
    // a rejected snapshot is not offered again
    expect(await snapshotsOf(joining)).toEqual([]);
  });

  it('skips snapshots past the end of the log, of a newer format version, or not JSON', async () => {
    const { writer } = await seeded(120, [100]);
    const good = await scratch.sql<{ state: string }>(
      `SELECT state FROM ${table()} WHERE seq = 100`,
    );
    const text = good.rows[0]!.state;
    const insert = (seq: number, version: number, state: string) =>
      scratch.sql(
        `INSERT INTO ${table()} (team_id, seq, format_version, state, checksum, bytes)
         VALUES ($1, $2, $3, $4, $5, $6)`,
        [TEAM, seq, version, state, checksumOf(state), Buffer.byteLength(state)],
      );
    await insert(500, 1, text);
    await insert(110, TEAM_STATE_SNAPSHOT_VERSION + 1, text);
    await insert(105, 1, '{"format":');
    const listed = await snapshotsOf(writer);
    expect(listed.map((snapshot) => snapshot.seq)).toEqual([100]);
    expect(writer.snapshots?.skipped).toBe(3);
    expect(writer.snapshots?.problems.join('\n')).toMatch(
      new RegExp(
        `past the end of the log[\\s\\S]*format version ${TEAM_STATE_SNAPSHOT_VERSION + 1}[\\s\\S]*not JSON`,
      ),
    );
  });

  it('counts the record text it appends or reads once each, for core to decide when a snapshot is due', async () => {
    const records = history(TEAM, 300);
    const store = await scratch.open(TEAM, {
      snapshots: { everyRecords: 10, everyBytes: 1_000_000 },
    });
    const snapshots = store.log.snapshots!;
    expect(snapshots.policy).toEqual({ everyRecords: 10, everyBytes: 1_000_000, keep: 2 });
    await append(store.log, records.slice(0, 200));
    const text = (from: number, to: number) =>
      records.slice(from, to).reduce((sum, r) => sum + JSON.stringify(r).length, 0);
    expect(snapshots.logBytes()).toBe(text(0, 200));
    const written = await snapshots.write(
      TeamState.fromRecords(records.slice(0, 200), { teamId: TEAM }).snapshot(),
    );
    const stored = await scratch.sql<{ bytes: string }>(
      `SELECT bytes FROM ${table()} WHERE seq = 200`,
    );
    expect(written.bytes).toBe(Number(stored.rows[0]!.bytes));
    await append(store.log, records.slice(200));

    // A process that opens reads the snapshot's record and the records after it, and counts
    // them once: reading them again adds nothing.
    const reader = await scratch.open(TEAM);
    const loaded = await loadTeamState(reader.log, { teamId: TEAM });
    expect(loaded).toMatchObject({ snapshotSeq: 200, snapshotBytes: written.bytes });
    expect(reader.log.snapshots!.logBytes()).toBe(text(199, 300));
    for await (const record of reader.log.read({ fromSeq: 150 }))
      expect(record.seq).toBeGreaterThan(149);
    expect(reader.log.snapshots!.logBytes()).toBe(text(199, 300));

    const none = await scratch.open(TEAM, { snapshots: false });
    expect(none.log.snapshots).toBeUndefined();
    expect(none.snapshots).toBeUndefined();
  });

  it('never restores a snapshot of a history the log no longer holds (cut back and written again)', async () => {
    const { records } = await seeded(300, [100, 200]);
    // The README's advice for CORRUPT_LOG: delete the bad row and every later one...
    await scratch.sql(`DELETE FROM "${scratch.schema}".team_log WHERE seq >= 150`);
    // ...then the team goes on, writing other records after the cut.
    const resumed = await scratch.open(TEAM);
    const state = (await loadTeamState(resumed.log, { teamId: TEAM })).state;
    expect(state.lastSeq).toBe(149);
    const lead = state.leadId as string;
    for (let i = 0; state.lastSeq < 260; i++) {
      await resumed.log.append({
        records: [state.createTask(lead, { subject: `after the cut ${i}`, description: 'new' })],
      });
    }
    const log: TeamRecord[] = [];
    for await (const record of resumed.log.read()) log.push(record);

    const joining = await scratch.open(TEAM);
    const loaded = await loadTeamState(joining.log, { teamId: TEAM });
    expect(loaded).toMatchObject({ snapshotSeq: 100, rejected: 1 });
    expect(view(loaded.state)).toEqual(view(TeamState.fromRecords(log, { teamId: TEAM })));
    expect(
      loaded.state.allTasks().filter((t) => t.subject.startsWith('after the cut')),
    ).toHaveLength(111);
    expect(joining.snapshots?.problems.join('\n')).toMatch(/seq 200 .*another record at seq 200/);
    expect(records.length).toBe(300);
  });

  it('keeps the newest snapshots per team and lets any process write the same seq', async () => {
    const records = history(TEAM, 200);
    const a = await scratch.open(TEAM, { pool: scratch.pool(), snapshots: { keep: 2 } });
    const b = await scratch.open(TEAM, { pool: scratch.pool(), snapshots: { keep: 2 } });
    await append(a.log, records);
    const at = (seq: number) =>
      TeamState.fromRecords(records.slice(0, seq), { teamId: TEAM }).snapshot();
    await Promise.all([
      ...Array.from({ length: 4 }, () => a.log.snapshots!.write(at(50))),
      ...Array.from({ length: 4 }, () => b.log.snapshots!.write(at(50))),
    ]);
    expect(await storedSeqs()).toEqual([50]);
    expect(a.snapshots!.written + b.snapshots!.written).toBe(1);
    await Promise.all([a.log.snapshots!.write(at(100)), b.log.snapshots!.write(at(150))]);
    await a.log.snapshots!.write(at(200));
    expect(await storedSeqs()).toEqual([200, 150, 100, 50]);
    await Promise.all([a.log.snapshots!.prune({ keep: 2 }), b.log.snapshots!.prune({ keep: 2 })]);
    expect(await storedSeqs()).toEqual([200, 150]);
    // another team's snapshots are its own
    const other = await scratch.open('other-team');
    await other.log.append({ records: history('other-team', 10) });
    await other.log.snapshots!.write(
      TeamState.fromRecords(history('other-team', 10), { teamId: 'other-team' }).snapshot(),
    );
    expect(await storedSeqs()).toEqual([200, 150, 10]);
  });

  it('refuses a snapshot of another team, of a seq the log does not hold, or not a snapshot', async () => {
    const records = history(TEAM, 20);
    const store = await scratch.open(TEAM);
    await append(store.log, records.slice(0, 10));
    const snapshots = store.log.snapshots!;
    const later = TeamState.fromRecords(records, { teamId: TEAM }).snapshot();
    await expect(snapshots.write(later)).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
    const other = TeamState.fromRecords(history('other', 5), { teamId: 'other' }).snapshot();
    await expect(snapshots.write(other)).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
    await expect(snapshots.write({ format: 'x' } as never)).rejects.toMatchObject({
      code: 'INVALID_ARGUMENT',
    });
    expect(await storedSeqs()).toEqual([]);
  });
});
