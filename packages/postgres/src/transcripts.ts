import { randomUUID } from 'node:crypto';
import type { TranscriptEntry, TranscriptStore } from '@teamwire/core';
import { parseTranscriptEntry, repairTranscript, TeamError } from '@teamwire/core';
import type pg from 'pg';
import type { RetryPolicy } from './connection.js';
import {
  ConnectError,
  execute,
  isTransient,
  isUniqueViolation,
  reconnectBackoff,
  sleep,
  statementName,
  violatedConstraint,
} from './connection.js';
import { closedError, corruptRow, fencedError, storageError } from './errors.js';
import { checkAppendSize, checkId, PAGE_SIZE, toJsonText } from './limits.js';
import type { PostgresPlacement } from './placement.js';
import { query } from './retry.js';
import type { Tables } from './schema.js';
import { MESSAGE_ONCE_CONSTRAINT } from './schema.js';

/** What the transcript store shares with the rest of the store. */
export interface TranscriptContext {
  readonly pool: pg.Pool;
  readonly tables: Tables;
  readonly teamId: string;
  readonly processId: string;
  readonly policy: RetryPolicy;
  readonly placement: PostgresPlacement;
}

/** One entry ready to write: its JSON and, for team mail, the message and part it renders. */
interface EntryRow {
  entry: string;
  messageId: string | null;
  messagePart: number | null;
  /** For a compaction entry, its {@link CompactionShape} as JSON. */
  compaction: string | null;
}

/**
 * The `compaction` column of a compaction entry: what placing the compaction in the context
 * takes, without reading the (possibly large) entry.
 */
interface CompactionShape {
  contextLength: number;
  head: number;
  replaced: number;
  retained: number[];
  /** The entry's `at`: repairing the entries before it closes their tool calls with it. */
  at: number;
}

/**
 * Members' transcripts in the `transcript` table, one row per entry in order (`idx` from 1). A
 * team message is recorded at most once per member: its id and part are a unique key, so a second
 * delivery is refused with `MESSAGE_STATE` and nothing of that append is written.
 */
export class PostgresTranscriptStore implements TranscriptStore {
  readonly specificationVersion = 'v1' as const;
  readonly #ctx: TranscriptContext;
  readonly #stop = new AbortController();
  /** Each member's appends run one at a time, in call order; members do not wait for each other. */
  readonly #queues = new Map<string, Promise<void>>();
  #closing: Promise<void> | undefined;

  constructor(ctx: TranscriptContext) {
    this.#ctx = ctx;
  }

