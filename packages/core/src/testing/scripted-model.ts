import type { AssistantMessage, ChatMessage, ToolCall, Usage } from '../chat.js';
import type { ContentBlock } from '../content.js';
import { TeamError } from '../errors.js';
import { utf8Length } from '../limits.js';
import type {
  ModelAdapter,
  ModelRequest,
  ModelStreamEvent,
  SystemBlock,
  ToolDefinition,
} from '../ports/model.js';
import { messageBytes } from '../transcript-context.js';

/** A tool call a scripted step makes. Its id is assigned deterministically unless given. */
export interface ScriptedToolCall {
  /** The tool to call. */
  name: string;
  /** The arguments (default `{}`). */
  input?: unknown;
  /** The call id; `call-<agent>-<n>` when absent. */
  id?: string;
}

/** One model call's answer: text and/or tool calls, optionally held open or failing. */
export interface ScriptedStep {
  /** Assistant text, streamed as deltas. */
  text?: string;
  /** Reasoning text, streamed as reasoning deltas and kept as a thinking block. */
  reasoning?: string;
  /** Tool calls to make; `stopReason` is then `tool_calls`. */
  toolCalls?: readonly ScriptedToolCall[];
  /** Token counts to report; by default input counts the messages and output the text length plus the tool calls. */
  usage?: Partial<Usage>;
  /**
   * Holds the stream open (after the deltas, before `finish`) until this promise settles, so a
   * test can act while the call is in flight. Aborting the request ends the call with `ABORTED`.
   */
  gate?: Promise<unknown>;
  /** The call throws this instead of finishing (after any deltas). */
  error?: Error;
}

/** What a step function is given: the request and the 1-based number of this agent's call. */
export interface ScriptedCallContext {
  /** The calling agent. */
  agentName: string;
  /** This agent's call number, from 1. */
  call: number;
  /** The request as the runtime sent it. */
  request: ModelRequest;
}

/** A function that answers each call of one agent, e.g. by looking at the last message. */
export type ScriptedStepFunction = (
  context: ScriptedCallContext,
) => ScriptedStep | Promise<ScriptedStep>;

/** An agent's script: the answers of its calls in order, or a function that computes them. */
export type AgentScript = readonly ScriptedStep[] | ScriptedStepFunction;

/** A request as the scripted model saw it: a deep copy taken when the call started. */
export interface RecordedRequest {
  /** The system blocks. */
  system: SystemBlock[];
  /** The conversation sent. */
  messages: ChatMessage[];
  /** The tools offered. */
  tools: ToolDefinition[];
  /** The request's prompt-cache key, when it had one. */
  promptCacheKey?: string;
}

/** A deterministic {@link ModelAdapter} for tests, routed by `request.agentName`. */
export interface ScriptedModel extends ModelAdapter {
  /** Every request of `agentName`, in call order. */
  requests(agentName: string): readonly RecordedRequest[];
  /** How many calls `agentName` made. */
  calls(agentName: string): number;
  /** Scripted steps not yet used by `agentName` (`Infinity` for a function script). */
  remaining(agentName: string): number;
  /** Replaces or adds the script of one agent (its call count is kept). */
  setScript(agentName: string, script: AgentScript): void;
  /** Requests of `agentName` refused as too long for `tokens.window` (not counted as calls). */
  overflows(agentName: string): number;
  /** The prompt tokens of `request` as this model counts them (see `tokens`). */
  promptTokens(request: Pick<ModelRequest, 'system' | 'messages' | 'tools'>): number;
}

/**
 * How a scripted model counts prompt tokens, like a provider would: the UTF-8 bytes of what a
 * provider is sent (system text, tool definitions, each message's `messageBytes`) divided by
 * `bytesPerToken`. With it, usage reports these counts; with `window`, a request of more tokens
 * is refused with `MODEL_CONTEXT_OVERFLOW` before the script is asked, as a provider would.
 */
export interface ScriptedTokenOptions {
  /** Bytes per token (default 4). */
  bytesPerToken?: number;
  /** The context window in tokens; absent: no limit. */
  window?: number;
}

interface AgentState {
  script: AgentScript;
  calls: number;
  overflows: number;
  toolCalls: number;
  requests: RecordedRequest[];
}

/**
 * Creates a scripted model. Each agent (by `request.agentName`) answers from its own script; tool
 * call ids are `call-<agent>-<n>` (n counts that agent's tool calls from 1), so transcripts are
 * reproducible. A call beyond the end of a list script, or by an agent with no script, fails with
 * a `MODEL_UNAVAILABLE` error naming the agent and the call, never a silent default.
 */
