import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import {
  type AgentEvent,
  type CompactionPolicy,
  type ContextBudget,
  contentText,
  createAgentRegistry,
  DEFAULT_COMPACTION_PROMPT,
  deterministicSummary,
  isCompaction,
  type ModelAdapter,
  openTeam,
  type TranscriptEntry,
} from '@teamwire/core';
import {
  createManualClock,
  createMemoryTeamLog,
  createMemoryTranscriptStore,
  createScriptedModel,
  createSequentialIds,
  createSimpleFormat,
} from '@teamwire/core/testing';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createAnthropic } from './anthropic.js';
import { createOpenAICompatible } from './openai-compatible.js';
import { anthropicSse, openAiSse } from './testing/fixtures.js';
import { SSE_HEADERS } from './testing/loopback-server.js';

/*
 * End to end: a teammate runs on a real adapter against a loopback server that plays a provider
 * with a small context window. A request body over THRESHOLD_BYTES is refused the way the
 * provider refuses an over-long prompt (HTTP 400 and its real error body); anything smaller is
 * answered with a short stream in the provider's wire format (shaped like the recorded streams in
 * `__fixtures__/provider-streams`), reporting prompt tokens as bytes / BYTES_PER_TOKEN.
 */

type Wire = 'openai' | 'anthropic';

/** The server's window: the refusal bodies below name 8192 tokens. */
const SERVER_WINDOW_TOKENS = 8192;
/** The bytes per token the server counts with (and reports in its usage). */
const BYTES_PER_TOKEN = 4;
/** A request body above this many bytes is refused as too long (8192 tokens × 4 bytes). */
const THRESHOLD_BYTES = SERVER_WINDOW_TOKENS * BYTES_PER_TOKEN;
/**
 * The window the teammate's budget is told: four times the server's, so the budget (75% of it,
 * three times the server's threshold) never compacts first. Only the refusal can.
 */
const BUDGET_WINDOW_TOKENS = SERVER_WINDOW_TOKENS * 4;
/** Mails the host sends, and the bytes of each: together several times the threshold. */
const MAILS = 30;
const MAIL_BYTES = 2400;

const OVERFLOW_BODY: Record<Wire, string> = {
  openai: JSON.stringify({
    error: {
      message:
        "This model's maximum context length is 8192 tokens. However, your messages resulted in 9000 tokens. Please reduce the length of the messages.",
      type: 'invalid_request_error',
      param: 'messages',
      code: 'context_length_exceeded',
    },
  }),
  anthropic: JSON.stringify({
    type: 'error',
    error: {
      type: 'invalid_request_error',
      message: 'prompt is too long: 9000 tokens > 8192 maximum',
    },
  }),
};

/** Marks the server's answers to summary requests, so the summary can be traced into the context. */
const SUMMARY_MARK = 'SERVER-SUMMARY';

/** One request the server received and what it answered. */
interface Exchange {
  wire: Wire;
  /** UTF-8 bytes of the request body. */
  bytes: number;
  /** The request offered tools (a teammate's turn); without: a compaction summary request. */
  withTools: boolean;
  status: number;
  answer: 'overflow' | 'invalid' | 'tool-call' | 'text';
  /** The text answered (`answer: 'text'`). */
  text?: string;
  body: Record<string, unknown>;
}

interface ProviderServer {
  /** `http://127.0.0.1:<port>/v1`: OpenAI's `/chat/completions` and Anthropic's `/messages`. */
  baseURL: string;
  exchanges: Exchange[];
  close(): Promise<void>;
}

type Json = Record<string, unknown>;
const asRecords = (value: unknown): Json[] => (Array.isArray(value) ? (value as Json[]) : []);

/**
 * What a real provider refuses about tool calls and results: a result without its call just
 * before it, or a call whose result does not follow. Undefined when the pairing is sound.
 */
