import { z } from 'zod';
import { ContentBlock } from './content.js';
import { TeamError } from './errors.js';
import {
  MEMBER_NAME_MAX,
  TASK_DESCRIPTION_MAX,
  TASK_ID_PATTERN,
  TASK_SUBJECT_MAX,
} from './limits.js';
import {
  APPROVAL_DECISIONS,
  APPROVAL_INPUT_BYTES_MAX,
  APPROVAL_KINDS,
  APPROVAL_REASON_MAX,
  DEAD_LETTER_DETAIL_MAX,
  DEAD_LETTER_REASONS,
  GATE_NAMES,
  MEMBER_CONTEXTS,
  MEMBER_PHASES,
  MESSAGE_DELIVERIES,
  MESSAGE_KINDS,
  MESSAGE_KINDS_V3,
  PLAN_MAX,
  RECORD_SCHEMA_VERSIONS,
  SCHEMA_VERSION,
  TASK_STATUSES,
  TOOL_REF_MAX,
  TRACEPARENT_PATTERN,
  TRACESTATE_MAX,
  TRANSCRIPT_SCHEMA_VERSION,
  WORKSPACE_BASE_MAX,
  WORKSPACE_BRANCH_MAX,
  WORKSPACE_PATH_MAX,
} from './record-values.js';

export {
  APPROVAL_INPUT_BYTES_MAX,
  APPROVAL_REASON_MAX,
  DEAD_LETTER_DETAIL_MAX,
  MEMBER_NAME_MAX,
  PLAN_MAX,
  RECORD_SCHEMA_VERSIONS,
  SCHEMA_VERSION,
  TASK_ID_PATTERN,
  TRACEPARENT_PATTERN,
  TRACESTATE_MAX,
  TRANSCRIPT_SCHEMA_VERSION,
};

/** Member names: lowercase words joined by single hyphens, at most 64 characters. */
export const MEMBER_NAME_PATTERN = /^[a-z0-9]+(-[a-z0-9]+)*$/;
/** The name of the team lead; reserved (any case) for it alone. */
export const LEAD_NAME = 'lead';

// The enum schemas are annotated with `Record<T, T>` so the docs show the value union instead of
// an object of values; `satisfies` and the annotation keep the lists in `record-values.ts` and the
// unions equal both ways.

/** A member's lifecycle: `provisioning` until its first transcript write, then `active`, and
 * finally `failed` (spawn or revival failed) or `retired` (shut down). */
export type MemberPhase = 'provisioning' | 'active' | 'failed' | 'retired';
/** Schema of {@link MemberPhase}. */
export const MemberPhase: z.ZodEnum<Record<MemberPhase, MemberPhase>> = z.enum(
  MEMBER_PHASES satisfies readonly MemberPhase[],
);

/** How a member's conversation starts: `fresh` (empty) or `fork` (a copy of the lead's). */
export type MemberContext = 'fresh' | 'fork';
/** Schema of {@link MemberContext}. */
export const MemberContext: z.ZodEnum<Record<MemberContext, MemberContext>> = z.enum(
  MEMBER_CONTEXTS satisfies readonly MemberContext[],
);

/**
 * Where a member works, as its member record keeps it durably, so that a revived member (waker,
 * resume after a crash) gets the very same directory back. Recorded with the member's move to
 * `active` when its agent type asks for isolation; never changed after. The `WorkspaceProvider`
 * port returns it.
 */
export const MemberWorkspace = z.object({
  /** Absolute path of the member's working directory. */
  path: z.string().min(1).max(WORKSPACE_PATH_MAX),
  /** The branch checked out there, for an isolated member. */
  branch: z.string().min(1).max(WORKSPACE_BRANCH_MAX).optional(),
  /** The commit the branch started from. */
  base: z.string().min(1).max(WORKSPACE_BASE_MAX).optional(),
});
/** Where a member works; see {@link MemberWorkspace}. */
export type MemberWorkspace = z.infer<typeof MemberWorkspace>;