  append({
    memberId,
    entries,
  }: {
    memberId: string;
    entries: readonly TranscriptEntry[];
  }): Promise<void> {
    try {
      if (this.#closing) throw closedError('the transcript store');
      checkId('memberId', memberId);
      if (entries.length === 0) return Promise.resolve();
      const rows = toRows(entries);
      checkAppendSize(
        rows.map((row) => row.entry),
        'the transcript append',
      );
      const previous = this.#queues.get(memberId) ?? Promise.resolve();
      const written = previous.then(() => this.#write(memberId, rows));
      const settled = written.then(
        () => undefined,
        () => undefined,
      );
      this.#queues.set(memberId, settled);
      void settled.then(() => {
        if (this.#queues.get(memberId) === settled) this.#queues.delete(memberId);
      });
      return written;
    } catch (error) {
      return Promise.reject(error);
    }
  }

  async load({ memberId }: { memberId: string }): Promise<TranscriptEntry[]> {
    if (this.#closing) throw closedError('the transcript store');
    checkId('memberId', memberId);
    return repairTranscript(await this.#rows(memberId, 0, undefined));
  }

  /**
   * What the member's context folds to, read without the history its compactions replaced. The
   * `compaction` column (filled at append, indexed for compaction entries only) gives the shape of
   * every compaction; from it alone follows which stored entries make up the context the last
   * compaction applied to. Those are read (each run between two compactions that holds one of
   * them whole, as repairing needs, except a run of which only the start is needed, such as the
   * head: it is read as far as that), then the last compaction and every entry after it. The result: that context's entries, the
   * last compaction, the entries after it. Folded with `transcriptContext` it gives exactly what
   * `load` folds to; an older summary among the messages the last compaction replaced is given
   * without its `source` (it is replaced either way). Entries the context never holds again are
   * not read, so a corrupt one is not reported here (`load` reports it). A transcript whose
   * compactions do not fit together is loaded whole.
   */
  async loadContext({ memberId }: { memberId: string }): Promise<TranscriptEntry[]> {
    if (this.#closing) throw closedError('the transcript store');
    checkId('memberId', memberId);
    const { tables: t, teamId } = this.#ctx;
    const found = await this.#query<{ idx: string; compaction: string }>(
      `SELECT idx::text AS idx, compaction::text AS compaction FROM ${t.transcript}
        WHERE team_id = $1 AND member_id = $2 AND compaction IS NOT NULL
        ORDER BY ${t.transcript}.idx`,
      [teamId, memberId],
      `finding the compactions of ${memberId}`,
    );
    const compactions: StoredCompaction[] = [];
    for (const row of found.rows) {
      const shape = parseShape(row.compaction);
      if (shape === undefined) return this.load({ memberId });
      compactions.push({ idx: Number(row.idx), ...shape });
    }
    if (compactions.length === 0) return this.load({ memberId });
    const plan = planContext(compactions);
    if (plan === undefined) return this.load({ memberId });
    const last = compactions.length - 1;

    // The runs of entries the context holds, each repaired as `load` repairs it in place: a run
    // ends at a compaction (a prompt), which closes the run's open tool calls with its `at`.
    const runs = new Map<number, TranscriptEntry[]>();
    for (const [gap, needed] of plan.gaps) {
      const from = gap === 0 ? 0 : compactions[gap - 1]!.idx;
      const until = compactions[gap]!;
      let run: TranscriptEntry[] | undefined;
      if (needed < plan.gapLengths[gap]!) {
        // Only its start (the head): read until the first `needed` entries are final, that is,
        // followed by an entry that is not a tool result (repairing what follows cannot move them).
        const size = Math.min(PAGE_SIZE, Math.max(32, 2 * needed));
        const raw: TranscriptEntry[] = [];
        for (let after = from; ; ) {
          const page = await this.#page(memberId, after, until.idx, size);
          raw.push(...page.entries);
          after = page.last;
          const repaired = repairTranscript([...raw]);
          const final = repaired.findLastIndex((entry) => entry.message.role !== 'tool') + 1;
          if (final >= needed) {
            run = repaired.slice(0, needed);
            break;
          }
          if (page.entries.length < size) break;
        }
        if (run?.some((entry) => entry.message.source?.kind === 'compaction')) {
          return this.load({ memberId });
        }
      }
      if (run === undefined) {
        const raw = await this.#rows(memberId, from, until.idx);
        if (raw.some((entry) => entry.message.source?.kind === 'compaction')) {
          return this.load({ memberId });
        }
        const closing: TranscriptEntry = {
          schemaVersion: 1,
          at: until.at,
          message: { role: 'user', content: [] },
        };
        run = repairTranscript([...raw, closing]).slice(0, -1);
        if (run.length !== plan.gapLengths[gap]) return this.load({ memberId });
      }
      runs.set(gap, run);
    }
    const summaries = new Map<number, TranscriptEntry>();
    for (const index of plan.summaries) {
      const idx = compactions[index]!.idx;
      const [entry] = await this.#rows(memberId, idx - 1, idx + 1);
      if (entry === undefined || !sameShape(entry, compactions[index]!)) {
        return this.load({ memberId });
      }
      summaries.set(index, entry);
    }
    const tail = await this.#rows(memberId, compactions[last]!.idx - 1, undefined);
    if (tail[0] === undefined || !sameShape(tail[0], compactions[last]!)) {
      return this.load({ memberId });
    }
    const context = plan.before.map((slot): TranscriptEntry => {
      if (slot.kind === 'entry') return runs.get(slot.gap)![slot.offset]!;
      const summary = summaries.get(slot.index)!;
      const { source: _replaced, ...message } = summary.message;
      return { ...summary, message: message as TranscriptEntry['message'] };
    });
    return [...context, ...repairTranscript(tail)];
  }

  close(): Promise<void> {
    this.#closing ??= (async () => {
      this.#stop.abort();
      await Promise.all(this.#queues.values());
    })();
    return this.#closing;
  }

  /** The member's entries with `after < idx < before` (no upper bound without `before`), validated. */
  async #rows(
    memberId: string,
    after: number,
    before: number | undefined,
  ): Promise<TranscriptEntry[]> {
    const entries: TranscriptEntry[] = [];
    for (let from = after; ; ) {
      const page = await this.#page(memberId, from, before, PAGE_SIZE);
      entries.push(...page.entries);
      if (page.entries.length < PAGE_SIZE) return entries;
      from = page.last;
    }
  }

  /** Up to `size` entries with `after < idx < before`, validated, and the idx of the last. */
  async #page(
    memberId: string,
    after: number,
    before: number | undefined,
    size: number,
  ): Promise<{ entries: TranscriptEntry[]; last: number }> {
    const { tables: t, teamId } = this.#ctx;
    const page = await this.#query<{ idx: string; entry: string }>(
      `SELECT idx, entry FROM ${t.transcript}
        WHERE team_id = $1 AND member_id = $2 AND idx > $3 AND ($4::bigint IS NULL OR idx < $4)
        ORDER BY idx LIMIT $5`,
      [teamId, memberId, after, before ?? null, size],
      `loading the transcript of ${memberId}`,
    );
    const entries: TranscriptEntry[] = [];
    let last = after;
    for (const row of page.rows) {
      last = Number(row.idx);
      try {
        entries.push(parseTranscriptEntry(JSON.parse(row.entry)));
      } catch (error) {
        throw corruptRow(
          `transcript row ${last} of member ${memberId} (team ${teamId})`,
          { table: 'transcript', teamId, memberId, idx: last },
          error,
        );
      }
    }
    return { entries, last };
  }

  #query<R extends pg.QueryResultRow>(
    text: string,
    values: (string | number | null)[],
    action: string,
  ): Promise<pg.QueryResult<R>> {
    const { pool, policy } = this.#ctx;
    return query<R>(pool, text, values, {
      policy,
      stop: this.#stop.signal,
      stopped: () => closedError('the transcript store'),
      action,
    });
  }

