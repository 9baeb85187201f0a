import {
  type ChatMessage,
  deterministicSummary,
  type EventSink,
  isCompaction,
  openTeam,
  type QueuedMessage,
  type WireFormat,
} from '@teamwire/core';
import {
  createMemoryTeamLog,
  createMemoryTranscriptStore,
  createScriptedModel,
  type RecordedRequest,
  type ScriptedModel,
  type ScriptedStep,
  type ScriptedStepFunction,
} from '@teamwire/core/testing';
import { jsonFormat, measureFraming, toolCallFormat, xmlFormat } from '@teamwire/protocol';
import type { Bench } from './context.js';
import { createRandom, prose } from './random.js';
import { type Figure, figure } from './report.js';
import { within } from './stats.js';
import { benchAgents, errorCollector } from './team-fixture.js';
import { BENCH_TEAM_ID, LEAD_TYPE, WORKER_TYPE } from './team-log.js';

const TEAMMATES = ['api', 'storage', 'client', 'docs'];

/** New work arrives as a user message or as protocol-rendered mail (which carries a source). */
function startsWork(message: ChatMessage | undefined): boolean {
  return message !== undefined && (message.role === 'user' || message.source !== undefined);
}

/**
 * A teammate's turn: look at the board, report to the lead, then sum up; a claimed task is
 * completed first. Three or four model calls per turn, as in a real exchange with tools.
 */
function worker(seed: number): ScriptedStepFunction {
  const random = createRandom(seed);
  return ({ request }): ScriptedStep => {
    const last = request.messages.at(-1);
    if (startsWork(last)) {
      const source = last?.source;
      if (source?.kind === 'task-claim') {
        return {
          text: `Working on ${source.taskId}.`,
          toolCalls: [
            { name: 'task_update', input: { taskId: source.taskId, action: 'complete' } },
          ],
        };
      }
      return { toolCalls: [{ name: 'task_list', input: { status: ['pending', 'in_progress'] } }] };
    }
    if (last?.role === 'tool' && last.toolName !== 'send_message') {
      return {
        toolCalls: [
          {
            name: 'send_message',
            input: { to: 'lead', message: prose(random, random.int(120, 700)), delivery: 'quiet' },
          },
        ],
      };
    }
    return { text: prose(random, random.int(40, 200)) };
  };
}

/** The lead: spawns the team and files four tasks on its first prompt, then acknowledges. */
function lead(): ScriptedStepFunction {
  return ({ call, request }): ScriptedStep => {
    if (call === 1) {
      return {
        toolCalls: TEAMMATES.map((name) => ({
          name: 'spawn_teammate',
          input: {
            name,
            description: `Owns the ${name} area: implements, tests and reports.`,
            prompt: `Hi ${name}, you own the ${name} area. Claim tasks that fit it.`,
          },
        })),
      };
    }
    if (call === 2) {
      return {
        toolCalls: TEAMMATES.map((name, i) => ({
          name: 'task_create',
          input: {
            subject: `First pass over the ${name} area`,
            description: `Read the ${name} code, fix what is broken and add the missing tests.`,
            ...(i === 3 ? { blockedBy: ['task-1'] } : {}),
          },
        })),
      };
    }
    const last = request.messages.at(-1);
    return { text: startsWork(last) ? 'Noted, thanks.' : 'The team is on it.' };
  };
}

/** What one scripted run left: the model's recorded requests and every message queued. */
interface RunResult {
  model: ScriptedModel;
  messages: QueuedMessage[];
}

async function scriptedRun(protocol: WireFormat, rounds: number): Promise<RunResult> {
  const model = createScriptedModel({
    scripts: {
      lead: lead(),
      ...Object.fromEntries(TEAMMATES.map((name, i) => [name, worker(100 + i)])),
    },
  });
  const log = createMemoryTeamLog({ teamId: BENCH_TEAM_ID });
  const errors = errorCollector();
  const team = await openTeam({
    teamId: BENCH_TEAM_ID,
    log,
    transcripts: createMemoryTranscriptStore(),
    format: protocol,
    agents: benchAgents(model),
    lead: { agentType: LEAD_TYPE },
    events: errors,
  });
  const random = createRandom(7);
  try {
    await within(
      team.promptLead('Set up a team for the release: one teammate per area, and a task each.'),
      60_000,
      'the lead setting up the team',
    );
    await within(team.idle(), 60_000, 'the team settling');
    for (let round = 0; round < rounds; round++) {
      for (const name of TEAMMATES) {
        await team.sendMessage(team.lead, { to: name, text: prose(random, random.int(100, 600)) });
      }
      await within(team.idle(), 60_000, `round ${round + 1}`);
    }
    errors.check(`the ${protocol.name} run`);
    const spawned = team.listMembers(team.lead).filter((m) => !m.isLead).length;
    if (spawned !== TEAMMATES.length) throw new Error(`the lead spawned ${spawned} teammates`);
  } finally {
    await team.dispose();
  }
  const messages: QueuedMessage[] = [];
  for (const record of log.records()) {
    if (record.type === 'message.queued') messages.push(record.message);
  }
  return { model, messages };
}