function toolPairingProblem(wire: Wire, messages: Json[]): string | undefined {
  if (wire === 'openai') {
    const open = new Set<string>();
    for (const message of messages) {
      if (message.role === 'tool') {
        const id = String(message.tool_call_id);
        if (!open.delete(id)) return `tool message ${id} does not answer a preceding tool call`;
        continue;
      }
      if (open.size > 0) return `tool calls ${[...open].join(', ')} have no tool messages`;
      for (const call of asRecords(message.tool_calls)) open.add(String(call.id));
    }
    return open.size > 0 ? 'the last tool calls have no tool messages' : undefined;
  }
  let pending = new Set<string>();
  for (const message of messages) {
    const blocks = asRecords(message.content);
    const results = blocks
      .filter((b) => b.type === 'tool_result')
      .map((b) => String(b.tool_use_id));
    for (const id of results) {
      if (!pending.has(id)) return `tool_result ${id} has no tool_use in the previous message`;
    }
    if (pending.size > 0 && (message.role !== 'user' || results.length !== pending.size)) {
      return `tool_use ids ${[...pending].join(', ')} have no tool_result blocks right after`;
    }
    pending = new Set(
      message.role === 'assistant'
        ? blocks.filter((b) => b.type === 'tool_use').map((b) => String(b.id))
        : [],
    );
  }
  return pending.size > 0 ? 'the last tool_use blocks have no results' : undefined;
}

/** True when the last message of a request is a tool result (the turn's second call). */
function answersToolResult(wire: Wire, messages: Json[]): boolean {
  const last = messages.at(-1);
  if (wire === 'openai') return last?.role === 'tool';
  return asRecords(last?.content).some((b) => b.type === 'tool_result');
}

function openAiStream(n: number, promptTokens: number, reply: { text?: string }): string {
  // Shaped like provider-streams/openai-chat and scenarios/openai-chat/single-tool-call.
  const chunk = (choices: Json[], extra: Json = {}) =>
    JSON.stringify({
      id: `chatcmpl-ovf${n}`,
      object: 'chat.completion.chunk',
      created: 1767225600 + n,
      model: 'gpt-4.1-mini',
      choices,
      ...extra,
    });
  const delta = (d: Json, finish: string | null = null) => [
    { index: 0, delta: d, finish_reason: finish },
  ];
  const chunks = [chunk(delta({ role: 'assistant', content: '' }))];
  if (reply.text !== undefined) {
    chunks.push(chunk(delta({ content: reply.text })), chunk(delta({}, 'stop')));
  } else {
    chunks.push(
      chunk(
        delta({
          tool_calls: [
            {
              index: 0,
              id: `call_ovf${n}`,
              type: 'function',
              function: { name: 'task_list', arguments: '' },
            },
          ],
        }),
      ),
      chunk(delta({ tool_calls: [{ index: 0, function: { arguments: '{}' } }] })),
      chunk(delta({}, 'tool_calls')),
    );
  }
  chunks.push(
    chunk([], {
      usage: { prompt_tokens: promptTokens, completion_tokens: 9, total_tokens: promptTokens + 9 },
    }),
  );
  return openAiSse(chunks);
}

function anthropicStream(n: number, promptTokens: number, reply: { text?: string }): string {
  // Shaped like provider-streams/anthropic-messages/anthropic-text and anthropic-tool-no-args.
  const usage = {
    input_tokens: promptTokens,
    cache_creation_input_tokens: 0,
    cache_read_input_tokens: 0,
  };
  const chunks: Json[] = [
    {
      type: 'message_start',
      message: {
        model: 'claude-sonnet-4-5-20250929',
        id: `msg_ovf${n}`,
        type: 'message',
        role: 'assistant',
        content: [],
        stop_reason: null,
        stop_sequence: null,
        usage: { ...usage, output_tokens: 1 },
      },
    },
  ];
  if (reply.text !== undefined) {
    chunks.push(
      { type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } },
      { type: 'ping' },
      { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: reply.text } },
      { type: 'content_block_stop', index: 0 },
    );
  } else {
    chunks.push(
      {
        type: 'content_block_start',
        index: 0,
        content_block: { type: 'tool_use', id: `toolu_ovf${n}`, name: 'task_list', input: {} },
      },
      {
        type: 'content_block_delta',
        index: 0,
        delta: { type: 'input_json_delta', partial_json: '' },
      },
      { type: 'content_block_stop', index: 0 },
    );
  }
  chunks.push(
    {
      type: 'message_delta',
      delta: {
        stop_reason: reply.text !== undefined ? 'end_turn' : 'tool_use',
        stop_sequence: null,
      },
      usage: { ...usage, output_tokens: 9 },
    },
    { type: 'message_stop' },
  );
  return anthropicSse(chunks.map((c) => JSON.stringify(c)));
}

/**
 * A provider with a SERVER_WINDOW_TOKENS window on 127.0.0.1. A mail (a user message) is answered
 * with a `task_list` tool call, its result with a line of text, a request without tools (the
 * compaction summary) with a summary; a body over THRESHOLD_BYTES with the overflow refusal, and
 * broken tool pairing with an ordinary 400.
 */
