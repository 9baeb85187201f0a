/**
 * The values records are made of: the lists the zod schemas of `records.ts` take their enums
 * from, and the schema versions. The schemas are the one description of a record; the fast path
 * that checks valid records is compiled from them (`compiledSchema` in `records.ts`).
 */

/**
 * The newest record schema version this code reads. Each record type is written with the version
 * that introduced it ({@link RECORD_SCHEMA_VERSIONS}), so a log without the newer types stays
 * readable by older code, and older code meeting a newer type refuses it as newer rather than
 * misreading it.
 */
export const SCHEMA_VERSION = 3 as const;
/** The schema version each record type is written with (and must carry). */
export const RECORD_SCHEMA_VERSIONS = {
  /** `member` records: version 1. */
  member: 1,
  /** `task` records: version 1. */
  task: 1,
  /** `message.queued` records: version 1. */
  'message.queued': 1,
  /** `message.delivered` records: version 1. */
  'message.delivered': 1,
  /** `message.dead_lettered` records: version 2, which introduced them. */
  'message.dead_lettered': 2,
  /** `approval.requested` records: version 3, which introduced them. */
  'approval.requested': 3,
  /** `approval.decided` records: version 3, which introduced them. */
  'approval.decided': 3,
  /** `approval.started` records: version 3, which introduced them. */
  'approval.started': 3,
  /** `gate.refused` records: version 3, which introduced them. */
  'gate.refused': 3,
} as const;
/**
 * Message kinds introduced by version 3: a `message.queued` record of one of them (or naming an
 * approval) carries schema version 3, so older code refuses it as newer instead of misreading it.
 */
export const MESSAGE_KINDS_V3 = ['approval_request', 'approval_decision', 'gate_feedback'] as const;
/** The schema version of transcript entries, written and the newest read. */
export const TRANSCRIPT_SCHEMA_VERSION = 1 as const;
/**
 * Why a message ended without delivery: its target failed (a spawn that never finished) or
 * retired before it could take it, or the message alone is larger than its target's context.
 */
export const DEAD_LETTER_REASONS = ['TARGET_FAILED', 'TARGET_RETIRED', 'EXCEEDS_CONTEXT'] as const;
/** A dead letter's `detail` has at most this many characters. */
export const DEAD_LETTER_DETAIL_MAX = 1024;

/** A member's lifecycle; see the fold rules for the moves allowed between them. */
export const MEMBER_PHASES = ['provisioning', 'active', 'failed', 'retired'] as const;
/** How a member's conversation starts. */
export const MEMBER_CONTEXTS = ['fresh', 'fork'] as const;
export const TASK_STATUSES = ['pending', 'in_progress', 'completed', 'deleted'] as const;
export const MESSAGE_KINDS = [
  'message',
  'idle_notification',
  'shutdown_request',
  'task_assignment',
  ...MESSAGE_KINDS_V3,
] as const;
/** What an approval is asked for: one tool call, or a teammate's plan. */
export const APPROVAL_KINDS = ['tool', 'plan'] as const;
/**
 * How an approval ends: `approved` and `rejected` by its approver (or the host), `expired` when
 * its time ran out first, `canceled` when its member left before anyone decided.
 */
export const APPROVAL_DECISIONS = ['approved', 'rejected', 'expired', 'canceled'] as const;
/** The quality gates a team's host can supply. */
export const GATE_NAMES = ['task_completed', 'teammate_idle'] as const;
/** An approval's or a gate's reason or feedback has at most this many characters. */
export const APPROVAL_REASON_MAX = 4000;
/** A plan submitted for approval has at most this many characters. */
export const PLAN_MAX = 32_768;
/** The JSON of a tool call's input kept in an approval request has at most this many bytes. */
export const APPROVAL_INPUT_BYTES_MAX = 65_536;
/** A tool name or tool call id kept in an approval request has at most this many characters. */
export const TOOL_REF_MAX = 256;
/**
 * A message's W3C `traceparent` (version `00`: `00-<32 hex trace id>-<16 hex span id>-<2 hex
 * flags>`, neither id all zeros).
 */
export const TRACEPARENT_PATTERN = /^00-(?!0{32})[0-9a-f]{32}-(?!0{16})[0-9a-f]{16}-[0-9a-f]{2}$/;
/** A message's W3C `tracestate` has at most this many characters (the W3C propagation limit). */
export const TRACESTATE_MAX = 512;
export const MESSAGE_DELIVERIES = ['quiet', 'wakeup'] as const;

/** A member workspace's `path` (absolute) has 1 to this many characters. */
export const WORKSPACE_PATH_MAX = 4096;
/** A member workspace's `branch` has 1 to this many characters. */
export const WORKSPACE_BRANCH_MAX = 255;
/** A member workspace's `base` (a commit id) has 1 to this many characters. */
export const WORKSPACE_BASE_MAX = 64;
