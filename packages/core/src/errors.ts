/**
 * Every error teamwire raises is a {@link TeamError} with a stable string `code`.
 * Codes never change meaning once published; new ones are only added.
 */
export const TeamErrorCode = {
  // Input and records
  /** An argument failed validation (shape, length, range). */
  INVALID_ARGUMENT: 'INVALID_ARGUMENT',
  /** A stored or received record failed schema validation. */
  INVALID_RECORD: 'INVALID_RECORD',
  /** A record carries a `schemaVersion` this code does not know. */
  UNSUPPORTED_SCHEMA_VERSION: 'UNSUPPORTED_SCHEMA_VERSION',
  /** Replaying a log found a record that breaks a team invariant. */
  LOG_INVARIANT: 'LOG_INVARIANT',

  // Roster
  /** A member name does not match `^[a-z0-9]+(-[a-z0-9]+)*$` or is longer than 64 characters. */
  INVALID_NAME: 'INVALID_NAME',
  /** The name `lead` (any case) is reserved for the team lead. */
  NAME_RESERVED: 'NAME_RESERVED',
  /** The name was already used in this team (names are never reused). */
  NAME_TAKEN: 'NAME_TAKEN',
  /** The team already holds its configured number of members. */
  MEMBER_LIMIT: 'MEMBER_LIMIT',
  /** No member with that id or name exists in the team. */
  UNKNOWN_MEMBER: 'UNKNOWN_MEMBER',
  /** The caller is not a live member of the team. */
  NOT_A_MEMBER: 'NOT_A_MEMBER',
  /** The member is in a phase that does not allow the operation. */
  INVALID_PHASE: 'INVALID_PHASE',
  /** The operation is reserved for the team lead. */
  LEAD_ONLY: 'LEAD_ONLY',

  // Task board
  /** No task with that id exists. */
  TASK_NOT_FOUND: 'TASK_NOT_FOUND',
  /** The task is deleted (a tombstone): it can be read, not changed. */
  TASK_DELETED: 'TASK_DELETED',
  /** The board already holds its configured number of tasks. */
  TASK_LIMIT: 'TASK_LIMIT',
  /** `expectedRevision` did not match the task's current revision. */
  REVISION_MISMATCH: 'REVISION_MISMATCH',
  /** A `blockedBy` entry names a missing or deleted task, repeats, or names the task itself. */
  INVALID_DEPENDENCY: 'INVALID_DEPENDENCY',
  /** The dependency change would make the task graph cyclic. */
  DEPENDENCY_CYCLE: 'DEPENDENCY_CYCLE',
  /** The task cannot be claimed: a blocker is not completed. */
  TASK_BLOCKED: 'TASK_BLOCKED',
  /** The task's status does not allow the action (e.g. claiming a completed task). */
  INVALID_TASK_STATUS: 'INVALID_TASK_STATUS',
  /** The task is already owned by another member. */
  TASK_OWNED: 'TASK_OWNED',
  /** The task cannot be deleted: other tasks are blocked by it. */
  TASK_HAS_DEPENDENTS: 'TASK_HAS_DEPENDENTS',
  /** A write scope is empty, absolute, has a drive letter or a `.`/`..`/empty segment. */
  INVALID_WRITE_SCOPE: 'INVALID_WRITE_SCOPE',
  /** Only the owner, the lead, or the creator of an unowned task may edit, re-link or delete it. */
  NOT_ALLOWED_TO_EDIT: 'NOT_ALLOWED_TO_EDIT',
  /** Only the owner or the lead may release, complete or reopen the task. */
  NOT_ALLOWED_TO_CHANGE_STATUS: 'NOT_ALLOWED_TO_CHANGE_STATUS',
  /** Only the lead may reassign a task. */
  NOT_ALLOWED_TO_REASSIGN: 'NOT_ALLOWED_TO_REASSIGN',

  // Messaging
  /** The message target is not a member of the team. */
  UNKNOWN_TARGET: 'UNKNOWN_TARGET',
  /** A member cannot message itself. */
  SELF_MESSAGE: 'SELF_MESSAGE',
  /** The target already holds its configured number of undelivered messages. */
  MAILBOX_FULL: 'MAILBOX_FULL',
  /** The message exceeds the configured size limit. */
  MESSAGE_TOO_LARGE: 'MESSAGE_TOO_LARGE',
  /** A message was queued or delivered out of order (duplicate id, wrong target, not queued). */
  MESSAGE_STATE: 'MESSAGE_STATE',

  // Approvals and gates
  /** No approval with that id in this team. */
  APPROVAL_NOT_FOUND: 'APPROVAL_NOT_FOUND',
  /** The approval was already decided (approved, rejected, expired or canceled). */
  APPROVAL_DECIDED: 'APPROVAL_DECIDED',
  /** The caller is not the approval's approver (nor the host). */
  NOT_THE_APPROVER: 'NOT_THE_APPROVER',
  /** An approval request or decision breaks its own rules (a second start, a plan while one waits). */
  APPROVAL_STATE: 'APPROVAL_STATE',
  /** A quality gate refused: the task stays in progress; its feedback says why. */
  GATE_REFUSED: 'GATE_REFUSED',

  // Runtime
  /** The operation was aborted through its AbortSignal. */
  ABORTED: 'ABORTED',
  /** The team service was disposed. */
  DISPOSED: 'DISPOSED',
  /** A wait ran past its deadline. */
  TIMEOUT: 'TIMEOUT',
  /** No agent definition is registered under that type. */
  UNKNOWN_AGENT_TYPE: 'UNKNOWN_AGENT_TYPE',
  /** The model asked for a tool that does not exist. */
  UNKNOWN_TOOL: 'UNKNOWN_TOOL',
  /** A tool threw while running. */
  TOOL_FAILED: 'TOOL_FAILED',
  /** A turn ran into its step limit. */
  STEP_LIMIT: 'STEP_LIMIT',

  // External members
  /** The member or agent type is external (run by a client): teamwire runs no model for it. */
  EXTERNAL_MEMBER: 'EXTERNAL_MEMBER',
  /** The operation is only for an external member (e.g. reading an inbox with a cursor). */
  NOT_EXTERNAL: 'NOT_EXTERNAL',
  /** An inbox cursor is malformed, from another member, or names mail of another member. */
  INVALID_CURSOR: 'INVALID_CURSOR',

  // Workspaces
  /** The member's agent type asks for isolation and the team has no workspace provider. */
  WORKSPACE_UNAVAILABLE: 'WORKSPACE_UNAVAILABLE',
  /** The team's directory is not inside a git repository. */
  WORKSPACE_NOT_A_REPOSITORY: 'WORKSPACE_NOT_A_REPOSITORY',
  /** The `git` binary cannot be run. */
  WORKSPACE_GIT_MISSING: 'WORKSPACE_GIT_MISSING',
  /** The member's branch or worktree path is taken by something that is not its workspace. */
  WORKSPACE_TAKEN: 'WORKSPACE_TAKEN',
  /** Creating, finding or removing the workspace failed (the message names the git command). */
  WORKSPACE_FAILED: 'WORKSPACE_FAILED',
  /** A path given to a file tool leads outside the member's workspace. */
  PATH_OUTSIDE_WORKSPACE: 'PATH_OUTSIDE_WORKSPACE',

  // Storage
  /** Another process owns the team folder. */
  TEAM_LOCKED: 'TEAM_LOCKED',
  /** No team exists at that location. */
  TEAM_NOT_FOUND: 'TEAM_NOT_FOUND',
  /** A stored file is corrupt (an invalid complete line). */
  CORRUPT_LOG: 'CORRUPT_LOG',
  /** A stored snapshot of a team's state is unreadable or inconsistent; it is never trusted. */
  SNAPSHOT_INVALID: 'SNAPSHOT_INVALID',
  /**
   * The records a full fold needs were removed by a retention policy (segments covered by a
   * snapshot); the team opens from its snapshot instead.
   */
  HISTORY_UNAVAILABLE: 'HISTORY_UNAVAILABLE',
  /** Reading or writing durable storage failed (disk full, permissions, I/O error). */
  STORAGE_IO: 'STORAGE_IO',
  /** The store was closed or failed an earlier write and must be reopened. */
  STORE_CLOSED: 'STORE_CLOSED',
  /** The store cannot be reached (the message names the address); nothing was written. */
  STORE_UNAVAILABLE: 'STORE_UNAVAILABLE',
  /**
   * Another process appended the seq this append carried first; nothing was written. The team
   * service catches up and retries on its own: callers of a shared log see it only from the port.
   */
  SEQ_CONFLICT: 'SEQ_CONFLICT',
  /**
   * This process no longer runs the member it wrote for (another process took it over); nothing
   * was written, and nothing more will be for that member from here.
   */
  FENCED: 'FENCED',
  /** The member runs in another process (e.g. a prompt for a lead placed elsewhere). */
  NOT_PLACED_HERE: 'NOT_PLACED_HERE',

  // Models
  /** The provider rejected the credentials (401/403). */
  MODEL_AUTH: 'MODEL_AUTH',
  /** The provider rate-limited the request and retries ran out (429). */
  MODEL_RATE_LIMITED: 'MODEL_RATE_LIMITED',
  /** The provider rejected the request as malformed (400/404/413/422). */
  MODEL_BAD_REQUEST: 'MODEL_BAD_REQUEST',
  /**
   * The provider refused the request because the prompt does not fit the model's context window
   * (a 400/413 whose error says so). A runner answers it by compacting the conversation once and
   * retrying; only a second refusal fails the member.
   */
  MODEL_CONTEXT_OVERFLOW: 'MODEL_CONTEXT_OVERFLOW',
  /** The provider was unreachable or failing and retries ran out (5xx, network). */
  MODEL_UNAVAILABLE: 'MODEL_UNAVAILABLE',
  /** The provider's response did not follow its wire format. */
  MODEL_PROTOCOL: 'MODEL_PROTOCOL',
  /** A model spec string names no known provider or is malformed. */
  MODEL_UNKNOWN: 'MODEL_UNKNOWN',

  // Protocol
  /** An envelope could not be formatted or parsed. */
  ENVELOPE_INVALID: 'ENVELOPE_INVALID',
} as const;

