import type {
  AssistantMessage,
  ModelAdapter,
  ModelRequest,
  ModelStreamEvent,
  ToolCall,
  Usage,
} from '@teamwire/core';
import { messageBytes, TeamError } from '@teamwire/core';
import { type FixLeadPolicyOptions, fixLeadStep } from './policy-fix-lead.js';
import { type FixReviewerPolicyOptions, fixReviewerStep } from './policy-fix-reviewer.js';
import { type LeadPolicyOptions, leadStep } from './policy-lead.js';
import { reviewerStep } from './policy-reviewer.js';

/**
 * The embedded default model of the example: an offline, deterministic policy. It is NOT an LLM.
 * It reads the conversation (tool results, team mail) and answers with the tool calls a careful
 * reviewer or lead would make, so the whole runtime — mailboxes, priorities, the task board,
 * transcripts, the event hub — runs for real without a network or an API key. Every decision is a
 * pure function of the conversation, so a resumed run picks up exactly where it stopped.
 */
export interface PolicyOptions
  extends LeadPolicyOptions,
    FixLeadPolicyOptions,
    FixReviewerPolicyOptions {
  /** `lead` / `reviewer` review a directory; `fix-lead` / `fix-reviewer` run `demo fix`. */
  role: 'lead' | 'reviewer' | 'fix-lead' | 'fix-reviewer';
  /** Milliseconds to pause before each answer, so a person can watch the board. Default 0. */
  paceMs?: number;
}

export {
  REVIEW_SUBJECT_PREFIX,
  reviewerName,
  SUMMARY_SUBJECT,
  unitsFromPaths,
} from './policy-lead.js';

export function createPolicyModel(options: PolicyOptions): ModelAdapter {
  return {
    specificationVersion: 'v1',
    provider: 'teamwire-policy',
    modelId: `offline-${options.role}-policy`,
    stream(request) {
      return streamStep(request, options);
    },
  };
}

async function* streamStep(
  request: ModelRequest,
  options: PolicyOptions,
): AsyncGenerator<ModelStreamEvent> {
  request.signal?.throwIfAborted();
  if (options.paceMs) await pause(options.paceMs, request.signal);
  const step =
    options.role === 'lead'
      ? leadStep(request.messages, options)
      : options.role === 'fix-lead'
        ? fixLeadStep(request.messages, options)
        : options.role === 'fix-reviewer'
          ? fixReviewerStep(request.messages, options)
          : reviewerStep(request.messages);
  // numbered on from the highest id in the conversation: after a compaction summarised earlier
  // calls, a count of the calls left would give a new call the id of one still there
  let prior = 0;
  for (const m of request.messages) {
    if (m.role !== 'assistant') continue;
    for (const call of m.toolCalls) {
      const n = /^call_(\d+)$/.exec(call.id)?.[1];
      if (n !== undefined) prior = Math.max(prior, Number(n));
    }
  }
  const toolCalls: ToolCall[] = (step.toolCalls ?? []).map((call, i) => ({
    ...call,
    id: `call_${prior + i + 1}`,
  }));
  const text = step.text ?? '';
  if (text) yield { type: 'text-delta', text };
  for (const call of toolCalls) {
    yield { type: 'tool-call-start', id: call.id, name: call.name };
    yield { type: 'tool-call', toolCall: call };
  }
  const usage = estimateUsage(request, text, toolCalls);
  const message: AssistantMessage = {
    role: 'assistant',
    content: text ? [{ type: 'text', text }] : [],
    toolCalls,
    usage,
    stopReason: toolCalls.length > 0 ? 'tool_calls' : 'end_turn',
  };
  yield { type: 'finish', message, usage, stopReason: message.stopReason ?? 'end_turn' };
}

function pause(ms: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clearTimeout(timer);
      reject(new TeamError('ABORTED', 'model call aborted'));
    };
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

/**
 * Token counts as a provider would report them, four bytes a token: the prompt is what a provider
 * is sent (the system text, the tool definitions and each message, measured as core measures a
 * request for its context budget), so the summary shows the traffic a real model would see and a
 * member's budget counts from realistic usage.
 */
function estimateUsage(request: ModelRequest, text: string, calls: readonly ToolCall[]): Usage {
  let bytes =
    Buffer.byteLength(JSON.stringify(request.system.map((block) => block.text))) +
    Buffer.byteLength(JSON.stringify(request.tools));
  for (const message of request.messages) bytes += messageBytes(message);
  const out = Buffer.byteLength(text) + Buffer.byteLength(JSON.stringify(calls));
  return { inputTokens: Math.ceil(bytes / 4), outputTokens: Math.ceil(out / 4) };
}
