import { z } from 'zod';
import { TeamError } from '../errors.js';
import {
  ApprovalDecision,
  ApprovalRequest,
  compiledSchema,
  DeadLetter,
  GateName,
  Member,
  QueuedMessage,
  Task,
} from '../records.js';
import type { Approval, GateCount } from './approvals.js';

/** The `format` of a {@link TeamStateSnapshot}. */
export const TEAM_STATE_SNAPSHOT_FORMAT = 'teamwire.team-state';
/**
 * The version of {@link TeamStateSnapshot} this code writes; it reads this one and every older one
 * (version 1 has no `record` digest; version 3 added `approvals` and `gateCounts`, which an
 * older reader would drop, so it refuses version 3 as newer).
 */
export const TEAM_STATE_SNAPSHOT_VERSION = 3;

/**
 * The folded state of a team after one seq, as plain JSON: what a snapshot store keeps so that
 * opening a team folds only the records after `seq`. Everything the strict fold keeps is here:
 * every member and every task ever recorded (tombstones included), the pending mail in queue
 * order, and the ids of every message already delivered (a message id is queued once in a team's
 * whole life). Indexes (names, dependents, live counts) are derived when it is restored.
 */
export interface TeamStateSnapshot {
  /** Always {@link TEAM_STATE_SNAPSHOT_FORMAT}. */
  format: typeof TEAM_STATE_SNAPSHOT_FORMAT;
  /** {@link TEAM_STATE_SNAPSHOT_VERSION} when written; a newer version is refused, never misread. */
  version: 1 | 2 | typeof TEAM_STATE_SNAPSHOT_VERSION;
  /** The team the state belongs to. */
  teamId: string;
  /** The seq of the last record folded into it (records of any team count). */
  seq: number;
  /** Every member ever recorded, in the order of their first record. */
  members: Member[];
  /** Every task, tombstones included, in creation order. */
  tasks: Task[];
  /** The number the next created task takes. */
  nextTaskNumber: number;
  /** Queued and not yet delivered, in queue order. */
  pending: QueuedMessage[];
  /**
   * Ids of the messages queued and delivered, sorted (code unit order) without repeats, joined by
   * `\n`: one string parses fastest, and a sorted list is searched without hashing every id.
   */
  delivered: string;
  /**
   * The `recordDigest` of the record at `seq`, which ties the snapshot to the log it folded:
   * a log whose record at `seq` differs is another history, and the snapshot is not used for it.
   * Present from version 2 whenever `seq` > 0.
   */
  record?: string;
  /** The messages that ended without delivery, in log order (absent when there are none). */
  deadLetters?: DeadLetter[];
  /** Every approval asked for, in request order, with its decision (absent when none). */
  approvals?: Approval[];
  /** The gates' refusal counts in a row that are not zero (absent when none). */
  gateCounts?: GateCount[];
}

const DIGEST = /^[0-9a-f]{64}$/;

/** Schema of {@link TeamStateSnapshot}, checked whenever one is read. */
export const Snapshot = z.object({
  format: z.literal(TEAM_STATE_SNAPSHOT_FORMAT),
  version: z.union([z.literal(1), z.literal(2), z.literal(TEAM_STATE_SNAPSHOT_VERSION)]),
  teamId: z.string().min(1),
  seq: z.number().int().min(0),
  members: z.array(Member),
  tasks: z.array(Task),
  nextTaskNumber: z.number().int().min(1),
  pending: z.array(QueuedMessage),
  delivered: z.string(),
  record: z.string().regex(DIGEST).optional(),
  deadLetters: z.array(DeadLetter).optional(),
  approvals: z
    .array(
      ApprovalRequest.extend({
        status: z.union([z.literal('pending'), ApprovalDecision]),
        requestedAt: z.number(),
        decidedAt: z.number().optional(),
        reason: z.string().optional(),
        deciderId: z.string().min(1).optional(),
        started: z.boolean().optional(),
      }),
    )
    .optional(),
  gateCounts: z
    .array(z.object({ gate: GateName, id: z.string().min(1), count: z.number().int().min(1) }))
    .optional(),
});

/** {@link Snapshot}, compiled: a valid snapshot is checked and copied by generated code. */
export const compiledSnapshot: () => typeof Snapshot = compiledSchema(Snapshot);

/**
 * Validates a stored snapshot's shape: `SNAPSHOT_INVALID` (with the problem) for anything this
 * version did not write, `UNSUPPORTED_SCHEMA_VERSION` for a newer snapshot version.
 */
export function parseTeamStateSnapshot(value: unknown): TeamStateSnapshot {
  const parsed = compiledSnapshot().safeParse(value);
  if (parsed.success) return parsed.data as TeamStateSnapshot;
  const header = value as { format?: unknown; version?: unknown } | null;
  if (
    header?.format === TEAM_STATE_SNAPSHOT_FORMAT &&
    typeof header.version === 'number' &&
    header.version > TEAM_STATE_SNAPSHOT_VERSION
  ) {
    throw new TeamError(
      'UNSUPPORTED_SCHEMA_VERSION',
      `team state snapshot version ${header.version} is newer than this version of teamwire reads (${TEAM_STATE_SNAPSHOT_VERSION})`,
      { details: { version: header.version, supported: TEAM_STATE_SNAPSHOT_VERSION } },
    );
  }
  throw snapshotInvalid(`not a team state snapshot: ${z.prettifyError(parsed.error)}`);
}

/** The error every inconsistent snapshot gets. */
export function snapshotInvalid(message: string, details?: Record<string, unknown>): TeamError {
  return new TeamError('SNAPSHOT_INVALID', message, details ? { details } : {});
}
