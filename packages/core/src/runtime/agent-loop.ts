import { z } from 'zod';
import type { AssistantMessage, ToolCall, ToolResultMessage } from '../chat.js';
import { INTERRUPTED_TOOL_RESULT } from '../chat.js';
import { contentText, textContent } from '../content.js';
import { TeamError } from '../errors.js';
import type { EventSink } from '../ports/events.js';
import type { ModelAdapter, SystemBlock, ToolDefinition } from '../ports/model.js';
import type { AgentTool, ToolContext } from './agents.js';
import type { TurnBudget } from './context-budget.js';
import type { Conversation } from './conversation.js';
import type { RepeatedFailureGuard } from './repeated-failures.js';
import type { AgentRef, MemberTeamService, TurnOutcome } from './service-types.js';

/** The tools of one agent: the definitions the model is offered and their implementations. */
export interface ToolSet {
  readonly definitions: readonly ToolDefinition[];
  // biome-ignore lint/suspicious/noExplicitAny: tools of many input types share one map
  readonly byName: ReadonlyMap<string, AgentTool<any>>;
}

/**
 * Builds a tool set; tool input schemas are exported as JSON Schema once, here. Two tools with one
 * name are refused (`INVALID_ARGUMENT`): the model could not tell them apart.
 */
// biome-ignore lint/suspicious/noExplicitAny: tools of many input types share one list
export function createToolSet(tools: readonly AgentTool<any>[]): ToolSet {
  // biome-ignore lint/suspicious/noExplicitAny: see above
  const byName = new Map<string, AgentTool<any>>();
  const definitions: ToolDefinition[] = [];
  for (const tool of tools) {
    if (byName.has(tool.name)) {
      throw new TeamError('INVALID_ARGUMENT', `two tools are named "${tool.name}"`, {
        details: { tool: tool.name },
      });
    }
    byName.set(tool.name, tool);
    definitions.push({
      name: tool.name,
      description: tool.description,
      inputSchema: toolInputJsonSchema(tool.inputSchema),
    });
  }
  return { definitions, byName };
}

/** A zod schema as the JSON Schema object a model API takes (no `$schema` key). */
export function toolInputJsonSchema(schema: z.ZodType): Record<string, unknown> {
  const json = z.toJSONSchema(schema, { io: 'input', unrepresentable: 'any' }) as Record<
    string,
    unknown
  >;
  const { $schema: _ignored, ...rest } = json;
  return rest;
}

/** What one turn runs with. */
export interface RunTurnOptions {
  agentName: string;
  model: ModelAdapter;
  system: readonly SystemBlock[];
  tools: ToolSet;
  conversation: Conversation;
  /**
   * Who runs the turn, the team as that member sees it, and the directory it works in. Tools get
   * exactly this in their (frozen) context: a view that acts only as its own member, never the
   * `TeamService`.
   */
  toolContext: { agent: AgentRef; team: MemberTeamService; cwd: string };
  /** Interrupts the turn: the model call is closed, a running tool is answered as interrupted. */
  signal: AbortSignal;
  maxSteps: number;
  events: EventSink;
  promptCacheKey?: string;
  /**
   * The step boundary: called after a step's tool results are recorded and before the next model
   * call, so mail that arrived meanwhile can be spliced in. `stop` ends the turn there.
   */
  beforeStep?: () => Promise<'continue' | 'stop'>;
  /**
   * The member's context budget: consulted before every model call (it may compact the
   * conversation), told each call's usage, and asked to compact once when the provider refuses a
   * request as too long (`MODEL_CONTEXT_OVERFLOW`), after which the call is retried once.
   */
  budget?: TurnBudget;
  /**
   * Counts failing tool calls across the member's turns: when one call fails the same way
   * `failures.max` times in a row, the turn ends after the step's results are recorded, with
   * `repeated_failure`.
   */
  failures?: RepeatedFailureGuard;
  /**
   * Asked before each tool call runs: `park` leaves it and the calls after it without a result
   * (the member's approval request is recorded) and ends the turn with `awaiting_approval`.
   */
  approve?: (call: ToolCall) => 'run' | Promise<'run' | 'park'>;
}

