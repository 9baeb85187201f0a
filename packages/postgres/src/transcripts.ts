import { randomUUID } from 'node:crypto';
import type { TranscriptEntry, TranscriptStore } from '@teamwire/core';
import { parseTranscriptEntry, repairTranscript, TeamError } from '@teamwire/core';
import type pg from 'pg';
import type { RetryPolicy } from './connection.js';
import {
  Backoff,
  ConnectError,
  execute,
  isTransient,
  isUniqueViolation,
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
    const { pool, tables: t, teamId, policy } = this.#ctx;
    const entries: TranscriptEntry[] = [];
    let after = 0;
    for (;;) {
      const page = await query<{ idx: string; entry: string }>(
        pool,
        `SELECT idx, entry FROM ${t.transcript}
          WHERE team_id = $1 AND member_id = $2 AND idx > $3 ORDER BY idx LIMIT ${PAGE_SIZE}`,
        [teamId, memberId, after],
        {
          policy,
          stop: this.#stop.signal,
          stopped: () => closedError('the transcript store'),
          action: `loading the transcript of ${memberId}`,
        },
      );
      for (const row of page.rows) {
        after = Number(row.idx);
        try {
          entries.push(parseTranscriptEntry(JSON.parse(row.entry)));
        } catch (error) {
          throw corruptRow(
            `transcript row ${after} of member ${memberId} (team ${teamId})`,
            { table: 'transcript', teamId, memberId, idx: after },
            error,
          );
        }
      }
      if (page.rows.length < PAGE_SIZE) break;
    }
    return repairTranscript(entries);
  }

  close(): Promise<void> {
    this.#closing ??= (async () => {
      this.#stop.abort();
      await Promise.all(this.#queues.values());
    })();
    return this.#closing;
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
               (team_id, member_id, idx, entry, message_id, message_part, process_id, fence, batch_id)
        SELECT $1, $2, base.last + u.ord, u.entry, u.message_id, u.message_part, $7, $8, $6
          FROM base, unnest($3::text[], $4::text[], $5::int[])
                     WITH ORDINALITY AS u(entry, message_id, message_part, ord)
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
    ];
    const messageIds = [
      ...new Set(rows.flatMap((row) => (row.messageId === null ? [] : [row.messageId]))),
    ];

    const backoff = new Backoff(policy);
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
    return { entry: toJsonText(copy, `transcript entry ${i}`), messageId, messagePart };
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
