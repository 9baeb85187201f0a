import { join } from 'node:path';
import type {
  SnapshotPolicy,
  StoredSnapshot,
  TeamLog,
  TeamLogSnapshots,
  TeamRecord,
  TeamStateSnapshot,
} from '@teamwire/core';
import { parseAppendedRecord, readTeamRecord, TeamError } from '@teamwire/core';
import type { Durability } from './append-writer.js';
import { AppendWriter } from './append-writer.js';
import type { StorageFileHandle, StorageFs } from './fs-seam.js';
import { errnoCode, ioError, syncDirectory, writeFully } from './fs-seam.js';
import type { ScanOutcome } from './jsonl-lines.js';
import { decodeLine, iterateLines, lineError, scanJsonl } from './jsonl-lines.js';
import type { SegmentFile, SegmentRetention } from './log-layout.js';
import { listSegments, SEGMENTS_DIR, segmentPath } from './log-layout.js';
import type { RecordPosition, SnapshotFile } from './snapshot-files.js';
import {
  listSnapshotSeqs,
  readSnapshotHeader,
  readSnapshotState,
  SNAPSHOTS_DIR,
  sha256,
  snapshotFileName,
  stateBytesOf,
  writeSnapshotFile,
} from './snapshot-files.js';

/**
 * A `TeamLog` (from `@teamwire/core`) kept in JSONL segment files: one record per line, in seq
 * order, `log.jsonl` from seq 1 and `segments/<first seq>.jsonl` after it, with snapshots of the
 * folded state under `snapshots/`.
 */
export interface JsonlTeamLog extends TeamLog {
  /** The first segment, `log.jsonl`. */
  readonly path: string;
  /** The segment files, oldest first, with the seq each starts at. */
  segments(): readonly SegmentFile[];
  /** The seq of the oldest record still on disk (1 unless retention removed segments). */
  firstSeq(): number;
}

/** Every this-many records the byte offset is remembered, so `read({fromSeq})` seeks near it. */
const CHECKPOINT_STRIDE = 1024;

/**
 * Validates one stored line, as `JSON.parse` gave it, as a record of this team at the expected
 * position (with core's `readTeamRecord`: checked in place, no copy). Shared by the owner's
 * recovery and the read-only inspection, so both accept exactly the same files.
 */
