import { describe, expect, it } from 'vitest';
import type { ChatMessage, CompactionSource, TranscriptEntry } from '../chat.js';
import { textContent } from '../content.js';
import type { TranscriptStore } from '../ports/transcript-store.js';
import { createManualClock } from '../testing/manual-clock.js';
import { createMemoryTeamLog, createMemoryTranscriptStore } from '../testing/memory-stores.js';
import type { RecordedRequest, ScriptedStepFunction } from '../testing/scripted-model.js';
import { createScriptedModel } from '../testing/scripted-model.js';
import { type CompactionMessage, isCompaction, transcriptContext } from '../transcript-context.js';
import { repairTranscript } from '../transcript-repair.js';
import { deterministicSummary } from './context-budget.js';
import { Conversation, loadTranscript } from './conversation.js';
import { notedLead, openHarness, TEAM_ID } from './test-harness.js';

/**
 * A reference `loadContext`: the context the last compaction applied to (an older summary it
 * replaces without its `source`), that compaction, the entries after it.
 */
function contextOf(raw: readonly TranscriptEntry[]): TranscriptEntry[] {
  const entries = repairTranscript(structuredClone([...raw]));
  const last = entries.findLastIndex((entry) => isCompaction(entry.message));
  if (last === -1) return entries;
  const before = transcriptContext(entries.slice(0, last)).map((message): TranscriptEntry => {
    if (!isCompaction(message)) return { schemaVersion: 1, at: 0, message };
    const { source: _source, ...rest } = message;
    return { schemaVersion: 1, at: 0, message: rest as ChatMessage };
  });
  return [...before, ...entries.slice(last)];
}

const user = (text: string, messageId?: string): ChatMessage => ({
  role: 'user',
  content: textContent(text),
  ...(messageId === undefined
    ? {}
    : { source: { kind: 'team-message', messageId, senderId: 'lead', senderName: 'lead' } }),
});
const assistant = (text: string): ChatMessage => ({
  role: 'assistant',
  content: textContent(text),
  toolCalls: [],
});
const compaction = (id: string, shape: Partial<CompactionSource>): CompactionMessage => ({
  role: 'user',
  content: textContent(`summary ${id}`),
  source: {
    kind: 'compaction',
    compactionId: id,
    contextLength: 1,
    head: 1,
    replaced: 1,
    retained: [],
    deliveredIds: [],
    reason: 'budget',
    policy: 'test',
    tokensBefore: 1,
    tokensAfter: 1,
    estimated: true,
    durationMs: 0,
    ...shape,
  },
});
const entry = (message: ChatMessage): TranscriptEntry => ({ schemaVersion: 1, at: 0, message });

describe('loading a transcript from its last compaction', () => {
  // brief, mail X, answer, J (replaces X and the answer), u2, a2, u3, a3
  const history: TranscriptEntry[] = [
    entry(user('brief')),
    entry(user('mail X', 'X')),
    entry(assistant('a1')),
    entry(compaction('J', { contextLength: 3, head: 1, replaced: 2, deliveredIds: ['X'] })),
    entry(user('u2')),
    entry(assistant('a2')),
    entry(user('u3')),
    entry(assistant('a3')),
  ];
  const nextCompaction = compaction('K', { contextLength: 6, head: 1, replaced: 3 });

  async function compactWith(pendingIds?: () => string[]) {
    const store = createMemoryTranscriptStore();
    await store.append({ memberId: 'm', entries: history });
    const conversation = new Conversation(
      'm',
      store,
      createManualClock(),
      () => undefined,
      await store.load({ memberId: 'm' }),
      pendingIds === undefined ? {} : { pendingIds },
    );
    await conversation.compact(nextCompaction);
    return { store, conversation };
  }

  it('a compaction also lists the held mail still pending, so the entries after it know it', async () => {
    const { store, conversation } = await compactWith(() => ['X', 'not-held']);
    const written = store.raw('m').at(-1)?.message as CompactionMessage;
    expect(written.source.deliveredIds).toEqual(['X']);
    expect(conversation.messages[1]).toEqual(written);

    const revived = new Conversation('m', store, createManualClock(), () => undefined, [
      ...contextOf(store.raw('m')),
    ]);
    expect(revived.holds('X')).toBe(true);
    expect(revived.holds('not-held')).toBe(false);
    expect(revived.messages).toEqual(conversation.messages);
  });

  it('without pending mail a compaction lists only what it replaces', async () => {
    const { store } = await compactWith(() => []);
    const written = store.raw('m').at(-1)?.message as CompactionMessage;
    expect(written.source.deliveredIds).toEqual([]);
    // Such a transcript read from its last compaction no longer knows X: X is not pending.
    const revived = new Conversation('m', store, createManualClock(), () => undefined, [
      ...contextOf(store.raw('m')),
    ]);
    expect(revived.holds('X')).toBe(false);
  });

  it('uses loadContext when the store has it, load otherwise', async () => {
    const store = createMemoryTranscriptStore();
    await store.append({ memberId: 'm', entries: history });
    const calls: string[] = [];
    const plain: TranscriptStore = {
      ...store,
      load: async (options) => {
        calls.push('load');
        return store.load(options);
      },
    };
    const withContext: TranscriptStore = {
      ...plain,
      loadContext: async ({ memberId }) => {
        calls.push('loadContext');
        return contextOf(store.raw(memberId));
      },
    };
    const whole = await loadTranscript(plain, 'm');
    expect(calls).toEqual(['load']);
    const partial = await loadTranscript(withContext, 'm');
    expect(calls).toEqual(['load', 'loadContext']);
    expect(partial).toEqual(contextOf(history));
    expect(transcriptContext(partial)).toEqual(transcriptContext(whole));
  });
});

