import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type EventSink, openTeam, type TeamService } from '@teamwire/core';
import { xmlFormat } from '@teamwire/protocol';
import { type JsonlTeamStore, openJsonlTeamStore } from '@teamwire/storage';
import type { Bench } from './context.js';
import { type Figure, figure } from './report.js';
import { now, percentile, settledHeap, within } from './stats.js';
import { benchAgents, createPolicyModel, PING, pingPolicy } from './team-fixture.js';
import { BENCH_TEAM_ID, LEAD_TYPE, WORKER_TYPE } from './team-log.js';

/** Calls back when a teammate's reply to the lead is in the lead's transcript. */
function replyWatcher(): {
  sink: EventSink;
  expect(memberId: string): Promise<number>;
} {
  const waiting = new Map<string, (at: number) => void>();
  const replies = new Map<string, string>();
  return {
    sink: {
      publish(_agent, event) {
        if (event.type !== 'record') return;
        const record = event.record;
        if (
          record.type === 'message.queued' &&
          record.message.kind === 'message' &&
          record.message.targetId === BENCH_TEAM_ID
        ) {
          replies.set(record.message.id, record.message.senderId);
        } else if (record.type === 'message.delivered' && record.targetId === BENCH_TEAM_ID) {
          const sender = replies.get(record.messageId);
          if (sender === undefined) return;
          replies.delete(record.messageId);
          const resolve = waiting.get(sender);
          waiting.delete(sender);
          resolve?.(now());
        }
      },
    },
    expect(memberId) {
      return new Promise((resolve) => waiting.set(memberId, resolve));
    },
  };
}

interface ScaleTeam {
  team: TeamService;
  store: JsonlTeamStore;
  watcher: ReturnType<typeof replyWatcher>;
  names: string[];
  ids: Map<string, string>;
}

async function openScaleTeam(dir: string, teammates: number): Promise<ScaleTeam> {
  const store = await openJsonlTeamStore({ teamId: BENCH_TEAM_ID, dir, durability: 'fsync' });
  const watcher = replyWatcher();
  const team = await openTeam({
    teamId: BENCH_TEAM_ID,
    log: store.log,
    transcripts: store.transcripts,
    format: xmlFormat,
    agents: benchAgents(createPolicyModel(pingPolicy)),
    lead: { agentType: LEAD_TYPE },
    events: watcher.sink,
    limits: { maxMembers: teammates },
  });
  return { team, store, watcher, names: [], ids: new Map() };
}

/** Spawns `count` teammates, a few at a time, and waits until every one of them is idle. */
async function spawnAll(scale: ScaleTeam, count: number): Promise<void> {
  const { team } = scale;
  let next = 0;
  const worker = async () => {
    while (next < count) {
      const name = `worker-${++next}`;
      const spawned = await team.spawnTeammate(team.lead, {
        name,
        description: 'Implements and tests one area of the code base.',
        prompt: 'Wait for instructions from the lead; answer pings with send_message.',
        agentType: WORKER_TYPE,
      });
      scale.names.push(name);
      scale.ids.set(name, spawned.memberId);
    }
  };
  await within(Promise.all(Array.from({ length: 16 }, worker)), 300_000, 'spawning teammates');
  await within(team.idle(), 120_000, 'the spawned team settling');
}

/**
 * Round trips one at a time: the lead messages a teammate, the teammate's runner delivers it,
 * runs a turn whose model call sends a reply, and the lead's runner delivers the reply into the
 * lead's transcript. Timed from `sendMessage` to that last durable write.
 */
async function roundTrips(scale: ScaleTeam, count: number, warmups: number): Promise<number[]> {
  const { team } = scale;
  const out: number[] = [];
  for (let i = 0; i < warmups + count; i++) {
    const name = scale.names[i % scale.names.length] as string;
    const replied = scale.watcher.expect(scale.ids.get(name) as string);
    const start = now();
    await team.sendMessage(team.lead, { to: name, text: `${PING} ${i}: please confirm.` });
    const end = await within(replied, 30_000, `the reply of ${name}`);
    if (i >= warmups) out.push(end - start);
    // Let the lead read the idle notification that follows, so round trips do not overlap.
    await within(team.idle(), 30_000, 'the lead reading the idle notification');
  }
  return out;
}

