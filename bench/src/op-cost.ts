import { openTeam, type TeamRecord, type TeamService } from '@teamwire/core';
import {
  createMemoryTeamLog,
  createMemoryTranscriptStore,
  createScriptedModel,
} from '@teamwire/core/testing';
import { xmlFormat } from '@teamwire/protocol';
import { Bench as TinyBench } from 'tinybench';
import { type Bench, sizeLabel } from './context.js';
import { type Figure, figure } from './report.js';
import { collectGarbage } from './stats.js';
import { benchAgents, errorCollector } from './team-fixture.js';
import { BENCH_TEAM_ID, generateJsonlLog, LEAD_TYPE, lineAt } from './team-log.js';

const OPS = ['createTask', 'updateTask', 'sendMessage'] as const;
type Op = (typeof OPS)[number];

/** Median latency of each operation on one team, in milliseconds. */
type OpLatencies = Record<Op, { p50: number; p99: number; samples: number }>;

/**
 * Opens a team whose in-memory log already holds about `size` generated records. The log is
 * filled in chunks through `TeamLog.append`, so the stored copies are validated like any other.
 */
async function openTeamWithHistory(
  size: number,
): Promise<{ team: TeamService; records: number; errors: ReturnType<typeof errorCollector> }> {
  const generated = generateJsonlLog({ records: size });
  const log = createMemoryTeamLog({ teamId: BENCH_TEAM_ID });
  const count = generated.offsets.length - 1;
  for (let start = 0; start < count; start += 5000) {
    const chunk: TeamRecord[] = [];
    for (let i = start; i < Math.min(count, start + 5000); i++) {
      chunk.push(JSON.parse(lineAt(generated, i)) as TeamRecord);
    }
    await log.append({ records: chunk });
  }
  const errors = errorCollector();
  const team = await openTeam({
    teamId: BENCH_TEAM_ID,
    log,
    transcripts: createMemoryTranscriptStore(),
    format: xmlFormat,
    agents: benchAgents(createScriptedModel()),
    lead: { agentType: LEAD_TYPE },
    events: errors,
    // The benchmark repeats each operation thousands of times; the default bounds (256 tasks, 64
    // undelivered messages per member) would refuse it long before history could matter.
    limits: { maxTasks: 1_000_000_000, maxPendingPerMember: 1_000_000_000 },
  });
  // The generated log ends with nothing to do: no runner may have been revived by the open.
  const busy = team
    .listMembers(team.lead)
    .filter((m) => !m.isLead && m.status !== 'inactive' && m.status !== 'retired');
  errors.check('opening the generated team');
  if (busy.length > 0) throw new Error(`opening revived ${busy.map((m) => m.name).join(', ')}`);
  return { team, records: count, errors };
}

async function measureOps(
  team: TeamService,
  errors: ReturnType<typeof errorCollector>,
  quick: boolean,
): Promise<OpLatencies> {
  const lead = team.lead;
  const target = team
    .listMembers(lead)
    .find((member) => !member.isLead && member.phase === 'active');
  if (target === undefined) throw new Error('the generated team has no active teammate');
  const edited = await team.createTask(lead, {
    subject: 'Keep the changelog current',
    description: 'Add an entry for every user-visible change.',
  });
  let n = 0;
  const bench = new TinyBench({
    time: quick ? 300 : 1500,
    warmupTime: quick ? 100 : 300,
    iterations: 64,
    throws: true,
  });
  bench.add('createTask', async () => {
    n++;
    await team.createTask(lead, {
      subject: `Fix flaky test ${n}`,
      description: 'The retry test fails about once in fifty runs on CI; find out why and fix it.',
      writeScopes: ['test/'],
    });
  });
  bench.add('updateTask', async () => {
    n++;
    await team.updateTask(lead, {
      taskId: edited.id,
      action: { type: 'edit', description: `Add an entry for every user-visible change (${n}).` },
    });
  });
  bench.add('sendMessage', async () => {
    n++;
    await team.sendMessage(lead, {
      to: target.name,
      text: 'When you are done with the parser, please also look at the retry test in test/http.',
      delivery: 'quiet',
    });
  });
  await bench.run();
  errors.check('the operations');
  const out = {} as OpLatencies;
  for (const op of OPS) {
    const task = bench.getTask(op);
    const result = task?.result;
    if (result === undefined || !('latency' in result)) {
      throw new Error(`${op} did not complete: ${result?.state ?? 'missing'}`);
    }
    out[op] = { p50: result.latency.p50, p99: result.latency.p99, samples: task?.runs ?? 0 };
  }
  return out;
}

/**
 * Operation cost vs history: the same service operations on a team whose log holds a few
 * records and on one whose log holds a million. State is kept incrementally, so the ratio should
 * stay near 1; a ratio that grows with history means some operation re-reads it.
 */
export const opCostBench: Bench = {
  name: 'op-cost',
  title: 'createTask / updateTask / sendMessage on a 10^2 vs 10^6-record history',
  async run({ quick, log: say }) {
    const sizes = quick ? [100, 10_000] : [100, 1_000_000];
    const results: { size: number; records: number; latencies: OpLatencies }[] = [];
    for (const size of sizes) {
      say(`op-cost: building a team with a ${sizeLabel(size)}-record log`);
      const { team, records, errors } = await openTeamWithHistory(size);
      collectGarbage();
      say(`op-cost: measuring on ${records} records of history`);
      try {
        results.push({ size, records, latencies: await measureOps(team, errors, quick) });
      } finally {
        await team.dispose();
      }
      collectGarbage();
    }
    const [small, large] = results as [(typeof results)[0], (typeof results)[0]];
    const figures: Figure[] = [];
    for (const op of OPS) {
      const a = small.latencies[op];
      const b = large.latencies[op];
      figures.push(
        figure({
          bench: 'op-cost',
          name: `${op} on ${sizeLabel(large.size)} vs ${sizeLabel(small.size)} records`,
          subject: { label: `p50 @ ${sizeLabel(large.size)}`, value: b.p50 * 1000, unit: 'µs' },
          baseline: { label: `p50 @ ${sizeLabel(small.size)}`, value: a.p50 * 1000, unit: 'µs' },
          ratioOf: 'large / small',
          ratio: b.p50 / a.p50,
          target: { op: '<=', value: 1.5 },
          note: `TeamService over in-memory stores; ${small.records} vs ${large.records} records; ${a.samples}/${b.samples} samples; p99 ${(a.p99 * 1000).toFixed(0)}/${(b.p99 * 1000).toFixed(0)} µs`,
        }),
      );
    }
    return figures;
  },
};