/** A member of a team: the lead or a teammate. Runtime status is derived, never stored here. */
export const Member = z.object({
  /** ulid; for the lead, the team id. */
  id: z.string().min(1),
  /** Immutable, unique within the team for its whole life. */
  name: z.string().min(1).max(MEMBER_NAME_MAX),
  /** What the member is for, as the lead described it at spawn ('' when none). */
  description: z.string(),
  /** The agent type (agent definition) the member runs as; the waker rebuilds it from this. */
  agentType: z.string().min(1),
  /** The model provider/spec the member was spawned with, for display and audit. */
  provider: z.string(),
  /** `fresh`: starts with an empty conversation; `fork`: starts from a copy of the lead's. */
  context: MemberContext,
  /** Where the member is in its lifecycle. */
  phase: MemberPhase,
  /** A display color for UIs and envelopes. */
  color: z.string().optional(),
  /** Why the member failed (phase `failed`). */
  error: z.string().optional(),
  /** Where the member works, for a member of an isolated agent type (see {@link MemberWorkspace}). */
  workspace: MemberWorkspace.optional(),
});
export type Member = z.infer<typeof Member>;

/**
 * Where a task stands: `pending` (open, maybe blocked), `in_progress` (owned and worked on),
 * `completed`, or `deleted` (a tombstone that keeps its id taken).
 */
export type TaskStatus = 'pending' | 'in_progress' | 'completed' | 'deleted';
/** Schema of {@link TaskStatus}. */
export const TaskStatus: z.ZodEnum<Record<TaskStatus, TaskStatus>> = z.enum(
  TASK_STATUSES satisfies readonly TaskStatus[],
);

/** A task on the board, as a whole snapshot. */
export const Task = z.object({
  /** `task-<n>`, numbered from 1 in creation order; never reused, even after a delete. */
  id: z.string().regex(TASK_ID_PATTERN),
  /** Compare-and-set value: 1 at creation, +1 per change. */
  revision: z.number().int().min(1),
  /** A short title. */
  subject: z.string().min(1).max(TASK_SUBJECT_MAX),
  /** What to do and how to tell it is done. */
  description: z.string().min(1).max(TASK_DESCRIPTION_MAX),
  /** Where the task stands. */
  status: TaskStatus,
  /** The member id of the member that created it. */
  creatorId: z.string().min(1),
  /** The member id of the member working on it (or that completed it); absent when unowned. */
  ownerId: z.string().min(1).optional(),
  /** Ids of the tasks that must be completed before this one is ready. */
  blockedBy: z.array(z.string().regex(TASK_ID_PATTERN)),
  /** Normalized relative path prefixes; advisory. */
  writeScopes: z.array(z.string().min(1)),
});
export type Task = z.infer<typeof Task>;

/**
 * What a message is. Control kinds are set by the runtime, never inferred from text: a peer's
 * text that looks like a shutdown request is still a `message`. `approval_request` asks its
 * target to decide an approval, `approval_decision` tells the requester the decision, and
 * `gate_feedback` carries a quality gate's refusal (schema version 3 introduced these three).
 */
export type MessageKind =
  | 'message'
  | 'idle_notification'
  | 'shutdown_request'
  | 'task_assignment'
  | 'approval_request'
  | 'approval_decision'
  | 'gate_feedback';
/** Schema of {@link MessageKind}. */
export const MessageKind: z.ZodEnum<Record<MessageKind, MessageKind>> = z.enum(
  MESSAGE_KINDS satisfies readonly MessageKind[],
);

/** `wakeup` starts a turn of an idle target; `quiet` waits for its next step or turn. */
export type MessageDelivery = 'quiet' | 'wakeup';
/** Schema of {@link MessageDelivery}. */
export const MessageDelivery: z.ZodEnum<Record<MessageDelivery, MessageDelivery>> = z.enum(
  MESSAGE_DELIVERIES satisfies readonly MessageDelivery[],
);

/**
 * The W3C trace context of the turn that queued a message (schema version 3): a tracing layer
 * links the receiving turn to it, so one trace follows the mail across members and processes.
 * Written only when the team was opened with a `traceContext` source.
 */
