import { z } from 'zod';
import { ContentBlock } from './content.js';
import { TeamError } from './errors.js';
import {
  MEMBER_NAME_MAX,
  TASK_DESCRIPTION_MAX,
  TASK_ID_PATTERN,
  TASK_SUBJECT_MAX,
} from './limits.js';
import { copyValidRecord } from './record-copy.js';
import {
  MEMBER_CONTEXTS,
  MEMBER_PHASES,
  MESSAGE_DELIVERIES,
  MESSAGE_KINDS,
  SCHEMA_VERSION,
  TASK_STATUSES,
} from './record-values.js';

export { MEMBER_NAME_MAX, SCHEMA_VERSION, TASK_ID_PATTERN };

/** Member names: lowercase words joined by single hyphens, at most 64 characters. */
export const MEMBER_NAME_PATTERN = /^[a-z0-9]+(-[a-z0-9]+)*$/;
/** The name of the team lead; reserved (any case) for it alone. */
export const LEAD_NAME = 'lead';

export const MemberPhase = z.enum(MEMBER_PHASES);
export type MemberPhase = z.infer<typeof MemberPhase>;

export const MemberContext = z.enum(MEMBER_CONTEXTS);
export type MemberContext = z.infer<typeof MemberContext>;

/** A member of a team: the lead or a teammate. Runtime status is derived, never stored here. */
export const Member = z.object({
  /** ulid; for the lead, the team id. */
  id: z.string().min(1),
  /** Immutable, unique within the team for its whole life. */
  name: z.string().min(1).max(MEMBER_NAME_MAX),
  description: z.string(),
  /** The agent type (agent definition) the member runs as; the waker rebuilds it from this. */
  agentType: z.string().min(1),
  /** The model provider/spec the member was spawned with, for display and audit. */
  provider: z.string(),
  /** `fresh`: starts with an empty conversation; `fork`: starts from a copy of the lead's. */
  context: MemberContext,
  phase: MemberPhase,
  color: z.string().optional(),
  /** Why the member failed (phase `failed`). */
  error: z.string().optional(),
});
export type Member = z.infer<typeof Member>;

export const TaskStatus = z.enum(TASK_STATUSES);
export type TaskStatus = z.infer<typeof TaskStatus>;

/** A task on the board, as a whole snapshot. */
export const Task = z.object({
  id: z.string().regex(TASK_ID_PATTERN),
  /** Compare-and-set value: 1 at creation, +1 per change. */
  revision: z.number().int().min(1),
  subject: z.string().min(1).max(TASK_SUBJECT_MAX),
  description: z.string().min(1).max(TASK_DESCRIPTION_MAX),
  status: TaskStatus,
  creatorId: z.string().min(1),
  ownerId: z.string().min(1).optional(),
  blockedBy: z.array(z.string().regex(TASK_ID_PATTERN)),
  /** Normalized relative path prefixes; advisory. */
  writeScopes: z.array(z.string().min(1)),
});
export type Task = z.infer<typeof Task>;

/**
 * What a message is. Control kinds are set by the runtime, never inferred from text: a peer's
 * text that looks like a shutdown request is still a `message`.
 */
export const MessageKind = z.enum(MESSAGE_KINDS);
export type MessageKind = z.infer<typeof MessageKind>;

/** `wakeup` starts a turn of an idle target; `quiet` waits for its next step or turn. */
export const MessageDelivery = z.enum(MESSAGE_DELIVERIES);
export type MessageDelivery = z.infer<typeof MessageDelivery>;

export const QueuedMessage = z.object({
  /** ulid */
  id: z.string().min(1),
  senderId: z.string().min(1),
  senderName: z.string().min(1),
  targetId: z.string().min(1),
  kind: MessageKind,
  delivery: MessageDelivery,
  content: z.array(ContentBlock),
  /** Optional one-line preview shown in envelopes and UIs. */
  summary: z.string().optional(),
  /** For `task_assignment`: the task concerned. */
  taskId: z.string().optional(),
});
export type QueuedMessage = z.infer<typeof QueuedMessage>;