export type TeamErrorCode = (typeof TeamErrorCode)[keyof typeof TeamErrorCode];

const marker = Symbol.for('teamwire.TeamError');

/** The optional parts of a {@link TeamError}. */
export interface TeamErrorOptions {
  /** The underlying failure, kept as the standard `Error.cause`; never shown to a model. */
  cause?: unknown;
  /** Structured facts about the failure (ids, seq, limits), safe to log and to show a model. */
  details?: Record<string, unknown> | undefined;
}

/**
 * The one error class of teamwire. Check it with {@link TeamError.isInstance}, which also works
 * when two copies of `@teamwire/core` are installed side by side (`instanceof` would not).
 */
export class TeamError extends Error {
  /** Stable machine-readable reason; branch on it, never on the message. */
  readonly code: TeamErrorCode;
  /** Structured facts about the failure (ids, seq, limits), safe to log and to show a model. */
  readonly details: Record<string, unknown> | undefined;
  /** The brand {@link TeamError.isInstance} checks: a global symbol, so it holds across copies. */
  readonly [marker] = true;

  constructor(code: TeamErrorCode, message: string, options: TeamErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'TeamError';
    this.code = code;
    this.details = options.details;
  }

  /** True for any TeamError, from this or another copy of the package. */
  static isInstance(value: unknown): value is TeamError {
    return (
      typeof value === 'object' &&
      value !== null &&
      (value as Record<symbol, unknown>)[marker] === true &&
      typeof (value as { code?: unknown }).code === 'string'
    );
  }

  /** True when `value` is a TeamError with the given code. */
  static hasCode(value: unknown, code: TeamErrorCode): value is TeamError {
    return TeamError.isInstance(value) && value.code === code;
  }

  /** The error as plain JSON (name, code, message, details), without the cause or the stack. */
  toJSON(): {
    /** Always `TeamError`. */
    name: string;
    /** See {@link TeamError.code}. */
    code: TeamErrorCode;
    /** The human-readable message. */
    message: string;
    /** See {@link TeamError.details}; absent when there are none. */
    details?: Record<string, unknown>;
  } {
    return {
      name: this.name,
      code: this.code,
      message: this.message,
      ...(this.details ? { details: this.details } : {}),
    };
  }
}
