import { createHash } from 'node:crypto';
import type {
  SnapshotPolicy,
  StoredSnapshot,
  TeamLogSnapshots,
  TeamStateSnapshot,
} from '@teamwire/core';
import { TEAM_STATE_SNAPSHOT_FORMAT, TEAM_STATE_SNAPSHOT_VERSION, TeamError } from '@teamwire/core';
import type pg from 'pg';
import type { RetryPolicy } from './connection.js';
import { closedError } from './errors.js';
import { query } from './retry.js';
import type { Tables } from './schema.js';

/** What the store's snapshots did in this process: how it recovered, for diagnostics. */
export interface SnapshotReport {
  /** The policy in force. */
  readonly policy: SnapshotPolicy;
  /**
   * Stored snapshots `list` skipped because their envelope did not check out: a checksum or size
   * that does not match the state, a format version this code does not read, a seq past the
   * log's end, a state that is not JSON.
   */
  readonly skipped: number;
  /** Snapshots `list` offered whose state failed validation when the team opened. */
  readonly rejected: number;
  /** Snapshots this process wrote (a seq another process stored first does not count). */
  readonly written: number;
  /** The newest snapshot this process read or wrote: its seq, 0 for none. */
  readonly newestSeq: number;
  /** What was wrong with the last few skipped or rejected snapshots, oldest first. */
  readonly problems: readonly string[];
}

/** What the snapshots share with the rest of the store. */
export interface SnapshotContext {
  readonly pool: pg.Pool;
  readonly tables: Tables;
  readonly teamId: string;
  readonly processId: string;
  readonly policy: RetryPolicy;
  /** Aborted when the log closes. */
  readonly stop: AbortSignal;
}

const PROBLEMS_KEPT = 10;

/**
 * Snapshots of a team's folded state in the `team_snapshots` table: one row per (team, seq),
 * the state as JSON text with its SHA-256 (hex) and UTF-8 size, and the version of its format.
 * Any process may write one; writers of the same seq race harmlessly (the first row stays).
 * Whether a row belongs to the log (the digest of the record at its seq) is checked by core when
 * the team opens; this store checks only that a row is intact.
 */
export class PostgresSnapshots implements TeamLogSnapshots {
  readonly policy: SnapshotPolicy;
  readonly #ctx: SnapshotContext;
  readonly #rejected = new Set<number>();
  readonly #problems: string[] = [];
  /** Characters of record JSON this process appended or read, each record counted once. */
  #logBytes = 0;
  /** The highest seq whose bytes were counted, so a record read twice is counted once. */
  #countedSeq = 0;
  /** Snapshots this process read or wrote and nobody rejected: their seqs. */
  readonly #known = new Set<number>();
  #skipped = 0;
  #rejectedCount = 0;
  #written = 0;

  constructor(ctx: SnapshotContext, policy: SnapshotPolicy) {
    this.#ctx = ctx;
    this.policy = policy;
  }

  /** This process's diagnostics (a live view). */
  get report(): SnapshotReport {
    return {
      policy: this.policy,
      skipped: this.#skipped,
      rejected: this.#rejectedCount,
      written: this.#written,
      newestSeq: Math.max(0, ...this.#known),
      problems: [...this.#problems],
    };
  }

  /** Counts a record this process appended or read (`length`: characters of its JSON). */
  noteRecord(seq: number, length: number): void {
    if (seq <= this.#countedSeq) return;
    this.#countedSeq = seq;
    this.#logBytes += length;
  }

  logBytes(): number {
    return this.#logBytes;
  }

  async *list(): AsyncIterable<StoredSnapshot> {
    this.#checkOpen();
    const { tables: t, teamId } = this.#ctx;
    const heads = await this.#query<{ seq: string; format_version: number; last: string | null }>(
      `SELECT s.seq::text AS seq, s.format_version, l.last::text AS last
         FROM ${t.snapshots} s,
              (SELECT max(seq) AS last FROM ${t.log} WHERE team_id = $1) l
        WHERE s.team_id = $1
        ORDER BY s.seq DESC`,
      [teamId],
      'listing the team snapshots',
    );
    for (const head of heads.rows) {
      const seq = Number(head.seq);
      if (this.#rejected.has(seq)) continue;
      const source = `team_snapshots row seq ${seq} of team ${teamId} (schema ${t.schema})`;
      const last = Number(head.last ?? 0);
      if (seq > last) {
        this.#skip(`${source} is past the end of the log (seq ${last})`);
        continue;
      }
      if (head.format_version > TEAM_STATE_SNAPSHOT_VERSION) {
        this.#skip(
          `${source} has format version ${head.format_version}; this version of @teamwire/core reads up to ${TEAM_STATE_SNAPSHOT_VERSION}`,
        );
        continue;
      }
      const found = await this.#query<{ state: string; checksum: string; bytes: string }>(
        `SELECT state, checksum, bytes::text AS bytes FROM ${t.snapshots}
          WHERE team_id = $1 AND seq = $2`,
        [teamId, seq],
        `reading the team snapshot at seq ${seq}`,
      );
      const row = found.rows[0];
      // Deleted since the listing (pruned meanwhile): the next one is older.
      if (row === undefined) continue;
      if (checksumOf(row.state) !== row.checksum) {
        this.#skip(`${source} does not match its checksum`);
        continue;
      }
      const bytes = Buffer.byteLength(row.state, 'utf8');
      if (bytes !== Number(row.bytes)) {
        this.#skip(`${source} is ${bytes} bytes, not the ${row.bytes} recorded`);
        continue;
      }
      let state: unknown;
      try {
        state = JSON.parse(row.state);
      } catch (error) {
        this.#skip(`${source} is not JSON: ${error instanceof Error ? error.message : error}`);
        continue;
      }
      this.#remember(seq);
      yield { seq, state, bytes, source };
    }
  }

  async write(snapshot: TeamStateSnapshot): Promise<{ bytes: number }> {
    this.#checkOpen();
    const { seq } = checkSnapshot(snapshot, this.#ctx.teamId);
    let text: string;
    try {
      text = JSON.stringify(snapshot);
    } catch (error) {
      throw new TeamError('INVALID_ARGUMENT', `the snapshot at seq ${seq} is not JSON`, {
        cause: error,
        details: { seq },
      });
    }
    const bytes = Buffer.byteLength(text, 'utf8');
    const { tables: t, teamId, processId } = this.#ctx;
    const result = await this.#query<{ in_log: boolean; inserted: number }>(
      `WITH present AS (
         SELECT EXISTS (SELECT 1 FROM ${t.log} WHERE team_id = $1 AND seq = $2) AS in_log
       ), ins AS (
         INSERT INTO ${t.snapshots} (team_id, seq, format_version, state, checksum, bytes, process_id)
         SELECT $1, $2, $3, $4, $5, $6, $7 FROM present WHERE in_log
         ON CONFLICT (team_id, seq) DO NOTHING
         RETURNING seq
       )
       SELECT (SELECT in_log FROM present) AS in_log,
              (SELECT count(*) FROM ins)::int AS inserted`,
      [teamId, seq, snapshot.version, text, checksumOf(text), bytes, processId],
      `writing the team snapshot at seq ${seq}`,
    );
    const row = result.rows[0];
    if (row?.in_log !== true) {
      throw new TeamError(
        'INVALID_ARGUMENT',
        `the snapshot is of seq ${seq}, which is not in the team log of ${teamId}; nothing written`,
        { details: { seq } },
      );
    }
    if (row.inserted > 0) this.#written++;
    this.#remember(seq);
    return { bytes };
  }

  async prune(options: { keep: number }): Promise<void> {
    this.#checkOpen();
    const { keep } = options;
    if (!Number.isSafeInteger(keep) || keep < 1) {
      throw invalid('prune keeps at least one snapshot', { keep });
    }
    const { tables: t, teamId } = this.#ctx;
    await this.#query(
      `DELETE FROM ${t.snapshots}
        WHERE team_id = $1
          AND seq < (SELECT min(seq) FROM (SELECT seq FROM ${t.snapshots} WHERE team_id = $1
                                            ORDER BY seq DESC LIMIT $2) AS kept)`,
      [teamId, keep],
      'pruning the team snapshots',
    );
  }