/**
 * Runs one turn: model call -> requested tools, in order -> results fed back -> repeat, until the
 * model answers without tool calls, the step limit, an interrupt, or `beforeStep` says stop.
 *
 * The transcript stays consistent at every point: an assistant message is recorded only once its
 * stream finished, and every tool call it makes gets a result, `INTERRUPTED_TOOL_RESULT` for a
 * call cut off or never started because of an interrupt. Tool failures become tool results; only
 * model and storage failures are thrown.
 */
export async function runTurn(options: RunTurnOptions): Promise<TurnOutcome> {
  const { agentName, conversation, events, signal } = options;
  const { agent, team, cwd } = options.toolContext;
  const context: ToolContext = Object.freeze({ agent, team, cwd, signal });
  let steps = 0;
  let text = '';
  for (;;) {
    if (signal.aborted) return { stopReason: 'interrupted', steps, text };
    if (steps > 0 && options.beforeStep) {
      if ((await options.beforeStep()) === 'stop') return { stopReason: 'stopped', steps, text };
      if (signal.aborted) return { stopReason: 'interrupted', steps, text };
    }
    if (steps >= options.maxSteps) return { stopReason: 'step_limit', steps, text };
    steps++;

    const message = await callWithinBudget(options, steps);
    if (message === undefined) return { stopReason: 'interrupted', steps, text };
    await conversation.append([message]);
    const said = contentText(message.content);
    if (said !== '') text = said;
    if (message.toolCalls.length === 0) return { stopReason: 'end_turn', steps, text };

    let looping = false;
    for (let i = 0; i < message.toolCalls.length; i++) {
      const call = message.toolCalls[i] as ToolCall;
      if (signal.aborted) {
        await conversation.append(message.toolCalls.slice(i).map(interruptedResult));
        return { stopReason: 'interrupted', steps, text };
      }
      const verdict = options.approve?.(call);
      if (verdict !== undefined && verdict !== 'run' && (await verdict) === 'park') {
        return { stopReason: 'awaiting_approval', steps, text };
      }
      events.publish(agentName, { type: 'tool.call', toolCall: call });
      const result = await executeTool(options.tools, call, context);
      const resultText = contentText(result.content);
      events.publish(agentName, {
        type: 'tool.result',
        toolCallId: call.id,
        toolName: call.name,
        isError: result.isError === true,
        text: resultText,
      });
      await conversation.append([result]);
      const { failures } = options;
      if (
        failures !== undefined &&
        failures.record(call, result.isError === true, resultText) >= failures.max
      ) {
        looping = true;
      }
    }
    if (looping) return { stopReason: 'repeated_failure', steps, text };
  }
}

/**
 * One model call inside the member's budget: compacts first when the request would pass it, and
 * answers a context-overflow refusal with one compaction and one retry. `undefined`: interrupted.
 */
async function callWithinBudget(
  options: RunTurnOptions,
  step: number,
): Promise<AssistantMessage | undefined> {
  const { budget, signal } = options;
  if (budget === undefined) return callModel(options, step);
  try {
    await budget.fit(signal);
  } catch (error) {
    if (signal.aborted) return undefined;
    throw error;
  }
  let bytes = budget.requestBytes();
  let message: AssistantMessage | undefined;
  try {
    message = await callModel(options, step);
  } catch (error) {
    if (!TeamError.hasCode(error, 'MODEL_CONTEXT_OVERFLOW') || signal.aborted) throw error;
    let compacted: boolean;
    try {
      compacted = await budget.overflowed(bytes, signal);
    } catch (failure) {
      if (signal.aborted) return undefined;
      throw failure;
    }
    if (!compacted) throw error;
    bytes = budget.requestBytes();
    message = await callModel(options, step);
  }
  if (message !== undefined) budget.observe(bytes, message.usage);
  return message;
}

async function callModel(
  options: RunTurnOptions,
  step: number,
): Promise<AssistantMessage | undefined> {
  const { agentName, events, signal } = options;
  try {
    const stream = options.model.stream({
      system: options.system,
      messages: [...options.conversation.messages],
      tools: options.tools.definitions,
      signal,
      agentName,
      ...(options.promptCacheKey === undefined ? {} : { promptCacheKey: options.promptCacheKey }),
    });
    for await (const event of stream) {
      if (signal.aborted) return undefined;
      switch (event.type) {
        case 'text-delta':
          events.publish(agentName, { type: 'model.text-delta', text: event.text });
          break;
        case 'reasoning-delta':
          events.publish(agentName, { type: 'model.reasoning-delta', text: event.text });
          break;
        case 'finish': {
          events.publish(agentName, { type: 'model.step', step, usage: event.usage });
          const { source: _source, ...rest } = event.message;
          return { ...rest, usage: event.usage, stopReason: event.stopReason };
        }
        default:
          break;
      }
    }
  } catch (error) {
    if (signal.aborted) return undefined;
    throw error;
  }
  if (signal.aborted) return undefined;
  throw new TeamError('MODEL_PROTOCOL', `the model stream of ${agentName} ended without a finish`);
}

