import { describe, expect, it } from 'vitest';
import type { ChatMessage } from '../chat.js';
import { contentText } from '../content.js';
import { TeamError } from '../errors.js';
import type { AgentEvent } from '../ports/events.js';
import { createMemoryTeamLog, createMemoryTranscriptStore } from '../testing/memory-stores.js';
import type { RecordedRequest, ScriptedStepFunction } from '../testing/scripted-model.js';
import { createScriptedModel } from '../testing/scripted-model.js';
import { applyCompaction, isCompaction, transcriptContext } from '../transcript-context.js';
import { createAgentRegistry } from './agents.js';
import {
  type CompactionPolicy,
  type ContextBudget,
  deterministicSummary,
  modelSummary,
} from './context-budget.js';
import { type Harness, messageIdsIn, notedLead, openHarness, TEAM_ID } from './test-harness.js';

/** Deterministic prose of about `bytes` bytes: a member's mail and answers. */
function prose(seed: number, bytes: number): string {
  const words = ['build', 'test', 'review', 'merge', 'the', 'module', 'fails', 'passes', 'again'];
  const out: string[] = [];
  let x = seed * 2654435761;
  let length = 0;
  while (length < bytes) {
    x = (x * 1103515245 + 12345) % 2147483648;
    const word = words[x % words.length] as string;
    out.push(word);
    length += word.length + 1;
  }
  return out.join(' ');
}

/** A worker that answers mail with a tool call, then a paragraph: three messages per turn. */
const chattyWorker: ScriptedStepFunction = ({ call, request }) => {
  const last = request.messages.at(-1);
  if (last?.role === 'tool') return { text: prose(call, 400 + (call % 5) * 120) };
  return { text: `On it (${call}).`, toolCalls: [{ name: 'whoami', input: {} }] };
};

const compacted = (h: Harness) =>
  h.sink.events.flatMap(({ agent, event }) =>
    event.type === 'context.compacted' ? [{ agent, ...event }] : [],
  );

/** Every tool call in a request is answered by the next messages, and every result has its call. */
function checkToolPairs(messages: readonly ChatMessage[]): void {
  const open = new Set<string>();
  for (const message of messages) {
    if (message.role === 'tool') {
      expect(open.has(message.toolCallId), `result ${message.toolCallId} without its call`).toBe(
        true,
      );
      open.delete(message.toolCallId);
      continue;
    }
    expect([...open], 'a tool call left without its result').toEqual([]);
    if (message.role === 'assistant') for (const call of message.toolCalls) open.add(call.id);
  }
}

const WINDOW = 12_000;
const budget = (policy: CompactionPolicy = deterministicSummary()): ContextBudget => ({
  windowTokens: WINDOW,
  targetShare: 0.75,
  policy,
});

async function runMail(h: Harness, to: string, turns: number, first = 0) {
  const ids: string[] = [];
  for (let i = first; i < first + turns; i++) {
    const sent = await h.service.sendMessage(h.service.lead, {
      to,
      text: `mail ${i}: ${prose(1000 + i, 200 + (i % 7) * 90)}`,
    });
    ids.push(sent.messageId);
    await h.service.idle();
  }
  return ids;
}

async function spawnBob(h: Harness): Promise<void> {
  await h.service.spawnTeammate(h.service.lead, {
    name: 'bob',
    description: 'bob helps',
    prompt: 'Hi bob. You own the parser: keep this brief in mind for the whole run.',
    agentType: 'worker',
  });
  await h.service.idle();
}

