import type { TeamLog, TeamRecord } from '@teamwire/core';
import { parseTeamRecord, TeamError } from '@teamwire/core';
import type { Durability } from './append-writer.js';
import { AppendWriter } from './append-writer.js';
import type { StorageFileHandle, StorageFs } from './fs-seam.js';
import { ioError, writeFully } from './fs-seam.js';
import type { ScanOutcome } from './jsonl-lines.js';
import { decodeLine, iterateLines, lineError, scanJsonl } from './jsonl-lines.js';

/** A `TeamLog` (from `@teamwire/core`) kept in a JSONL file: one record per line, line `n` holding seq `n`. */
export interface JsonlTeamLog extends TeamLog {
  /** The `log.jsonl` file. */
  readonly path: string;
}

/** Every this-many records the byte offset is remembered, so `read({fromSeq})` seeks near it. */
const CHECKPOINT_STRIDE = 1024;

/**
 * Validates one stored line as a record of this team at the expected position. Shared by the
 * owner's recovery and the read-only inspection, so both accept exactly the same files.
 */
export function checkLogLine(value: unknown, line: number, teamId: string | undefined) {
  const record = parseTeamRecord(value);
  if (record.seq !== line) {
    throw new Error(`expected seq ${line} on line ${line}, found seq ${record.seq}`);
  }
  if (teamId !== undefined && record.teamId !== teamId) {
    throw new Error(`record belongs to team ${record.teamId}, not ${teamId}`);
  }
  return record;
}

/**
 * Cuts a torn final line away, or completes a valid final line that lost its newline, and
 * returns the repaired length. Idempotent, so a kill during repair is repaired by the next open.
 */
export async function repairTail(
  handle: StorageFileHandle,
  path: string,
  outcome: ScanOutcome,
  durability: Durability,
): Promise<number> {
  try {
    if (outcome.tornBytes > 0) {
      await handle.truncate(outcome.validLength);
    } else if (outcome.missingNewline) {
      await writeFully(handle, Buffer.from('\n'), outcome.validLength);
    } else {
      return outcome.validLength;
    }
    if (durability === 'fsync') await handle.datasync();
  } catch (error) {
    throw ioError('repairing the end of', path, error);
  }
  return outcome.validLength + (outcome.missingNewline ? 1 : 0);
}

/** What opening the log found. */
export interface OpenedLog {
  log: JsonlTeamLog;
  records: number;
  tornBytes: number;
}

/**
 * Opens (recovering) the log file at `path`: validates every line, repairs a torn tail and
 * returns the log ready to append after its last record.
 */
export async function openJsonlTeamLog(options: {
  fs: StorageFs;
  path: string;
  teamId: string;
  durability: Durability;
  onClosed: () => void;
}): Promise<OpenedLog> {
  const { fs, path, teamId, durability } = options;
  let handle: StorageFileHandle;
  try {
    handle = await fs.open(path, 'r+');
  } catch (error) {
    throw ioError('opening', path, error);
  }
  try {
    const checkpoints: number[] = [];
    const outcome = await scanJsonl(handle, path, (value, line, offset) => {
      checkLogLine(value, line, teamId);
      if ((line - 1) % CHECKPOINT_STRIDE === 0) checkpoints.push(offset);
    });
    const length = await repairTail(handle, path, outcome, durability);
    const log = new JsonlTeamLogImpl({
      fs,
      path,
      teamId,
      writer: new AppendWriter({ handle, path, length, durability, label: 'team log' }),
      lastSeq: outcome.lines,
      checkpoints,
      onClosed: options.onClosed,
    });
    return { log, records: outcome.lines, tornBytes: outcome.tornBytes };
  } catch (error) {
    await handle.close().catch(() => undefined);
    throw error;
  }
}

class JsonlTeamLogImpl implements JsonlTeamLog {
  readonly specificationVersion = 'v1' as const;
  readonly teamId: string;
  readonly path: string;
  readonly #fs: StorageFs;
  readonly #writer: AppendWriter;
  readonly #checkpoints: number[];
  readonly #listeners = new Set<(record: TeamRecord) => void>();
  readonly #onClosed: () => void;
  #lastSeq: number;
  /** The seq the next accepted append must start with (counts queued, not yet durable ones). */
  #nextSeq: number;
  #closing: Promise<void> | undefined;

