import {
  type AgentRegistry,
  type AssistantMessage,
  type ChatMessage,
  contentText,
  createAgentRegistry,
  type EventSink,
  type ModelAdapter,
  type ModelRequest,
  type ModelStreamEvent,
  type ToolCall,
} from '@teamwire/core';
import { LEAD_TYPE, WORKER_TYPE } from './team-log.js';

/** A stable system prompt of realistic length (providers cache it as the prompt's prefix). */
export const WORKER_SYSTEM_PROMPT = [
  'You are a software engineer on a small team. You work in a shared repository.',
  'Read the task you are given, make the smallest change that solves it, run the tests, and',
  'report back to the lead with what you changed and how you verified it. Ask the lead when a',
  'requirement is unclear instead of guessing. Keep messages short and concrete: name files,',
  'functions and commands. Never edit files outside the write scopes of your task without asking.',
].join('\n');

export const LEAD_SYSTEM_PROMPT = [
  'You lead a team of software engineers. Split the work into tasks on the board, spawn',
  'teammates for independent areas, answer their questions, and review what they hand in.',
  'Prefer few, well-scoped tasks. Shut teammates down when their area is done.',
].join('\n');

/** The registry every bench team uses: the lead type and one worker type, each on `model`. */
export function benchAgents(model: ModelAdapter, leadModel: ModelAdapter = model): AgentRegistry {
  return createAgentRegistry([
    {
      type: LEAD_TYPE,
      description: 'Team lead',
      systemPrompt: LEAD_SYSTEM_PROMPT,
      model: leadModel,
    },
    {
      type: WORKER_TYPE,
      description: 'Implements one area',
      systemPrompt: WORKER_SYSTEM_PROMPT,
      model,
    },
  ]);
}

/** One answer of a {@link createPolicyModel} policy: text and/or tool calls. */
export interface PolicyStep {
  text?: string;
  toolCalls?: { name: string; input: unknown }[];
}

/**
 * A model that answers by a policy over the last message, like `createScriptedModel`'s function
 * scripts, but keeps no copy of the requests it sees. The scripted model deep-copies every
 * request so tests can inspect it; when memory per teammate is what is measured, that copy would
 * be counted as if the runtime held it.
 */
export function createPolicyModel(
  policy: (agentName: string, messages: readonly ChatMessage[]) => PolicyStep,
): ModelAdapter {
  const callCounts = new Map<string, number>();
  return {
    specificationVersion: 'v1',
    provider: 'scripted',
    modelId: 'scripted-1',
    async *stream(request: ModelRequest): AsyncGenerator<ModelStreamEvent> {
      const agentName = request.agentName ?? 'unknown';
      const call = (callCounts.get(agentName) ?? 0) + 1;
      callCounts.set(agentName, call);
      const step = policy(agentName, request.messages);
      if (step.text !== undefined && step.text !== '')
        yield { type: 'text-delta', text: step.text };
      const toolCalls: ToolCall[] = (step.toolCalls ?? []).map((toolCall, i) => ({
        id: `call-${agentName}-${call}-${i + 1}`,
        name: toolCall.name,
        input: toolCall.input,
      }));
      for (const toolCall of toolCalls) yield { type: 'tool-call', toolCall };
      const usage = { inputTokens: request.messages.length, outputTokens: 1 };
      const stopReason = toolCalls.length > 0 ? 'tool_calls' : 'end_turn';
      const message: AssistantMessage = {
        role: 'assistant',
        content: step.text ? [{ type: 'text', text: step.text }] : [],
        toolCalls,
        usage,
        stopReason,
      };
      yield { type: 'finish', message, usage, stopReason };
    },
  };
}

/**
 * An event sink that remembers the runtime's `error` events. A benchmark whose agents failed
 * would measure something else than it claims, so it checks this and refuses to report.
 */
export function errorCollector(): EventSink & { errors: string[]; check(what: string): void } {
  const errors: string[] = [];
  return {
    errors,
    publish(agentName, event) {
      if (event.type === 'error') errors.push(`${agentName}: ${event.code}: ${event.message}`);
    },
    check(what) {
      if (errors.length > 0) {
        throw new Error(`${what}: agents reported errors: ${errors.slice(0, 3).join('; ')}`);
      }
    },
  };
}

/** The word a lead's message carries when it asks a teammate to answer (see {@link pingPolicy}). */
export const PING = 'PING';

/**
 * Teammates answer a ping with one `send_message` to the lead and otherwise say they are ready;
 * the lead acknowledges whatever it reads. Every turn is one or two model calls, so what is
 * measured is the runtime, not the model.
 */
export function pingPolicy(agentName: string, messages: readonly ChatMessage[]): PolicyStep {
  const last = messages.at(-1);
  if (agentName === 'lead') return { text: 'OK.' };
  if (last?.role === 'tool') return { text: '' };
  if (last !== undefined && contentText(last.content).includes(PING)) {
    return {
      toolCalls: [
        { name: 'send_message', input: { to: 'lead', message: `pong from ${agentName}` } },
      ],
    };
  }
  return { text: 'Ready.' };
}
