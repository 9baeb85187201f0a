import type { AssistantMessage, ChatMessage, StopReason, ToolCall, Usage } from '../chat.js';

/** A system prompt block. `cacheable` marks the end of a stable prefix worth caching. */
export interface SystemBlock {
  text: string;
  cacheable?: boolean;
}

/** A tool offered to the model. `inputSchema` is a JSON Schema object. */
export interface ToolDefinition {
  name: string;
  description: string;
  inputSchema: Record<string, unknown>;
}

/** One model call. */
export interface ModelRequest {
  system: readonly SystemBlock[];
  messages: readonly ChatMessage[];
  tools: readonly ToolDefinition[];
  /** Aborting closes the underlying stream at once; the stream then throws `ABORTED`. */
  signal?: AbortSignal;
  /** A stable routing key per conversation and agent, sent where the provider takes one. */
  promptCacheKey?: string;
  maxOutputTokens?: number;
  /** The calling agent's name, for adapters that route or script per agent. */
  agentName?: string;
}

/**
 * Events of one model call, in order. The stream always ends with exactly one `finish` event
 * carrying the whole assistant message, or throws a `TeamError` (`MODEL_*` or `ABORTED`).
 */
export type ModelStreamEvent =
  | { type: 'text-delta'; text: string }
  | { type: 'reasoning-delta'; text: string }
  | { type: 'tool-call-start'; id: string; name: string }
  | { type: 'tool-call-delta'; id: string; argsDelta: string }
  | { type: 'tool-call'; toolCall: ToolCall }
  | { type: 'finish'; message: AssistantMessage; usage: Usage; stopReason: StopReason };

/**
 * The port every model implementation fills: real LLM APIs (`@teamwire/host-adapters`), the
 * scripted model of `@teamwire/core/testing`, or an offline policy.
 */
export interface ModelAdapter {
  readonly specificationVersion: 'v1';
  /** e.g. `openai`, `anthropic`, `scripted`. */
  readonly provider: string;
  readonly modelId: string;
  /** Starts one call. Network and parse failures surface as thrown `TeamError`s from iteration. */
  stream(request: ModelRequest): AsyncIterable<ModelStreamEvent>;
}