/** A request as a provider receives it, tools and system first: the order prompt caches key on. */
function promptBytes(request: RecordedRequest): Buffer {
  return Buffer.from(
    JSON.stringify(request.tools) +
      JSON.stringify(request.system) +
      request.messages.map((message) => JSON.stringify(message)).join('\n'),
    'utf8',
  );
}

function commonPrefix(a: Buffer, b: Buffer): number {
  const n = Math.min(a.length, b.length);
  let i = 0;
  while (i < n && a[i] === b[i]) i++;
  return i;
}

/** Bytes of each request (after the first) that repeat the previous request byte for byte. */
function prefixReuse(requests: readonly RecordedRequest[]): {
  reused: number;
  total: number;
  pairs: number;
} {
  let reused = 0;
  let total = 0;
  for (let i = 1; i < requests.length; i++) {
    const previous = promptBytes(requests[i - 1] as RecordedRequest);
    const current = promptBytes(requests[i] as RecordedRequest);
    reused += commonPrefix(previous, current);
    total += current.length;
  }
  return { reused, total, pairs: Math.max(0, requests.length - 1) };
}

/** The long-lived teammate of the compaction run. */
const LONG_LIVED = 'keeper';

/** The compaction run's budget: a small window, so a few hundred turns compact many times. */
const COMPACTION_BUDGET = { windowTokens: 16_000, targetShare: 0.75 } as const;
const BYTES_PER_TOKEN = 4;

/**
 * The long-lived teammate: each mail is answered with a look at the board, then a report in
 * prose (two model calls per turn, three messages added besides the mail).
 */
function longLivedWorker(seed: number): ScriptedStepFunction {
  const random = createRandom(seed);
  return ({ call, request }): ScriptedStep => {
    const last = request.messages.at(-1);
    if (last?.role === 'tool') return { text: prose(random, random.int(300, 900)) };
    return {
      text: `On it (${call}).`,
      toolCalls: [{ name: 'task_list', input: { status: ['pending', 'in_progress'] } }],
    };
  };
}

/** What the compaction run left, for the figures. */
interface CompactionRun {
  model: ScriptedModel;
  /** Every message of the teammate's stored transcript, compactions left out: no compaction. */
  uncompacted: ChatMessage[];
  /** `context.compacted` events of the teammate, in order. */
  compactions: { tokensBefore: number; tokensAfter: number }[];
  /** The teammate's requests recorded when each mail turn had ended (index 0: after its brief). */
  requestsAfterTurn: number[];
}

/**
 * One teammate on the scripted model with a small window, driven for `turns` turns: the host
 * sends it one mail per turn and waits for the team to settle. The team has a context budget
 * (deterministic summaries), and the model counts prompt tokens from bytes and refuses past the
 * window, as a provider would.
 */
