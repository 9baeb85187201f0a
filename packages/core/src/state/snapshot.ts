import { z } from 'zod';
import { TeamError } from '../errors.js';
import { copyMember, copyMessage, copyTask } from '../record-copy.js';
import { DeadLetter, Member, QueuedMessage, Task } from '../records.js';

/** The `format` of a {@link TeamStateSnapshot}. */
export const TEAM_STATE_SNAPSHOT_FORMAT = 'teamwire.team-state';
/**
 * The version of {@link TeamStateSnapshot} this code writes; it reads this one and every older one
 * (version 1 has no `record` digest).
 */
export const TEAM_STATE_SNAPSHOT_VERSION = 2;

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
  version: 1 | typeof TEAM_STATE_SNAPSHOT_VERSION;
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
}

const DIGEST = /^[0-9a-f]{64}$/;

/** Schema of {@link TeamStateSnapshot}, checked whenever one is read. */
const Snapshot = z.object({
  format: z.literal(TEAM_STATE_SNAPSHOT_FORMAT),
  version: z.union([z.literal(1), z.literal(TEAM_STATE_SNAPSHOT_VERSION)]),
  teamId: z.string().min(1),
  seq: z.number().int().min(0),
  members: z.array(Member),
  tasks: z.array(Task),
  nextTaskNumber: z.number().int().min(1),
  pending: z.array(QueuedMessage),
  delivered: z.string(),
  record: z.string().regex(DIGEST).optional(),
  deadLetters: z.array(DeadLetter).optional(),
});

/**
 * Checks (and copies) the list `value` element by element with the fast validator of the record
 * part, the way records are checked: `undefined` as soon as one element needs zod's verdict.
 */
function fastList(value: unknown, copy: (v: unknown) => unknown): unknown[] | undefined {
  if (!Array.isArray(value)) return undefined;
  const out: unknown[] = new Array(value.length);
  for (let i = 0; i < value.length; i++) {
    const element = copy(value[i]);
    if (element === undefined) return undefined;
    out[i] = element;
  }
  return out;
}

/** The fast path: the parts checked like records, the rest by hand; zod explains a refusal. */
function fastSnapshot(value: unknown): TeamStateSnapshot | undefined {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return undefined;
  const v = value as Record<string, unknown>;
  const { teamId, seq, nextTaskNumber, delivered, record, version } = v;
  if (
    v.format !== TEAM_STATE_SNAPSHOT_FORMAT ||
    (version !== TEAM_STATE_SNAPSHOT_VERSION && version !== 1) ||
    (record !== undefined && !(typeof record === 'string' && DIGEST.test(record))) ||
    typeof teamId !== 'string' ||
    teamId.length === 0 ||
    !Number.isSafeInteger(seq) ||
    (seq as number) < 0 ||
    !Number.isSafeInteger(nextTaskNumber) ||
    (nextTaskNumber as number) < 1 ||
    typeof delivered !== 'string' ||
    v.deadLetters !== undefined
  ) {
    return undefined;
  }
  const members = fastList(v.members, copyMember);
  const tasks = members && fastList(v.tasks, copyTask);
  const pending = tasks && fastList(v.pending, copyMessage);
  if (pending === undefined) return undefined;
  return {
    format: TEAM_STATE_SNAPSHOT_FORMAT,
    version: version as TeamStateSnapshot['version'],
    teamId,
    seq: seq as number,
    members: members as Member[],
    tasks: tasks as Task[],
    nextTaskNumber: nextTaskNumber as number,
    pending: pending as QueuedMessage[],
    delivered,
    ...(record === undefined ? {} : { record }),
  };
}

/**
 * Validates a stored snapshot's shape: `SNAPSHOT_INVALID` (with the problem) for anything this
 * version did not write, `UNSUPPORTED_SCHEMA_VERSION` for a newer snapshot version.
 */
export function parseTeamStateSnapshot(value: unknown): TeamStateSnapshot {
  const fast = fastSnapshot(value);
  if (fast !== undefined) return fast;
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
  const parsed = Snapshot.safeParse(value);
  if (!parsed.success) {
    throw snapshotInvalid(`not a team state snapshot: ${z.prettifyError(parsed.error)}`);
  }
  return parsed.data as TeamStateSnapshot;
}

/** The error every inconsistent snapshot gets. */
export function snapshotInvalid(message: string, details?: Record<string, unknown>): TeamError {
  return new TeamError('SNAPSHOT_INVALID', message, details ? { details } : {});
}