/** A worker that answers mail with a tool call, then a paragraph. */
const worker: ScriptedStepFunction = ({ call, request }) => {
  const last = request.messages.at(-1);
  if (last?.role === 'tool')
    return { text: `done ${call}: ${'words '.repeat(60 + (call % 5) * 20)}` };
  return { text: `On it (${call}).`, toolCalls: [{ name: 'whoami', input: {} }] };
};

describe('a revived member', () => {
  it('gets the same conversation from loadContext as from load', async () => {
    const WINDOW = 6000;
    const context = { windowTokens: WINDOW, policy: deterministicSummary() };
    const memory = {
      log: createMemoryTeamLog({ teamId: TEAM_ID }),
      transcripts: createMemoryTranscriptStore(),
    };
    const a = await openHarness({
      memory,
      model: createScriptedModel({ tokens: { window: WINDOW } }),
      scripts: { lead: notedLead, bob: worker },
      context,
    });
    await a.service.spawnTeammate(a.service.lead, {
      name: 'bob',
      description: 'bob helps',
      prompt: 'Hi bob. Keep this brief.',
      agentType: 'worker',
    });
    await a.service.idle();
    for (let i = 0; i < 25; i++) {
      await a.service.sendMessage(a.service.lead, {
        to: 'bob',
        text: `mail ${i} ${'x'.repeat(300)}`,
      });
      await a.service.idle();
    }
    const bobId = a.memberId('bob');
    const raw = memory.transcripts.raw(bobId);
    expect(raw.filter((e) => isCompaction(e.message)).length).toBeGreaterThanOrEqual(2);
    await a.service.dispose();

    const stored = transcriptContext(repairTranscript(structuredClone([...raw])));
    const loads: string[] = [];
    const model = createScriptedModel({ tokens: { window: WINDOW } });
    const b = await openHarness({
      memory,
      model,
      scripts: { lead: notedLead, bob: worker },
      context,
      ids: 'b',
      wrap: ({ log, transcripts }) => ({
        log,
        transcripts: {
          specificationVersion: 'v1',
          append: (options) => transcripts.append(options),
          close: () => transcripts.close(),
          load: async (options) => {
            loads.push(`load ${options.memberId}`);
            return transcripts.load(options);
          },
          loadContext: async (options) => {
            loads.push(`loadContext ${options.memberId}`);
            return contextOf(transcripts.raw(options.memberId));
          },
        },
      }),
    });
    const sent = await b.service.sendMessage(b.service.lead, { to: 'bob', text: 'one more' });
    await b.service.idle();
    expect(loads).toContain(`loadContext ${bobId}`);
    expect(loads).not.toContain(`load ${bobId}`);
    // The revived bob goes on from exactly the context load folds to, then reads the new mail.
    const first = model.requests('bob')[0] as RecordedRequest;
    expect(first.messages.slice(0, stored.length)).toEqual(stored);
    expect(first.messages.slice(stored.length).map((m) => m.source)).toEqual([
      expect.objectContaining({ kind: 'team-message', messageId: sent.messageId }),
    ]);
    await b.service.dispose();
  });
});