async function compactionRun(protocol: WireFormat, turns: number): Promise<CompactionRun> {
  const model = createScriptedModel({
    scripts: { lead: () => ({ text: 'Noted.' }), [LONG_LIVED]: longLivedWorker(300) },
    tokens: { bytesPerToken: BYTES_PER_TOKEN, window: COMPACTION_BUDGET.windowTokens },
  });
  const transcripts = createMemoryTranscriptStore();
  const errors = errorCollector();
  const compactions: CompactionRun['compactions'] = [];
  const events: EventSink = {
    publish(agentName, event) {
      errors.publish(agentName, event);
      if (agentName === LONG_LIVED && event.type === 'context.compacted') {
        compactions.push({ tokensBefore: event.tokensBefore, tokensAfter: event.tokensAfter });
      }
    },
  };
  const team = await openTeam({
    teamId: BENCH_TEAM_ID,
    log: createMemoryTeamLog({ teamId: BENCH_TEAM_ID }),
    transcripts,
    format: protocol,
    agents: benchAgents(model),
    lead: { agentType: LEAD_TYPE },
    events,
    context: { ...COMPACTION_BUDGET, policy: deterministicSummary() },
  });
  const random = createRandom(11);
  const requestsAfterTurn: number[] = [];
  let memberId: string;
  try {
    const spawned = await team.spawnTeammate(team.lead, {
      name: LONG_LIVED,
      description: 'Owns the storage area for the whole release.',
      prompt: `Hi ${LONG_LIVED}, you own the storage area for the whole release: keep this brief in mind, answer every mail with what you found on the board.`,
      agentType: WORKER_TYPE,
    });
    memberId = spawned.memberId;
    await within(team.idle(), 60_000, `${LONG_LIVED} reading its brief`);
    requestsAfterTurn.push(model.requests(LONG_LIVED).length);
    for (let turn = 1; turn <= turns; turn++) {
      await team.sendMessage(team.lead, {
        to: LONG_LIVED,
        text: prose(random, random.int(200, 800)),
      });
      await within(team.idle(), 60_000, `turn ${turn}`);
      requestsAfterTurn.push(model.requests(LONG_LIVED).length);
    }
    errors.check(`the ${protocol.name} compaction run`);
  } finally {
    await team.dispose();
  }
  const uncompacted = transcripts
    .raw(memberId)
    .map((entry) => entry.message)
    .filter((message) => !isCompaction(message));
  return { model, uncompacted, compactions, requestsAfterTurn };
}

function mean(values: readonly number[]): number {
  return values.reduce((sum, v) => sum + v, 0) / values.length;
}

/**
 * The compaction part: tokens per call stay flat once compaction has started, the prompt prefix
 * is still reused, and what the last call would have cost without compaction.
 */
async function compactionFigures(
  protocol: WireFormat,
  turns: number,
  say: (message: string) => void,
): Promise<Figure[]> {
  say(
    `token-economy: one teammate, ${turns} turns, window ${COMPACTION_BUDGET.windowTokens} tokens, ${protocol.name} protocol`,
  );
  const { model, uncompacted, compactions, requestsAfterTurn } = await compactionRun(
    protocol,
    turns,
  );
  const requests = model.requests(LONG_LIVED);
  const tokens = requests.map((request) => model.promptTokens(request));
  const budget = Math.floor(COMPACTION_BUDGET.windowTokens * COMPACTION_BUDGET.targetShare);
  // The first request is estimated from bytes (no usage known yet); every later one must fit.
  const maxAfterFirst = Math.max(...tokens.slice(1));
  const overflows = model.overflows(LONG_LIVED);
  if (overflows > 0) throw new Error(`the model refused ${overflows} request(s) as too long`);
  if (maxAfterFirst > budget) {
    throw new Error(`a request of ${maxAfterFirst} prompt tokens passed the budget of ${budget}`);
  }
  const firstCompacted = requests.findIndex((request) => request.messages.some(isCompaction));
  if (firstCompacted < 0 || compactions.length === 0) {
    throw new Error(`${turns} turns never compacted the context: nothing to measure`);
  }
  const firstTurn = requestsAfterTurn.findIndex((count) => count > firstCompacted);
  const window = Math.max(1, Math.floor(requests.length * 0.2));
  if (firstCompacted + window > requests.length - window) {
    throw new Error(
      `the first compaction came at call ${firstCompacted + 1} of ${requests.length}: too late to compare two windows`,
    );
  }
  const early = tokens.slice(firstCompacted, firstCompacted + window);
  const late = tokens.slice(-window);
  const before = mean(compactions.map((c) => c.tokensBefore));
  const after = mean(compactions.map((c) => c.tokensAfter));
  const reuse = prefixReuse(requests);
  const last = requests.at(-1) as RecordedRequest;
  const lastTokens = model.promptTokens(last);
  const unbounded = model.promptTokens({
    system: last.system,
    tools: last.tools,
    messages: uncompacted,
  });
  return [
    figure({
      bench: 'token-economy',
      name: `prompt tokens per call after the first compaction, late vs early, ${protocol.name}`,
      subject: { label: 'last 20% of calls', value: mean(late), unit: 'tok/call' },
      baseline: { label: 'first 20% after it', value: mean(early), unit: 'tok/call' },
      ratioOf: 'late / early',
      ratio: mean(late) / mean(early),
      target: { op: '<=', value: 1.1 },
      note: `${turns} turns, ${requests.length} calls, ${compactions.length} compactions, the first at turn ${firstTurn} (call ${firstCompacted + 1}); max ${maxAfterFirst} prompt tokens per call against a budget of ${budget} (window ${COMPACTION_BUDGET.windowTokens} × ${COMPACTION_BUDGET.targetShare}); a compaction took ${Math.round(before)} tokens to ${Math.round(after)} (mean); windows of ${window} calls`,
    }),
    figure({
      bench: 'token-economy',
      name: `prompt prefix reuse with compaction, ${protocol.name}`,
      subject: { label: 'unchanged prefix', value: reuse.reused / 1024, unit: 'KiB' },
      baseline: { label: 'prompt', value: reuse.total / 1024, unit: 'KiB' },
      ratioOf: 'prefix / prompt',
      ratio: reuse.reused / reuse.total,
      target: { op: '>=', value: 0.9 },
      note: `${LONG_LIVED}, over ${reuse.pairs} consecutive calls across ${compactions.length} compactions (deterministic summaries)`,
    }),
    figure({
      bench: 'token-economy',
      name: `prompt tokens of the last call without compaction, ${protocol.name}`,
      subject: { label: 'whole transcript', value: unbounded, unit: 'tok' },
      baseline: { label: 'last call sent', value: lastTokens, unit: 'tok' },
      ratioOf: 'uncompacted / sent',
      ratio: unbounded / lastTokens,
      note: `the ${uncompacted.length} messages of the stored transcript sent whole, against the ${last.messages.length} of the last request; ${(unbounded / COMPACTION_BUDGET.windowTokens).toFixed(1)} × the window of ${COMPACTION_BUDGET.windowTokens} tokens`,
    }),
  ];
}