async function startProviderServer(): Promise<ProviderServer> {
  const exchanges: Exchange[] = [];
  const server = createServer((req, res) => {
    const pieces: Buffer[] = [];
    req.on('data', (piece: Buffer) => pieces.push(piece));
    req.on('end', () => {
      const raw = Buffer.concat(pieces);
      const wire: Wire | undefined =
        req.url === '/v1/chat/completions'
          ? 'openai'
          : req.url === '/v1/messages'
            ? 'anthropic'
            : undefined;
      if (wire === undefined) {
        res.writeHead(404, { 'content-type': 'application/json' });
        res.end('{"error":{"message":"not found"}}');
        return;
      }
      const body = JSON.parse(raw.toString('utf8')) as Json;
      const n = exchanges.length + 1;
      const messages = asRecords(body.messages);
      const withTools = asRecords(body.tools).length > 0;
      const exchange: Exchange = {
        wire,
        bytes: raw.byteLength,
        withTools,
        status: 200,
        answer: 'text',
        body,
      };
      exchanges.push(exchange);
      const refuse = (status: number, text: string) => {
        exchange.status = status;
        res.writeHead(status, { 'content-type': 'application/json' });
        res.end(text);
      };
      if (raw.byteLength > THRESHOLD_BYTES) {
        exchange.answer = 'overflow';
        refuse(400, OVERFLOW_BODY[wire]);
        return;
      }
      const problem = toolPairingProblem(wire, messages);
      if (problem !== undefined) {
        exchange.answer = 'invalid';
        const error = { type: 'invalid_request_error', message: problem };
        refuse(400, JSON.stringify(wire === 'openai' ? { error } : { type: 'error', error }));
        return;
      }
      let reply: { text?: string } = {};
      if (!withTools)
        reply = {
          text: `${SUMMARY_MARK} ${n}: the host mailed build notes; each was read and acknowledged.`,
        };
      else if (answersToolResult(wire, messages)) reply = { text: `Noted (${n}).` };
      exchange.answer = reply.text === undefined ? 'tool-call' : 'text';
      if (reply.text !== undefined) exchange.text = reply.text;
      const promptTokens = Math.ceil(raw.byteLength / BYTES_PER_TOKEN);
      res.writeHead(200, SSE_HEADERS);
      res.end(
        wire === 'openai'
          ? openAiStream(n, promptTokens, reply)
          : anthropicStream(n, promptTokens, reply),
      );
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    baseURL: `http://127.0.0.1:${port}/v1`,
    exchanges,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

let server: ProviderServer;
beforeAll(async () => {
  server = await startProviderServer();
});
beforeEach(() => {
  server.exchanges.length = 0;
});
afterAll(async () => {
  await server.close();
});

const ADAPTERS: Record<Wire, (baseURL: string) => ModelAdapter> = {
  openai: (baseURL) =>
    createOpenAICompatible({ baseURL, apiKey: 'sk-local', model: 'gpt-4.1-mini', retry: false }),
  anthropic: (baseURL) =>
    createAnthropic({ baseURL, apiKey: 'sk-ant-local', model: 'claude-sonnet-4-5', retry: false }),
};

/** Deterministic prose of about `bytes` bytes. */
function prose(seed: number, bytes: number): string {
  const words = ['build', 'test', 'review', 'merge', 'the', 'module', 'fails', 'passes', 'again'];
  const out: string[] = [];
  let x = seed + 1;
  let length = 0;
  while (length < bytes) {
    x = (x * 1103515245 + 12345) % 2147483648;
    const word = words[x % words.length] as string;
    out.push(word);
    length += word.length + 1;
  }
  return out.join(' ');
}

const TEAM_ID = 'team-1';

/**
 * Opens a team whose lead runs on a scripted model and whose teammate `scribe` runs on `model`
 * with the `context` budget (none when undefined), spawns the scribe and lets it answer its brief.
 */
async function openScribeTeam(model: ModelAdapter, context: ContextBudget | undefined) {
  const events: { agent: string; event: AgentEvent }[] = [];
  const transcripts = createMemoryTranscriptStore();
  const service = await openTeam({
    teamId: TEAM_ID,
    log: createMemoryTeamLog({ teamId: TEAM_ID }),
    transcripts,
    format: createSimpleFormat(),
    agents: createAgentRegistry([
      {
        type: 'lead',
        systemPrompt: 'You lead the team.',
        model: createScriptedModel({ scripts: { lead: () => ({ text: 'Noted.' }) } }),
      },
      {
        type: 'scribe',
        systemPrompt: 'You keep the build notes. Check the task board, then acknowledge each mail.',
        model,
        ...(context === undefined ? {} : { context }),
      },
    ]),
    lead: { agentType: 'lead' },
    events: { publish: (agent, event) => events.push({ agent, event }) },
    clock: createManualClock(),
    ids: createSequentialIds('id'),
    idleClaim: false,
  });
  const spawned = await service.spawnTeammate(service.lead, {
    name: 'scribe',
    description: 'Keeps the build notes.',
    prompt: 'You keep the build notes: acknowledge every mail the host sends you.',
    agentType: 'scribe',
  });
  await service.idle();
  const scribe = () => service.listMembers(service.lead).find((m) => m.name === 'scribe');
  /** Mails the scribe one long message at a time, each after the last turn settled. */
  async function mail(count: number, stop: () => boolean = () => false): Promise<string[]> {
    const sent: string[] = [];
    for (let i = 0; i < count && !stop(); i++) {
      const result = await service.sendMessage(service.lead, {
        to: 'scribe',
        text: `mail ${i}: ${prose(i, MAIL_BYTES)}`,
      });
      sent.push(result.messageId);
      await service.idle();
    }
    return sent;
  }
  const ofScribe = <T extends AgentEvent['type']>(type: T) =>
    events.flatMap(({ agent, event }) =>
      agent === 'scribe' && event.type === type ? [event as Extract<AgentEvent, { type: T }>] : [],
    );
  const errors = () =>
    events.flatMap(({ agent, event }) =>
      event.type === 'error' ? [{ agent, code: event.code, message: event.message }] : [],
    );
  return { service, transcripts, spawned, scribe, mail, ofScribe, errors };
}

/** The ids of the team messages a transcript holds, in order (one per delivery). */
function teamMessageIds(entries: readonly TranscriptEntry[]): string[] {
  return entries.flatMap(({ message }) =>
    message.role === 'user' && message.source?.kind === 'team-message'
      ? [message.source.messageId]
      : [],
  );
}

/** The highest `mail <i>:` a request body carries (-1: none). */
function lastMailIn(exchange: Exchange): number {
  const found = [...JSON.stringify(exchange.body.messages).matchAll(/mail (\d+):/g)];
  return Math.max(-1, ...found.map((m) => Number(m[1])));
}

const indexesOf = (exchanges: readonly Exchange[], answer: Exchange['answer']) =>
  exchanges.flatMap((e, i) => (e.answer === answer ? [i] : []));

describe('an overflow refusal from a loopback adapter leads to compaction and success', () => {
  const cases: [Wire, 'model' | 'deterministic'][] = [
    ['openai', 'model'],
    ['anthropic', 'model'],
    ['openai', 'deterministic'],
    ['anthropic', 'deterministic'],
  ];
  it.each(cases)('%s, with the %s summary', async (wire, policyName) => {
    // The default policy (modelSummary) asks the scribe's own adapter for the summary.
    const policy: CompactionPolicy | undefined =
      policyName === 'deterministic' ? deterministicSummary() : undefined;
    const team = await openScribeTeam(ADAPTERS[wire](server.baseURL), {
      windowTokens: BUDGET_WINDOW_TOKENS,
      ...(policy === undefined ? {} : { policy }),
    });
    try {
      const sent = [team.spawned.messageId, ...(await team.mail(MAILS))];
      const { exchanges } = server;

      // The server refused once, and nothing else went wrong: after the refusal the budget keeps
      // requests under the refused size on its own.
      const refusals = indexesOf(exchanges, 'overflow');
      expect(refusals).toHaveLength(1);
      for (const exchange of exchanges.slice((refusals[0] as number) + 1)) {
        expect(exchange.bytes).toBeLessThanOrEqual(THRESHOLD_BYTES);
      }
      expect(indexesOf(exchanges, 'invalid')).toEqual([]);
      expect(team.errors()).toEqual([]);
      expect(team.scribe()?.status).toBe('idle');
      expect(team.scribe()?.failure).toBeUndefined();

      // The refusal led to an overflow compaction; later ones came from the budget, which learnt
      // from the refusal (it was told a window four times the server's).
      const compacted = team.ofScribe('context.compacted');
      expect(compacted.length).toBeGreaterThan(1);
      const reasons = compacted.map((event) => event.reason);
      expect(reasons).toEqual(['overflow', ...reasons.slice(1).map(() => 'budget')]);
      for (const event of compacted) {
        expect(event).toMatchObject({ policy: policyName, estimated: false });
        expect(event.replacedMessages).toBeGreaterThan(0);
        expect(event.tokensAfter).toBeLessThan(event.tokensBefore);
      }

      // What followed each refusal: with the model summary, a summary request without tools
      // through the same adapter; then the refused call again, below the threshold, answered.
      for (const r of refusals) {
        const refused = exchanges[r] as Exchange;
        expect(refused.bytes).toBeGreaterThan(THRESHOLD_BYTES);
        let next = r + 1;
        let summaryText: string | undefined;
        if (policyName === 'model') {
          const summary = exchanges[next++] as Exchange;
          expect(summary).toMatchObject({ withTools: false, status: 200, answer: 'text' });
          expect(summary.bytes).toBeLessThanOrEqual(THRESHOLD_BYTES);
          expect(JSON.stringify(summary.body.messages)).toContain(
            JSON.stringify(DEFAULT_COMPACTION_PROMPT).slice(1, -1),
          );
          summaryText = summary.text;
        }
        const retry = exchanges[next] as Exchange;
        expect(retry).toMatchObject({ withTools: true, status: 200 });
        expect(retry.answer === 'tool-call' || retry.answer === 'text').toBe(true);
        expect(retry.bytes).toBeLessThanOrEqual(THRESHOLD_BYTES);
        expect(retry.bytes).toBeLessThan(refused.bytes);
        // The same call: the latest mail is still there, now after the summary.
        expect(lastMailIn(retry)).toBe(lastMailIn(refused));
        const retried = JSON.stringify(retry.body.messages);
        expect(retried).toContain('Summary of the earlier conversation');
        if (summaryText !== undefined) expect(retried).toContain(summaryText);
      }
      // Only compaction summaries went without tools.
      const summaries = exchanges.filter((e) => !e.withTools);
      expect(summaries).toHaveLength(policyName === 'model' ? compacted.length : 0);

      // Every turn ended in a text answer: the brief's and each mail's.
      expect(exchanges.filter((e) => e.withTools && e.answer === 'text')).toHaveLength(MAILS + 1);

      // Every mail reached the transcript exactly once, compactions notwithstanding.
      const raw = team.transcripts.raw(team.spawned.memberId);
      const delivered = teamMessageIds(raw);
      for (const id of sent) expect(delivered.filter((x) => x === id)).toHaveLength(1);
      const stored = raw.flatMap(({ message }) => (isCompaction(message) ? [message] : []));
      expect(stored.map((m) => m.source.reason)).toEqual(reasons);
      if (policyName === 'model') {
        for (const m of stored) expect(contentText(m.content)).toContain(SUMMARY_MARK);
      }
    } finally {
      await team.service.dispose();
    }
  });
});

describe('a member without a context budget', () => {
  it.each(['openai', 'anthropic'] as const)(
    'fails on the %s overflow refusal with MODEL_CONTEXT_OVERFLOW, never retrying',
    async (wire) => {
      const team = await openScribeTeam(ADAPTERS[wire](server.baseURL), undefined);
      try {
        const { exchanges } = server;
        await team.mail(MAILS, () => exchanges.some((e) => e.answer === 'overflow'));

        const refusals = indexesOf(exchanges, 'overflow');
        expect(refusals).toEqual([exchanges.length - 1]);
        const errors = team.errors();
        // Core publishes the failure twice (the turn's error, then the runner's); both the same.
        expect(errors.length).toBeGreaterThanOrEqual(1);
        for (const error of errors) {
          expect(error).toMatchObject({ agent: 'scribe', code: 'MODEL_CONTEXT_OVERFLOW' });
          expect(error.message).toContain(
            wire === 'openai' ? 'maximum context length is 8192 tokens' : 'prompt is too long',
          );
        }
        expect(team.ofScribe('context.compacting')).toEqual([]);
        expect(team.scribe()?.status).toBe('failed');
        expect(team.scribe()?.failure?.code).toBe('MODEL_CONTEXT_OVERFLOW');
      } finally {
        await team.service.dispose();
      }
    },
  );
});
