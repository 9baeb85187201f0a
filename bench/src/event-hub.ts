import {
  type AgentEvent,
  createEventHub,
  type EventHub,
  type HubSubscription,
} from '@teamwire/core';
import { Bench as TinyBench } from 'tinybench';
import type { Bench } from './context.js';
import { type Figure, figure } from './report.js';
import { collectGarbage, median, nextMacrotask, settledHeap } from './stats.js';
import { BENCH_TEAM_ID } from './team-log.js';

const SUBSCRIBERS = 100;
const AGENTS = 10;
/** Events per timed iteration: enough to time reliably, fewer than a subscriber buffer holds. */
const BATCH = 100;

/** What agents publish, mostly model deltas as in a real turn, in a fixed rotation. */
function eventMix(): { agent: string; event: AgentEvent }[] {
  const out: { agent: string; event: AgentEvent }[] = [];
  for (let i = 0; i < 1000; i++) {
    const agent = i % AGENTS === 0 ? 'lead' : `worker-${i % AGENTS}`;
    let event: AgentEvent;
    if (i % 20 === 7) {
      event = {
        type: 'tool.call',
        toolCall: { id: `call-${i}`, name: 'send_message', input: { to: 'lead', message: 'done' } },
      };
    } else if (i % 50 === 13) {
      event = { type: 'model.step', step: 1, usage: { inputTokens: 1200, outputTokens: 80 } };
    } else {
      event = { type: 'model.text-delta', text: ` token${i % 97}` };
    }
    out.push({ agent, event });
  }
  return out;
}

/** A hub with 99 subscribers that keep up and one that never reads. */
function hubWithSubscribers(): {
  hub: EventHub;
  received: () => number;
  stalled: HubSubscription;
  close: () => Promise<void>;
} {
  const hub = createEventHub({ teamId: BENCH_TEAM_ID });
  let count = 0;
  const loops: Promise<void>[] = [];
  for (let i = 0; i < SUBSCRIBERS - 1; i++) {
    const subscription = hub.subscribe();
    loops.push(
      (async () => {
        for await (const _item of subscription) count++;
      })(),
    );
  }
  const stalled = hub.subscribe();
  return {
    hub,
    received: () => count,
    stalled,
    async close() {
      hub.close();
      await Promise.all(loops);
    },
  };
}

/**
 * Event hub: the publisher's cost with 100 subscribers, one of them stalled, against a bare loop
 * that stamps the same item and pushes it to 100 arrays. The active subscribers drain between
 * timed batches (outside the timing), as UI connections do; the stalled one overflows and keeps
 * dropping its oldest item on every publish. Then heap is sampled around a long stream of events:
 * bounded buffers and rings mean it stops growing once they are full.
 */
export const eventHubBench: Bench = {
  name: 'event-hub',
  title:
    'publish with 100 subscribers (one stalled) vs pushing to 100 arrays; heap over a long stream',
  async run({ quick, log: say }) {
    const mix = eventMix();
    const figures: Figure[] = [];

    say('event-hub: publish rate');
    const subject = hubWithSubscribers();
    const arrays: unknown[][] = Array.from({ length: SUBSCRIBERS }, () => []);
    let cursor = 0;
    let seq = 0;
    const publishBatch = () => {
      for (let i = 0; i < BATCH; i++) {
        const next = mix[cursor++ % mix.length] as { agent: string; event: AgentEvent };
        subject.hub.publish(next.agent, next.event);
      }
    };
    const pushBatch = () => {
      for (let i = 0; i < BATCH; i++) {
        const next = mix[cursor++ % mix.length] as { agent: string; event: AgentEvent };
        const item = {
          type: 'event',
          seq: ++seq,
          at: Date.now(),
          teamId: BENCH_TEAM_ID,
          agent: next.agent,
          event: next.event,
        };
        for (let j = 0; j < SUBSCRIBERS; j++) (arrays[j] as unknown[]).push(item);
      }
    };
    const drainArrays = async () => {
      for (const array of arrays) array.length = 0;
      await nextMacrotask();
    };
    // Three rounds, alternating which side goes first, so drift hits both; medians of their p50s.
    const hubTimes: number[] = [];
    const bareTimes: number[] = [];
    for (let round = 0; round < 3; round++) {
      // A fixed count of iterations, not a time budget: the untimed drain after each batch costs
      // far more than the batch, so a budget of measured time would make the wall time unbounded.
      const bench = new TinyBench({
        time: 1,
        iterations: quick ? 150 : 600,
        warmupTime: 1,
        warmupIterations: quick ? 30 : 100,
        throws: true,
      });
      const tasks: [string, () => void, () => Promise<void>][] = [
        ['hub', publishBatch, nextMacrotask],
        ['bare', pushBatch, drainArrays],
      ];
      if (round % 2 === 1) tasks.reverse();
      for (const [name, fn, afterEach] of tasks) bench.add(name, fn, { afterEach });
      await bench.run();
      const latency = (name: string) => {
        const result = bench.getTask(name)?.result;
        if (result === undefined || !('latency' in result)) {
          throw new Error(`${name} did not complete`);
        }
        return result.latency.p50;
      };
      hubTimes.push(latency('hub'));
      bareTimes.push(latency('bare'));
    }
    const lost = subject.stalled.lost;
    await subject.close();
    const hubMs = median(hubTimes);
    const bareMs = median(bareTimes);
    const perSecond = (ms: number) => (BATCH * 1000) / ms;
    figures.push(
      figure({
        bench: 'event-hub',
        name: 'publish, 100 subscribers (1 stalled)',
        subject: { label: 'hub', value: perSecond(hubMs), unit: 'events/s' },
        baseline: { label: '100 array pushes', value: perSecond(bareMs), unit: 'events/s' },
        ratioOf: 'hub / bare',
        ratio: bareMs / hubMs,
        target: { op: '>=', value: 0.5 },
        note: `median of 3 rounds' p50 of ${BATCH}-event batches; the stalled subscriber dropped ${lost} items and stayed at its 1024-item bound`,
      }),
    );

    const warm = 100_000;
    const total = quick ? 300_000 : 1_000_000;
    say(`event-hub: heap over ${total} events`);
    collectGarbage();
    const before = settledHeap();
    const stream = hubWithSubscribers();
    let published = 0;
    const publish = async (until: number) => {
      while (published < until) {
        for (let i = 0; i < 1000; i++) {
          const next = mix[published++ % mix.length] as { agent: string; event: AgentEvent };
          stream.hub.publish(next.agent, next.event);
        }
        await nextMacrotask();
      }
    };
    await publish(warm);
    const afterWarm = settledHeap();
    await publish(total);
    const afterAll = settledHeap();
    const buffered = stream.stalled.buffered;
    await stream.close();
    const mib = (bytes: number) => bytes / 2 ** 20;
    figures.push(
      figure({
        bench: 'event-hub',
        name: `heap growth over ${(total / 1e6).toString()}M events vs first 100k`,
        subject: { label: `after ${total}`, value: mib(afterAll - before), unit: 'MiB' },
        baseline: { label: `after ${warm}`, value: mib(afterWarm - before), unit: 'MiB' },
        ratioOf: 'growth(all) / growth(100k)',
        ratio: (afterAll - before) / (afterWarm - before),
        target: { op: '<=', value: 1.25 },
        note: `heap ${mib(before).toFixed(1)} MiB before, ${mib(afterWarm).toFixed(1)} after 100k, ${mib(afterAll).toFixed(1)} after ${total}; stalled buffer ${buffered} items; ${stream.received()} items delivered to 99 readers`,
      }),
    );
    return figures;
  },
};
