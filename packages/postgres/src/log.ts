import { randomUUID } from 'node:crypto';
import type {
  AppendPart,
  SharedTeamLog,
  SnapshotPolicy,
  TeamLog,
  TeamLogAppendOptions,
  TeamRecord,
} from '@teamwire/core';
import { parseAppendedRecord, readTeamRecord, TeamError } from '@teamwire/core';
import type pg from 'pg';
import type { RetryPolicy, SqlValue } from './connection.js';
import {
  ConnectError,
  execute,
  isTransient,
  isUniqueViolation,
  reconnectBackoff,
  sleep,
  statementName,
} from './connection.js';
import type { Doorbell, Ring } from './doorbell.js';
import { closedError, corruptRow, fencedError, storageError } from './errors.js';
import { checkAppendSize, checkId, PAGE_SIZE, toJsonText } from './limits.js';
import type { PostgresPlacement } from './placement.js';
import { query } from './retry.js';
import type { Tables } from './schema.js';
import { PROPOSAL_ONCE_INDEX } from './schema.js';
import { checkProposalId, proposalFence } from './sequencer.js';
import { PostgresSnapshots } from './snapshots.js';

/** What the log shares with the rest of the store. */
export interface LogContext {
  readonly pool: pg.Pool;
  readonly tables: Tables;
  readonly teamId: string;
  readonly processId: string;
  readonly policy: RetryPolicy;
  readonly placement: PostgresPlacement;
  readonly doorbell: Doorbell;
}

/** One queued append: the seqs it carries and whether it was refused. */
interface Pending {
  readonly first: number;
  readonly last: number;
  /** The append queued just before this one, when this one continues its seqs (until settled). */
  after: Pending | undefined;
  settled: boolean;
  refused: boolean;
}

interface LogRow {
  seq: string;
  record: string;
}

/**
 * The team log of a PostgreSQL store: one `team_log` row per record, keyed by (team, seq), shared
 * by every process of the team. The primary key decides races between processes: an append whose
 * first seq another process took is refused with `SEQ_CONFLICT`, nothing written.
 */
export class PostgresTeamLog implements TeamLog {
  readonly specificationVersion = 'v1' as const;
  readonly teamId: string;
  readonly shared: SharedTeamLog;
  /** Snapshots of the folded state, unless the store was opened with `snapshots: false`. */
  readonly snapshots: PostgresSnapshots | undefined;
  readonly #ctx: LogContext;
  readonly #stop = new AbortController();
  readonly #subscribers = new Set<(record: TeamRecord) => void>();
  readonly #unlisten: () => void;
  /** The highest seq this store wrote or read. */
  #lastSeq: number;
  /**
   * Seqs the caller is known to hold: the log's end when the store opened, and every seq this
   * store appended since. Repeating one is the caller's mistake (`LOG_INVARIANT`); colliding with
   * a seq above it is a lost race with another process (`SEQ_CONFLICT`).
   */
  #ownedSeq: number;
  /** The last seq handed to subscribers (meaningful while there are any). */
  #delivered: number;
  #queue: Promise<void> = Promise.resolve();
  #lastQueued: Pending | undefined;
  #pumping: Promise<void> | undefined;
  #pumpAgain = false;
  #closing: Promise<void> | undefined;

