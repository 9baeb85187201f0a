import { type ChatMessage, openTeam, type QueuedMessage, type WireFormat } from '@teamwire/core';
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
import { BENCH_TEAM_ID, LEAD_TYPE } from './team-log.js';

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

/**
 * Token economy, for each protocol on the same scripted team run: the framing bytes a format
 * adds to every message (measured by `measureFraming` over every message the run queued), and
 * how much of each teammate's prompt is a byte-for-byte prefix of its previous prompt, which is
 * what a provider's prompt cache can serve. Bytes stand in for tokens.
 */
export const tokenEconomyBench: Bench = {
  name: 'token-economy',
  title: 'framing bytes per message per protocol; prompt prefix reuse between model calls',
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
    return figures;
  },
};
