import {
  BasicTracerProvider,
  InMemorySpanExporter,
  SimpleSpanProcessor,
} from '@opentelemetry/sdk-trace-base';
import {
  type ChatMessage,
  contentText,
  type EventSink,
  openTeam,
  type TeamService,
} from '@teamwire/core';
import { createMemoryTeamLog, createMemoryTranscriptStore } from '@teamwire/core/testing';
import { createTeamTelemetry, type TeamTelemetry } from '@teamwire/otel';
import { xmlFormat } from '@teamwire/protocol';
import type { Bench } from './context.js';
import { type Figure, figure } from './report.js';
import { median, now, within } from './stats.js';
import { benchAgents, createPolicyModel, type PolicyStep } from './team-fixture.js';
import { BENCH_TEAM_ID, LEAD_TYPE, WORKER_TYPE } from './team-log.js';

const PING = 'PING';

/** Teammates answer a ping with one message to the lead; the lead acknowledges what it reads. */
function policy(agentName: string, messages: readonly ChatMessage[]): PolicyStep {
  const last = messages.at(-1);
  if (agentName === 'lead') return { text: 'OK.' };
  if (last?.role === 'tool') return { text: '' };
  if (last !== undefined && contentText(last.content).includes(PING)) {
    return { toolCalls: [{ name: 'send_message', input: { to: 'lead', message: 'pong' } }] };
  }
  return { text: 'Ready.' };
}

type Mode = 'none' | 'off' | 'on';

/** The six orders of the three modes, one per round of each. */
const ORDERS: readonly (readonly Mode[])[] = [
  ['none', 'off', 'on'],
  ['off', 'on', 'none'],
  ['on', 'none', 'off'],
  ['on', 'off', 'none'],
  ['off', 'none', 'on'],
  ['none', 'on', 'off'],
];

interface Timed {
  team: TeamService;
  telemetry: TeamTelemetry | undefined;
  exporter: InMemorySpanExporter | undefined;
  names: string[];
}

/**
 * A team on the in-memory stores (so the runtime's own cost is what is timed), with no telemetry
 * (`none`: today's path), with `@teamwire/otel` on the OpenTelemetry API with no SDK registered
 * (`off`), or with a tracer provider recording every span (`on`).
 */
async function openTimed(mode: Mode, teammates: number): Promise<Timed> {
  let telemetry: TeamTelemetry | undefined;
  let exporter: InMemorySpanExporter | undefined;
  if (mode === 'off') telemetry = createTeamTelemetry();
  if (mode === 'on') {
    exporter = new InMemorySpanExporter();
    const provider = new BasicTracerProvider({
      spanProcessors: [new SimpleSpanProcessor(exporter)],
    });
    telemetry = createTeamTelemetry({ tracer: provider.getTracer('bench') });
  }
  const quiet: EventSink = { publish() {} };
  const team = await openTeam({
    teamId: BENCH_TEAM_ID,
    log: createMemoryTeamLog({ teamId: BENCH_TEAM_ID }),
    transcripts: createMemoryTranscriptStore(),
    format: xmlFormat,
    agents: benchAgents(createPolicyModel(policy)),
    lead: { agentType: LEAD_TYPE },
    events: telemetry === undefined ? quiet : telemetry.events,
    ...(telemetry === undefined ? {} : { traceContext: telemetry.traceContext }),
    limits: { maxMembers: teammates },
    idleClaim: false,
  });
  telemetry?.attach(team);
  const names: string[] = [];
  for (let i = 1; i <= teammates; i++) {
    const name = `worker-${i}`;
    await team.spawnTeammate(team.lead, {
      name,
      description: 'Answers pings.',
      prompt: 'Answer pings with send_message.',
      agentType: WORKER_TYPE,
    });
    names.push(name);
  }
  await within(team.idle(), 60_000, 'the team settling');
  return { team, telemetry, exporter, names };
}

/** One round: a ping to every teammate at once, until every answer reached the lead. Ms. */
async function round(timed: Timed): Promise<number> {
  const { team, names } = timed;
  const start = now();
  await Promise.all(names.map((name) => team.sendMessage(team.lead, { to: name, text: PING })));
  await within(team.idle(), 60_000, 'a round of pings');
  const elapsed = now() - start;
  timed.exporter?.reset();
  return elapsed;
}

/**
 * Telemetry: the same ping rounds with no telemetry (off: what a team not configured for it runs),
 * with `@teamwire/otel` on the API with no SDK registered, and with every span recorded (on),
 * interleaved in every order in turn so machine drift and position fall on all three alike. A round
 * is one ping per teammate and its answer: 2 messages, 2 turns, 2 model calls and 1 tool call.
 */
export const telemetryBench: Bench = {
  name: 'telemetry',
  title:
    'OpenTelemetry: throughput with @teamwire/otel and no SDK, and the cost per message with spans recorded',
  async run({ quick, log: say }) {
    const teammates = 8;
    const rounds = quick ? 18 : 60;
    // the first rounds of each team run before the JIT has compiled their path: several times
    // slower, and not what a team that runs for hours pays
    const warmups = 30;
    const modes: Mode[] = ['none', 'off', 'on'];
    const teams = new Map<Mode, Timed>();
    for (const mode of modes) teams.set(mode, await openTimed(mode, teammates));
    const times = new Map<Mode, number[]>(modes.map((mode) => [mode, []]));
    try {
      say(`telemetry: ${rounds} rounds of ${teammates} pings, none / off / on interleaved`);
      for (let i = 0; i < warmups + rounds; i++) {
        // every order of the three in turn, so each mode runs in each position and after each
        // other mode equally often (alternating one order and its reverse kept `off` always in
        // the middle, which alone cost a team about 15% in a run of two identical teams)
        for (const mode of ORDERS[i % ORDERS.length] as Mode[]) {
          const ms = await round(teams.get(mode) as Timed);
          if (i >= warmups) times.get(mode)?.push(ms);
        }
      }
    } finally {
      for (const timed of teams.values()) {
        timed.telemetry?.close();
        await timed.team.dispose();
      }
    }
    const messages = teammates * 2;
    const perSecond = (ms: number) => Math.round((messages / ms) * 1000);
    const none = median(times.get('none') ?? []);
    const off = median(times.get('off') ?? []);
    const on = median(times.get('on') ?? []);
    const figures: Figure[] = [
      figure({
        bench: 'telemetry',
        name: 'messages, @teamwire/otel with no SDK registered vs none',
        subject: { label: 'otel, no SDK', value: perSecond(off), unit: 'messages/s' },
        baseline: { label: 'no telemetry', value: perSecond(none), unit: 'messages/s' },
        ratioOf: 'no SDK / none',
        ratio: none / off,
        target: { op: '>=', value: 0.9 },
        note: `median of ${rounds} rounds of ${teammates} pings and answers, in-memory stores, interleaved in all six orders after ${warmups} warm-up rounds; off (not configured) is the none path itself: core asks no trace context and the CLI and the example load no @teamwire/otel`,
      }),
      figure({
        bench: 'telemetry',
        name: 'messages, telemetry on (every span recorded) vs none',
        subject: { label: 'on', value: perSecond(on), unit: 'messages/s' },
        baseline: { label: 'no telemetry', value: perSecond(none), unit: 'messages/s' },
        ratioOf: 'on / none',
        ratio: none / on,
        note: `cost per message with it on: ${(((on - none) / messages) * 1000).toFixed(0)} µs (a message here is a turn, a model call and a tool call on one side)`,
      }),
    ];
    return figures;
  },
};