  rejected(snapshot: StoredSnapshot, error: Error): void {
    this.#rejected.add(snapshot.seq);
    this.#known.delete(snapshot.seq);
    this.#rejectedCount++;
    this.#problem(`${snapshot.source} was rejected: ${error.message}`);
  }

  #remember(seq: number): void {
    if (this.#rejected.has(seq)) return;
    this.#known.add(seq);
    // only the newest few matter: the newest, and what is left when it is rejected
    if (this.#known.size > this.policy.keep + 2) this.#known.delete(Math.min(...this.#known));
  }

  #skip(problem: string): void {
    this.#skipped++;
    this.#problem(problem);
  }

  #problem(problem: string): void {
    this.#problems.push(problem);
    if (this.#problems.length > PROBLEMS_KEPT) this.#problems.shift();
  }

  #checkOpen(): void {
    if (this.#ctx.stop.aborted) throw closedError('the team log');
  }

  #query<R extends pg.QueryResultRow>(
    text: string,
    values: (string | number | null)[],
    action: string,
  ): Promise<pg.QueryResult<R>> {
    const { pool, policy, stop } = this.#ctx;
    return query<R>(pool, text, values, {
      policy,
      stop,
      stopped: () => closedError('the team log'),
      action,
    });
  }
}

/** The SHA-256 of a snapshot's text, as stored: lower-case hex of its UTF-8 bytes. */
export function checksumOf(text: string): string {
  return createHash('sha256').update(text, 'utf8').digest('hex');
}

/** Refuses a value that is not a snapshot of this team this version writes. */
function checkSnapshot(snapshot: TeamStateSnapshot, teamId: string): { seq: number } {
  const value = snapshot as Partial<TeamStateSnapshot> | null;
  if (typeof value !== 'object' || value === null) {
    throw invalid(`a snapshot must be an object, got ${describe(value)}`);
  }
  if (
    value.format !== TEAM_STATE_SNAPSHOT_FORMAT ||
    value.version !== TEAM_STATE_SNAPSHOT_VERSION
  ) {
    // only what this version of core writes: an older format carries less (no record digest)
    throw invalid(
      `a snapshot must have format ${TEAM_STATE_SNAPSHOT_FORMAT} version ${TEAM_STATE_SNAPSHOT_VERSION}, got ${describe(value.format)} version ${describe(value.version)}`,
    );
  }
  if (value.teamId !== teamId) {
    throw invalid(`the snapshot is of team ${describe(value.teamId)}, but this log is ${teamId}`, {
      teamId: describe(value.teamId),
    });
  }
  if (!Number.isSafeInteger(value.seq) || (value.seq as number) < 1) {
    throw invalid(`a snapshot's seq must be an integer >= 1, got ${describe(value.seq)}`);
  }
  return { seq: value.seq as number };
}

function invalid(message: string, details?: Record<string, unknown>): TeamError {
  return new TeamError('INVALID_ARGUMENT', message, details ? { details } : {});
}

function describe(value: unknown): string {
  try {
    return (JSON.stringify(value) ?? String(value)).slice(0, 80);
  } catch {
    return String(value);
  }
}
