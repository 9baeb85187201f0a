import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { foldTeam, openTeam, readTeamRecord, type TeamRecord } from '@teamwire/core';
import { createScriptedModel } from '@teamwire/core/testing';
import { xmlFormat } from '@teamwire/protocol';
import { openJsonlTeamStore } from '@teamwire/storage';
import { type Bench, sizeLabel } from './context.js';
import { type Figure, figure } from './report.js';
import { collectGarbage, median, pairedRuns } from './stats.js';
import { benchAgents } from './team-fixture.js';
import {
  BENCH_TEAM_ID,
  generateJsonlLog,
  type JsonlLog,
  LEAD_TYPE,
  type LogMix,
  lineAt,
} from './team-log.js';

/** Keeps results observable so the engine cannot drop the work that made them. */
let sink = 0;

/** A checksum of everything the replay benchmark computed (it exists to be observable). */
export function replayChecksum(): number {
  return sink;
}

/** The floor: decode each line and `JSON.parse` it, nothing else. */
function bareParse(log: JsonlLog): void {
  const count = log.offsets.length - 1;
  let seqs = 0;
  for (let i = 0; i < count; i++) seqs += (JSON.parse(lineAt(log, i)) as { seq: number }).seq;
  sink ^= seqs;
}

/**
 * What recovery does with each line: decode, `JSON.parse`, validate the record as a team log does
 * (`readTeamRecord`), fold it.
 */
function* validatedRecords(log: JsonlLog): Generator<TeamRecord> {
  const count = log.offsets.length - 1;
  for (let i = 0; i < count; i++) yield readTeamRecord(JSON.parse(lineAt(log, i)));
}

function foldLog(log: JsonlLog): void {
  sink ^= foldTeam(validatedRecords(log), { teamId: BENCH_TEAM_ID }).lastSeq;
}

/** Opening the team from disk as an application does: the store's recovery, then `openTeam`. */
async function reopenTeam(dir: string): Promise<void> {
  // Without snapshots: this row is the whole log's recovery (the snapshots bench reopens from one).
  const store = await openJsonlTeamStore({
    teamId: BENCH_TEAM_ID,
    dir,
    durability: 'fsync',
    snapshots: false,
  });
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
  } finally {
    await store.close();
  }
}

/*
 * Why the fold rows force no garbage collection between runs: a forced full collection shrinks the
 * heap's limits to what is live, so the next run of a fold (which keeps the state it builds, unlike
 * a bare parse whose objects all die young) grows the heap back, marking and promoting as it goes,
 * in every run instead of once per process. At 10^4 records that tripled the fold's time (about
 * 25 ms of a 35 ms fold), and at 10^6 it changed little. Without it, the state a fold leaves is
 * garbage collected during later runs, which alternate between the two sides; the reopen rows, one
 * run per store, still collect between runs.
 */

interface Plan {
  mix: LogMix;
  size: number;
  repeats: number;
  warmups: number;
  /** Also time the fold of pre-validated records (it holds every parsed record in memory). */
  foldOnly: boolean;
  /** Also time a whole reopen from disk (store recovery + openTeam). */
  reopen: boolean;
}

const MIX_LABEL: Record<LogMix, string> = {
  tasks: 'task mix',
  chat: 'chat mix',
  board: 'board mix',
};

/** Every size for every mix; the informational rows of the chat and board mixes stop at 10^5. */
function plansFor(quick: boolean): Plan[] {
  const sizes = quick
    ? [
        { size: 1_000, repeats: 9, warmups: 2 },
        { size: 10_000, repeats: 5, warmups: 1 },
      ]
    : [
        { size: 10_000, repeats: 11, warmups: 2 },
        { size: 100_000, repeats: 5, warmups: 1 },
        { size: 1_000_000, repeats: 3, warmups: 1 },
      ];
  return (['tasks', 'chat', 'board'] as const).flatMap((mix) =>
    sizes.map((size) => {
      const extras = mix === 'tasks' || size.size <= 100_000;
      return { mix, ...size, foldOnly: extras, reopen: extras };
    }),
  );
}

/**
 * Replay: `foldTeam` over realistic logs against the bare `JSON.parse` of the same lines. The
 * headline figure times what recovery does per record (parse, schema validation, fold), because
 * a fold never sees records that were not validated; the fold alone and a whole reopen from disk
 * are shown beside it.
 */
