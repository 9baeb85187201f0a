import { z } from 'zod';
import { ContentBlock } from './content.js';
import { TeamError } from './errors.js';
import { checkSchemaVersion, SCHEMA_VERSION } from './records.js';

/** A tool call requested by the model. `input` is the parsed JSON arguments. */
export const ToolCall = z.object({
  id: z.string().min(1),
  name: z.string().min(1),
  input: z.unknown(),
});
export type ToolCall = z.infer<typeof ToolCall>;

/** Token counts of one model call. Cache counts are included in `inputTokens` where known. */
export const Usage = z.object({
  inputTokens: z.number().int().min(0),
  outputTokens: z.number().int().min(0),
  /** Prompt tokens served from the provider's prompt cache. */
  cacheReadTokens: z.number().int().min(0).optional(),
  /** Prompt tokens written into the provider's prompt cache. */
  cacheWriteTokens: z.number().int().min(0).optional(),
  reasoningTokens: z.number().int().min(0).optional(),
});
export type Usage = z.infer<typeof Usage>;

/** Where a user-role message came from. Team mail carries its message id for de-duplication. */
export const MessageSource = z.discriminatedUnion('kind', [
  z.object({
    kind: z.literal('team-message'),
    messageId: z.string().min(1),
    senderId: z.string().min(1),
    senderName: z.string().min(1),
  }),
  z.object({ kind: z.literal('task-claim'), taskId: z.string().min(1) }),
  z.object({ kind: z.literal('host') }),
]);
export type MessageSource = z.infer<typeof MessageSource>;

export const UserMessage = z.object({
  role: z.literal('user'),
  content: z.array(ContentBlock),
  source: MessageSource.optional(),
});
export type UserMessage = z.infer<typeof UserMessage>;

export const StopReason = z.enum(['end_turn', 'tool_calls', 'max_tokens', 'aborted', 'other']);
export type StopReason = z.infer<typeof StopReason>;

export const AssistantMessage = z.object({
  role: z.literal('assistant'),
  content: z.array(ContentBlock),
  toolCalls: z.array(ToolCall),
  usage: Usage.optional(),
  stopReason: StopReason.optional(),
  /** Set when this assistant message is a protocol rendering of team mail (tool-call format). */
  source: MessageSource.optional(),
});
export type AssistantMessage = z.infer<typeof AssistantMessage>;

export const ToolResultMessage = z.object({
  role: z.literal('tool'),
  toolCallId: z.string().min(1),
  toolName: z.string().min(1),
  content: z.array(ContentBlock),
  isError: z.boolean().optional(),
  source: MessageSource.optional(),
});
export type ToolResultMessage = z.infer<typeof ToolResultMessage>;

export const ChatMessage = z.discriminatedUnion('role', [
  UserMessage,
  AssistantMessage,
  ToolResultMessage,
]);
export type ChatMessage = z.infer<typeof ChatMessage>;

/** One line of a member's transcript. */
export const TranscriptEntry = z.object({
  schemaVersion: z.literal(SCHEMA_VERSION),
  /** Milliseconds since the Unix epoch. */
  at: z.number(),
  message: ChatMessage,
});
export type TranscriptEntry = z.infer<typeof TranscriptEntry>;

/** Validates an untrusted transcript line (newer schema versions are refused clearly). */
export function parseTranscriptEntry(value: unknown): TranscriptEntry {
  checkSchemaVersion(value);
  const parsed = TranscriptEntry.safeParse(value);
  if (!parsed.success) {
    throw new TeamError(
      'INVALID_RECORD',
      `invalid transcript entry: ${z.prettifyError(parsed.error)}`,
      {
        cause: parsed.error,
      },
    );
  }
  return parsed.data;
}

/** The text an interrupted tool call is answered with, so the transcript stays consistent. */
export const INTERRUPTED_TOOL_RESULT =
  'Tool call interrupted before it finished; its outcome is unknown. Check the state it may have changed before retrying.';

/** The text a tool call cut off by a process termination is answered with on recovery. */
export const TERMINATED_TOOL_RESULT =
  'Tool call interrupted by a process termination; its outcome is unknown. Check the state it may have changed before retrying.';