export const MessageTrace = z.object({
  /** The sending span, as a W3C `traceparent` header value (version `00`). */
  traceparent: z.string().regex(TRACEPARENT_PATTERN),
  /** Vendor trace state, as a W3C `tracestate` header value. */
  tracestate: z.string().max(TRACESTATE_MAX).optional(),
});
/** The trace context a message carries; see {@link MessageTrace}. */
export type MessageTrace = z.infer<typeof MessageTrace>;

/** One piece of team mail, as queued: immutable once written; its delivery is a separate record. */
export const QueuedMessage = z.object({
  /** ulid */
  id: z.string().min(1),
  /** The sender's member id. */
  senderId: z.string().min(1),
  /** The sender's name, kept so the envelope stays the same after the sender retires. */
  senderName: z.string().min(1),
  /** The member id of the recipient. */
  targetId: z.string().min(1),
  /** What the message is; set by the runtime, never read from the body. */
  kind: MessageKind,
  /** Whether the message wakes an idle target. */
  delivery: MessageDelivery,
  /** The message body. */
  content: z.array(ContentBlock),
  /** Optional one-line preview shown in envelopes and UIs. */
  summary: z.string().optional(),
  /** For `task_assignment`: the task concerned. */
  taskId: z.string().optional(),
  /** For `approval_request` and `approval_decision`: the approval concerned (version 3). */
  approvalId: z.string().min(1).max(TOOL_REF_MAX).optional(),
  /** The trace context of the turn that queued it (version 3; see {@link MessageTrace}). */
  trace: MessageTrace.optional(),
});
export type QueuedMessage = z.infer<typeof QueuedMessage>;

const base = {
  /** Position in the team log: 1, 2, 3, ... with no gaps. */
  seq: z.number().int().min(1),
  /** Milliseconds since the Unix epoch, from the team's Clock. */
  at: z.number(),
  /** The team the record belongs to. */
  teamId: z.string().min(1),
  /** The schema version the record was written with; newer ones are refused, not misread. */
  schemaVersion: z.literal(1),
};

/** A member's whole snapshot after a change (spawn, phase move). */
export const MemberRecord = z.object({
  ...base,
  /** Discriminates {@link TeamRecord}. */
  type: z.literal('member'),
  /** The member as it is now. */
  member: Member,
});
export type MemberRecord = z.infer<typeof MemberRecord>;

/** A task's whole snapshot after a change (create, claim, edit, ...). */
export const TaskRecord = z.object({
  ...base,
  /** Discriminates {@link TeamRecord}. */
  type: z.literal('task'),
  /** The task as it is now. */
  task: Task,
});
export type TaskRecord = z.infer<typeof TaskRecord>;

/**
 * A message queued for its target. Schema version 1, or 3 for a message of a kind version 3
 * introduced, naming an approval or carrying a trace context (see {@link messageSchemaVersion}).
 */
export const MessageQueuedRecord = z.object({
  ...base,
  /** 1, or 3 for the kinds and fields version 3 introduced. */
  schemaVersion: z.union([z.literal(1), z.literal(3)]),
  /** Discriminates {@link TeamRecord}. */
  type: z.literal('message.queued'),
  /** The message as queued. */
  message: QueuedMessage,
});
export type MessageQueuedRecord = z.infer<typeof MessageQueuedRecord>;

/** Written only after the target's transcript durably holds the message. */
export const MessageDeliveredRecord = z.object({
  ...base,
  /** Discriminates {@link TeamRecord}. */
  type: z.literal('message.delivered'),
  /** The delivered message. */
  messageId: z.string().min(1),
  /** The member whose transcript now holds it. */
  targetId: z.string().min(1),
});
export type MessageDeliveredRecord = z.infer<typeof MessageDeliveredRecord>;

/** Why a message ended without delivery (see {@link MessageDeadLetteredRecord}). */
export type DeadLetterReason = 'TARGET_FAILED' | 'TARGET_RETIRED' | 'EXCEEDS_CONTEXT';
/** Schema of {@link DeadLetterReason}. */
export const DeadLetterReason: z.ZodEnum<Record<DeadLetterReason, DeadLetterReason>> = z.enum(
  DEAD_LETTER_REASONS satisfies readonly DeadLetterReason[],
);