const base = {
  /** Position in the team log: 1, 2, 3, ... with no gaps. */
  seq: z.number().int().min(1),
  /** Milliseconds since the Unix epoch, from the team's Clock. */
  at: z.number(),
  teamId: z.string().min(1),
  schemaVersion: z.literal(SCHEMA_VERSION),
};

export const MemberRecord = z.object({ ...base, type: z.literal('member'), member: Member });
export type MemberRecord = z.infer<typeof MemberRecord>;

export const TaskRecord = z.object({ ...base, type: z.literal('task'), task: Task });
export type TaskRecord = z.infer<typeof TaskRecord>;

export const MessageQueuedRecord = z.object({
  ...base,
  type: z.literal('message.queued'),
  message: QueuedMessage,
});
export type MessageQueuedRecord = z.infer<typeof MessageQueuedRecord>;

/** Written only after the target's transcript durably holds the message. */
export const MessageDeliveredRecord = z.object({
  ...base,
  type: z.literal('message.delivered'),
  messageId: z.string().min(1),
  targetId: z.string().min(1),
});
export type MessageDeliveredRecord = z.infer<typeof MessageDeliveredRecord>;

export const TeamRecord = z.discriminatedUnion('type', [
  MemberRecord,
  TaskRecord,
  MessageQueuedRecord,
  MessageDeliveredRecord,
]);
export type TeamRecord = z.infer<typeof TeamRecord>;
export type TeamRecordType = TeamRecord['type'];

/**
 * Validates an untrusted value as a {@link TeamRecord} and returns a detached copy. A
 * `schemaVersion` newer than {@link SCHEMA_VERSION} is refused with `UNSUPPORTED_SCHEMA_VERSION`
 * before anything else is checked, so an old reader never misreads a newer log.
 */
export function parseTeamRecord(value: unknown): TeamRecord {
  const exact = fastCopy(value);
  if (exact) return exact;
  checkSchemaVersion(value);
  const parsed = TeamRecord.safeParse(value);
  if (!parsed.success) {
    const seq = (value as { seq?: unknown } | null)?.seq;
    throw new TeamError(
      'INVALID_RECORD',
      `invalid team record${typeof seq === 'number' ? ` at seq ${seq}` : ''}: ${z.prettifyError(parsed.error)}`,
      { cause: parsed.error, details: typeof seq === 'number' ? { seq } : undefined },
    );
  }
  return parsed.data;
}

/**
 * Schema-checks a record a command built from its input and returns the parsed copy, detached
 * from the caller's objects; a value the schema refuses is the caller's mistake, `INVALID_ARGUMENT`.
 */
export function checkRecordInput<R extends TeamRecord>(record: R): R {
  const exact = fastCopy(record);
  if (exact) return exact as R;
  const parsed = TeamRecord.safeParse(record);
  if (!parsed.success) {
    throw new TeamError('INVALID_ARGUMENT', `invalid input: ${z.prettifyError(parsed.error)}`, {
      cause: parsed.error,
    });
  }
  return parsed.data as R;
}

/**
 * The fast path of validation (see `record-copy.ts`): what the `TeamRecord` schema returns for
 * `value`, or `undefined` where zod must decide. The differential test of the two is what makes
 * this cast sound.
 */
function fastCopy(value: unknown): TeamRecord | undefined {
  return copyValidRecord(value) as TeamRecord | undefined;
}

/** Refuses a value whose `schemaVersion` is missing, not an integer, or unknown. */
export function checkSchemaVersion(value: unknown): void {
  const version = (value as { schemaVersion?: unknown } | null)?.schemaVersion;
  if (typeof version !== 'number' || !Number.isInteger(version) || version < 1) {
    throw new TeamError(
      'INVALID_RECORD',
      `record has no valid schemaVersion (got ${String(version)})`,
    );
  }
  if (version > SCHEMA_VERSION) {
    throw new TeamError(
      'UNSUPPORTED_SCHEMA_VERSION',
      `record schemaVersion ${version} is newer than this version of teamwire reads (${SCHEMA_VERSION}); upgrade @teamwire/core`,
      { details: { schemaVersion: version, supported: SCHEMA_VERSION } },
    );
  }
}
