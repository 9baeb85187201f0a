import type { ChatMessage, ToolCall } from '@teamwire/core';
import { contentText, INTERRUPTED_TOOL_RESULT, TERMINATED_TOOL_RESULT } from '@teamwire/core';

/*
 * How the offline policy model reads a conversation: the current turn, and each tool call paired
 * with its result. Shared by the lead's and the reviewer's policies.
 */

/** One answer of the policy: text and/or tool calls (ids are assigned when it is streamed). */
export type Step = { text?: string; toolCalls?: Omit<ToolCall, 'id'>[] };

/** A tool call of the conversation and its result (`value`: the result's JSON, else its text). */
export interface ToolOutcome {
  call: ToolCall;
  ok: boolean;
  value: unknown;
  text: string;
}

/**
 * Messages of the current turn: everything after the last assistant message that ended a turn,
 * or from the last host prompt or task claim (a turn cut off by a crash never ended).
 */
export function currentTurn(messages: readonly ChatMessage[]): ChatMessage[] {
  let start = 0;
  for (let i = messages.length - 1; i >= 0; i--) {
    const m = messages[i];
    if (m?.role === 'assistant' && m.toolCalls.length === 0 && m.source === undefined) {
      start = i + 1;
      break;
    }
    if (m?.role === 'user' && (m.source?.kind === 'host' || m.source?.kind === 'task-claim')) {
      start = i;
      break;
    }
  }
  return messages.slice(start);
}

/**
 * Every tool call of `messages` paired with its result. A result may carry the source of team
 * mail: the decision on a call that waited for approval is delivered as that call's result.
 */
export function outcomes(messages: readonly ChatMessage[]): ToolOutcome[] {
  const results = new Map<string, { text: string; isError: boolean }>();
  for (const m of messages) {
    if (m.role === 'tool') {
      results.set(m.toolCallId, { text: contentText(m.content), isError: m.isError === true });
    }
  }
  const out: ToolOutcome[] = [];
  for (const m of messages) {
    if (m.role !== 'assistant' || m.source !== undefined) continue;
    for (const call of m.toolCalls) {
      const result = results.get(call.id);
      if (!result) continue;
      let value: unknown = result.text;
      try {
        value = JSON.parse(result.text);
      } catch {
        // plain text result
      }
      out.push({ call, ok: !result.isError, value, text: result.text });
    }
  }
  return out;
}

export const last = (list: readonly ToolOutcome[], name: string) =>
  list.filter((o) => o.call.name === name).at(-1);

/**
 * A call cut off by an interrupt or a process termination: it may or may not have changed the
 * team, so the policy neither trusts it nor counts it as a failure.
 */
export const outcomeUnknown = (o: ToolOutcome) =>
  !o.ok && (o.text === TERMINATED_TOOL_RESULT || o.text === INTERRUPTED_TOOL_RESULT);
