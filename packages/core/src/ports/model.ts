import type { AssistantMessage, ChatMessage, StopReason, ToolCall, Usage } from '../chat.js';

/** A system prompt block. `cacheable` marks the end of a stable prefix worth caching. */
export interface SystemBlock {
  /** The block's text. */
  text: string;
  /** Marks the end of a prefix worth caching; adapters without prompt caching ignore it. */
  cacheable?: boolean;
}

/** A tool offered to the model. `inputSchema` is a JSON Schema object. */
export interface ToolDefinition {
  /** The name the model calls the tool by; unique within one request. */
  name: string;
  /** What the tool does and when to use it, for the model. */
  description: string;
  /** The JSON Schema of the tool's arguments. */
  inputSchema: Record<string, unknown>;
}

/** One model call. */
export interface ModelRequest {
  /** The system prompt, in blocks; the stable ones first so a provider can cache them. */
  system: readonly SystemBlock[];
  /** The conversation so far, oldest first. */
  messages: readonly ChatMessage[];
  /** The tools the model may call in this step. */
  tools: readonly ToolDefinition[];
  /** Aborting closes the underlying stream at once; the stream then throws `ABORTED`. */
  signal?: AbortSignal;
  /** A stable routing key per conversation and agent, sent where the provider takes one. */
  promptCacheKey?: string;
  /** A cap on generated tokens; the adapter's default when absent. */
  maxOutputTokens?: number;
  /** The calling agent's name, for adapters that route or script per agent. */
  agentName?: string;
}

/**
 * Events of one model call, in order. The stream always ends with exactly one `finish` event
 * carrying the whole assistant message, or throws a `TeamError` (`MODEL_*` or `ABORTED`).
 */
export type ModelStreamEvent =
  | {
      /** Streamed assistant text. */
      type: 'text-delta';
      /** The next piece of text. */
      text: string;
    }
  | {
      /** Streamed reasoning. */
      type: 'reasoning-delta';
      /** The next piece of reasoning. */
      text: string;
    }
  | {
      /** The model began a tool call. */
      type: 'tool-call-start';
      /** The call's id, shared by its later events. */
      id: string;
      /** The tool called. */
      name: string;
    }
  | {
      /** More of a tool call's JSON arguments. */
      type: 'tool-call-delta';
      /** The call the arguments belong to. */
      id: string;
      /** The next piece of the raw JSON. */
      argsDelta: string;
    }
  | {
      /** A tool call is complete, its arguments parsed. */
      type: 'tool-call';
      /** The whole call. */
      toolCall: ToolCall;
    }
  | {
      /** The call ended; always the last event. */
      type: 'finish';
      /** The whole assistant message, as the transcript will store it. */
      message: AssistantMessage;
      /** The call's token counts. */
      usage: Usage;
      /** Why the call ended. */
      stopReason: StopReason;
    };

/**
 * The port every model implementation fills: real LLM APIs (`@teamwire/host-adapters`), the
 * scripted model of `@teamwire/core/testing`, or an offline policy.
 */
export interface ModelAdapter {
  /** The version of this port the adapter implements; checked when a team opens. */
  readonly specificationVersion: 'v1';
  /** e.g. `openai`, `anthropic`, `scripted`. */
  readonly provider: string;
  /** The model the adapter calls, for display and audit (stored with each member). */
  readonly modelId: string;
  /** Starts one call. Network and parse failures surface as thrown `TeamError`s from iteration. */
  stream(request: ModelRequest): AsyncIterable<ModelStreamEvent>;
}