  constructor(ctx: LogContext, lastSeq: number, snapshots: SnapshotPolicy | false = false) {
    this.#ctx = ctx;
    this.snapshots =
      snapshots === false
        ? undefined
        : new PostgresSnapshots({ ...ctx, stop: this.#stop.signal }, snapshots);
    this.teamId = ctx.teamId;
    this.#lastSeq = lastSeq;
    this.#ownedSeq = lastSeq;
    this.#delivered = lastSeq;
    this.shared = {
      onAppended: (listener) =>
        ctx.doorbell.listen((ring) => {
          if (ring.kind !== 'report') listener();
        }),
      placement: ctx.placement,
    };
    this.#unlisten = ctx.doorbell.listen((ring) => this.#rung(ring));
  }

  append({ records, actorId, parts }: TeamLogAppendOptions): Promise<void> {
    try {
      if (this.#closing) throw closedError('the team log');
      if (actorId !== undefined) checkId('actorId', actorId);
      if (parts !== undefined) checkParts(parts, records.length);
      if (records.length === 0) return Promise.resolve();
      const copies: TeamRecord[] = [];
      const texts: string[] = [];
      for (const record of records) {
        // a record core built was checked then; anything else is validated here (see the README)
        const copy = parseAppendedRecord(record);
        const expected = (copies.at(-1)?.seq ?? copy.seq - 1) + 1;
        if (copy.seq !== expected) {
          throw new TeamError(
            'LOG_INVARIANT',
            `append out of order: expected seq ${expected}, got ${copy.seq}`,
            { details: { expected, seq: copy.seq } },
          );
        }
        if (copy.teamId !== this.teamId) {
          throw new TeamError(
            'INVALID_ARGUMENT',
            `record seq ${copy.seq} belongs to team ${copy.teamId}, but this log is team ${this.teamId}`,
            { details: { seq: copy.seq, teamId: copy.teamId } },
          );
        }
        copies.push(copy);
        texts.push(toJsonText(copy, `record seq ${copy.seq}`));
      }
      checkAppendSize(texts, 'the append');
      const first = copies[0]!.seq;
      const last = copies.at(-1)!.seq;
      const previous = this.#lastQueued;
      const pending: Pending = {
        first,
        last,
        after: previous && !previous.settled && previous.last + 1 === first ? previous : undefined,
        settled: false,
        refused: false,
      };
      this.#lastQueued = pending;
      // Appends are written one at a time, in call order.
      const written = this.#queue.then(async () => {
        try {
          await this.#write(pending, copies, texts, actorId, parts);
        } catch (error) {
          pending.refused = true;
          throw error;
        } finally {
          pending.settled = true;
          pending.after = undefined; // nothing waits on it any more: let it be collected
        }
      });
      this.#queue = written.then(
        () => undefined,
        () => undefined,
      );
      return written;
    } catch (error) {
      return Promise.reject(error);
    }
  }

