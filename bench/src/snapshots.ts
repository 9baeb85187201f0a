import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  isSnapshotDue,
  openTeam,
  parseTeamRecord,
  type SnapshotPolicy,
  type TeamRecord,
  TeamState,
} from '@teamwire/core';
import { createScriptedModel } from '@teamwire/core/testing';
import { xmlFormat } from '@teamwire/protocol';
import { openJsonlTeamStore } from '@teamwire/storage';
import { type Bench, sizeLabel } from './context.js';
import { type Figure, figure } from './report.js';
import { collectGarbage, median, now, pairedRuns } from './stats.js';
import { benchAgents } from './team-fixture.js';
import { BENCH_TEAM_ID, generateJsonlLog, type JsonlLog, LEAD_TYPE, lineAt } from './team-log.js';

/** Keeps results observable so the engine cannot drop the work that made them. */
let sink = 0;

/** A checksum of what the snapshots benchmark computed (it exists to be observable). */
export function snapshotsChecksum(): number {
  return sink;
}

/** Writes the first `records` lines of `log` as a team folder's log. */
async function teamFolder(root: string, name: string, log: JsonlLog, records: number) {
  const dir = join(root, name);
  await openJsonlTeamStore({ teamId: BENCH_TEAM_ID, dir, durability: 'buffered' }).then((s) =>
    s.close(),
  );
  const end = log.offsets[records] as number;
  await writeFile(join(dir, 'log.jsonl'), log.bytes.subarray(0, end));
  return dir;
}

/** What an application waits for: the store's recovery, then `openTeam`, then a clean stop. */
async function reopen(dir: string): Promise<{ snapshotSeq: number; records: number }> {
  const store = await openJsonlTeamStore({ teamId: BENCH_TEAM_ID, dir, durability: 'fsync' });
  try {
    const team = await openTeam({
      teamId: BENCH_TEAM_ID,
      log: store.log,
      transcripts: store.transcripts,
      format: xmlFormat,
      agents: benchAgents(createScriptedModel()),
      lead: { agentType: LEAD_TYPE },
    });
    sink ^= team.listMembers(team.lead).length;
    await team.dispose();
    return { snapshotSeq: store.recovered.snapshotSeq, records: store.recovered.records };
  } finally {
    await store.close();
  }
}

/**
 * Appends `records` one command at a time (1 record each, durable before the next), folding each
 * into `state` as the team service does, and hands the store a snapshot whenever one is due
 * without waiting for it, as the service's background writer does. Returns records per second.
 */
async function appendRun(
  dir: string,
  base: readonly TeamRecord[],
  records: readonly TeamRecord[],
  snapshots: Partial<SnapshotPolicy> | false,
): Promise<{ rate: number; written: number }> {
  const store = await openJsonlTeamStore({
    teamId: BENCH_TEAM_ID,
    dir,
    durability: 'fsync',
    snapshots,
  });
  const state = TeamState.fromRecords(base, { teamId: BENCH_TEAM_ID });
  let writing: Promise<void> | undefined;
  let written = 0;
  let newest = { seq: state.lastSeq, bytes: 0, logBytesAt: 0 };
  const start = now();
  for (const record of records) {
    await store.log.append({ records: [record] });
    state.apply(record);
    const target = store.log.snapshots;
    if (target === undefined || writing !== undefined) continue;
    const logBytesAt = target.logBytes();
    const seq = state.lastSeq;
    const bytesSince = logBytesAt - newest.logBytesAt;
    if (isSnapshotDue({ seq, newest, bytesSince, policy: target.policy })) {
      writing = target.write(state.snapshot()).then(async ({ bytes }) => {
        await target.prune({ keep: target.policy.keep });
        newest = { seq, bytes, logBytesAt };
        written++;
        writing = undefined;
      });
    }
  }
  await writing;
  const seconds = (now() - start) / 1000;
  await store.close();
  return { rate: records.length / seconds, written };
}

/**
 * Snapshots: reopening a long-lived team costs what its state costs, not what its history does;
 * and writing snapshots in the background costs appends little.
 */
