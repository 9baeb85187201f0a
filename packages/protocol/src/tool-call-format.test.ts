import {
  type AssistantMessage,
  type ChatMessage,
  MessageKind,
  type QueuedMessage,
  type ToolResultMessage,
} from '@teamwire/core';
import { describe, expect, it } from 'vitest';
import { teammateMessageCallId, toolCallFormat } from './tool-call-format.js';

function queued(patch: Partial<QueuedMessage> = {}): QueuedMessage {
  return {
    id: '01JAAAAAAAAAAAAAAAAAAAAAAA',
    senderId: 'id-alice',
    senderName: 'alice',
    targetId: 'id-lead',
    kind: 'message',
    delivery: 'quiet',
    content: [{ type: 'text', text: 'Tests pass.' }],
    ...patch,
  };
}

const source = {
  kind: 'team-message',
  messageId: '01JAAAAAAAAAAAAAAAAAAAAAAA',
  senderId: 'id-alice',
  senderName: 'alice',
} as const;

describe('toolCallFormat.formatMessage', () => {
  it('renders an assistant tool call and its tool result', () => {
    expect(
      toolCallFormat.formatMessage({
        message: queued({ summary: 'CI' }),
        sender: { name: 'alice' },
      }),
    ).toEqual([
      {
        role: 'assistant',
        content: [],
        toolCalls: [{ id: 'tm_01JAAAAAAAAAAAAAAAAAAAAAAA', name: 'teammate_message', input: {} }],
        source,
      },
      {
        role: 'tool',
        toolCallId: 'tm_01JAAAAAAAAAAAAAAAAAAAAAAA',
        toolName: 'teammate_message',
        content: [
          {
            type: 'text',
            text: '{"type":"message","from":"alice","summary":"CI","text":"Tests pass."}',
          },
        ],
        source,
      },
    ]);
  });
});

describe('teammateMessageCallId', () => {
  it('keeps provider-safe characters and at most 40 of them', () => {
    expect(teammateMessageCallId('a.b/c d')).toBe('tm_a_b_c_d');
    expect(teammateMessageCallId('x'.repeat(100))).toHaveLength(40);
  });
});

describe('toolCallFormat.parseEnvelope', () => {
  const [call, result] = toolCallFormat.formatMessage({
    message: queued(),
    sender: { name: 'alice' },
  }) as [AssistantMessage, ToolResultMessage];

  it('reads its own pair', () => {
    expect(toolCallFormat.parseEnvelope([call, result])).toEqual({
      from: 'alice',
      kind: 'message',
      text: 'Tests pass.',
    });
  });

  it.each([
    ['approval_request', '01JAPPROVAL0000000000000001'],
    ['approval_decision', '01JAPPROVAL0000000000000001'],
    ['gate_feedback', undefined],
  ] as const)('renders and reads back %s with its approval id', (kind, approvalId) => {
    const message = queued({ kind });
    if (approvalId !== undefined) message.approvalId = approvalId;
    const entries = toolCallFormat.formatMessage({ message, sender: { name: 'alice' } });
    const id = approvalId === undefined ? '' : `"approvalId":"${approvalId}",`;
    expect((entries[1] as ToolResultMessage).content).toEqual([
      { type: 'text', text: `{"type":"${kind}","from":"alice",${id}"text":"Tests pass."}` },
    ]);
    const parsed: Record<string, unknown> = { from: 'alice', kind, text: 'Tests pass.' };
    if (approvalId !== undefined) parsed.approvalId = approvalId;
    expect(toolCallFormat.parseEnvelope(entries)).toEqual(parsed);
  });

  it.each<[string, ChatMessage[]]>([
    ['one entry', [call]],
    ['swapped entries', [result, call]],
    ['a mismatched call id', [call, { ...result, toolCallId: 'other' }]],
    ['another tool', [call, { ...result, toolName: 'read_file' }]],
    [
      'another tool call',
      [{ ...call, toolCalls: [{ id: 'tm_x', name: 'read_file', input: {} }] }, result],
    ],
    [
      'two tool calls',
      [
        {
          ...call,
          toolCalls: [...call.toolCalls, { id: 'y', name: 'teammate_message', input: {} }],
        },
        result,
      ],
    ],
    ['assistant text', [{ ...call, content: [{ type: 'text', text: 'hi' }] }, result]],
    ['an error result', [call, { ...result, isError: true }]],
    [
      'a result that is not an envelope',
      [call, { ...result, content: [{ type: 'text', text: 'x' }] }],
    ],
  ])('refuses %s', (_label, entries) => {
    expect(toolCallFormat.parseEnvelope(entries)).toBeUndefined();
  });
});

describe('toolCallFormat.formatInitialPrompt', () => {
  it('names every type and where the approval id is', () => {
    const prompt = toolCallFormat.formatInitialPrompt({
      agentName: 'alice',
      leadName: 'lead',
      description: '',
      teammates: [],
    });
    for (const kind of MessageKind.options) expect(prompt).toContain(`"${kind}"`);
    expect(prompt).toContain('"approvalId": pass it to decide_approval');
  });
});