/**
 * A pending message that will never be delivered, with why: its target failed while provisioning
 * or retired before taking it (`TARGET_FAILED`, `TARGET_RETIRED`), or it is larger than its
 * target's whole context (`EXCEEDS_CONTEXT`). Like a delivery, it ends the message: it is no longer
 * pending and can be neither delivered nor dead-lettered again. Schema version 2.
 */
export const MessageDeadLetteredRecord = z.object({
  ...base,
  /** Version 2: the record type it introduced. */
  schemaVersion: z.literal(2),
  /** Discriminates {@link TeamRecord}. */
  type: z.literal('message.dead_lettered'),
  /** The message that ends here. */
  messageId: z.string().min(1),
  /** Its target. */
  targetId: z.string().min(1),
  /** Why it cannot be delivered. */
  reason: DeadLetterReason,
  /** More about why, for people. */
  detail: z.string().min(1).max(DEAD_LETTER_DETAIL_MAX).optional(),
});
export type MessageDeadLetteredRecord = z.infer<typeof MessageDeadLetteredRecord>;

/** A message that ended without delivery, as the team state keeps it (and its snapshot). */
export const DeadLetter = z.object({
  /** The message as it was queued. */
  message: QueuedMessage,
  /** Why it was not delivered. */
  reason: DeadLetterReason,
  /** More about why, for people. */
  detail: z.string().min(1).max(DEAD_LETTER_DETAIL_MAX).optional(),
  /** When it was dead-lettered (the record's `at`). */
  at: z.number(),
});
export type DeadLetter = z.infer<typeof DeadLetter>;

/** What an approval is asked for: one tool call (`tool`) or a teammate's plan (`plan`). */
export type ApprovalKind = 'tool' | 'plan';
/** Schema of {@link ApprovalKind}. */
export const ApprovalKind: z.ZodEnum<Record<ApprovalKind, ApprovalKind>> = z.enum(
  APPROVAL_KINDS satisfies readonly ApprovalKind[],
);

/** How an approval ended; see `APPROVAL_DECISIONS`. */
export type ApprovalDecision = 'approved' | 'rejected' | 'expired' | 'canceled';
/** Schema of {@link ApprovalDecision}. */
export const ApprovalDecision: z.ZodEnum<Record<ApprovalDecision, ApprovalDecision>> = z.enum(
  APPROVAL_DECISIONS satisfies readonly ApprovalDecision[],
);

/** A quality gate: before a task completes, or when a teammate goes idle. */
export type GateName = 'task_completed' | 'teammate_idle';
/** Schema of {@link GateName}. */
export const GateName: z.ZodEnum<Record<GateName, GateName>> = z.enum(
  GATE_NAMES satisfies readonly GateName[],
);

/** A tool call's input as JSON, within {@link APPROVAL_INPUT_BYTES_MAX} bytes. */
const ToolInputJson = z
  .string()
  .refine((text) => Buffer.byteLength(text) <= APPROVAL_INPUT_BYTES_MAX, {
    message: `a tool input of at most ${APPROVAL_INPUT_BYTES_MAX} bytes of JSON`,
  });

/** A request for approval, as its `approval.requested` record carries it. */
export const ApprovalRequest = z.object({
  /** ulid */
  id: z.string().min(1).max(TOOL_REF_MAX),
  /** What is asked for. */
  kind: ApprovalKind,
  /** The member that asks (whose call or plan it is). */
  requesterId: z.string().min(1),
  /** The member that decides; absent: only the host (`TeamService.decide`) does. */
  approverId: z.string().min(1).optional(),
  /** For `tool`: the call's id in the requester's transcript. */
  toolCallId: z.string().min(1).max(TOOL_REF_MAX).optional(),
  /** For `tool`: the tool called. */
  toolName: z.string().min(1).max(TOOL_REF_MAX).optional(),
  /** For `tool`: the call's input, as JSON. */
  input: ToolInputJson.optional(),
  /** For `plan`: the plan. */
  plan: z.string().min(1).max(PLAN_MAX).optional(),
  /** The task the requester works on, if any. */
  taskId: z.string().regex(TASK_ID_PATTERN).optional(),
  /** When it expires undecided (ms since the epoch, the team clock's); absent: never. */
  expiresAt: z.number().optional(),
});
export type ApprovalRequest = z.infer<typeof ApprovalRequest>;