export const snapshotsBench: Bench = {
  name: 'snapshots',
  title: 'reopen 10^6 vs 10^3 records from a snapshot; appends with snapshots vs without',
  async run({ quick, log: say }) {
    const figures: Figure[] = [];
    const root = await mkdtemp(join(tmpdir(), 'teamwire-bench-snapshots-'));
    try {
      const big = quick ? 100_000 : 1_000_000;
      const small = 1_000;
      say(`snapshots: generating a ${sizeLabel(big)}-record log`);
      let log: JsonlLog | undefined = generateJsonlLog({ records: big, mix: 'tasks' });
      const bigDir = await teamFolder(root, 'big', log, big);
      const smallDir = await teamFolder(root, 'small', log, small);
      const mib = log.bytes.length / 2 ** 20;
      log = undefined;
      collectGarbage();
      // The first open of each folds the whole log and writes its first snapshot.
      say('snapshots: first open of each team (a full fold, then the first snapshot)');
      const firstStart = now();
      await reopen(bigDir);
      const firstMs = now() - firstStart;
      await reopen(smallDir);
      say('snapshots: reopen, big vs small');
      const seen = { big: 0, small: 0 };
      const times = await pairedRuns({
        repeats: quick ? 5 : 9,
        warmups: 1,
        subject: async () => {
          seen.big = (await reopen(bigDir)).snapshotSeq;
        },
        baseline: async () => {
          seen.small = (await reopen(smallDir)).snapshotSeq;
        },
        between: collectGarbage,
      });
      if (seen.big === 0) throw new Error('the big team did not reopen from a snapshot');
      const bigMs = median(times.subject);
      const smallMs = median(times.baseline);
      figures.push(
        figure({
          bench: 'snapshots',
          name: `reopen ${sizeLabel(big)}-record team vs ${sizeLabel(small)}-record team`,
          subject: { label: `reopen ${sizeLabel(big)}`, value: bigMs, unit: 'ms' },
          baseline: { label: `reopen ${sizeLabel(small)}`, value: smallMs, unit: 'ms' },
          ratioOf: 'big / small',
          ratio: bigMs / smallMs,
          target: { op: '<=', value: 3 },
          note: `${mib.toFixed(0)} MiB of log; the big team opens from its snapshot at seq ${seen.big} (the first open, a full fold, took ${Math.round(firstMs)} ms); openJsonlTeamStore + openTeam + dispose, median of ${quick ? 5 : 9}`,
        }),
      );

      // Appends on a team with a sizeable state, snapshots on (default policy) vs off.
      const baseCount = quick ? 20_000 : 100_000;
      const appendCount = quick ? 6_000 : 20_000;
      say(`snapshots: appends after ${sizeLabel(baseCount)} records, with snapshots vs without`);
      const source = generateJsonlLog({ records: baseCount + appendCount, mix: 'tasks' });
      const all: TeamRecord[] = [];
      for (let i = 0; i < baseCount + appendCount; i++) {
        all.push(parseTeamRecord(JSON.parse(lineAt(source, i))));
      }
      const base = all.slice(0, baseCount);
      const tail = all.slice(baseCount);
      const rates = { on: [] as number[], off: [] as number[], written: 0 };
      const rounds = quick ? 2 : 3;
      for (let round = 0; round < rounds; round++) {
        for (const side of round % 2 === 0 ? (['off', 'on'] as const) : (['on', 'off'] as const)) {
          const dir = await teamFolder(root, `append-${side}-${round}`, source, baseCount);
          collectGarbage();
          const run = await appendRun(dir, base, tail, side === 'on' ? {} : false);
          rates[side].push(run.rate);
          if (side === 'on') rates.written = run.written;
          await rm(dir, { recursive: true, force: true });
        }
      }
      if (rates.written === 0) throw new Error('no snapshot was written during the appends');
      const on = median(rates.on);
      const off = median(rates.off);
      figures.push(
        figure({
          bench: 'snapshots',
          name: 'appends with snapshots on vs off',
          subject: { label: 'snapshots on', value: on, unit: 'records/s' },
          baseline: { label: 'snapshots off', value: off, unit: 'records/s' },
          ratioOf: 'on / off',
          ratio: on / off,
          target: { op: '>=', value: 0.9 },
          note: `${appendCount} fsync'd appends of 1 record after ${baseCount} records (${rates.written} snapshots written in the background, default policy); median of ${rounds}`,
        }),
      );
    } finally {
      await rm(root, { recursive: true, force: true });
    }
    return figures;
  },
};