export function checkLogLine(value: unknown, seq: number, teamId: string | undefined) {
  const record = readTeamRecord(value);
  if (record.seq !== seq) {
    throw new Error(`expected seq ${seq}, found seq ${record.seq}`);
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
  /** Records validated on open: those after the snapshot it starts from, or all of them. */
  records: number;
  lastSeq: number;
  tornBytes: number;
  /** The seq of the newest snapshot whose envelope checked out (0: none). */
  snapshotSeq: number;
  /** Snapshot files skipped because they were torn, altered or not this log's. */
  snapshotsSkipped: number;
}

/** The snapshot an open started after: its checked header and its state, read once. */
interface OpenedSnapshot {
  file: SnapshotFile;
  state: unknown;
}

/** An append's caller waiting for a seq to be durable. */
interface DurableWaiter {
  seq: number;
  resolve: () => void;
  reject: (error: unknown) => void;
}

/** A segment as the open log knows it. */
interface Segment extends SegmentFile {
  /** Closed segments: their length and last seq. The active (last) segment has none. */
  end?: { length: number; last: number };
  /** Known line offsets, `[seq, offset]`, ascending; the first is the segment's start. */
  checkpoints: [number, number][];
}

interface LogOptions {
  fs: StorageFs;
  dir: string;
  teamId: string;
  durability: Durability;
  onClosed: () => void;
  segmentBytes: number;
  snapshots: SnapshotPolicy | false;
  retention: SegmentRetention;
}

/**
 * Opens (recovering) the log of the team folder `dir`. Validation starts after the newest
 * snapshot whose envelope checks out (its record is this log's line at that position): the lines
 * after it are validated (schema, seq, team) and a torn tail is repaired; older lines were
 * validated when appended and are validated again only when read. Without a snapshot every line
 * is validated, which needs the log from seq 1 (`HISTORY_UNAVAILABLE` otherwise).
 */
export async function openJsonlTeamLog(options: LogOptions): Promise<OpenedLog> {
  const { fs, dir, teamId, durability } = options;
  const files = await listSegments(fs, dir);
  if (files.length === 0) {
    throw new TeamError('TEAM_NOT_FOUND', `no team log in ${dir}`, { details: { dir } });
  }
  const segments: Segment[] = files.map((file, i) => {
    const next = files[i + 1];
    return {
      ...file,
      checkpoints: [[file.first, 0]],
      ...(next ? { end: { length: -1, last: next.first - 1 } } : {}),
    };
  });
  const snapshotDir = join(dir, SNAPSHOTS_DIR);
  const snapshotSeqs = options.snapshots === false ? [] : await listSnapshotSeqs(fs, snapshotDir);
  let skipped = 0;
  let start: { index: number; offset: number; seq: number; recordOffset?: number } | undefined;
  let chosen: OpenedSnapshot | undefined;
  for (const seq of snapshotSeqs) {
    try {
      const file = await readSnapshotHeader(
        fs,
        join(snapshotDir, snapshotFileName(seq)),
        teamId,
        seq,
      );
      const at = await startAfter(fs, segments, file);
      if (at === undefined) {
        skipped++;
        continue;
      }
      // Its state is read (and its checksum checked) now, and handed to the runtime as is.
      const state = await readSnapshotState(fs, file);
      start = at;
      chosen = { file, state };
      break;
    } catch (error) {
      if (!isSkippable(error)) throw error;
      skipped++;
    }
  }
  if (start === undefined) {
    const first = segments[0] as Segment;
    if (first.first !== 1) {
      throw new TeamError(
        'HISTORY_UNAVAILABLE',
        `the log of ${dir} starts at seq ${first.first} (older segments were removed) and no valid snapshot covers them`,
        { details: { dir, firstSeq: first.first } },
      );
    }
    start = { index: 0, offset: 0, seq: 1 };
  }
  // Sizes of closed segments before the start (never scanned here).
  for (let i = 0; i < start.index; i++) {
    const segment = segments[i] as Segment;
    (segment.end as { length: number }).length = await fileSize(fs, segment.path);
  }
  let lastSeq = start.seq - 1;
  let records = 0;
  let tornBytes = 0;
  let tailBytes = 0;
  let activeHandle: StorageFileHandle | undefined;
  let activeLength = 0;
  try {
    for (let i = start.index; i < segments.length; i++) {
      const segment = segments[i] as Segment;
      const active = i === segments.length - 1;
      if (segment.first !== lastSeq + 1 && !(i === start.index && start.offset > 0)) {
        throw new TeamError(
          'CORRUPT_LOG',
          `${segment.path} starts at seq ${segment.first}, but the segment before it ends at seq ${lastSeq}`,
          { details: { file: segment.path } },
        );
      }
      const handle = await openFile(fs, segment.path, active ? 'r+' : 'r');
      try {
        const from = i === start.index ? start.offset : 0;
        if (i === start.index && from > 0) {
          // The snapshot's own record too: core reads the log from it to check the snapshot's
          // digest, which must not cost a scan of the segment from its start.
          const at = start.recordOffset;
          if (at !== undefined && at > 0) segment.checkpoints.push([start.seq - 1, at]);
          segment.checkpoints.push([start.seq, from]);
        }
        const outcome = await scanFrom(handle, segment, from, lastSeq + 1, teamId);
        records += outcome.lines;
        lastSeq += outcome.lines;
        if (!active) {
          if (outcome.tornBytes > 0 || outcome.missingNewline) {
            throw new TeamError(
              'CORRUPT_LOG',
              `${segment.path} is a closed segment but its last line is incomplete`,
              { details: { file: segment.path } },
            );
          }
          segment.end = { length: outcome.validLength, last: lastSeq };
          tailBytes += outcome.validLength - from;
        } else {
          tornBytes = outcome.tornBytes;
          activeLength = await repairTail(handle, segment.path, outcome, durability);
          tailBytes += activeLength - from;
          activeHandle = handle;
        }
      } finally {
        if (!active) await handle.close().catch(() => undefined);
      }
    }
    const log = new JsonlTeamLogImpl(options, {
      segments,
      handle: activeHandle as StorageFileHandle,
      activeLength,
      lastSeq,
      validFrom: start.seq,
      snapshot: chosen,
      snapshotSeqs,
      tailBytes,
    });
    return {
      log,
      records,
      lastSeq,
      tornBytes,
      snapshotSeq: chosen?.file.header.seq ?? 0,
      snapshotsSkipped: skipped,
    };
  } catch (error) {
    await activeHandle?.close().catch(() => undefined);
    throw error;
  }
}

/**
 * Where validation starts after the snapshot `file`: right after its record, when the record's
 * line is this log's (same bytes); at the start of the first segment when the snapshot's record
 * was in a segment removed by retention. `undefined` when it does not belong to this log.
 */
async function startAfter(
  fs: StorageFs,
  segments: readonly Segment[],
  file: SnapshotFile,
): Promise<{ index: number; offset: number; seq: number; recordOffset?: number } | undefined> {
  const { record, seq } = file.header;
  if (record === undefined) return undefined;
  const index = segments.findIndex((segment) => segment.first === record.segment);
  if (index === -1) {
    // Its record's segment was removed: usable when the oldest kept segment continues right after.
    const first = segments[0] as Segment;
    return first.first === seq + 1 ? { index: 0, offset: 0, seq: seq + 1 } : undefined;
  }
  const segment = segments[index] as Segment;
  const handle = await openFile(fs, segment.path, 'r');
  try {
    const bytes = Buffer.alloc(record.length);
    const { bytesRead } = await handle.read(bytes, 0, record.length, record.offset);
    if (bytesRead !== record.length || bytes[record.length - 1] !== 0x0a) return undefined;
    if (sha256(bytes) !== record.sha256) return undefined;
  } catch (error) {
    throw ioError('reading', segment.path, error);
  } finally {
    await handle.close().catch(() => undefined);
  }
  return {
    index,
    offset: record.offset + record.length,
    seq: seq + 1,
    recordOffset: record.offset,
  };
}

/**
 * Validates the lines of one segment from byte `from`, the first holding seq `seq`, and
 * remembers a checkpoint every {@link CHECKPOINT_STRIDE} records.
 */
function scanFrom(
  handle: StorageFileHandle,
  segment: Segment,
  from: number,
  seq: number,
  teamId: string,
): Promise<ScanOutcome> {
  const visit = (value: unknown, line: number, offset: number) => {
    const expected = segment.first + line - 1;
    checkLogLine(value, expected, teamId);
    if ((expected - segment.first) % CHECKPOINT_STRIDE === 0 && offset > 0) {
      const last = segment.checkpoints[segment.checkpoints.length - 1] as [number, number];
      if (last[0] < expected) segment.checkpoints.push([expected, offset]);
    }
  };
  return scanJsonl(handle, segment.path, visit, { from, firstLine: lineNumber(segment, seq) });
}

/** The line number (from 1) of `seq` in its segment. */
function lineNumber(segment: SegmentFile, seq: number): number {
  return seq - segment.first + 1;
}

async function openFile(fs: StorageFs, path: string, flags: string): Promise<StorageFileHandle> {
  try {
    return await fs.open(path, flags);
  } catch (error) {
    throw ioError('opening', path, error);
  }
}

async function fileSize(fs: StorageFs, path: string): Promise<number> {
  try {
    return (await fs.stat(path)).size;
  } catch (error) {
    throw ioError('reading', path, error);
  }
}

class JsonlTeamLogImpl implements JsonlTeamLog {
  readonly specificationVersion = 'v1' as const;
  readonly teamId: string;
  readonly path: string;
  readonly snapshots: TeamLogSnapshots | undefined;
  readonly #fs: StorageFs;
  readonly #dir: string;
  readonly #durability: Durability;
  readonly #segmentBytes: number;
  readonly #segments: Segment[];
  readonly #listeners = new Set<(record: TeamRecord) => void>();
  readonly #onClosed: () => void;
  readonly #snapshotStore: JsonlSnapshots | undefined;
  #writer: AppendWriter;
  #lastSeq: number;
  /** Records from this seq on were validated (at open or on append); older ones are checked when read. */
  #validFrom: number;
  /** The seq the next accepted append must start with (counts queued, not yet durable ones). */
  #nextSeq: number;
  /** Bytes of the active segment, queued appends included: when to move to a new segment. */
  #reservedBytes: number;
  /** Appends wait here, in call order, while the log moves to a new segment. */
  #gate: Promise<void> | undefined;
  /** Bytes made durable since the log opened (with the tail validated on open). */
  #bytesWritten: number;
  readonly #durableWaiters: DurableWaiter[] = [];
  #closing: Promise<void> | undefined;

  constructor(
    options: LogOptions,
    opened: {
      segments: Segment[];
      handle: StorageFileHandle;
      activeLength: number;
      lastSeq: number;
      validFrom: number;
      snapshot: OpenedSnapshot | undefined;
      snapshotSeqs: number[];
      tailBytes: number;
    },
  ) {
    this.#fs = options.fs;
    this.#dir = options.dir;
    this.path = segmentPath(options.dir, 1);
    this.teamId = options.teamId;
    this.#durability = options.durability;
    this.#segmentBytes = options.segmentBytes;
    this.#segments = opened.segments;
    this.#onClosed = options.onClosed;
    const active = this.#active;
    this.#writer = this.#writerFor(active.path, opened.handle, opened.activeLength);
    this.#reservedBytes = opened.activeLength;
    this.#lastSeq = opened.lastSeq;
    this.#nextSeq = opened.lastSeq + 1;
    this.#validFrom = opened.validFrom;
    this.#bytesWritten = opened.tailBytes;
    this.#snapshotStore =
      options.snapshots === false
        ? undefined
        : new JsonlSnapshots(this, options.snapshots, options.retention, opened);
    this.snapshots = this.#snapshotStore;
  }

  get #active(): Segment {
    return this.#segments[this.#segments.length - 1] as Segment;
  }

  /** True when the snapshot's record is this log's line at its position (or was removed). */
  async holdsRecordOf(file: SnapshotFile): Promise<boolean> {
    return (await startAfter(this.#fs, this.#segments, file)) !== undefined;
  }

  /** The folder, the file system and the durability, for the snapshot store. */
  get internals() {
    return { fs: this.#fs, dir: this.#dir, durability: this.#durability };
  }

  get bytesWritten(): number {
    return this.#bytesWritten;
  }

  segments(): readonly SegmentFile[] {
    return this.#segments.map(({ first, path }) => ({ first, path }));
  }

  firstSeq(): number {
    return (this.#segments[0] as Segment).first;
  }

  #writerFor(path: string, handle: StorageFileHandle, length: number): AppendWriter {
    return new AppendWriter({
      handle,
      path,
      length,
      durability: this.#durability,
      label: 'team log',
      onFailure: (failure) => {
        for (const waiter of this.#durableWaiters.splice(0)) waiter.reject(failure);
      },
    });
  }

  append({ records }: { records: readonly TeamRecord[] }): Promise<void> {
    // Not `async`: the common case hands the writer's promise straight back, one promise and no
    // extra microtask turns per append; a refusal is still a rejected promise, never a throw.
    try {
      return this.#append(records);
    } catch (error) {
      return Promise.reject(error);
    }
  }

  #append(records: readonly TeamRecord[]): Promise<void> {
    // The writer is closed for a moment while the log moves to a new segment; only a failure
    // or the log's own close refuses appends.
    if (this.#writer.failure) this.#writer.assertWritable();
    if (this.#closing) throw closedError(this.path);
    if (records.length === 0) return Promise.resolve();
    const copies: TeamRecord[] = [];
    // One string for the whole batch; the writer turns its group's strings into bytes at once.
    let text = '';
    let expected = this.#nextSeq;
    for (const record of records) {
      // a record core built was checked then; anything else is validated here (see the README)
      const copy = parseAppendedRecord(record);
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
      text += `${toLine(copy)}\n`;
    }
    const length = Buffer.byteLength(text, 'utf8');
    // Reserve the seqs now, so appends issued before this one is durable continue after it.
    this.#nextSeq = expected;
    const rotate = this.#reservedBytes > 0 && this.#reservedBytes + length > this.#segmentBytes;
    this.#reservedBytes = rotate ? length : this.#reservedBytes + length;
    const onDurable = (offset: number) => {
      const segment = this.#active;
      for (let i = 0; i < copies.length; i++) {
        const copy = copies[i] as TeamRecord;
        if ((copy.seq - segment.first) % CHECKPOINT_STRIDE === 0) {
          const at = offset + lineStart(text, i);
          if (at > 0) segment.checkpoints.push([copy.seq, at]);
        }
        this.#lastSeq = copy.seq;
        this.#notify(copy);
      }
      this.#bytesWritten += length;
      this.#settleWaiters();
    };
    if (!rotate && this.#gate === undefined) return this.#writer.enqueue(text, length, onDurable);
    return this.#enqueueBehindGate(rotate, copies[0]?.seq as number, text, length, onDurable);
  }

  /** Behind a move to a new segment: enqueues in call order once it is done. */
  async #enqueueBehindGate(
    rotate: boolean,
    first: number,
    text: string,
    length: number,
    onDurable: (offset: number) => void,
  ): Promise<void> {
    let enqueued: Promise<void> | undefined;
    const gate = (this.#gate ?? Promise.resolve()).then(async () => {
      if (rotate) await this.#rotate(first);
      enqueued = this.#writer.enqueue(text, length, onDurable);
    });
    this.#gate = gate;
    void gate.then(
      () => {
        if (this.#gate === gate) this.#gate = undefined;
      },
      () => {
        if (this.#gate === gate) this.#gate = undefined;
      },
    );
    await gate;
    await enqueued;
  }

  /**
   * Closes the active segment (after its queued appends are durable) and starts
   * `segments/<first>.jsonl`. A kill at any point leaves a log that opens: an empty new segment
   * is simply the active one.
   */
  async #rotate(first: number): Promise<void> {
    const old = this.#active;
    const writer = this.#writer;
    await writer.close();
    // a failed write stopped the writer: nothing continues in a new segment
    if (writer.failure) writer.assertWritable();
    old.end = { length: writer.length, last: first - 1 };
    const path = segmentPath(this.#dir, first);
    const folder = join(this.#dir, SEGMENTS_DIR);
    const sync = this.#durability === 'fsync';
    try {
      try {
        await this.#fs.mkdir(folder, { recursive: true });
      } catch (error) {
        if (errnoCode(error) !== 'EEXIST') throw ioError('creating folder', folder, error);
      }
      if (sync) await syncDirectory(this.#fs, this.#dir);
      const handle = await openFile(this.#fs, path, 'wx');
      if (sync) await syncDirectory(this.#fs, folder);
      this.#segments.push({ first, path, checkpoints: [[first, 0]] });
      this.#writer = this.#writerFor(path, handle, 0);
    } catch (error) {
      const failure = ioError('starting segment', path, error);
      this.#writer.stop(failure);
      throw failure;
    }
  }

  async *read(options: { fromSeq?: number; signal?: AbortSignal } = {}): AsyncIterable<TeamRecord> {
    if (this.#closing) throw closedError(this.path);
    const { signal } = options;
    signal?.throwIfAborted();
    let seq = Math.max(1, Math.floor(options.fromSeq ?? 1));
    while (seq <= this.#lastSeq) {
      const segment = this.#segmentFor(seq);
      const [startSeq, startOffset] = checkpointFor(segment, seq);
      let at = startSeq;
      const before = seq;
      const handle = await openFile(this.#fs, segment.path, 'r');
      try {
        const end = () =>
          segment.end?.length ?? (segment === this.#active ? this.#writer.length : 0);
        for await (const line of iterateLines(handle, segment.path, startOffset, end)) {
          if (at >= seq) {
            signal?.throwIfAborted();
            let record: TeamRecord;
            try {
              if (!line.terminated) throw new Error('line has no newline');
              const value = JSON.parse(decodeLine(line)) as TeamRecord;
              // Lines validated at open or append are only parsed; older ones are checked now.
              record = at < this.#validFrom ? checkLogLine(value, at, this.teamId) : value;
              if (record.seq !== at) throw new Error(`expected seq ${at}, found ${record.seq}`);
            } catch (error) {
              throw lineError(segment.path, lineNumber(segment, at), error);
            }
            yield record;
            seq = at + 1;
          }
          at++;
        }
      } finally {
        await handle.close().catch(() => undefined);
      }
      // A closed segment that gave fewer records than it holds is damaged; the active one is
      // read to its durable end, and read again only when it grew meanwhile.
      if (segment.end !== undefined && seq <= segment.end.last) {
        throw new TeamError('CORRUPT_LOG', `${segment.path} ends before seq ${seq}`, {
          details: { file: segment.path },
        });
      }
      if (seq === before) break;
    }
  }

  /** The segment holding `seq` (which is at most `lastSeq`). */
  #segmentFor(seq: number): Segment {
    const segments = this.#segments;
    const first = segments[0] as Segment;
    if (seq < first.first) {
      throw new TeamError(
        'HISTORY_UNAVAILABLE',
        `records before seq ${first.first} were removed under the retention policy (reading from seq ${seq})`,
        { details: { fromSeq: seq, firstSeq: first.first } },
      );
    }
    let low = 0;
    let high = segments.length - 1;
    while (low < high) {
      const mid = (low + high + 1) >> 1;
      if ((segments[mid] as Segment).first <= seq) low = mid;
      else high = mid - 1;
    }
    return segments[low] as Segment;
  }

  /** Where the record `seq` (durable) lies: found from the nearest checkpoint. */
  async positionOf(seq: number): Promise<RecordPosition & { line: Buffer }> {
    const segment = this.#segmentFor(seq);
    const [startSeq, startOffset] = checkpointFor(segment, seq);
    const handle = await openFile(this.#fs, segment.path, 'r');
    try {
      let at = startSeq;
      const end = segment.end?.length ?? this.#writer.length;
      for await (const line of iterateLines(handle, segment.path, startOffset, end)) {
        if (at === seq) {
          if (!line.terminated) break;
          return {
            segment: segment.first,
            offset: line.offset,
            length: line.bytes.length + 1,
            line: Buffer.concat([line.bytes, Buffer.from('\n')]),
          };
        }
        at++;
      }
    } finally {
      await handle.close().catch(() => undefined);
    }
    throw new TeamError('CORRUPT_LOG', `${segment.path} does not hold seq ${seq}`, {
      details: { file: segment.path },
    });
  }

  /** Resolves once `seq` is durable; rejects when the log fails or closes first. */
  durable(seq: number): Promise<void> {
    if (seq <= this.#lastSeq) return Promise.resolve();
    if (this.#closing || this.#writer.failure) return Promise.reject(closedError(this.path));
    return new Promise((resolve, reject) => this.#durableWaiters.push({ seq, resolve, reject }));
  }

  #settleWaiters(): void {
    if (this.#durableWaiters.length === 0) return;
    for (let i = this.#durableWaiters.length - 1; i >= 0; i--) {
      const waiter = this.#durableWaiters[i] as DurableWaiter;
      if (waiter.seq <= this.#lastSeq) {
        this.#durableWaiters.splice(i, 1);
        waiter.resolve();
      }
    }
  }

  /** Removes segments wholly at or before `seq` (never the active one); returns them. */
  detachSegmentsThrough(seq: number): Segment[] {
    const removed: Segment[] = [];
    while (this.#segments.length > 1) {
      const oldest = this.#segments[0] as Segment;
      if (oldest.end === undefined || oldest.end.last > seq) break;
      removed.push(oldest);
      this.#segments.shift();
    }
    if (removed.length > 0) this.#validFrom = Math.max(this.#validFrom, this.firstSeq());
    return removed;
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
        await this.#gate?.catch(() => undefined);
        await this.#writer.close();
        await this.#snapshotStore?.close();
      } finally {
        for (const waiter of this.#durableWaiters.splice(0)) waiter.reject(closedError(this.path));
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
 * The UTF-8 byte offset of line `index` within `text` (whole JSONL lines, whose JSON never holds a
 * raw newline). Only a record that falls on a checkpoint needs it, so appends of one record never
 * scan their text.
 */
function lineStart(text: string, index: number): number {
  let at = 0;
  for (let i = 0; i < index; i++) at = text.indexOf('\n', at) + 1;
  return Buffer.byteLength(text.slice(0, at), 'utf8');
}

/** The nearest known `[seq, offset]` at or before `seq` in `segment`. */
function checkpointFor(segment: Segment, seq: number): [number, number] {
  const points = segment.checkpoints;
  let low = 0;
  let high = points.length - 1;
  while (low < high) {
    const mid = (low + high + 1) >> 1;
    if ((points[mid] as [number, number])[0] <= seq) low = mid;
    else high = mid - 1;
  }
  return points[low] as [number, number];
}

/**
 * A snapshot that cannot be used is skipped, never fatal: a torn or altered file, one from a newer
 * version, or one removed meanwhile. The log itself stays the truth.
 */
function isSkippable(error: unknown): boolean {
  if (TeamError.hasCode(error, 'SNAPSHOT_INVALID')) return true;
  if (TeamError.hasCode(error, 'UNSUPPORTED_SCHEMA_VERSION')) return true;
  return TeamError.hasCode(error, 'STORAGE_IO') && error.details?.errno === 'ENOENT';
}

function closedError(path: string): TeamError {
  return new TeamError('STORE_CLOSED', `team log ${path} is closed`, { details: { path } });
}

/**
 * The snapshots of a JSONL log: `snapshots/<seq>.snapshot` files (see `snapshot-files.ts`) and
 * what retention does to the segments the oldest kept one covers. When one is due, and whether
 * one belongs to this log, are core's rules; the header's record position (and the hash of that
 * line) is this store's own envelope, which tells an open where to start validating, and lets it
 * vouch for snapshots of format version 1.
 */
class JsonlSnapshots implements TeamLogSnapshots {
  readonly policy: SnapshotPolicy;
  readonly #log: JsonlTeamLogImpl;
  readonly #retention: SegmentRetention;
  /** Snapshot seqs on disk, newest first. */
  #seqs: number[];
  /** The one chosen on open, its state already read; handed out once. */
  #opened: OpenedSnapshot | undefined;
  readonly #rejected = new Set<number>();
  #writing: Promise<unknown> | undefined;
  #closed = false;

  constructor(
    log: JsonlTeamLogImpl,
    policy: SnapshotPolicy,
    retention: SegmentRetention,
    opened: { snapshot: OpenedSnapshot | undefined; snapshotSeqs: number[] },
  ) {
    this.#log = log;
    this.policy = policy;
    this.#retention = retention;
    this.#opened = opened.snapshot;
    this.#seqs = opened.snapshotSeqs;
  }

  get #folder(): string {
    return join(this.#log.internals.dir, SNAPSHOTS_DIR);
  }

  async *list(): AsyncIterable<StoredSnapshot> {
    const { fs } = this.#log.internals;
    for (const seq of [...this.#seqs]) {
      if (this.#rejected.has(seq) || seq > this.#log.lastSeq()) continue;
      let file: SnapshotFile;
      let state: unknown;
      try {
        const opened = this.#opened;
        this.#opened = undefined;
        if (opened?.file.header.seq === seq) {
          ({ file, state } = opened);
        } else {
          file = await readSnapshotHeader(
            fs,
            join(this.#folder, snapshotFileName(seq)),
            this.#log.teamId,
            seq,
          );
          if (!(await this.#log.holdsRecordOf(file))) {
            this.#rejected.add(seq);
            continue;
          }
          state = await readSnapshotState(fs, file);
        }
      } catch (error) {
        if (!isSkippable(error)) throw error;
        this.#rejected.add(seq);
        continue;
      }
      // Every file this store wrote names its record, checked against the log above.
      yield { seq, state, bytes: stateBytesOf(file), source: file.path, anchored: true };
    }
  }

  logBytes(): number {
    return this.#log.bytesWritten;
  }

  rejected(snapshot: StoredSnapshot): void {
    this.#rejected.add(snapshot.seq);
  }

  write(snapshot: TeamStateSnapshot): Promise<{ bytes: number }> {
    return this.#serial(() => this.#write(snapshot));
  }

  prune(options: { keep: number }): Promise<void> {
    return this.#serial(() => this.#prune(options.keep));
  }

  /** Runs `task` after the write or prune in flight: one at a time, in call order. */
  #serial<T>(task: () => Promise<T>): Promise<T> {
    if (this.#closed) {
      return Promise.reject(
        new TeamError('STORE_CLOSED', `team log ${this.#log.path} is closed`, {
          details: { path: this.#log.path },
        }),
      );
    }
    const run = (this.#writing ?? Promise.resolve()).then(task);
    const settled = run.then(
      () => undefined,
      () => undefined,
    );
    this.#writing = settled;
    void settled.then(() => {
      if (this.#writing === settled) this.#writing = undefined;
    });
    return run;
  }

  async #write(snapshot: TeamStateSnapshot): Promise<{ bytes: number }> {
    const log = this.#log;
    if (
      snapshot?.teamId !== log.teamId ||
      !Number.isSafeInteger(snapshot.seq) ||
      snapshot.seq < 1
    ) {
      throw new TeamError('INVALID_ARGUMENT', 'a snapshot of this team at a seq >= 1 is needed', {
        details: { teamId: snapshot?.teamId, seq: snapshot?.seq },
      });
    }
    const { seq } = snapshot;
    // The state may run ahead of the disk by the appends in flight: wait until they are durable.
    await log.durable(seq);
    const position = await log.positionOf(seq);
    const { fs, durability } = log.internals;
    const written = await writeSnapshotFile({
      fs,
      dir: this.#folder,
      header: {
        teamId: log.teamId,
        seq,
        record: {
          segment: position.segment,
          offset: position.offset,
          length: position.length,
          sha256: sha256(position.line),
        },
        writtenAt: new Date().toISOString(),
      },
      snapshot,
      sync: durability === 'fsync',
    });
    this.#seqs = [seq, ...this.#seqs.filter((s) => s !== seq)];
    return { bytes: written.stateBytes };
  }

  /** Deletes snapshots past the newest `keep`, then applies retention to the segments they covered. */
  async #prune(keep: number): Promise<void> {
    if (!Number.isSafeInteger(keep) || keep < 1) {
      throw new TeamError('INVALID_ARGUMENT', 'prune keeps at least one snapshot', {
        details: { keep },
      });
    }
    const { fs } = this.#log.internals;
    const kept = this.#seqs.slice(0, keep);
    for (const seq of this.#seqs.slice(keep)) {
      const path = join(this.#folder, snapshotFileName(seq));
      await fs.unlink(path).catch((error: unknown) => {
        if (errnoCode(error) !== 'ENOENT') throw ioError('removing', path, error);
      });
    }
    this.#seqs = kept;
    if (this.#retention === 'keep' || kept.length < keep) return;
    const oldest = kept[kept.length - 1] as number;
    const removed = this.#log.detachSegmentsThrough(oldest);
    for (const segment of removed) await this.#retire(segment);
  }

  async #retire(segment: SegmentFile): Promise<void> {
    const { fs, dir, durability } = this.#log.internals;
    const retention = this.#retention;
    if (typeof retention === 'object') {
      await copyFile(
        fs,
        segment.path,
        join(retention.archiveDir, archiveName(segment)),
        durability,
      );
    }
    try {
      await fs.unlink(segment.path);
    } catch (error) {
      if (errnoCode(error) !== 'ENOENT') throw ioError('removing', segment.path, error);
    }
    if (durability === 'fsync') {
      await syncDirectory(fs, segment.first === 1 ? dir : join(dir, SEGMENTS_DIR));
    }
  }

  async close(): Promise<void> {
    this.#closed = true;
    await this.#writing;
  }
}

/** An archived segment's name: the seq it starts at, padded, whatever its name in the folder. */
function archiveName(segment: SegmentFile): string {
  return `${String(segment.first).padStart(16, '0')}.jsonl`;
}

/** Copies `from` to `to` (a new file) in 1 MiB chunks, flushed when `durability` asks. */
async function copyFile(fs: StorageFs, from: string, to: string, durability: Durability) {
  const folder = join(to, '..');
  try {
    await fs.mkdir(folder, { recursive: true });
  } catch (error) {
    throw ioError('creating folder', folder, error);
  }
  await fs.unlink(to).catch(() => undefined);
  const source = await openFile(fs, from, 'r');
  try {
    const target = await openFile(fs, to, 'wx');
    try {
      const buffer = Buffer.allocUnsafe(1 << 20);
      let position = 0;
      for (;;) {
        const { bytesRead } = await source.read(buffer, 0, buffer.length, position);
        if (bytesRead === 0) break;
        await writeFully(target, buffer.subarray(0, bytesRead), position);
        position += bytesRead;
      }
      if (durability === 'fsync') await target.datasync();
    } catch (error) {
      throw ioError('archiving to', to, error);
    } finally {
      await target.close().catch(() => undefined);
    }
  } finally {
    await source.close().catch(() => undefined);
  }
  if (durability === 'fsync') await syncDirectory(fs, folder);
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