/** An approval asked for (schema version 3): pending until one `approval.decided` ends it. */
export const ApprovalRequestedRecord = z.object({
  ...base,
  /** Version 3: the record type it introduced. */
  schemaVersion: z.literal(3),
  /** Discriminates {@link TeamRecord}. */
  type: z.literal('approval.requested'),
  /** The request. */
  approval: ApprovalRequest,
});
export type ApprovalRequestedRecord = z.infer<typeof ApprovalRequestedRecord>;

/** The one decision on a pending approval (schema version 3); a second one is refused. */
export const ApprovalDecidedRecord = z.object({
  ...base,
  /** Version 3: the record type it introduced. */
  schemaVersion: z.literal(3),
  /** Discriminates {@link TeamRecord}. */
  type: z.literal('approval.decided'),
  /** The approval decided. */
  approvalId: z.string().min(1),
  /** How it ended. */
  decision: ApprovalDecision,
  /** Why, for the requester (a rejection's reason reaches it as the call's result). */
  reason: z.string().min(1).max(APPROVAL_REASON_MAX).optional(),
  /** The member that decided; absent: the host or the runtime (an expiry, a cancel). */
  deciderId: z.string().min(1).optional(),
});
export type ApprovalDecidedRecord = z.infer<typeof ApprovalDecidedRecord>;

/**
 * An approved tool call began running (schema version 3), written before it runs: a call is
 * started at most once, and one started whose result never reached the transcript (a crash
 * mid-call) is answered as interrupted with an unknown outcome, never run again.
 */
export const ApprovalStartedRecord = z.object({
  ...base,
  /** Version 3: the record type it introduced. */
  schemaVersion: z.literal(3),
  /** Discriminates {@link TeamRecord}. */
  type: z.literal('approval.started'),
  /** The approved tool approval whose call runs now. */
  approvalId: z.string().min(1),
});
export type ApprovalStartedRecord = z.infer<typeof ApprovalStartedRecord>;

/** A quality gate refused (schema version 3): a task stays `in_progress`, or a teammate goes on. */
export const GateRefusedRecord = z.object({
  ...base,
  /** Version 3: the record type it introduced. */
  schemaVersion: z.literal(3),
  /** Discriminates {@link TeamRecord}. */
  type: z.literal('gate.refused'),
  /** Which gate. */
  gate: GateName,
  /** The member refused: the task's owner, or the teammate going idle. */
  memberId: z.string().min(1),
  /** For `task_completed`: the task that stays in progress. */
  taskId: z.string().regex(TASK_ID_PATTERN).optional(),
  /** What the gate said, for the member. */
  feedback: z.string().min(1).max(APPROVAL_REASON_MAX),
  /** The how-many-th refusal in a row this is (1, 2, ...). */
  attempt: z.number().int().min(1),
});
export type GateRefusedRecord = z.infer<typeof GateRefusedRecord>;

/** One entry of the team log, discriminated on `type`. Folding the log in `seq` order rebuilds the team. */
export const TeamRecord = z.discriminatedUnion('type', [
  MemberRecord,
  TaskRecord,
  MessageQueuedRecord,
  MessageDeliveredRecord,
  MessageDeadLetteredRecord,
  ApprovalRequestedRecord,
  ApprovalDecidedRecord,
  ApprovalStartedRecord,
  GateRefusedRecord,
]);
export type TeamRecord = z.infer<typeof TeamRecord>;
/** The `type`s of {@link TeamRecord}. */
export type TeamRecordType = TeamRecord['type'];