export function createScriptedModel(
  options: {
    scripts?: Record<string, AgentScript>;
    modelId?: string;
    /** Count prompt tokens from bytes (and refuse past a window); see {@link ScriptedTokenOptions}. */
    tokens?: ScriptedTokenOptions;
  } = {},
): ScriptedModel {
  const tokenOptions = options.tokens;
  const bytesPerToken = tokenOptions?.bytesPerToken ?? 4;
  const promptTokens = (request: Pick<ModelRequest, 'system' | 'messages' | 'tools'>): number => {
    let bytes =
      utf8Length(JSON.stringify(request.system.map((block) => block.text))) +
      utf8Length(JSON.stringify(request.tools));
    for (const message of request.messages) bytes += messageBytes(message);
    return Math.ceil(bytes / bytesPerToken);
  };
  const agents = new Map<string, AgentState>();
  const stateOf = (agentName: string): AgentState | undefined => agents.get(agentName);
  for (const [name, script] of Object.entries(options.scripts ?? {})) {
    agents.set(name, { script, calls: 0, overflows: 0, toolCalls: 0, requests: [] });
  }

  async function* stream(request: ModelRequest): AsyncGenerator<ModelStreamEvent> {
    const agentName = request.agentName;
    if (agentName === undefined) {
      throw new TeamError('MODEL_UNAVAILABLE', 'scripted model: the request carries no agentName');
    }
    const agent = stateOf(agentName);
    if (agent === undefined) {
      throw new TeamError(
        'MODEL_UNAVAILABLE',
        `scripted model: no script for agent "${agentName}"`,
        {
          details: { agentName },
        },
      );
    }
    const counted = tokenOptions === undefined ? undefined : promptTokens(request);
    const window = tokenOptions?.window;
    if (counted !== undefined && window !== undefined && counted > window) {
      agent.overflows++;
      throw new TeamError(
        'MODEL_CONTEXT_OVERFLOW',
        `scripted model: the request of "${agentName}" has ${counted} tokens, over the window of ${window}`,
        { details: { agentName, tokens: counted, window } },
      );
    }
    const call = ++agent.calls;
    agent.requests.push({
      system: structuredClone([...request.system]),
      messages: structuredClone([...request.messages]),
      tools: structuredClone([...request.tools]),
      ...(request.promptCacheKey === undefined ? {} : { promptCacheKey: request.promptCacheKey }),
    });
    request.signal?.throwIfAborted();
    let step: ScriptedStep | undefined;
    if (typeof agent.script === 'function') {
      step = await agent.script({ agentName, call, request });
    } else {
      const list = agent.script as readonly ScriptedStep[];
      step = list[call - 1];
      if (step === undefined) {
        throw new TeamError(
          'MODEL_UNAVAILABLE',
          `scripted model: agent "${agentName}" made call ${call} but its script has only ${list.length} step(s)`,
          { details: { agentName, call, steps: list.length } },
        );
      }
    }
    checkAborted(request.signal);

    const content: ContentBlock[] = [];
    if (step.reasoning !== undefined) {
      yield { type: 'reasoning-delta', text: step.reasoning };
      content.push({ type: 'thinking', thinking: step.reasoning });
    }
    if (step.text !== undefined && step.text !== '') {
      yield { type: 'text-delta', text: step.text };
      content.push({ type: 'text', text: step.text });
    }
    const toolCalls: ToolCall[] = [];
    for (const scripted of step.toolCalls ?? []) {
      const id = scripted.id ?? `call-${agentName}-${++agent.toolCalls}`;
      const input = scripted.input ?? {};
      yield { type: 'tool-call-start', id, name: scripted.name };
      yield { type: 'tool-call-delta', id, argsDelta: JSON.stringify(input) };
      const toolCall: ToolCall = { id, name: scripted.name, input: structuredClone(input) };
      yield { type: 'tool-call', toolCall };
      toolCalls.push(toolCall);
    }
    if (step.gate !== undefined) await untilSettledOrAborted(step.gate, request.signal);
    checkAborted(request.signal);
    if (step.error !== undefined) throw step.error;

    const usage: Usage = {
      inputTokens: step.usage?.inputTokens ?? counted ?? request.messages.length,
      outputTokens: step.usage?.outputTokens ?? (step.text?.length ?? 0) + toolCalls.length,
      ...(step.usage?.cacheReadTokens === undefined
        ? {}
        : { cacheReadTokens: step.usage.cacheReadTokens }),
    };
    const stopReason = toolCalls.length > 0 ? 'tool_calls' : 'end_turn';
    const message: AssistantMessage = { role: 'assistant', content, toolCalls, usage, stopReason };
    yield { type: 'finish', message, usage, stopReason };
  }

  return {
    specificationVersion: 'v1',
    provider: 'scripted',
    modelId: options.modelId ?? 'scripted-1',
    stream,
    requests: (agentName) => stateOf(agentName)?.requests ?? [],
    calls: (agentName) => stateOf(agentName)?.calls ?? 0,
    overflows: (agentName) => stateOf(agentName)?.overflows ?? 0,
    promptTokens,
    remaining(agentName) {
      const agent = stateOf(agentName);
      if (agent === undefined) return 0;
      if (typeof agent.script === 'function') return Number.POSITIVE_INFINITY;
      return Math.max(0, (agent.script as readonly ScriptedStep[]).length - agent.calls);
    },
    setScript(agentName, script) {
      const agent = stateOf(agentName);
      if (agent === undefined)
        agents.set(agentName, { script, calls: 0, overflows: 0, toolCalls: 0, requests: [] });
      else agent.script = script;
    },
  };
}

function checkAborted(signal: AbortSignal | undefined): void {
  if (signal?.aborted) {
    throw new TeamError('ABORTED', 'model call aborted', { cause: signal.reason });
  }
}

async function untilSettledOrAborted(
  gate: Promise<unknown>,
  signal: AbortSignal | undefined,
): Promise<void> {
  if (signal === undefined) {
    await gate.catch(() => undefined);
    return;
  }
  checkAborted(signal);
  await new Promise<void>((resolve) => {
    const onAbort = () => resolve();
    signal.addEventListener('abort', onAbort, { once: true });
    gate.then(
      () => {
        signal.removeEventListener('abort', onAbort);
        resolve();
      },
      () => {
        signal.removeEventListener('abort', onAbort);
        resolve();
      },
    );
  });
}
