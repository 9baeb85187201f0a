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
 * older reader would drop, so it refuses version 3 as newer; version 4 keeps only the live tasks
 * in `tasks`, the deleted ones in `tombstones`, and adds `deliveredLast`).
 */
export const TEAM_STATE_SNAPSHOT_VERSION = 4;

/**
 * A part of a snapshot (version 4) that grows with the team's history, as a store may hand it
 * back when it keeps it apart from the rest of the state ({@link SNAPSHOT_PARTS_APART}): text of
 * `bytes` UTF-8 bytes, produced by `text()` only when a reader first needs it. `text()` throws
 * `SNAPSHOT_INVALID` when the stored copy does not check out (a store checks its own envelope
 * there, not on open).
 */
export interface StoredText {
  /** UTF-8 bytes of the text. */
  readonly bytes: number;
  /** The text; may be called more than once (a store may read it again each time). */
  text(): string;
}

/**
 * Deleted tasks as text: one {@link Task} as JSON per line, each line ending with `\n`, in any
 * order (`''` when there are none). A snapshot keeps its tombstones this way, apart from the
 * parsed state, so that opening a team costs what its live tasks cost: the text is parsed and
 * checked only when a deleted task is first read (`getTask`, a list that asks for `deleted`).
 */
export type TombstoneText = string;

/**
 * The fields of a {@link TeamStateSnapshot} (version 4) that grow with history, which a store may
 * keep apart from the rest (see {@link splitTeamStateSnapshot}): the deleted tasks and the ids of
 * the delivered mail. Both are text, read and checked only when first needed.
 */
export const SNAPSHOT_PARTS_APART = ['tombstones', 'delivered'] as const;

/** One of {@link SNAPSHOT_PARTS_APART}. */
export type SnapshotPartApart = (typeof SNAPSHOT_PARTS_APART)[number];

/**
 * The folded state of a team after one seq, as plain JSON: what a snapshot store keeps so that
 * opening a team folds only the records after `seq`. Everything the strict fold keeps is here:
 * every member and every task ever recorded (from version 4 the deleted ones in `tombstones`,
 * apart from the live ones in `tasks`), the pending mail in queue order, and the ids of every
 * message already delivered (a message id is queued once in a team's whole life). Indexes (names,
 * dependents, live counts) are derived when it is restored.
 *
 * A store may keep `tombstones` apart from the rest (see {@link splitTeamStateSnapshot}) and hand
 * it back as {@link StoredText}, read only when a deleted task is first needed.
 */
