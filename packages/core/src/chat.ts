import { z } from 'zod';
import { ContentBlock } from './content.js';
import { TeamError } from './errors.js';
import { compiledSchema, TRANSCRIPT_SCHEMA_VERSION } from './records.js';

/** A tool call requested by the model. `input` is the parsed JSON arguments. */
export const ToolCall = z.object({
  /** Pairs the call with its `tool` result message; unique within a conversation. */
  id: z.string().min(1),
  /** The name of a tool offered in the request. */
  name: z.string().min(1),
  /** The parsed arguments; the tool's schema checks them before it runs. */
  input: z.unknown(),
});
export type ToolCall = z.infer<typeof ToolCall>;

/** Token counts of one model call. Cache counts are included in `inputTokens` where known. */
export const Usage = z.object({
  /** Prompt tokens, cached ones included where the provider reports them. */
  inputTokens: z.number().int().min(0),
  /** Generated tokens, reasoning included. */
  outputTokens: z.number().int().min(0),
  /** Prompt tokens served from the provider's prompt cache. */
  cacheReadTokens: z.number().int().min(0).optional(),
  /** Prompt tokens written into the provider's prompt cache. */
  cacheWriteTokens: z.number().int().min(0).optional(),
  /** The part of `outputTokens` spent on reasoning, where the provider reports it. */
  reasoningTokens: z.number().int().min(0).optional(),
});
export type Usage = z.infer<typeof Usage>;

/** What triggered a compaction: the budget, or the provider refusing a request as too long. */
export type CompactionReason = 'budget' | 'overflow';
/** Schema of {@link CompactionReason}. Annotated so the docs show the value union. */
export const CompactionReason: z.ZodEnum<Record<CompactionReason, CompactionReason>> = z.enum([
  'budget',
  'overflow',
] as const satisfies readonly CompactionReason[]);

/** The most retained messages one compaction names. */
export const COMPACTION_RETAINED_MAX = 256;
/** The most team-message ids one compaction lists as delivered. */
export const COMPACTION_DELIVERED_MAX = 100_000;

/**
 * A compaction: the user message carrying it is the summary that replaces part of the context. It
 * is one transcript entry, so it is written whole or not at all. Reading a transcript applies it
 * to the context built so far, which must be `contextLength` messages long:
 * `context[0, head) + [summary] + retained + context[head + replaced, end)`. See
 * `transcriptContext`.
 */
export const CompactionSource = z.object({
  /** A compaction summary. */
  kind: z.literal('compaction'),
  /** The compaction's id (unique in the team). */
  compactionId: z.string().min(1),
  /** Length of the context the compaction applies to; another length means a corrupt transcript. */
  contextLength: z.number().int().min(1),
  /** Messages at the start kept untouched (the stable prefix after the system prompt). */
  head: z.number().int().min(0),
  /** Messages after the head that the summary replaces (earlier summaries included). */
  replaced: z.number().int().min(1),
  /**
   * Offsets (from `head`, ascending) of replaced messages kept verbatim after the summary: the
   * prompts of tasks the member still works on.
   */
  retained: z.array(z.number().int().min(0)).max(COMPACTION_RETAINED_MAX),
  /**
   * Ids of the team messages the summary replaced. They stay delivered: a redelivery of one after
   * a crash is recognised and skipped as before the compaction.
   */
  deliveredIds: z.array(z.string().min(1)).max(COMPACTION_DELIVERED_MAX),
  /** What triggered it: the budget, or the provider refusing a request as too long. */
  reason: CompactionReason,
  /** The summary policy's name. */
  policy: z.string().min(1).max(200),
  /** Prompt tokens of the request before the compaction. */
  tokensBefore: z.number().int().min(0),
  /** Prompt tokens of the same request after it. */
  tokensAfter: z.number().int().min(0),
  /** True when no usage was known yet, so the token counts are estimated from bytes only. */
  estimated: z.boolean(),
  /** How long producing the summary took (ms). */
  durationMs: z.number().min(0),
});
export type CompactionSource = z.infer<typeof CompactionSource>;

/** Where a user-role message came from. Team mail carries its message id for de-duplication. */
export const MessageSource = z.discriminatedUnion('kind', [
  z.object({
    /** Team mail delivered into this conversation. */
    kind: z.literal('team-message'),
    /** The queued message's id: a redelivery after a crash is recognised by it and skipped. */
    messageId: z.string().min(1),
    /** The sender's member id. */
    senderId: z.string().min(1),
    /** The sender's name when the message was sent. */
    senderName: z.string().min(1),
  }),
  z.object({
    /** The runtime's prompt for a task the member claimed or resumed. */
    kind: z.literal('task-claim'),
    /** The task concerned. */
    taskId: z.string().min(1),
  }),
  z.object({
    /** Input the host sent (e.g. `promptLead`). */
    kind: z.literal('host'),
  }),
  CompactionSource,
]);
export type MessageSource = z.infer<typeof MessageSource>;

/** A user-role entry: host input, team mail or a task-claim prompt, told apart by `source`. */
export const UserMessage = z.object({
  /** Discriminates {@link ChatMessage}. */
  role: z.literal('user'),
  /** The message body; blocks of unknown types are kept as they are. */
  content: z.array(ContentBlock),
  /** Where the message came from; absent for plain host input. */
  source: MessageSource.optional(),
});
export type UserMessage = z.infer<typeof UserMessage>;