export const replayBench: Bench = {
  name: 'replay',
  title: 'foldTeam over 10^4..10^6-record logs of three mixes vs bare JSON.parse of the same lines',
  async run({ quick, log: say }) {
    const plans = plansFor(quick);
    const figures: Figure[] = [];
    for (const plan of plans) {
      const label = `${sizeLabel(plan.size)} records, ${MIX_LABEL[plan.mix]}`;
      say(`replay: generating a ${label} log`);
      let log: JsonlLog | undefined = generateJsonlLog({ records: plan.size, mix: plan.mix });
      const { stats } = log;
      const records = stats.records;
      const mib = log.bytes.length / 2 ** 20;
      const messages = stats.byType['message.queued'] + stats.byType['message.delivered'];
      const taskShare = Math.round((100 * stats.byType.task) / records);
      const mixNote = `${Math.round((100 * messages) / records)}% message records, ${taskShare}% task records, ${stats.members} members, ${stats.tasks} tasks, ${Math.round(log.bytes.length / records)} bytes per line`;
      say(`replay: ${records} records, ${mib.toFixed(1)} MiB; parse+validate+fold vs parse`);
      const current = log;
      const full = await pairedRuns({
        repeats: plan.repeats,
        warmups: plan.warmups,
        subject: () => foldLog(current),
        baseline: () => bareParse(current),
        // No forced collection between runs (see the note above `Plan`).
      });
      const parseMs = median(full.baseline);
      const foldMs = median(full.subject);
      figures.push(
        figure({
          bench: 'replay',
          name: `fold ${label} (parse+validate+fold)`,
          subject: { label: 'fold', value: foldMs, unit: 'ms' },
          baseline: { label: 'JSON.parse', value: parseMs, unit: 'ms' },
          ratioOf: 'fold / parse',
          ratio: foldMs / parseMs,
          target: { op: '<=', value: 2 },
          note: `${records} records, ${mib.toFixed(1)} MiB of JSONL (${mixNote}); median of ${plan.repeats}`,
        }),
      );

      if (plan.foldOnly) await foldOnlyRow(plan, label, current, figures, say);
      if (plan.reopen) {
        const firstOfMix = plans.find((p) => p.mix === plan.mix) === plan;
        await reopenRow(plan, firstOfMix, label, current, figures, say);
      }
      log = undefined;
      collectGarbage();
    }
    return figures;
  },
};

async function foldOnlyRow(
  plan: Plan,
  label: string,
  current: JsonlLog,
  figures: Figure[],
  say: (message: string) => void,
): Promise<void> {
  say('replay: fold of pre-validated records');
  let parsed: TeamRecord[] | undefined = [...validatedRecords(current)];
  const held = parsed;
  const foldOnly = await pairedRuns({
    repeats: plan.repeats,
    warmups: plan.warmups,
    subject: () => {
      sink ^= foldTeam(held, { teamId: BENCH_TEAM_ID }).lastSeq;
    },
    baseline: () => bareParse(current),
    // No forced collection between runs (see the note above `Plan`).
  });
  parsed = undefined;
  const onlyMs = median(foldOnly.subject);
  const parseMs2 = median(foldOnly.baseline);
  figures.push(
    figure({
      bench: 'replay',
      name: `fold only ${label} (pre-validated)`,
      subject: { label: 'fold', value: onlyMs, unit: 'ms' },
      baseline: { label: 'JSON.parse', value: parseMs2, unit: 'ms' },
      ratioOf: 'fold / parse',
      ratio: onlyMs / parseMs2,
      note: 'TeamState.apply alone: records already parsed and validated',
    }),
  );
}

async function reopenRow(
  plan: Plan,
  firstOfMix: boolean,
  label: string,
  current: JsonlLog,
  figures: Figure[],
  say: (message: string) => void,
): Promise<void> {
  say('replay: reopen from disk (store recovery + openTeam)');
  const dir = await mkdtemp(join(tmpdir(), 'teamwire-bench-replay-'));
  try {
    await writeFile(join(dir, 'log.jsonl'), current.bytes);
    const reopen = await pairedRuns({
      repeats: Math.max(2, Math.ceil(plan.repeats / 2)),
      // The smaller sizes of the mix have warmed this path up already.
      warmups: firstOfMix ? 1 : 0,
      subject: () => reopenTeam(dir),
      baseline: () => bareParse(current),
      between: collectGarbage,
    });
    const reopenMs = median(reopen.subject);
    const parseMs3 = median(reopen.baseline);
    figures.push(
      figure({
        bench: 'replay',
        name: `reopen ${label} team from disk, whole log (snapshots off)`,
        subject: { label: 'reopen', value: reopenMs, unit: 'ms' },
        baseline: { label: 'JSON.parse', value: parseMs3, unit: 'ms' },
        ratioOf: 'reopen / parse',
        ratio: reopenMs / parseMs3,
        note: 'openJsonlTeamStore (reads + validates the whole file) then openTeam (reads + folds it), snapshots off',
      }),
    );
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}
