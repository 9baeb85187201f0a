import type { TranscriptEntry } from '../../chat.js';
import type { ContentBlock } from '../../content.js';
import type { TeamRecord } from '../../records.js';

/**
 * The two test-runner functions a conformance suite needs. Passing them in (vitest's, node:test's
 * or any other runner's) keeps `@teamwire/core/testing` free of a test-runner dependency.
 */
export interface ConformanceTestApi {
  /** Groups tests, like vitest's `describe`. */
  describe: (name: string, body: () => void) => void;
  /** Declares one async test, like vitest's `it`. */
  it: (name: string, body: () => Promise<void>) => void;
}

const unknownBlock = {
  type: 'x-future-block',
  payload: { nested: [1, 'two', null] },
  note: 'kept verbatim',
} as unknown as ContentBlock;

/**
 * A plausible team record of every type, chosen by `seq` so a run of records covers the whole
 * union (member, task, message.queued with an unknown content block, message.delivered).
 */
export function conformanceRecord(teamId: string, seq: number): TeamRecord {
  const base = { seq, at: 1_767_225_600_000 + seq, teamId, schemaVersion: 1 as const };
  switch (seq % 4) {
    case 1:
      return {
        ...base,
        type: 'member',
        member: {
          id: `member-${seq}`,
          name: `worker-${seq}`,
          description: 'a conformance member',
          agentType: 'general',
          provider: 'scripted',
          context: 'fresh',
          phase: 'active',
          color: 'blue',
        },
      };
    case 2:
      return {
        ...base,
        type: 'task',
        task: {
          id: `task-${seq}`,
          revision: 1,
          subject: `Task ${seq}`,
          description: 'Line one\nline "two" with unicode: ü → 😀',
          status: 'in_progress',
          creatorId: teamId,
          ownerId: `member-${seq - 1}`,
          blockedBy: [],
          writeScopes: ['src/a'],
        },
      };
    case 3:
      return {
        ...base,
        type: 'message.queued',
        message: {
          id: `msg-${seq}`,
          senderId: teamId,
          senderName: 'lead',
          targetId: `member-${seq - 2}`,
          kind: 'message',
          delivery: 'wakeup',
          content: [{ type: 'text', text: `hello ${seq}\n</teammate-message>` }, unknownBlock],
          summary: 'greeting',
        },
      };
    default:
      return {
        ...base,
        type: 'message.delivered',
        messageId: `msg-${seq - 1}`,
        targetId: `member-${seq - 3}`,
      };
  }
}

/** `count` consecutive records starting at `fromSeq`. */
export function conformanceRecords(teamId: string, fromSeq: number, count: number): TeamRecord[] {
  return Array.from({ length: count }, (_, i) => conformanceRecord(teamId, fromSeq + i));
}

/** A user message entry carrying team-mail provenance. */
export function userEntry(at: number, text: string, messageId?: string): TranscriptEntry {
  return {
    schemaVersion: 1,
    at,
    message: {
      role: 'user',
      content: [{ type: 'text', text }],
      ...(messageId
        ? { source: { kind: 'team-message', messageId, senderId: 'lead-id', senderName: 'lead' } }
        : {}),
    },
  };
}

/** An assistant entry, optionally requesting tool calls. */
export function assistantEntry(
  at: number,
  text: string,
  toolCalls: { id: string; name: string }[] = [],
): TranscriptEntry {
  return {
    schemaVersion: 1,
    at,
    message: {
      role: 'assistant',
      content: [
        { type: 'thinking', thinking: 'reasoning', signature: 'sig' },
        { type: 'text', text },
        unknownBlock,
      ],
      toolCalls: toolCalls.map((call) => ({ ...call, input: { path: 'a.txt', n: 1 } })),
      usage: { inputTokens: 10, outputTokens: 5, cacheReadTokens: 2 },
      stopReason: toolCalls.length > 0 ? 'tool_calls' : 'end_turn',
    },
  };
}

/** A tool result entry answering `toolCallId`. */
export function toolEntry(at: number, toolCallId: string, toolName: string): TranscriptEntry {
  return {
    schemaVersion: 1,
    at,
    message: {
      role: 'tool',
      toolCallId,
      toolName,
      content: [{ type: 'text', text: `result of ${toolCallId}` }],
    },
  };
}

/** A JSON round trip: what any durable store gives back for a value. */
export function jsonCopy<T>(value: T): T {
  return JSON.parse(JSON.stringify(value)) as T;
}