/**
 * Token economy, for each protocol on the same scripted team run: the framing bytes a format
 * adds to every message (measured by `measureFraming` over every message the run queued), and
 * how much of each teammate's prompt is a byte-for-byte prefix of its previous prompt, which is
 * what a provider's prompt cache can serve. Bytes stand in for tokens.
 *
 * Then one long-lived teammate under a context budget with a small window, on the xml protocol:
 * its prompt tokens per call stay flat after the first compaction, its prompt prefix is still
 * reused, and what its last call would have cost without compaction (tokens counted by the
 * scripted model, bytes / 4).
 */
export const tokenEconomyBench: Bench = {
  name: 'token-economy',
  title:
    'framing bytes per message per protocol; prompt prefix reuse between model calls; tokens per call of a long-lived teammate under a context budget',
  async run({ quick, log: say }) {
    const rounds = quick ? 3 : 8;
    const figures: Figure[] = [];
    for (const protocol of [xmlFormat, jsonFormat, toolCallFormat]) {
      say(`token-economy: scripted run with the ${protocol.name} protocol, ${rounds} rounds`);
      const { model, messages } = await scriptedRun(protocol, rounds);
      let overhead = 0;
      let text = 0;
      for (const message of messages) {
        const cost = measureFraming(protocol, { message, sender: { name: message.senderName } });
        overhead += cost.overheadBytes;
        text += cost.textBytes;
      }
      figures.push(
        figure({
          bench: 'token-economy',
          name: `framing per message, ${protocol.name}`,
          subject: { label: 'framing', value: overhead / messages.length, unit: 'B/msg' },
          baseline: { label: 'text', value: text / messages.length, unit: 'B/msg' },
          ratioOf: 'framing / text',
          ratio: overhead / text,
          note: `${messages.length} messages of every kind from the scripted run`,
        }),
      );
      const perTeammate = TEAMMATES.map((name) => ({ name, ...prefixReuse(model.requests(name)) }));
      const worst = perTeammate.reduce((a, b) =>
        a.reused / a.total <= b.reused / b.total ? a : b,
      );
      const reused = perTeammate.reduce((sum, t) => sum + t.reused, 0);
      const total = perTeammate.reduce((sum, t) => sum + t.total, 0);
      const pairs = perTeammate.reduce((sum, t) => sum + t.pairs, 0);
      figures.push(
        figure({
          bench: 'token-economy',
          name: `prompt prefix reuse, worst teammate, ${protocol.name}`,
          subject: { label: 'unchanged prefix', value: worst.reused / 1024, unit: 'KiB' },
          baseline: { label: 'prompt', value: worst.total / 1024, unit: 'KiB' },
          ratioOf: 'prefix / prompt',
          ratio: worst.reused / worst.total,
          target: { op: '>=', value: 0.9 },
          note: `${worst.name}, over ${worst.pairs} consecutive calls; all teammates: ${((100 * reused) / total).toFixed(1)}% over ${pairs} calls`,
        }),
      );
    }
    figures.push(...(await compactionFigures(xmlFormat, quick ? 300 : 500, say)));
    return figures;
  },
};
