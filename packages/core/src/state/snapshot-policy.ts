import { TeamError } from '../errors.js';

/**
 * When a team's state is snapshotted, and how many snapshots a store keeps. One policy for every
 * store: the store is configured with it (its `snapshots` option) and reports it as
 * `TeamLogSnapshots.policy`; the team service decides from it when the next one is due
 * ({@link isSnapshotDue}) and tells the store to prune past `keep`.
 */
export interface SnapshotPolicy {
  /** A snapshot is due once the log grew by this many records since the newest one. */
  readonly everyRecords: number;
  /** …or by this many bytes of record text since the newest one. */
  readonly everyBytes: number;
  /** The newest snapshots a store keeps; older ones are removed after each write. */
  readonly keep: number;
}

/** The policy a store uses unless configured otherwise. */
export const DEFAULT_SNAPSHOT_POLICY: SnapshotPolicy = Object.freeze({
  everyRecords: 4096,
  everyBytes: 4 * 1024 * 1024,
  keep: 2,
});

const POLICY_KEYS: readonly (keyof SnapshotPolicy)[] = ['everyRecords', 'everyBytes', 'keep'];

/**
 * A store's `snapshots` option checked and completed with {@link DEFAULT_SNAPSHOT_POLICY}:
 * `false` turns snapshots off, `undefined` or `{}` takes the defaults. An unknown key, or a value
 * that is not an integer >= 1, is `INVALID_ARGUMENT` naming the option.
 */
export function resolveSnapshotPolicy(
  value: Partial<SnapshotPolicy> | false | undefined,
  option = 'snapshots',
): SnapshotPolicy | false {
  if (value === false) return false;
  const given: unknown = value ?? {};
  if (typeof given !== 'object' || given === null || Array.isArray(given)) {
    throw new TeamError(
      'INVALID_ARGUMENT',
      `${option} must be false or { everyRecords?, everyBytes?, keep? }`,
      { details: { option } },
    );
  }
  for (const key of Object.keys(given)) {
    if (!(POLICY_KEYS as readonly string[]).includes(key)) {
      throw new TeamError('INVALID_ARGUMENT', `${option} has no option ${JSON.stringify(key)}`, {
        details: { option: `${option}.${key.slice(0, 64)}` },
      });
    }
  }
  const policy: Record<keyof SnapshotPolicy, number> = { ...DEFAULT_SNAPSHOT_POLICY };
  for (const key of POLICY_KEYS) {
    const entry = (given as Partial<Record<keyof SnapshotPolicy, unknown>>)[key];
    if (entry === undefined) continue;
    if (typeof entry !== 'number' || !Number.isSafeInteger(entry) || entry < 1) {
      throw new TeamError('INVALID_ARGUMENT', `${option}.${key} must be an integer >= 1`, {
        details: { option: `${option}.${key}` },
      });
    }
    policy[key] = entry;
  }
  return Object.freeze(policy);
}

/** What {@link isSnapshotDue} decides from. */
export interface SnapshotDueInput {
  /** The seq the next snapshot would be taken at (the last durable, settled record). */
  readonly seq: number;
  /** The newest snapshot known (seq 0 and 0 bytes for none). */
  readonly newest: {
    /** The seq it was taken at. */
    readonly seq: number;
    /** The bytes its state took. */
    readonly bytes: number;
  };
  /** Bytes of record text the log grew by since the newest snapshot. */
  readonly bytesSince: number;
  /** The store's policy. */
  readonly policy: SnapshotPolicy;
}

/**
 * Whether a snapshot is due: the log grew past the newest one by `everyRecords` records or
 * `everyBytes` bytes, and never before it grew by as many bytes as that snapshot took. A big state
 * is snapshotted less often, so snapshots never cost more bytes than the log they cover.
 */
export function isSnapshotDue(input: SnapshotDueInput): boolean {
  const { seq, newest, bytesSince, policy } = input;
  if (!Number.isSafeInteger(seq) || seq <= newest.seq) return false;
  if (bytesSince < newest.bytes) return false;
  return seq - newest.seq >= policy.everyRecords || bytesSince >= policy.everyBytes;
}