  async *read(options: { fromSeq?: number; signal?: AbortSignal } = {}): AsyncIterable<TeamRecord> {
    if (this.#closing) throw closedError('the team log');
    const { signal } = options;
    signal?.throwIfAborted();
    const fromSeq = options.fromSeq ?? 1;
    if (!Number.isFinite(fromSeq)) {
      throw new TeamError('INVALID_ARGUMENT', `fromSeq must be a finite number, got ${fromSeq}`);
    }
    let next = Math.max(1, Math.floor(fromSeq));
    for (;;) {
      const rows = await this.#page(next, signal);
      for (const row of rows) {
        signal?.throwIfAborted();
        const record = this.#decode(row, next);
        if (record.seq > this.#lastSeq) this.#lastSeq = record.seq;
        this.snapshots?.noteRecord(record.seq, row.record.length);
        next++;
        yield record;
      }
      if (rows.length < PAGE_SIZE) return;
    }
  }

  subscribe({ listener }: { listener: (record: TeamRecord) => void }): () => void {
    if (this.#subscribers.size === 0) this.#delivered = this.#lastSeq;
    const entry = (record: TeamRecord) => listener(record);
    this.#subscribers.add(entry);
    return () => {
      this.#subscribers.delete(entry);
    };
  }

  lastSeq(): number {
    return this.#lastSeq;
  }

  close(): Promise<void> {
    this.#closing ??= (async () => {
      // Queued appends still get their first attempt; none waits out a database that is down.
      this.#stop.abort();
      await this.#queue;
      await this.#pumping;
      this.#unlisten();
      this.#subscribers.clear();
    })();
    return this.#closing;
  }

  /** Writes one validated append: fence check, gap check, rows and notification in one statement. */
  async #write(
    pending: Pending,
    copies: readonly TeamRecord[],
    texts: readonly string[],
    actorId: string | undefined,
    parts: readonly AppendPart[] | undefined,
  ): Promise<void> {
    const { first, last, after } = pending;
    if (after?.refused) {
      throw new TeamError(
        'SEQ_CONFLICT',
        `seq ${first} continues an append (${seqRange(after.first, after.last)}) that was refused; nothing written`,
        { details: { seq: first } },
      );
    }
    if (first <= this.#ownedSeq) {
      throw new TeamError(
        'LOG_INVARIANT',
        `append out of order: seq ${first} is already in the log (it holds seq 1–${this.#ownedSeq} at least)`,
        { details: { seq: first, lastSeq: this.#ownedSeq } },
      );
    }
    const { pool, policy } = this.#ctx;
    const batchId = randomUUID();
    const statement =
      parts === undefined
        ? this.#oneActor(copies, texts, actorId, batchId)
        : this.#manyParts(copies, texts, parts, batchId);
    const { sql, values, token } = statement;

    const backoff = reconnectBackoff(policy);
    /** True once an attempt may have reached the server without an answer coming back. */
    let maybeSent = false;
    for (;;) {
      try {
        const result = await execute<{
          fence_rows: number;
          inserted: number;
          lost_part: number | null;
        }>(pool, sql, values, statementName(parts === undefined ? 'append' : 'append-parts', sql));
        const row = result.rows[0]!;
        if (parts !== undefined && row.lost_part !== null) {
          const part = parts[row.lost_part]!;
          if (part.proposal === undefined) this.#ctx.placement.fencedOut();
          throw fencedPart(part, row.lost_part);
        }
        if (parts === undefined && token !== null && row.fence_rows === 0) {
          this.#ctx.placement.fencedOut();
          throw fencedError(actorId!, 'the team log');
        }
        if (row.inserted === 0) {
          throw new TeamError(
            'LOG_INVARIANT',
            `append out of order: seq ${first - 1} is not in the log, so seq ${first} cannot follow it`,
            { details: { seq: first } },
          );
        }
        break;
      } catch (error) {
        if (TeamError.isInstance(error)) throw error;
        if (isUniqueViolation(error)) {
          // Our own earlier attempt may have committed after all; otherwise another process won.
          if (maybeSent && (await this.#batchAt(first, pending)) === batchId) break;
          if ((error as { constraint?: unknown }).constraint === PROPOSAL_ONCE_INDEX) {
            const proposalIds = await this.#writtenProposals(parts ?? [], pending);
            throw new TeamError(
              'SEQ_CONFLICT',
              `a proposal of this append (${proposalIds.join(', ')}) was already written by another process; nothing written. Read the records after seq ${this.#lastSeq}, decide again and retry.`,
              { details: { seq: first, proposalIds } },
            );
          }
          throw new TeamError(
            'SEQ_CONFLICT',
            `seq ${first} was appended by another process first; nothing written. Read the records after seq ${this.#lastSeq}, decide again and retry.`,
            { details: { seq: first } },
          );
        }
        if (!isTransient(error)) throw storageError(`appending ${seqRange(first, last)}`, error);
        if (!(error instanceof ConnectError)) maybeSent = true;
      }
      if (maybeSent) {
        // The connection died with the statement in flight: its fate is in the table.
        const owner = await this.#batchAt(first, pending);
        if (owner === batchId) break;
        if (owner !== undefined) {
          throw new TeamError(
            'SEQ_CONFLICT',
            `seq ${first} was appended by another process first; nothing written`,
            { details: { seq: first } },
          );
        }
      }
      if (this.#stop.signal.aborted) throw interrupted(pending, maybeSent);
      await sleep(backoff.next(), this.#stop.signal);
      if (this.#stop.signal.aborted) throw interrupted(pending, maybeSent);
    }

    if (last > this.#ownedSeq) this.#ownedSeq = last;
    if (last > this.#lastSeq) this.#lastSeq = last;
    for (const [i, copy] of copies.entries()) {
      this.snapshots?.noteRecord(copy.seq, texts[i]!.length);
    }
    this.#ctx.doorbell.announce(last);
    await this.#publish(copies);
  }

  /** The statement of an append written for one actor (or none), fenced by this process's claim. */
  #oneActor(
    copies: readonly TeamRecord[],
    texts: readonly string[],
    actorId: string | undefined,
    batchId: string,
  ): { sql: string; values: SqlValue[]; token: string | null } {
    const fence = actorId === undefined ? undefined : this.#ctx.placement.fence(actorId);
    if (fence?.kind === 'lost') throw fencedError(actorId!, 'the team log');
    const token = fence?.kind === 'held' ? fence.token : null;
    const { tables: t, teamId, processId } = this.#ctx;
    const sql = `
      WITH fence AS (
        SELECT 1 FROM ${t.placements}
         WHERE team_id = $1 AND member_id = $4 AND process_id = $5 AND token = $6
           FOR SHARE
      ), prior AS (
        SELECT 1 FROM ${t.log} WHERE team_id = $1 AND seq = $8::bigint - 1
      ), ins AS (
        INSERT INTO ${t.log} (team_id, seq, record, actor_id, process_id, fence, batch_id)
        SELECT $1, u.seq, u.record, $4, $5, $6, $7
          FROM unnest($2::bigint[], $3::text[]) AS u(seq, record)
         WHERE ($6::bigint IS NULL OR EXISTS (SELECT 1 FROM fence))
           AND ($8::bigint = 1 OR EXISTS (SELECT 1 FROM prior))
        RETURNING seq
      ), counted AS (
        SELECT count(*)::int AS inserted FROM ins
      )
      SELECT (SELECT count(*) FROM fence)::int AS fence_rows, inserted FROM counted`;
    const values = [
      teamId,
      copies.map((copy) => copy.seq),
      texts,
      actorId ?? null,
      processId,
      token,
      batchId,
      copies[0]!.seq,
    ];
    return { sql, values, token };
  }

  /**
   * The statement of an append in parts (a sequencer's batch): each row is fenced by the claim of
   * the process its part comes from, every claim checked (and locked against a handover) in the
   * same statement; one that fails writes nothing and names the first part it refuses. The first
   * row of a part carries its proposal id, which the log holds once.
   */
  #manyParts(
    copies: readonly TeamRecord[],
    texts: readonly string[],
    parts: readonly AppendPart[],
    batchId: string,
  ): { sql: string; values: SqlValue[]; token: null } {
    const { tables: t, teamId, processId } = this.#ctx;
    const actors: (string | null)[] = [];
    const processes: string[] = [];
    const tokens: (string | null)[] = [];
    const proposals: (string | null)[] = [];
    const partOf: number[] = [];
    // Commands proposed together share their proposal's id: the log holds it once, on the first.
    const marked = new Set<string>();
    for (const [index, part] of parts.entries()) {
      let owner = processId;
      let token: string | null = null;
      if (part.proposal !== undefined) {
        const fence = proposalFence(part.proposal);
        if (fence === undefined) {
          throw new TeamError(
            'INVALID_ARGUMENT',
            `part ${index} of the append names a proposal this store did not receive`,
            { details: { part: index } },
          );
        }
        owner = fence.processId;
        token = fence.token;
      } else if (part.actorId !== undefined) {
        const fence = this.#ctx.placement.fence(part.actorId);
        if (fence.kind === 'lost') throw fencedPart(part, index);
        token = fence.kind === 'held' ? fence.token : null;
      }
      let proposalId = part.proposal?.id ?? part.proposalId ?? null;
      if (proposalId !== null) {
        if (marked.has(proposalId)) proposalId = null;
        else marked.add(proposalId);
      }
      for (let k = 0; k < part.count; k++) {
        actors.push(part.actorId ?? null);
        processes.push(owner);
        tokens.push(token);
        proposals.push(k === 0 ? proposalId : null);
        partOf.push(index);
      }
    }
    const sql = `
      WITH rows AS (
        SELECT * FROM unnest($2::bigint[], $3::text[], $4::text[], $5::text[], $6::bigint[],
                             $7::uuid[], $8::int[])
          AS u(seq, record, actor_id, process_id, token, proposal_id, part)
      ), claims AS (
        SELECT DISTINCT part, actor_id, process_id, token FROM rows WHERE token IS NOT NULL
      ), held AS (
        SELECT p.member_id, p.process_id, p.token FROM ${t.placements} p
         WHERE p.team_id = $1
           AND (p.member_id, p.process_id, p.token) IN (SELECT actor_id, process_id, token FROM claims)
           FOR SHARE
      ), lost AS (
        SELECT c.part FROM claims c
         WHERE NOT EXISTS (SELECT 1 FROM held h WHERE h.member_id = c.actor_id
                             AND h.process_id = c.process_id AND h.token = c.token)
      ), prior AS (
        SELECT 1 FROM ${t.log} WHERE team_id = $1 AND seq = $10::bigint - 1
      ), ins AS (
        INSERT INTO ${t.log} (team_id, seq, record, actor_id, process_id, fence, batch_id, proposal_id)
        SELECT $1, r.seq, r.record, r.actor_id, r.process_id, r.token, $9, r.proposal_id
          FROM rows r
         WHERE NOT EXISTS (SELECT 1 FROM lost)
           AND ($10::bigint = 1 OR EXISTS (SELECT 1 FROM prior))
        RETURNING seq
      )
      SELECT (SELECT min(part) FROM lost) AS lost_part, (SELECT count(*) FROM ins)::int AS inserted`;
    const values = [
      teamId,
      copies.map((copy) => copy.seq),
      texts,
      actors,
      processes,
      tokens,
      proposals,
      partOf,
      batchId,
      copies[0]!.seq,
    ];
    return { sql, values, token: null };
  }

  /** Which of the proposal ids of `parts` the log holds, read with retries. */
  async #writtenProposals(parts: readonly AppendPart[], pending: Pending): Promise<string[]> {
    const ids = parts.flatMap((part) => {
      const id = part.proposal?.id ?? part.proposalId;
      return id === undefined ? [] : [id];
    });
    const { pool, tables: t, teamId, policy } = this.#ctx;
    const result = await query<{ proposal_id: string }>(
      pool,
      `SELECT proposal_id::text AS proposal_id FROM ${t.log}
        WHERE team_id = $1 AND proposal_id = ANY($2::uuid[])`,
      [teamId, ids],
      {
        policy,
        stop: this.#stop.signal,
        stopped: () => interrupted(pending, false),
        action: 'reading back which proposals are written',
      },
    );
    return result.rows.map((row) => row.proposal_id);
  }

  /** The batch that holds `seq`, read with retries: how an append of unknown fate is settled. */
  async #batchAt(seq: number, pending: Pending): Promise<string | undefined> {
    const { pool, tables: t, teamId, policy } = this.#ctx;
    const result = await query<{ batch_id: string }>(
      pool,
      `SELECT batch_id::text AS batch_id FROM ${t.log} WHERE team_id = $1 AND seq = $2`,
      [teamId, seq],
      {
        policy,
        stop: this.#stop.signal,
        stopped: () => interrupted(pending, true),
        action: `reading back seq ${seq}`,
      },
    );
    return result.rows[0]?.batch_id;
  }

  /** One page of rows from `fromSeq` on, retried while the database cannot be reached. */
  async #page(fromSeq: number, signal: AbortSignal | undefined): Promise<LogRow[]> {
    const { pool, tables: t, teamId, policy } = this.#ctx;
    const result = await query<LogRow>(
      pool,
      `SELECT seq, record FROM ${t.log}
        WHERE team_id = $1 AND seq >= $2 ORDER BY seq LIMIT ${PAGE_SIZE}`,
      [teamId, fromSeq],
      {
        policy,
        stop: this.#stop.signal,
        stopped: () => closedError('the team log'),
        action: `reading the team log from seq ${fromSeq}`,
        signal,
      },
    );
    return result.rows;
  }

  /** Decodes and validates one row, which must hold seq `expected`. */
  #decode(row: LogRow, expected: number): TeamRecord {
    const seq = Number(row.seq);
    try {
      if (seq !== expected) throw new Error(`seq ${expected} is missing`);
      const record = readTeamRecord(JSON.parse(row.record));
      if (record.seq !== seq) throw new Error(`the record holds seq ${record.seq}`);
      if (record.teamId !== this.teamId) {
        throw new Error(`the record belongs to team ${record.teamId}`);
      }
      return record;
    } catch (error) {
      throw corruptRow(
        `team_log row seq ${seq} of team ${this.teamId}`,
        { table: 'team_log', teamId: this.teamId, seq },
        error,
      );
    }
  }

  /** Hands an append's records to subscribers, after any of other processes that came before. */
  async #publish(copies: readonly TeamRecord[]): Promise<void> {
    if (this.#subscribers.size === 0) return;
    if (this.#delivered < copies[0]!.seq - 1) await this.#pump();
    for (const copy of copies) this.#emit(copy);
  }

  #rung(ring: Ring): void {
    if (this.#subscribers.size === 0 || this.#closing || ring.kind === 'report') return;
    if (ring.kind === 'notice' && ring.notice.lastSeq <= this.#delivered) return;
    void this.#pump();
  }

  /**
   * Reads every record after the last delivered one and hands them to subscribers, one pump at a
   * time. Never rejects: a failure leaves the rest for the next ring.
   */
  #pump(): Promise<void> {
    if (this.#pumping) {
      this.#pumpAgain = true;
      return this.#pumping;
    }
    this.#pumping = (async () => {
      do {
        this.#pumpAgain = false;
        try {
          for (;;) {
            const rows = await this.#page(this.#delivered + 1, undefined);
            for (const row of rows) {
              const record = this.#decode(row, this.#delivered + 1);
              if (record.seq > this.#lastSeq) this.#lastSeq = record.seq;
              this.snapshots?.noteRecord(record.seq, row.record.length);
              this.#emit(record);
            }
            if (rows.length < PAGE_SIZE || this.#subscribers.size === 0) break;
          }
        } catch {
          // Closed, or a row that does not decode (read() reports it as CORRUPT_LOG).
          break;
        }
      } while (this.#pumpAgain && !this.#closing);
      this.#pumping = undefined;
    })();
    return this.#pumping;
  }

  /** Calls subscribers with `record` if it is the next one they have not seen. */
  #emit(record: TeamRecord): void {
    if (record.seq !== this.#delivered + 1) return;
    this.#delivered = record.seq;
    for (const listener of this.#subscribers) {
      try {
        listener(record);
      } catch (error) {
        // A listener's bug must not undo a durable append or starve the other listeners.
        queueMicrotask(() => {
          throw error;
        });
      }
    }
  }
}

/** Checks the parts of an append: counts that add up to the records, valid ids. */
function checkParts(parts: readonly AppendPart[], records: number): void {
  let total = 0;
  for (const [index, part] of parts.entries()) {
    if (!Number.isInteger(part.count) || part.count < 1) {
      throw new TeamError('INVALID_ARGUMENT', `part ${index} of the append holds no records`, {
        details: { part: index, count: part.count },
      });
    }
    total += part.count;
    if (part.actorId !== undefined) checkId('actorId', part.actorId);
    if (part.proposalId !== undefined) checkProposalId(part.proposalId);
  }
  if (total !== records) {
    throw new TeamError(
      'INVALID_ARGUMENT',
      `the parts of the append hold ${total} records, the append ${records}`,
      { details: { parts: total, records } },
    );
  }
}

/** `FENCED` for one part of an append: its member is no longer run by the process it came from. */
function fencedPart(part: AppendPart, index: number): TeamError {
  const memberId = part.actorId ?? '(none)';
  return new TeamError(
    'FENCED',
    `member ${memberId} is no longer run by the process part ${index} of the append came from (another process took it over); nothing written to the team log`,
    { details: { memberId, part: index } },
  );
}

function seqRange(first: number, last: number): string {
  return first === last ? `seq ${first}` : `seq ${first}–${last}`;
}

function interrupted(pending: Pending, maybeSent: boolean): TeamError {
  const seqs = seqRange(pending.first, pending.last);
  return maybeSent
    ? new TeamError(
        'STORE_CLOSED',
        `the team log was closed before PostgreSQL confirmed the append of ${seqs}: the connection was lost with it in flight, so it may be in the log. Read the log after reopening.`,
        { details: { seq: pending.first, outcome: 'unknown' } },
      )
    : new TeamError(
        'STORE_CLOSED',
        `the team log was closed while PostgreSQL could not be reached; the append of ${seqs} was not written`,
        { details: { seq: pending.first, outcome: 'not-written' } },
      );
}