  /** Writes one append: fence check, next idx and rows in one statement. */
  async #write(memberId: string, rows: readonly EntryRow[]): Promise<void> {
    const fence = this.#ctx.placement.fence(memberId);
    if (fence.kind === 'lost') throw fencedError(memberId, 'its transcript');
    const token = fence.kind === 'held' ? fence.token : null;
    const { pool, tables: t, teamId, processId, policy } = this.#ctx;
    const batchId = randomUUID();
    const sql = `
      WITH fence AS (
        SELECT 1 FROM ${t.placements}
         WHERE team_id = $1 AND member_id = $2 AND process_id = $7 AND token = $8
           FOR SHARE
      ), base AS (
        SELECT coalesce(max(idx), 0) AS last FROM ${t.transcript}
         WHERE team_id = $1 AND member_id = $2
      ), ins AS (
        INSERT INTO ${t.transcript}
               (team_id, member_id, idx, entry, message_id, message_part, process_id, fence, batch_id,
                compaction)
        SELECT $1, $2, base.last + u.ord, u.entry, u.message_id, u.message_part, $7, $8, $6,
               u.compaction::jsonb
          FROM base, unnest($3::text[], $4::text[], $5::int[], $9::text[])
                     WITH ORDINALITY AS u(entry, message_id, message_part, compaction, ord)
         WHERE ($8::bigint IS NULL OR EXISTS (SELECT 1 FROM fence))
        RETURNING idx
      )
      SELECT (SELECT count(*) FROM fence)::int AS fence_rows,
             (SELECT count(*) FROM ins)::int AS inserted`;
    const values = [
      teamId,
      memberId,
      rows.map((row) => row.entry),
      rows.map((row) => row.messageId),
      rows.map((row) => row.messagePart),
      batchId,
      processId,
      token,
      rows.map((row) => row.compaction),
    ];
    const messageIds = [
      ...new Set(rows.flatMap((row) => (row.messageId === null ? [] : [row.messageId]))),
    ];