/**
 * The schema version a queued message's record carries: 3 for a kind version 3 introduced or a
 * message naming an approval or carrying a trace context, else 1 (so a log without them stays
 * readable by older code).
 */
export function messageSchemaVersion(message: QueuedMessage): 1 | 3 {
  return message.approvalId !== undefined ||
    message.trace !== undefined ||
    (MESSAGE_KINDS_V3 as readonly string[]).includes(message.kind)
    ? 3
    : 1;
}

/**
 * `schema` as zod compiles it (`z.compile`, zod 4.5 and later), built on first use: the same
 * verdicts, output and errors as `schema`, from generated code instead of a walk of the schema
 * (valid values take it; a refusal falls back to the schema itself, which explains it). So the
 * schema stays the one description of a record and the fast path is derived from it, never
 * written by hand. Where zod cannot compile (an older zod, or `new Function` not allowed) this is
 * `schema` itself: slower, and the same answers.
 */
export function compiledSchema<T extends z.ZodType>(schema: T): () => T {
  let compiled: T | undefined;
  return () => {
    if (compiled === undefined) {
      const compile = (z as { compile?: typeof z.compile }).compile;
      compiled = typeof compile === 'function' ? compile(schema) : schema;
    }
    return compiled;
  };
}

/** {@link TeamRecord}, compiled (see {@link compiledSchema}). */
export const compiledTeamRecord: () => typeof TeamRecord = compiledSchema(TeamRecord);

/**
 * Records {@link checkRecordInput} returned: copies core built and checked, which nothing changes
 * afterwards (the team state keeps their parts as its own). A module-private set, so no value made
 * anywhere else, and no copy of one (JSON, `structuredClone`, a spread), is in it.
 */
const built = new WeakSet<object>();

/**
 * Validates an untrusted value as a {@link TeamRecord} and returns a detached copy. A
 * `schemaVersion` newer than {@link SCHEMA_VERSION} is refused with `UNSUPPORTED_SCHEMA_VERSION`
 * before anything else is checked, so an old reader never misreads a newer log.
 */
export function parseTeamRecord(value: unknown): TeamRecord {
  const parsed = compiledTeamRecord().safeParse(value);
  if (parsed.success) return parsed.data;
  checkSchemaVersion(value);
  const seq = (value as { seq?: unknown } | null)?.seq;
  throw new TeamError(
    'INVALID_RECORD',
    `invalid team record${typeof seq === 'number' ? ` at seq ${seq}` : ''}: ${z.prettifyError(parsed.error)}`,
    { cause: parsed.error, details: typeof seq === 'number' ? { seq } : undefined },
  );
}

/** Schema kinds that hold no object, so a strict form of one is the schema itself. */
const LEAF_KINDS = new Set([
  'string',
  'number',
  'int',
  'boolean',
  'bigint',
  'literal',
  'enum',
  'null',
  'undefined',
  'unknown',
  'any',
  'never',
  'template_literal',
]);

/**
 * `schema` with every object in it strict: the same shapes and checks, and a key the shape does not
 * name refused instead of dropped (objects that keep unknown keys, such as unknown content blocks,
 * stay as they are). Derived from the schema, so it cannot drift from it: a value with no unknown
 * key gets the same verdict from both. `undefined` where the schema cannot be walked (a kind the
 * walk does not know, or a zod whose internals differ), and then nothing uses it.
 */
function strictSchema(schema: z.ZodType): z.ZodType | undefined {
  type Node = { _zod: { def: Record<string, unknown> }; clone(def: object): Node };
  const walk = (node: Node): Node => {
    const def = node._zod.def;
    switch (def.type) {
      case 'object': {
        const shape: Record<string, Node> = {};
        for (const [key, value] of Object.entries(def.shape as Record<string, Node>)) {
          shape[key] = walk(value);
        }
        return node.clone({ ...def, shape, catchall: def.catchall ?? z.never() });
      }
      case 'array':
        return node.clone({ ...def, element: walk(def.element as Node) });
      case 'optional':
        return node.clone({ ...def, innerType: walk(def.innerType as Node) });
      case 'union':
        return node.clone({ ...def, options: (def.options as Node[]).map(walk) });
      default:
        // a kind that holds no object passes as it is; any other (nullable, record, tuple, ...)
        // would need its own walk, so the strict form is not built and every value is copied
        if (LEAF_KINDS.has(def.type as string)) return node;
        throw new Error(`no strict form of a ${String(def.type)} schema`);
    }
  };
  try {
    return walk(schema as unknown as Node) as unknown as z.ZodType;
  } catch {
    return undefined;
  }
}