  constructor(options: {
    fs: StorageFs;
    path: string;
    teamId: string;
    writer: AppendWriter;
    lastSeq: number;
    checkpoints: number[];
    onClosed: () => void;
  }) {
    this.#fs = options.fs;
    this.path = options.path;
    this.teamId = options.teamId;
    this.#writer = options.writer;
    this.#lastSeq = options.lastSeq;
    this.#nextSeq = options.lastSeq + 1;
    this.#checkpoints = options.checkpoints;
    this.#onClosed = options.onClosed;
  }

  async append({ records }: { records: readonly TeamRecord[] }): Promise<void> {
    this.#writer.assertWritable();
    if (records.length === 0) return;
    const copies: TeamRecord[] = [];
    const lines: string[] = [];
    let expected = this.#nextSeq;
    for (const record of records) {
      const copy = parseTeamRecord(record);
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
      expected++;
      copies.push(copy);
      lines.push(toLine(copy));
    }
    const lengths = lines.map((line) => Buffer.byteLength(line, 'utf8') + 1);
    const bytes = Buffer.from(`${lines.join('\n')}\n`, 'utf8');
    // Reserve the seqs now, so appends issued before this one is durable continue after it.
    this.#nextSeq = expected;
    await this.#writer.enqueue(bytes, (offset) => {
      let at = offset;
      copies.forEach((copy, i) => {
        if ((copy.seq - 1) % CHECKPOINT_STRIDE === 0) this.#checkpoints.push(at);
        at += lengths[i]!;
        this.#lastSeq = copy.seq;
        this.#notify(copy);
      });
    });
  }

  async *read(options: { fromSeq?: number; signal?: AbortSignal } = {}): AsyncIterable<TeamRecord> {
    if (this.#closing) {
      throw new TeamError('STORE_CLOSED', `team log ${this.path} is closed`, {
        details: { path: this.path },
      });
    }
    const { signal } = options;
    signal?.throwIfAborted();
    const from = Math.max(1, Math.floor(options.fromSeq ?? 1));
    if (from > this.#lastSeq) return;
    const checkpoint = Math.min(
      Math.floor((from - 1) / CHECKPOINT_STRIDE),
      this.#checkpoints.length - 1,
    );
    let seq = checkpoint * CHECKPOINT_STRIDE + 1;
    let handle: StorageFileHandle;
    try {
      handle = await this.#fs.open(this.path, 'r');
    } catch (error) {
      throw ioError('opening', this.path, error);
    }
    try {
      const start = this.#checkpoints[checkpoint] ?? 0;
      for await (const line of iterateLines(handle, this.path, start, () => this.#writer.length)) {
        if (seq >= from) {
          signal?.throwIfAborted();
          let record: TeamRecord;
          try {
            if (!line.terminated) throw new Error('line has no newline');
            // Every line of the file was schema-validated when this owner opened the log or
            // appended it, and no one else writes while the lock is held: parsing is enough.
            record = JSON.parse(decodeLine(line)) as TeamRecord;
            if (record.seq !== seq) throw new Error(`expected seq ${seq}, found ${record.seq}`);
          } catch (error) {
            throw lineError(this.path, seq, error);
          }
          yield record;
        }
        seq++;
      }
    } finally {
      await handle.close().catch(() => undefined);
    }
  }

  subscribe({ listener }: { listener: (record: TeamRecord) => void }): () => void {
    const entry = (record: TeamRecord) => listener(record);
    this.#listeners.add(entry);
    return () => {
      this.#listeners.delete(entry);
    };
  }

  lastSeq(): number {
    return this.#lastSeq;
  }

  close(): Promise<void> {
    this.#closing ??= (async () => {
      try {
        await this.#writer.close();
      } finally {
        this.#listeners.clear();
        this.#onClosed();
      }
    })();
    return this.#closing;
  }

  #notify(record: TeamRecord): void {
    for (const listener of this.#listeners) {
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

/**
 * One JSONL line for an already validated value. A value JSON cannot hold (a bigint, a cycle
 * inside a tool call's free-form input) is refused as `INVALID_RECORD` instead of escaping as a
 * TypeError.
 */
export function toLine(value: unknown): string {
  try {
    return JSON.stringify(value);
  } catch (error) {
    throw new TeamError('INVALID_RECORD', `value cannot be stored as JSON: ${String(error)}`, {
      cause: error,
    });
  }
}