describe('context budget and compaction', () => {
  it('keeps a member that runs 200 turns under its budget, its prefix byte for byte unchanged', async () => {
    const model = createScriptedModel({ tokens: { bytesPerToken: 3.5, window: WINDOW } });
    const h = await openHarness({
      model,
      scripts: { lead: notedLead, bob: chattyWorker },
      context: budget(),
    });
    await spawnBob(h);
    const sent = await runMail(h, 'bob', 200);
    expect(h.sink.errors()).toEqual([]);

    const requests = model.requests('bob');
    const limit = Math.floor(WINDOW * 0.75);
    const tokens = requests.map((r) => model.promptTokens(r));
    // The first request is estimated from bytes (no usage yet); every later one is measured.
    expect(Math.max(...tokens.slice(1))).toBeLessThanOrEqual(limit);
    expect(model.overflows('bob')).toBe(0);
    const compactions = compacted(h).filter((c) => c.agent === 'bob');
    expect(compactions.length).toBeGreaterThanOrEqual(5);
    for (const c of compactions) expect(c.tokensAfter).toBeLessThan(c.tokensBefore);
    // Without compaction the run would have needed many times the window.
    const unbounded = transcriptContext(h.transcripts.raw(h.memberId('bob'))).length;
    expect(unbounded).toBeLessThan(requests.length);

    // The system prompt, the tools and the first message (the member's brief) never change.
    const prefix = (r: RecordedRequest) =>
      JSON.stringify([r.system, r.tools, r.messages[0], r.promptCacheKey]);
    expect(new Set(requests.map(prefix)).size).toBe(1);
    expect(contentText((requests.at(-1) as RecordedRequest).messages[0]?.content ?? [])).toContain(
      'keep this brief in mind',
    );
    for (const request of requests) checkToolPairs(request.messages);

    // Each message reached bob exactly once; those a compaction replaced stay delivered.
    const raw = h.transcripts.raw(h.memberId('bob'));
    const ids = messageIdsIn(raw);
    for (const id of sent) expect(ids.filter((x) => x === id)).toHaveLength(1);
    const replaced = raw.flatMap((e) =>
      isCompaction(e.message) ? e.message.source.deliveredIds : [],
    );
    expect(replaced.length).toBeGreaterThan(100);
    expect(new Set(replaced).size).toBe(replaced.length);
    expect(h.service.listMembers(h.service.lead).find((m) => m.name === 'bob')?.status).toBe(
      'idle',
    );
  });

  it('keeps the transcript loadable through compactions after a write whose answer was lost', async () => {
    const memory = {
      log: createMemoryTeamLog({ teamId: TEAM_ID }),
      transcripts: createMemoryTranscriptStore(),
    };
    let lost = 0;
    const model = createScriptedModel({ tokens: { window: WINDOW } });
    const h = await openHarness({
      memory,
      model,
      scripts: { lead: ({ call }) => ({ text: prose(call, 700) }) },
      context: budget(),
      // the lead's host prompt "lost" is made durable, and the write answered with a failure
      wrap: ({ log, transcripts }) => ({
        log,
        transcripts: {
          specificationVersion: 'v1',
          async append(options) {
            await transcripts.append(options);
            const text = options.entries.map((e) => contentText(e.message.content)).join('');
            if (text.startsWith('prompt lost')) {
              lost++;
              throw new TeamError('STORAGE_IO', 'the connection was cut before the answer');
            }
          },
          load: (options) => transcripts.load(options),
          close: () => transcripts.close(),
        },
      }),
    });
    await h.service.idle();
    for (let i = 0; i < 40; i++) {
      const text = i === 3 ? 'prompt lost' : `prompt ${i}: ${prose(i, 500)}`;
      await h.service.promptLead(text).catch((error) => {
        if (!TeamError.hasCode(error, 'STORAGE_IO')) throw error;
      });
    }
    await h.service.idle();
    expect(lost).toBe(1);
    const leadId = h.service.lead.memberId;
    expect(compacted(h).length).toBeGreaterThan(0);
    // the stored transcript folds (every compaction follows the context it names), and its fold
    // is what the lead was sent last, the prompt whose answer was lost included
    const stored = transcriptContext(memory.transcripts.raw(leadId));
    const last = model.requests('lead').at(-1) as RecordedRequest;
    expect(stored.slice(0, last.messages.length)).toEqual(last.messages);
    expect(
      memory.transcripts
        .raw(leadId)
        .filter((e) => contentText(e.message.content) === 'prompt lost'),
    ).toHaveLength(1);
  });

  it('reports each compaction on the hub with tokens before and after', async () => {
    const model = createScriptedModel({ tokens: { bytesPerToken: 4, window: WINDOW } });
    const h = await openHarness({
      model,
      scripts: { lead: notedLead, bob: chattyWorker },
      context: budget(),
    });
    await spawnBob(h);
    await runMail(h, 'bob', 40);
    const events = h.sink.events.filter(
      ({ event }) => event.type === 'context.compacting' || event.type === 'context.compacted',
    );
    expect(events.length).toBeGreaterThanOrEqual(2);
    for (let i = 0; i < events.length; i += 2) {
      const start = events[i]?.event as Extract<AgentEvent, { type: 'context.compacting' }>;
      const done = events[i + 1]?.event as Extract<AgentEvent, { type: 'context.compacted' }>;
      expect(start.type).toBe('context.compacting');
      expect(done).toMatchObject({
        type: 'context.compacted',
        reason: 'budget',
        policy: 'deterministic',
        tokensBefore: start.tokensBefore,
        estimated: false,
      });
      expect(start.tokensBefore).toBeGreaterThan(Math.floor(WINDOW * 0.75));
      expect(done.tokensAfter).toBeLessThan(done.tokensBefore / 2);
      expect(done.replacedMessages).toBeGreaterThan(0);
    }
  });

  it('rebuilds exactly the compacted context from the transcript, without summarising again', async () => {
    const memory = {
      log: createMemoryTeamLog({ teamId: TEAM_ID }),
      transcripts: createMemoryTranscriptStore(),
    };
    const calls = { n: 0 };
    const counting: CompactionPolicy = {
      name: 'counting',
      summarize: async (input) => {
        calls.n++;
        return deterministicSummary().summarize(input);
      },
    };
    const a = await openHarness({
      memory,
      model: createScriptedModel({ tokens: { window: WINDOW } }),
      scripts: { lead: notedLead, bob: chattyWorker },
      context: budget(counting),
    });
    await spawnBob(a);
    await runMail(a, 'bob', 30);
    expect(calls.n).toBeGreaterThan(0);
    const bobId = a.memberId('bob');
    const stored = transcriptContext(memory.transcripts.raw(bobId));
    // What A sent last, plus its answer, is what the stored transcript folds to.
    const lastRequest = a.model.requests('bob').at(-1) as RecordedRequest;
    expect(stored.slice(0, lastRequest.messages.length)).toEqual(lastRequest.messages);
    await a.service.dispose();

    const before = calls.n;
    const model = createScriptedModel({ tokens: { window: WINDOW } });
    const b = await openHarness({
      memory,
      model,
      scripts: { lead: notedLead, bob: chattyWorker },
      context: budget(counting),
      ids: 'b',
    });
    const sent = await b.service.sendMessage(b.service.lead, { to: 'bob', text: 'one more' });
    await b.service.idle();
    const first = model.requests('bob')[0] as RecordedRequest;
    expect(model.promptTokens(first)).toBeLessThanOrEqual(Math.floor(WINDOW * 0.75));
    expect(calls.n).toBe(before);
    expect(first.messages.slice(0, stored.length)).toEqual(stored);
    expect(first.messages.slice(stored.length).map((m) => m.source)).toEqual([
      expect.objectContaining({ kind: 'team-message', messageId: sent.messageId }),
    ]);
  });

  it('keeps the prompt of a task the member still works on through every compaction', async () => {
    const model = createScriptedModel({ tokens: { window: WINDOW } });
    const h = await openHarness({
      model,
      idleClaim: true,
      scripts: {
        lead: notedLead,
        bob: (context) => {
          const last = context.request.messages.at(-1);
          if (last?.source?.kind === 'task-claim')
            return { text: 'Started; it will take a while.' };
          return chattyWorker(context);
        },
      },
      context: budget(),
    });
    await spawnBob(h);
    const task = await h.service.createTask(h.service.lead, {
      subject: 'Rewrite the parser',
      description: 'The whole parser, with tests.',
    });
    await h.service.idle();
    expect(h.service.getTask(h.service.lead, { taskId: task.id }).status).toBe('in_progress');
    await runMail(h, 'bob', 60);
    const claims = model
      .requests('bob')
      .slice(-20)
      .map((r) => r.messages.filter((m) => m.source?.kind === 'task-claim').length);
    expect(claims).toEqual(claims.map(() => 1));
    expect(compacted(h).some((c) => c.retainedMessages === 1)).toBe(true);
  });

  it('answers a context-overflow refusal with one compaction and a retry', async () => {
    // The budget believes in a window four times the model's: only the provider's refusal says
    // the request is too long.
    const model = createScriptedModel({ tokens: { window: WINDOW } });
    const h = await openHarness({
      model,
      scripts: { lead: notedLead, bob: chattyWorker },
      context: { windowTokens: WINDOW * 4, targetShare: 0.9, policy: deterministicSummary() },
    });
    await spawnBob(h);
    await runMail(h, 'bob', 80);
    expect(h.sink.errors()).toEqual([]);
    // One refusal: from then on the budget keeps requests under the refused size on its own.
    expect(model.overflows('bob')).toBe(1);
    const bobs = compacted(h).filter((c) => c.agent === 'bob');
    const reasons = bobs.map((c) => c.reason);
    expect(reasons[0]).toBe('overflow');
    expect(reasons.length).toBeGreaterThan(1);
    expect(reasons.slice(1)).toEqual(reasons.slice(1).map(() => 'budget'));
    // Measured, not estimated: the scripted model reported usage before the refusal.
    const first = bobs[0];
    expect(first?.estimated).toBe(false);
    expect(first?.tokensBefore).toBeGreaterThan(WINDOW);
    expect(first?.tokensBefore).toBeLessThan(WINDOW * 1.2);
    expect(h.service.listMembers(h.service.lead).find((m) => m.name === 'bob')?.status).toBe(
      'idle',
    );
  });

  it('fails the member with MODEL_CONTEXT_OVERFLOW when a compaction cannot make the request fit', async () => {
    const model = createScriptedModel({ tokens: { window: 3000 } });
    const h = await openHarness({
      model,
      scripts: { lead: notedLead, bob: chattyWorker },
      context: { windowTokens: 100_000, policy: deterministicSummary() },
    });
    await h.service.spawnTeammate(h.service.lead, {
      name: 'bob',
      description: 'bob helps',
      prompt: `Hi bob. ${prose(3, 20_000)}`,
      agentType: 'worker',
    });
    await h.service.idle();
    // one error event for the one failure
    expect(h.sink.errors().map((e) => [e.agent, e.code])).toEqual([
      ['bob', 'MODEL_CONTEXT_OVERFLOW'],
    ]);
    // Nothing to compact (the brief is the whole context): refused once, never retried.
    expect(model.overflows('bob')).toBe(1);
    expect(h.service.listMembers(h.service.lead).find((m) => m.name === 'bob')?.status).toBe(
      'failed',
    );
  });

  it('asks the member’s own model for the summary with the compaction prompt, by default', async () => {
    const model = createScriptedModel({ tokens: { window: WINDOW } });
    const h = await openHarness({
      model,
      scripts: {
        lead: notedLead,
        bob: (context) =>
          context.request.tools.length === 0
            ? { text: `SUMMARY of ${context.request.messages.length - 1} messages` }
            : chattyWorker(context),
      },
      context: { windowTokens: WINDOW },
    });
    await spawnBob(h);
    await runMail(h, 'bob', 30);
    const summaries = model.requests('bob').filter((r) => r.tools.length === 0);
    expect(summaries.length).toBeGreaterThan(0);
    const asked = summaries[0] as RecordedRequest;
    expect(asked.system).toEqual(model.requests('bob')[0]?.system);
    expect(contentText(asked.messages.at(-1)?.content ?? [])).toContain(
      'will be replaced by a summary',
    );
    const raw = h.transcripts.raw(h.memberId('bob'));
    const entry = raw.find((e) => isCompaction(e.message));
    expect(contentText(entry?.message.content ?? [])).toContain('SUMMARY of');
    expect(entry?.message.source).toMatchObject({ kind: 'compaction', policy: 'model' });
  });

  it('falls back to a digest when the model refuses even the summary request as too long', async () => {
    const scripted = createScriptedModel({ tokens: { window: WINDOW } });
    // The summary request (the one without tools) is refused as too long, as a much smaller
    // window than configured would refuse it.
    const model: typeof scripted = Object.assign(Object.create(scripted), {
      stream(request: Parameters<typeof scripted.stream>[0]) {
        if (request.tools.length === 0) {
          throw new TeamError('MODEL_CONTEXT_OVERFLOW', 'summary request too long');
        }
        return scripted.stream(request);
      },
    });
    const h = await openHarness({
      model,
      scripts: { lead: notedLead, bob: chattyWorker },
      context: { windowTokens: WINDOW },
    });
    await spawnBob(h);
    await runMail(h, 'bob', 30);
    expect(h.sink.errors()).toEqual([]);
    const entry = h.transcripts.raw(h.memberId('bob')).find((e) => isCompaction(e.message));
    expect(contentText(entry?.message.content ?? [])).toContain('could not read this much');
    expect(contentText(entry?.message.content ?? [])).toMatch(
      /^lead: \[message from lead\] mail /m,
    );
  });

  it('refuses an empty summary from the model as MODEL_PROTOCOL, never storing it', async () => {
    const model = createScriptedModel({ tokens: { window: WINDOW } });
    const h = await openHarness({
      model,
      scripts: {
        lead: notedLead,
        bob: (context) =>
          context.request.tools.length === 0 ? { text: '' } : chattyWorker(context),
      },
      context: { windowTokens: WINDOW, policy: modelSummary() },
    });
    await spawnBob(h);
    await runMail(h, 'bob', 30);
    expect(h.sink.errors()[0]).toMatchObject({ agent: 'bob', code: 'MODEL_PROTOCOL' });
    expect(h.transcripts.raw(h.memberId('bob')).some((e) => isCompaction(e.message))).toBe(false);
  });

  it('refuses a bad budget with INVALID_ARGUMENT naming the field', async () => {
    const model = createScriptedModel();
    const bad: [ContextBudget, string][] = [
      [{ windowTokens: 10 }, 'context.windowTokens'],
      [{ windowTokens: 1.5e3 + 0.5 }, 'context.windowTokens'],
      [{ windowTokens: 8000, targetShare: 0 }, 'context.targetShare'],
      [{ windowTokens: 8000, targetShare: 1.5 }, 'context.targetShare'],
      [{ windowTokens: 8000, recentShare: 0.6, summaryShare: 0.5 }, 'context.recentShare'],
      [{ windowTokens: 8000, keepFirst: -1 }, 'context.keepFirst'],
      [{ windowTokens: 8000, policy: {} as CompactionPolicy }, 'context.policy'],
    ];
    for (const [context, field] of bad) {
      let error: unknown;
      try {
        createAgentRegistry([{ type: 'w', systemPrompt: 'x', model, context }]);
      } catch (caught) {
        error = caught;
      }
      expect(TeamError.hasCode(error, 'INVALID_ARGUMENT'), JSON.stringify(context)).toBe(true);
      expect((error as TeamError).details).toEqual({ field });
    }
  });

  it('refuses a compaction that does not fit its context as INVALID_RECORD', () => {
    const user = (text: string): ChatMessage => ({
      role: 'user',
      content: [{ type: 'text', text }],
    });
    const context: ChatMessage[] = [
      user('brief'),
      { role: 'assistant', content: [], toolCalls: [{ id: 'c1', name: 't', input: {} }] },
      { role: 'tool', toolCallId: 'c1', toolName: 't', content: [{ type: 'text', text: 'ok' }] },
      user('next'),
    ];
    const summary = (over: object) =>
      ({
        role: 'user',
        content: [{ type: 'text', text: 'summary' }],
        source: {
          kind: 'compaction',
          compactionId: 'c',
          contextLength: 4,
          head: 1,
          replaced: 2,
          retained: [],
          deliveredIds: [],
          reason: 'budget',
          policy: 'p',
          tokensBefore: 1,
          tokensAfter: 1,
          estimated: true,
          durationMs: 0,
          ...over,
        },
      }) as Parameters<typeof applyCompaction>[1];
    expect(applyCompaction(context, summary({})).map((m) => m.role)).toEqual([
      'user',
      'user',
      'user',
    ]);
    for (const over of [
      { contextLength: 5 },
      { replaced: 1 }, // would separate the call from its result
      { head: 2, replaced: 1 }, // starts at a tool result
      { replaced: 4 },
      { retained: [0] }, // an assistant message is not a prompt
    ]) {
      expect(() => applyCompaction(context, summary(over)), JSON.stringify(over)).toThrow(
        expect.objectContaining({ code: 'INVALID_RECORD' }),
      );
    }
  });
});