    const backoff = reconnectBackoff(policy);
    let maybeSent = false;
    for (;;) {
      try {
        const result = await execute<{ fence_rows: number; inserted: number }>(
          pool,
          sql,
          values,
          statementName('transcript', sql),
        );
        if (token !== null && result.rows[0]!.fence_rows === 0) {
          this.#ctx.placement.fencedOut();
          throw fencedError(memberId, 'its transcript');
        }
        return;
      } catch (error) {
        if (TeamError.isInstance(error)) throw error;
        if (isUniqueViolation(error)) {
          // Our own earlier attempt may have committed after all.
          const found = await this.#settle(memberId, batchId, messageIds);
          if (found.ours) return;
          if (violatedConstraint(error) === MESSAGE_ONCE_CONSTRAINT) {
            const messageId = found.taken ?? messageIds[0];
            throw new TeamError(
              'MESSAGE_STATE',
              `message ${messageId} is already in member ${memberId}'s transcript; nothing written`,
              { details: { messageId, memberId } },
            );
          }
          // Another writer took the same idx (only possible without fencing): try again at once.
          continue;
        }
        if (!isTransient(error)) {
          throw storageError(`appending to the transcript of ${memberId}`, error);
        }
        if (!(error instanceof ConnectError)) maybeSent = true;
      }
      if (maybeSent && (await this.#settle(memberId, batchId, messageIds)).ours) return;
      if (this.#stop.signal.aborted) throw interrupted(memberId, maybeSent);
      await sleep(backoff.next(), this.#stop.signal);
      if (this.#stop.signal.aborted) throw interrupted(memberId, maybeSent);
    }
  }

  /** Whether batch `batchId` is in the transcript, and which of `messageIds` already is. */
  async #settle(
    memberId: string,
    batchId: string,
    messageIds: readonly string[],
  ): Promise<{ ours: boolean; taken: string | undefined }> {
    const { pool, tables: t, teamId, policy } = this.#ctx;
    const result = await query<{ ours: boolean; taken: string | null }>(
      pool,
      `SELECT EXISTS (SELECT 1 FROM ${t.transcript}
                       WHERE team_id = $1 AND member_id = $2 AND batch_id = $3) AS ours,
              (SELECT message_id FROM ${t.transcript}
                WHERE team_id = $1 AND member_id = $2 AND message_id = ANY($4::text[])
                LIMIT 1) AS taken`,
      [teamId, memberId, batchId, messageIds],
      {
        policy,
        stop: this.#stop.signal,
        stopped: () => interrupted(memberId, true),
        action: `reading back the transcript of ${memberId}`,
      },
    );
    const row = result.rows[0];
    return { ours: row?.ours === true, taken: row?.taken ?? undefined };
  }
}

/**
 * Validates entries and gives each team-mail entry its message id and part: one message may
 * render to several entries in one append (e.g. a tool call and its result), numbered 0, 1, 2….
 */
function toRows(entries: readonly TranscriptEntry[]): EntryRow[] {
  const parts = new Map<string, number>();
  return entries.map((entry, i) => {
    const copy = parseTranscriptEntry(entry);
    const source = copy.message.source;
    let messageId: string | null = null;
    let messagePart: number | null = null;
    if (source?.kind === 'team-message') {
      checkId('source.messageId', source.messageId);
      messageId = source.messageId;
      messagePart = parts.get(messageId) ?? 0;
      parts.set(messageId, messagePart + 1);
    }
    let compaction: string | null = null;
    if (source?.kind === 'compaction') {
      const shape: CompactionShape = {
        contextLength: source.contextLength,
        head: source.head,
        replaced: source.replaced,
        retained: source.retained,
        at: copy.at,
      };
      compaction = JSON.stringify(shape);
    }
    return {
      entry: toJsonText(copy, `transcript entry ${i}`),
      messageId,
      messagePart,
      compaction,
    };
  });
}

function interrupted(memberId: string, maybeSent: boolean): TeamError {
  return maybeSent
    ? new TeamError(
        'STORE_CLOSED',
        `the transcript store was closed before PostgreSQL confirmed an append to ${memberId}'s transcript: the connection was lost with it in flight, so it may have been written`,
        { details: { memberId, outcome: 'unknown' } },
      )
    : new TeamError(
        'STORE_CLOSED',
        `the transcript store was closed while PostgreSQL could not be reached; the append to ${memberId}'s transcript was not written`,
        { details: { memberId, outcome: 'not-written' } },
      );
}

/** A compaction entry's place in the transcript and its shape. */
interface StoredCompaction extends CompactionShape {
  idx: number;
}

/**
 * Where a message of a context comes from: entry `offset` of the repaired run of entries before
 * compaction `gap` (run 0 starts the transcript), or the summary of compaction `index`.
 */
type Slot =
  | { readonly kind: 'entry'; readonly gap: number; readonly offset: number }
  | { readonly kind: 'summary'; readonly index: number };

/** What {@link PostgresTranscriptStore.loadContext} reads. */
interface ContextPlan {
  /** The context the last compaction applies to, slot by slot. */
  before: Slot[];
  /** Runs the context holds entries of, each with how many of its first entries it needs. */
  gaps: Map<number, number>;
  /** How many entries each run holds once repaired (the compactions say so). */
  gapLengths: number[];
  /** Older summaries among the messages the last compaction replaces. */
  summaries: number[];
}

/**
 * Follows the compactions' shapes from the start: the context before compaction `j` is the one
 * after compaction `j - 1` plus the run between them, which therefore holds `contextLength` minus
 * that many entries. Undefined when the shapes do not fit together, or when a message the last
 * compaction keeps is an older summary: such a transcript is loaded whole.
 */
function planContext(compactions: readonly StoredCompaction[]): ContextPlan | undefined {
  let context: Slot[] = [];
  const gapLengths: number[] = [];
  let before: Slot[] = [];
  for (const [index, compaction] of compactions.entries()) {
    const { contextLength, head, replaced, retained } = compaction;
    const run = contextLength - context.length;
    if (run < 0) return undefined;
    gapLengths.push(run);
    for (let offset = 0; offset < run; offset++)
      context.push({ kind: 'entry', gap: index, offset });
    if (head + replaced > contextLength) return undefined;
    let previous = -1;
    for (const offset of retained) {
      if (offset <= previous || offset >= replaced) return undefined;
      previous = offset;
    }
    before = context;
    context = [
      ...context.slice(0, head),
      { kind: 'summary', index },
      ...retained.map((offset) => context[head + offset] as Slot),
      ...context.slice(head + replaced),
    ];
  }
  const last = compactions.at(-1)!;
  const kept = new Set(last.retained.map((offset) => last.head + offset));
  const gaps = new Map<number, number>();
  const summaries: number[] = [];
  for (const [position, slot] of before.entries()) {
    if (slot.kind === 'entry') {
      gaps.set(slot.gap, Math.max(gaps.get(slot.gap) ?? 0, slot.offset + 1));
      continue;
    }
    const replaced =
      position >= last.head && position < last.head + last.replaced && !kept.has(position);
    if (!replaced) return undefined;
    summaries.push(slot.index);
  }
  return { before, gaps, gapLengths, summaries };
}

function parseShape(text: string): CompactionShape | undefined {
  try {
    const value = JSON.parse(text) as Partial<CompactionShape>;
    const count = (n: unknown, min: number) => Number.isSafeInteger(n) && (n as number) >= min;
    if (
      !count(value.contextLength, 1) ||
      !count(value.head, 0) ||
      !count(value.replaced, 1) ||
      !Array.isArray(value.retained) ||
      !value.retained.every((offset) => count(offset, 0)) ||
      typeof value.at !== 'number'
    ) {
      return undefined;
    }
    return value as CompactionShape;
  } catch {
    return undefined;
  }
}

/** True when `entry` is the compaction `shape` describes. */
function sameShape(entry: TranscriptEntry, shape: CompactionShape): boolean {
  const source = entry.message.source;
  return (
    source?.kind === 'compaction' &&
    source.contextLength === shape.contextLength &&
    source.head === shape.head &&
    source.replaced === shape.replaced &&
    entry.at === shape.at &&
    source.retained.length === shape.retained.length &&
    source.retained.every((offset, i) => offset === shape.retained[i])
  );
}