export interface TeamStateSnapshot {
  /** Always {@link TEAM_STATE_SNAPSHOT_FORMAT}. */
  format: typeof TEAM_STATE_SNAPSHOT_FORMAT;
  /** {@link TEAM_STATE_SNAPSHOT_VERSION} when written; a newer version is refused, never misread. */
  version: 1 | 2 | 3 | typeof TEAM_STATE_SNAPSHOT_VERSION;
  /** The team the state belongs to. */
  teamId: string;
  /** The seq of the last record folded into it (records of any team count). */
  seq: number;
  /** Every member ever recorded, in the order of their first record. */
  members: Member[];
  /**
   * Version 4: the tasks that are not deleted, in creation order; every number below
   * `nextTaskNumber` that is not among them is a deleted task, kept in `tombstones`. Versions 1
   * to 3: every task, tombstones included, in creation order.
   */
  tasks: Task[];
  /**
   * Version 4: every deleted task, as {@link TombstoneText} (or, as a store hands it back,
   * {@link StoredText}); absent or `''` when there are none. Checked when first read: one
   * line per task number below `nextTaskNumber` that `tasks` does not hold, each task `deleted`,
   * its creator and owner members. Not used before version 4.
   */
  tombstones?: TombstoneText | StoredText;
  /** The number the next created task takes. */
  nextTaskNumber: number;
  /** Queued and not yet delivered, in queue order. */
  pending: QueuedMessage[];
  /**
   * Ids of the messages queued and delivered, sorted (code unit order) without repeats, joined by
   * `\n`: one string parses fastest, and a sorted list is searched without hashing every id. From
   * version 4 a store may hand it back as {@link StoredText}; it is split and checked only when
   * first needed: when an id at or below `deliveredLast` is queued, or a snapshot is taken after
   * an id below it was delivered.
   */
  delivered: string | StoredText;
  /**
   * Version 4: the greatest of the `delivered` ids (absent when there are none). An id queued
   * after it is new without a look at `delivered`: message ids that grow with time (ULIDs) never
   * need the history.
   */
  deliveredLast?: string;
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
  version: z.union([
    z.literal(1),
    z.literal(2),
    z.literal(3),
    z.literal(TEAM_STATE_SNAPSHOT_VERSION),
  ]),
  teamId: z.string().min(1),
  seq: z.number().int().min(0),
  members: z.array(Member),
  tasks: z.array(Task),
  nextTaskNumber: z.number().int().min(1),
  tombstones: z.string().optional(),
  deliveredLast: z.string().min(1).optional(),
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
  // Parts a store kept apart are checked when first read, not here.
  const apart = partsApart(value);
  const parsed = compiledSnapshot().safeParse(
    apart === undefined ? value : { ...(value as object), ...placeholders(apart) },
  );
  if (parsed.success) {
    const snapshot = parsed.data as TeamStateSnapshot;
    if (apart !== undefined) Object.assign(snapshot, apart);
    if (
      snapshot.version < 4 &&
      (snapshot.tombstones !== undefined ||
        snapshot.deliveredLast !== undefined ||
        apart !== undefined)
    ) {
      throw snapshotInvalid(
        `a version ${snapshot.version} snapshot has no tombstones, no deliveredLast, and no parts kept apart`,
      );
    }
    return snapshot;
  }
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

/** The fields of `value` that are {@link StoredText} (`undefined`: none). */
function partsApart(value: unknown): Partial<Record<SnapshotPartApart, StoredText>> | undefined {
  if (typeof value !== 'object' || value === null) return undefined;
  let found: Partial<Record<SnapshotPartApart, StoredText>> | undefined;
  for (const field of SNAPSHOT_PARTS_APART) {
    const part = (value as Record<string, unknown>)[field];
    if (typeof part !== 'object' || part === null) continue;
    const { bytes, text } = part as Partial<StoredText>;
    if (typeof text !== 'function' || typeof bytes !== 'number') continue;
    found ??= {};
    found[field] = part as StoredText;
  }
  return found;
}

/** What the schema checks in place of parts kept apart (their text is checked when read). */
function placeholders(apart: Partial<Record<SnapshotPartApart, StoredText>>) {
  const out: Partial<Record<SnapshotPartApart, string>> = {};
  for (const field of Object.keys(apart) as SnapshotPartApart[]) out[field] = '';
  return out;
}

/**
 * A snapshot as a store that keeps the parts that grow with history apart writes it: `state`, the
 * snapshot without them (plain JSON), and `parts`, the text of each of
 * {@link SNAPSHOT_PARTS_APART} (`''` for none). What such a store reads back is `state` with
 * those fields set to {@link StoredText} over that text (see {@link joinTeamStateSnapshot}).
 */
export function splitTeamStateSnapshot(snapshot: TeamStateSnapshot): {
  /** The snapshot without the parts kept apart: plain JSON. */
  state: Omit<TeamStateSnapshot, SnapshotPartApart>;
  /** The text of each part kept apart (`''` for none). */
  parts: Record<SnapshotPartApart, string>;
} {
  const { tombstones, delivered, ...state } = snapshot;
  const text = (part: string | StoredText | undefined) =>
    part === undefined ? '' : typeof part === 'string' ? part : part.text();
  return { state, parts: { tombstones: text(tombstones), delivered: text(delivered) } };
}

/**
 * The stored snapshot `state` (parsed JSON, not yet validated) with the parts a store kept apart
 * ({@link SNAPSHOT_PARTS_APART}): what `TeamState.fromSnapshot` reads. A state without parts is
 * returned as is.
 */
export function joinTeamStateSnapshot(
  state: unknown,
  parts: Partial<Record<SnapshotPartApart, StoredText>>,
): unknown {
  if (typeof state !== 'object' || state === null) return state;
  const out: Record<string, unknown> = { ...state };
  for (const field of SNAPSHOT_PARTS_APART) {
    const part = parts[field];
    if (part !== undefined) out[field] = part;
  }
  return out;
}

/** The error every inconsistent snapshot gets. */
export function snapshotInvalid(message: string, details?: Record<string, unknown>): TeamError {
  return new TeamError('SNAPSHOT_INVALID', message, details ? { details } : {});
}