/** The strict {@link TeamRecord} as zod compiles it, for {@link readTeamRecord}; see {@link strictSchema}. */
const strictTeamRecord: () => ((value: unknown) => boolean) | undefined = (() => {
  let validate: ((value: unknown) => boolean) | undefined;
  let built = false;
  return () => {
    if (!built) {
      built = true;
      const strict = strictSchema(TeamRecord);
      const compile = (z as { compile?: typeof z.compile }).compile;
      const compiled =
        strict === undefined || typeof compile !== 'function' ? strict : compile(strict);
      const check = (compiled as { validate?: (value: unknown) => boolean } | undefined)?.validate;
      validate = typeof check === 'function' ? check.bind(compiled) : undefined;
    }
    return validate;
  };
})();

/**
 * Validates a value fresh from `JSON.parse` (plain objects and arrays that nothing else holds) as a
 * {@link TeamRecord}: what a team log does with each record it reads. A value that is exactly a
 * record, every key one the schema names, is checked in place and returned itself, with no copy
 * built. Anything else is read as {@link parseTeamRecord} reads it: keys the schema does not name
 * are dropped in a copy, and a value the schema refuses gets the same error. For any other value
 * (one a caller keeps, or with prototypes of its own) use {@link parseTeamRecord}.
 */
export function readTeamRecord(value: unknown): TeamRecord {
  const validate = strictTeamRecord();
  return validate?.(value) ? (value as TeamRecord) : parseTeamRecord(value);
}

/**
 * Schema-checks a record a command built from its input and returns the parsed copy, detached
 * from the caller's objects; a value the schema refuses is the caller's mistake, `INVALID_ARGUMENT`.
 * The copy is one core built: {@link parseAppendedRecord} takes it without checking it again.
 */
export function checkRecordInput<R extends TeamRecord>(record: R): R {
  const parsed = compiledTeamRecord().safeParse(record);
  if (!parsed.success) {
    throw new TeamError('INVALID_ARGUMENT', `invalid input: ${z.prettifyError(parsed.error)}`, {
      cause: parsed.error,
    });
  }
  built.add(parsed.data);
  return parsed.data as R;
}

/**
 * What a team log runs on each record passed to `append`, before it checks the record's `seq` and
 * team. A record `TeamState` built is returned as it is: it was checked against the schema when
 * it was built, and records are never changed after, so the log writes it without a second
 * schema walk. Anything else (a record from another source, a copy of one, a value that merely
 * looks like one) is validated as {@link parseTeamRecord} does, and the detached copy returned.
 */
export function parseAppendedRecord(value: unknown): TeamRecord {
  return built.has(value as object) ? (value as TeamRecord) : parseTeamRecord(value);
}

/** A bad `schemaVersion` as an error message shows it: never by calling anything on it. */
function shownVersion(version: unknown): string {
  if (Array.isArray(version)) return 'an array';
  if (typeof version === 'object' && version !== null) return 'an object';
  if (typeof version === 'function') return 'a function';
  return String(version);
}

/** Refuses a value whose `schemaVersion` is missing, not an integer, or unknown. */
export function checkSchemaVersion(value: unknown): void {
  const version = (value as { schemaVersion?: unknown } | null)?.schemaVersion;
  if (typeof version !== 'number' || !Number.isInteger(version) || version < 1) {
    throw new TeamError(
      'INVALID_RECORD',
      `record has no valid schemaVersion (got ${shownVersion(version)})`,
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