/**
 * Why a model call ended: `end_turn` (the model is done), `tool_calls` (it wants tool results),
 * `max_tokens` (cut off at the output limit), `aborted` (the caller's signal) or `other`
 * (anything the provider reports that maps to none of these).
 */
export type StopReason = 'end_turn' | 'tool_calls' | 'max_tokens' | 'aborted' | 'other';
/** Schema of {@link StopReason}. Annotated so the docs show the value union. */
export const StopReason: z.ZodEnum<Record<StopReason, StopReason>> = z.enum([
  'end_turn',
  'tool_calls',
  'max_tokens',
  'aborted',
  'other',
] as const satisfies readonly StopReason[]);

/** One complete model answer, as the model adapter's `finish` event carries it. */
export const AssistantMessage = z.object({
  /** Discriminates {@link ChatMessage}. */
  role: z.literal('assistant'),
  /** Text and reasoning blocks, kept verbatim so they can be sent back to the provider. */
  content: z.array(ContentBlock),
  /** The tools the model asked to run; each is answered by one `tool` message. */
  toolCalls: z.array(ToolCall),
  /** Token counts of the call that produced this message. */
  usage: Usage.optional(),
  /** Why the model call ended. */
  stopReason: StopReason.optional(),
  /** Set when this assistant message is a protocol rendering of team mail (tool-call format). */
  source: MessageSource.optional(),
});
export type AssistantMessage = z.infer<typeof AssistantMessage>;

/** The answer to one tool call, shown to the model on its next step. */
export const ToolResultMessage = z.object({
  /** Discriminates {@link ChatMessage}. */
  role: z.literal('tool'),
  /** The `id` of the {@link ToolCall} this answers. */
  toolCallId: z.string().min(1),
  /** The tool that ran, kept for providers that want the name with the result. */
  toolName: z.string().min(1),
  /** The result as the model reads it (compact JSON, or the tool's string). */
  content: z.array(ContentBlock),
  /** True when the tool failed; `content` then holds the error. */
  isError: z.boolean().optional(),
  /** Set when this result is a protocol rendering of team mail (tool-call format). */
  source: MessageSource.optional(),
});
export type ToolResultMessage = z.infer<typeof ToolResultMessage>;

/** One conversation entry, discriminated on `role`: what transcripts store and models read. */
export const ChatMessage = z.discriminatedUnion('role', [
  UserMessage,
  AssistantMessage,
  ToolResultMessage,
]);
export type ChatMessage = z.infer<typeof ChatMessage>;

/** One line of a member's transcript. */
export const TranscriptEntry = z.object({
  /** The schema version the entry was written with; newer ones are refused, not misread. */
  schemaVersion: z.literal(TRANSCRIPT_SCHEMA_VERSION),
  /** Milliseconds since the Unix epoch. */
  at: z.number(),
  /** The conversation entry itself. */
  message: ChatMessage,
});
export type TranscriptEntry = z.infer<typeof TranscriptEntry>;

/** {@link TranscriptEntry}, compiled (see `compiledSchema` in `records.ts`). */
export const compiledTranscriptEntry: () => typeof TranscriptEntry =
  compiledSchema(TranscriptEntry);

/** Validates an untrusted transcript line (newer schema versions are refused clearly). */
export function parseTranscriptEntry(value: unknown): TranscriptEntry {
  const parsed = compiledTranscriptEntry().safeParse(value);
  if (parsed.success) return parsed.data;
  checkTranscriptVersion(value);
  throw new TeamError(
    'INVALID_RECORD',
    `invalid transcript entry: ${z.prettifyError(parsed.error)}`,
    {
      cause: parsed.error,
    },
  );
}

/** The text an interrupted tool call is answered with, so the transcript stays consistent. */
export const INTERRUPTED_TOOL_RESULT =
  'Tool call interrupted before it finished; its outcome is unknown. Check the state it may have changed before retrying.';

/** The text a tool call cut off by a process termination is answered with on recovery. */
export const TERMINATED_TOOL_RESULT =
  'Tool call interrupted by a process termination; its outcome is unknown. Check the state it may have changed before retrying.';

/** Refuses a transcript entry whose `schemaVersion` is missing or newer than this code reads. */
function checkTranscriptVersion(value: unknown): void {
  const version = (value as { schemaVersion?: unknown } | null)?.schemaVersion;
  if (typeof version !== 'number' || !Number.isInteger(version) || version < 1) {
    throw new TeamError(
      'INVALID_RECORD',
      `transcript entry has no valid schemaVersion (got ${String(version)})`,
    );
  }
  if (version > TRANSCRIPT_SCHEMA_VERSION) {
    throw new TeamError(
      'UNSUPPORTED_SCHEMA_VERSION',
      `transcript entry schemaVersion ${version} is newer than this version of teamwire reads (${TRANSCRIPT_SCHEMA_VERSION}); upgrade @teamwire/core`,
      { details: { schemaVersion: version, supported: TRANSCRIPT_SCHEMA_VERSION } },
    );
  }
}