/** Runs one call with its `tool.call` and `tool.result` events; the result is not yet recorded. */
export async function runToolCall(
  tools: ToolSet,
  call: ToolCall,
  context: ToolContext,
  events: EventSink,
  agentName: string,
): Promise<ToolResultMessage> {
  events.publish(agentName, { type: 'tool.call', toolCall: call });
  const result = await executeTool(tools, call, context);
  events.publish(agentName, {
    type: 'tool.result',
    toolCallId: call.id,
    toolName: call.name,
    isError: result.isError === true,
    text: contentText(result.content),
  });
  return result;
}

/** A call's result saying it was not run, and why (an error result: the model reads it so). */
export function notRunResult(call: ToolCall, why: string): ToolResultMessage {
  return {
    role: 'tool',
    toolCallId: call.id,
    toolName: call.name,
    content: textContent(why),
    isError: true,
  };
}

/** A call's result for a call cut off by an interrupt: its outcome is unknown. */
export function interruptedResult(call: ToolCall): ToolResultMessage {
  return {
    role: 'tool',
    toolCallId: call.id,
    toolName: call.name,
    content: textContent(INTERRUPTED_TOOL_RESULT),
    isError: true,
  };
}

/** Renders a tool's return value for the model: strings as-is, anything else compact JSON. */
export function renderToolResult(value: unknown): string {
  if (typeof value === 'string') return value;
  if (value === undefined) return '{"ok":true}';
  return JSON.stringify(value) ?? 'null';
}

/** Renders a failure for the model: `{"error":{"code","message","details"?}}`. */
export function renderToolError(error: unknown): string {
  const team = TeamError.isInstance(error)
    ? error
    : new TeamError('TOOL_FAILED', error instanceof Error ? error.message : String(error));
  return JSON.stringify({
    error: {
      code: team.code,
      message: team.message,
      ...(team.details ? { details: team.details } : {}),
    },
  });
}

async function executeTool(
  tools: ToolSet,
  call: ToolCall,
  context: ToolContext,
): Promise<ToolResultMessage> {
  const base = { role: 'tool' as const, toolCallId: call.id, toolName: call.name };
  const fail = (error: unknown): ToolResultMessage => ({
    ...base,
    content: textContent(renderToolError(error)),
    isError: true,
  });
  const tool = tools.byName.get(call.name);
  if (tool === undefined) {
    return fail(
      new TeamError('UNKNOWN_TOOL', `no tool named "${call.name}"`, {
        details: { tool: call.name, available: [...tools.byName.keys()] },
      }),
    );
  }
  const parsed = tool.inputSchema.safeParse(call.input);
  if (!parsed.success) {
    return fail(
      new TeamError(
        'INVALID_ARGUMENT',
        `invalid input for ${call.name}: ${z.prettifyError(parsed.error)}`,
      ),
    );
  }
  const { signal } = context;
  let detach = () => {};
  const aborted = new Promise<typeof ABORTED>((resolve) => {
    if (signal.aborted) resolve(ABORTED);
    const onAbort = () => resolve(ABORTED);
    signal.addEventListener('abort', onAbort, { once: true });
    detach = () => signal.removeEventListener('abort', onAbort);
  });
  try {
    const running = Promise.resolve().then(() => tool.execute(parsed.data, context));
    // A tool that ignores the signal may still settle later; its outcome is then unknown.
    running.catch(() => undefined);
    const value = await Promise.race([running, aborted]);
    if (value === ABORTED) return interruptedResult(call);
    return { ...base, content: textContent(renderToolResult(value)) };
  } catch (error) {
    if (signal.aborted) return interruptedResult(call);
    return fail(error);
  } finally {
    detach();
  }
}

const ABORTED: unique symbol = Symbol('aborted');
