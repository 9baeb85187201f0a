import {
  type AssistantMessage,
  type ChatMessage,
  createEventHub,
  TeamState,
  type TranscriptEntry,
} from '@teamwire/core';
import { createMemoryTeamLog, createMemoryTranscriptStore } from '@teamwire/core/testing';
import { describe, expect, it } from 'vitest';
import { createDashboardRoutes, type DashboardSnapshot } from './index.js';
import { transcriptUsage, usageOf } from './snapshot.js';

let time = 0;
const entry = (message: ChatMessage): TranscriptEntry => ({
  schemaVersion: 1,
  at: ++time * 1000,
  message,
});
const user = (text: string): ChatMessage => ({ role: 'user', content: [{ type: 'text', text }] });
const answer = (tools: number, inputTokens: number): AssistantMessage => ({
  role: 'assistant',
  content: [{ type: 'text', text: 'ok' }],
  toolCalls: Array.from({ length: tools }, (_, i) => ({
    id: `c${time}-${i}`,
    name: 'read',
    input: {},
  })),
  usage: { inputTokens, outputTokens: 1 },
});
const result = (): ChatMessage => ({
  role: 'tool',
  toolCallId: 'c',
  toolName: 'read',
  content: [{ type: 'text', text: 'data' }],
});

const mail = {
  kind: 'team-message',
  messageId: 'm1',
  senderId: 'lead-id',
  senderName: 'lead',
} as const;

describe('turns and tokens from a transcript', () => {
  it('counts a turn per answer to input, not per step, across a compaction in mid-turn', () => {
    const entries = [
      entry(user('Plan.')),
      entry(answer(1, 100)),
      entry(result()),
      entry({
        role: 'user',
        content: [{ type: 'text', text: 'summary' }],
        source: {
          kind: 'compaction',
          compactionId: 'k1',
          contextLength: 3,
          head: 0,
          replaced: 2,
          retained: [],
          deliveredIds: [],
          reason: 'budget',
          policy: 'summary',
          tokensBefore: 9000,
          tokensAfter: 900,
          estimated: false,
          durationMs: 10,
        },
      }),
      entry(answer(0, 200)),
      // mail in the tool-call format: the runtime's rendering, then the model's next turn
      entry({ ...answer(1, 0), usage: undefined, source: mail }),
      entry({ ...result(), source: mail }),
      entry(answer(0, 300)),
      entry(user('Again.')),
      entry(answer(0, 400)),
    ];
    expect(usageOf(entries)).toEqual({
      turns: 3,
      inputTokens: 1000,
      outputTokens: 4,
      through: entries.at(-1)?.at,
    });
  });

  it('reads each member of a roster, a member without a transcript counting zero', async () => {
    const transcripts = createMemoryTranscriptStore();
    await transcripts.append({
      memberId: 'ann-id',
      entries: [entry(user('Go.')), entry(answer(0, 50))],
    });
    const usage = await transcriptUsage(transcripts, [
      { id: 'ann-id', name: 'ann' },
      { id: 'bob-id', name: 'bob' },
    ]);
    expect(usage.ann).toMatchObject({ turns: 1, inputTokens: 50, outputTokens: 1 });
    expect(usage.bob).toEqual({ turns: 0, inputTokens: 0, outputTokens: 0, through: 0 });
  });
});

describe('a snapshot with the routes given the transcripts', () => {
  it('carries each member of the log with the turns and tokens its transcript shows', async () => {
    const teamId = 'usage-team';
    const state = TeamState.fromRecords([], { teamId });
    const log = createMemoryTeamLog({ teamId });
    await log.append({
      records: state.createLead({ id: 'lead-id', agentType: 'lead', provider: 'scripted' }),
    });
    const transcripts = createMemoryTranscriptStore();
    await transcripts.append({
      memberId: 'lead-id',
      entries: [entry(user('Plan.')), entry(answer(0, 250))],
    });
    const hub = createEventHub({ teamId });
    const snapshotOf = async (options: { transcripts?: typeof transcripts }) => {
      const routes = createDashboardRoutes({ log, hub, heartbeatMs: 0, ...options });
      try {
        const response = await routes.fetch(new Request('http://127.0.0.1/api/snapshot'));
        expect(response.status).toBe(200);
        return (await response.json()) as DashboardSnapshot;
      } finally {
        routes.close();
      }
    };
    const withUsage = await snapshotOf({ transcripts });
    expect(withUsage.usage?.lead).toMatchObject({ turns: 1, inputTokens: 250, outputTokens: 1 });
    // without transcripts the page counts only the events it sees
    expect((await snapshotOf({})).usage).toBeUndefined();
    hub.close();
  });
});