async function closeScaleTeam(scale: ScaleTeam): Promise<void> {
  await scale.team.dispose();
  await scale.store.close();
}

/**
 * Scale: many live teammates in one process, on scripted answers and the durable store with
 * fsync. Heap per idle teammate is the settled heap growth from spawning them all (each has
 * handled its spawn prompt, the lead has read each idle notification) divided by their count.
 * Round-trip latency is compared with the same exchanges in a team of one teammate.
 */
export const scaleBench: Bench = {
  name: 'scale',
  title: '1,000 live teammates: heap per idle teammate and lead round-trip latency',
  async run({ quick, log: say }) {
    const teammates = quick ? 100 : 1000;
    const exchanges = quick ? 60 : 300;
    const warmups = 10;
    const root = await mkdtemp(join(tmpdir(), 'teamwire-bench-scale-'));
    const figures: Figure[] = [];
    try {
      const big = await openScaleTeam(join(root, 'many'), teammates);
      let measured: number[];
      let perTeammate: number;
      try {
        const before = settledHeap();
        say(`scale: spawning ${teammates} teammates`);
        const spawnStart = now();
        await spawnAll(big, teammates);
        const spawnSeconds = (now() - spawnStart) / 1000;
        const after = settledHeap();
        perTeammate = (after - before) / teammates;
        const live = big.team
          .listMembers(big.team.lead)
          .filter((m) => !m.isLead && m.status === 'idle').length;
        say(
          `scale: ${live} idle teammates, ${(perTeammate / 1024).toFixed(1)} KiB each; ${exchanges} round trips`,
        );
        measured = await roundTrips(big, exchanges, warmups);
        figures.push(
          figure({
            bench: 'scale',
            name: `heap per idle teammate (${teammates} live)`,
            subject: { label: 'per teammate', value: perTeammate / 1024, unit: 'KiB' },
            baseline: { label: 'budget', value: 64, unit: 'KiB' },
            ratioOf: 'per teammate / 64 KiB',
            ratio: perTeammate / 1024 / 64,
            target: { op: '<=', value: 1 },
            note: `settled heap ${(before / 2 ** 20).toFixed(1)} -> ${(after / 2 ** 20).toFixed(1)} MiB for ${live} idle teammates (lead's conversation included); spawned in ${spawnSeconds.toFixed(1)} s`,
          }),
        );
      } finally {
        await closeScaleTeam(big);
      }
      // The baseline runs second, on code the big team has already warmed up.
      say(`scale: baseline, ${exchanges} round trips with a team of one teammate`);
      const single = await openScaleTeam(join(root, 'one'), 1);
      let baseline: number[];
      try {
        await spawnAll(single, 1);
        baseline = await roundTrips(single, exchanges, warmups);
      } finally {
        await closeScaleTeam(single);
      }
      for (const [label, p] of [
        ['p50', 0.5],
        ['p99', 0.99],
      ] as const) {
        const a = percentile(baseline, p);
        const b = percentile(measured, p);
        figures.push(
          figure({
            bench: 'scale',
            name: `message round trip ${label}, ${teammates} teammates vs 1`,
            subject: { label: `${teammates} teammates`, value: b, unit: 'ms' },
            baseline: { label: '1 teammate', value: a, unit: 'ms' },
            ratioOf: `${teammates} / 1`,
            ratio: b / a,
            note: `lead -> teammate -> lead, sequential, fsync store; ${exchanges} round trips after ${warmups} warm-ups`,
          }),
        );
      }
    } finally {
      await rm(root, { recursive: true, force: true });
    }
    return figures;
  },
};
