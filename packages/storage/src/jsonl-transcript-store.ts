import { dirname, join } from 'node:path';
import type { CompactionSource, TranscriptEntry, TranscriptStore } from '@teamwire/core';
import { isCompaction, parseTranscriptEntry, repairTranscript, TeamError } from '@teamwire/core';
import type { Durability } from './append-writer.js';
import { AppendWriter } from './append-writer.js';
import type { StorageFileHandle, StorageFs } from './fs-seam.js';
import { errnoCode, exists, ioError, syncDirectory } from './fs-seam.js';
import type { JsonlLine, ScanOutcome } from './jsonl-lines.js';
import { decodeLine, iterateLines, lineError } from './jsonl-lines.js';
import { repairTail, toLine } from './jsonl-team-log.js';

/** A torn transcript tail cut away when the member's file was first opened. */
export interface TranscriptRepair {
  /** The member whose transcript was repaired. */
  memberId: string;
  /** The transcript file, as an absolute path. */
  path: string;
  /** Bytes of the unfinished final line that were cut away. */
  tornBytes: number;
}

/** A `TranscriptStore` (from `@teamwire/core`) keeping one JSONL file per member under `transcripts/`. */
export interface JsonlTranscriptStore extends TranscriptStore {
  /** The `transcripts/` folder. */
  readonly dir: string;
  /** Torn tails repaired so far (files are opened, and repaired, on first use). */
  repairs(): readonly TranscriptRepair[];
  /**
   * The context the member's last compaction applied to (entry by entry), that compaction and the
   * entries after it, read from the end of the file: folded, exactly what `load` folds to.
   */
  loadContext(options: { memberId: string }): Promise<TranscriptEntry[]>;
}

import { checkSafeId } from './safe-id.js';
import type { JournalReplay } from './transcript-journal.js';
import {
  JOURNAL_CHECKPOINT_BYTES,
  JOURNAL_HEADER_BYTES,
  journalLine,
  openTranscriptJournal,
} from './transcript-journal.js';

export { checkSafeId, SAFE_ID_PATTERN } from './safe-id.js';

interface Waiter {
  lines: string[];
  text: string;
  length: number;
  resolve: () => void;
  reject: (error: unknown) => void;
}

interface MemberFile {
  path: string;
  writer: AppendWriter;
  /** The file's length once every append accepted so far is written. */
  end: number;
  /** Appends in the journal not yet handed to `writer`: the file must stay open. */
  pending: number;
}

/** The open journal a store in `fsync` mode writes every append to first. */
interface OpenJournal {
  handle: StorageFileHandle;
  path: string;
  length: number;
}

/** How many member files a store keeps open at most, by default. */
export const DEFAULT_MAX_OPEN_TRANSCRIPTS = 128;

/**
 * Creates the transcript store of a team folder. Member files are opened lazily and at most
 * `maxOpenFiles` stay open: the least recently used idle one is closed to make room (a team of a
 * thousand teammates must not hold a thousand descriptors), and reopened without a re-scan, since
 * this process is the only writer and knows its length.
 */
export function createJsonlTranscriptStore(options: {
  fs: StorageFs;
  dir: string;
  durability: Durability;
  onClosed: () => void;
  maxOpenFiles?: number;
  journal?: OpenJournal | undefined;
}): JsonlTranscriptStore {
  return new JsonlTranscriptStoreImpl(options);
}

/**
 * Opens the transcript store of team folder `teamDir`: replays and empties its transcript journal
 * (creating it in a folder of an earlier layout), then, in `fsync` mode, writes every append
 * through it (see the package README, "Transcript journal"). In `buffered` mode the journal is
 * only replayed, and appends go straight to the member files.
 */
export async function openJsonlTranscriptStore(options: {
  fs: StorageFs;
  teamDir: string;
  dir: string;
  durability: Durability;
  onClosed: () => void;
  maxOpenFiles?: number;
}): Promise<{ store: JsonlTranscriptStore; replay: JournalReplay }> {
  const opened = await openTranscriptJournal({
    fs: options.fs,
    dir: options.teamDir,
    transcriptsDir: options.dir,
    durability: options.durability,
  });
  let journal: OpenJournal | undefined;
  if (options.durability === 'fsync') journal = opened;
  else await opened.handle.close().catch(() => undefined);
  const store = new JsonlTranscriptStoreImpl({ ...options, journal });
  return { store, replay: opened.replay };
}

class JsonlTranscriptStoreImpl implements JsonlTranscriptStore {
  readonly specificationVersion = 'v1' as const;
  readonly dir: string;
  readonly #fs: StorageFs;
  readonly #durability: Durability;
  readonly #onClosed: () => void;
  readonly #maxOpen: number;
  /** Open member files, least recently used first. */
  readonly #open = new Map<string, MemberFile>();
  /** The last key of `#open`: a run of appends to one member moves nothing. */
  #newest: string | undefined;
  /** Member files scanned and repaired this session, then closed to bound open descriptors. */
  readonly #known = new Map<string, { path: string; length: number }>();
  readonly #evicting = new Set<Promise<void>>();
  readonly #opening = new Map<string, Promise<MemberFile | undefined>>();
  readonly #waiting = new Map<string, Waiter[]>();
  readonly #repairs: TranscriptRepair[] = [];
  /** The journal every append goes through first (`fsync` mode), and its handle. */
  readonly #journal: AppendWriter | undefined;
  readonly #journalHandle: StorageFileHandle | undefined;
  /** Members whose file was written since the journal's last checkpoint. */
  #dirty = new Set<string>();
  #failure: TeamError | undefined;
  #closing: Promise<void> | undefined;

  constructor(options: {
    fs: StorageFs;
    dir: string;
    durability: Durability;
    onClosed: () => void;
    maxOpenFiles?: number;
    journal?: OpenJournal | undefined;
  }) {
    this.#fs = options.fs;
    this.dir = options.dir;
    this.#durability = options.durability;
    this.#onClosed = options.onClosed;
    this.#maxOpen = options.maxOpenFiles ?? DEFAULT_MAX_OPEN_TRANSCRIPTS;
    const journal = options.journal;
    if (journal) {
      this.#journalHandle = journal.handle;
      this.#journal = new AppendWriter({
        handle: journal.handle,
        path: journal.path,
        length: journal.length,
        durability: 'fsync',
        label: 'transcript journal',
        onFailure: (failure) => this.#fail(failure),
        beforeGroup: (length) =>
          length >= JOURNAL_CHECKPOINT_BYTES ? this.#checkpoint() : Promise.resolve(undefined),
      });
    }
  }

  append(options: { memberId: string; entries: readonly TranscriptEntry[] }): Promise<void> {
    // Not `async`: an append to an open file hands the writer's promise straight back, one
    // promise and no extra microtask turns; a refusal is still a rejected promise, never a throw.
    try {
      return this.#append(options.memberId, options.entries);
    } catch (error) {
      return Promise.reject(error);
    }
  }

  #append(memberId: string, entries: readonly TranscriptEntry[]): Promise<void> {
    this.#assertWritable();
    checkSafeId('memberId', memberId);
    if (entries.length === 0) return Promise.resolve();
    // Validation builds a fresh copy; one stringify writes it (the writer makes the bytes).
    const lines: string[] = [];
    let text = '';
    for (const entry of entries) {
      const line = toLine(parseTranscriptEntry(entry));
      lines.push(line);
      text += `${line}\n`;
    }
    const length = Buffer.byteLength(text, 'utf8');
    const open = this.#open.get(memberId);
    if (open && !this.#waiting.has(memberId)) {
      this.#touch(memberId, open);
      return this.#enqueue(memberId, open, lines, text, length);
    }
    // Appends that arrive while the member's file is being opened wait in one list, released in
    // call order in a single step, so no later append can overtake them.
    return new Promise<void>((resolve, reject) => {
      let waiting = this.#waiting.get(memberId);
      if (!waiting) {
        const list: Waiter[] = [];
        waiting = list;
        this.#waiting.set(memberId, list);
        this.#member(memberId, true).then(
          (file) => this.#release(memberId, list, file, undefined),
          (error: unknown) => this.#release(memberId, list, undefined, error),
        );
      }
      waiting.push({ lines, text, length, resolve, reject });
    });
  }

  #release(memberId: string, list: Waiter[], file: MemberFile | undefined, error: unknown): void {
    if (this.#waiting.get(memberId) === list) this.#waiting.delete(memberId);
    for (const waiter of list) {
      if (!file) {
        waiter.reject(error);
        continue;
      }
      try {
        this.#enqueue(memberId, file, waiter.lines, waiter.text, waiter.length).then(
          waiter.resolve,
          waiter.reject,
        );
      } catch (refused) {
        waiter.reject(refused);
      }
    }
  }

  /**
   * Queues one append of `text` (`lines`, each with its newline) to the member's file. In `fsync`
   * mode it goes to the journal first, at the offset it will take in the member file; once the
   * journal's group is durable the member file is written (without a sync of its own) and the
   * append resolves after that write.
   */
  #enqueue(
    memberId: string,
    file: MemberFile,
    lines: string[],
    text: string,
    length: number,
  ): Promise<void> {
    const journal = this.#journal;
    if (!journal) return file.writer.enqueue(text, length, noop);
    file.writer.assertWritable();
    journal.assertWritable();
    const line = journalLine(memberId, file.end, lines, length);
    file.end += length;
    file.pending++;
    // One promise for both writes: the journal's durability hands the text to the member file,
    // whose write settles it.
    return new Promise<void>((resolve, reject) => {
      journal.queue(
        line.text,
        line.length,
        () => {
          file.pending--;
          this.#dirty.add(memberId);
          try {
            file.writer.queue(text, length, noop, resolve, reject);
          } catch (error) {
            reject(error);
          }
        },
        noop,
        reject,
      );
    });
  }

  /**
   * Empties the journal: every member file written since the last checkpoint is flushed (those
   * closed to bound open files were flushed as they closed), then the journal is cut back to its
   * header and flushed. Runs between two journal groups, so no append is half-way meanwhile.
   */
  async #checkpoint(): Promise<number> {
    // No member file is written meanwhile (writes follow journal groups), so the set holds still.
    for (const memberId of [...this.#dirty]) {
      const file = this.#open.get(memberId);
      if (file) {
        await file.writer.sync();
        continue;
      }
      // Closed to bound open files (idle, so written whole): flushed through a handle of its own.
      while (this.#evicting.size > 0) await Promise.all(this.#evicting);
      await syncFile(this.#fs, join(this.dir, `${memberId}.jsonl`));
    }
    if (this.#failure) throw this.#failure;
    this.#dirty = new Set();
    const handle = this.#journalHandle as StorageFileHandle;
    try {
      await handle.truncate(JOURNAL_HEADER_BYTES);
      await handle.datasync();
    } catch (error) {
      throw ioError('emptying', (this.#journal as AppendWriter).path, error);
    }
    return JOURNAL_HEADER_BYTES;
  }

  async load({ memberId }: { memberId: string }): Promise<TranscriptEntry[]> {
    return this.#read(memberId, (handle, file) => readWhole(handle, file.path, file.writer.length));
  }

  /**
   * The context the member's last compaction applied to, entry by entry, then that compaction and
   * every entry after it, read from the end of the file: see {@link readContext}. Without a
   * compaction it is `load`.
   */
  async loadContext({ memberId }: { memberId: string }): Promise<TranscriptEntry[]> {
    return this.#read(memberId, async (handle, file) => {
      const length = file.writer.length;
      return (await readContext(handle, file.path, length)) ?? readWhole(handle, file.path, length);
    });
  }

  async #read(
    memberId: string,
    read: (handle: StorageFileHandle, file: MemberFile) => Promise<TranscriptEntry[]>,
  ): Promise<TranscriptEntry[]> {
    if (this.#closing) throw this.#closedError();
    checkSafeId('memberId', memberId);
    const file = this.#open.get(memberId) ?? (await this.#member(memberId, false));
    if (!file) return [];
    let handle: StorageFileHandle;
    try {
      handle = await this.#fs.open(file.path, 'r');
    } catch (error) {
      throw ioError('opening', file.path, error);
    }
    try {
      return await read(handle, file);
    } finally {
      await handle.close().catch(() => undefined);
    }
  }

  repairs(): readonly TranscriptRepair[] {
    return this.#repairs;
  }

  close(): Promise<void> {
    this.#closing ??= (async () => {
      try {
        await Promise.allSettled(this.#opening.values());
        const journal = this.#journal;
        if (journal) {
          await journal.drain();
          for (const file of this.#open.values()) await file.writer.drain();
          // A clean close leaves complete member files and an empty journal.
          if (!this.#failure && journal.length > JOURNAL_HEADER_BYTES) {
            await this.#checkpoint().catch((error: unknown) => {
              this.#fail(
                TeamError.isInstance(error) ? error : ioError('emptying', journal.path, error),
              );
            });
          }
          await journal.close();
        }
        await Promise.all([...this.#open.values()].map((file) => file.writer.close()));
        await Promise.all(this.#evicting);
      } finally {
        this.#onClosed();
      }
    })();
    return this.#closing;
  }

  #assertWritable(): void {
    if (this.#failure) {
      throw new TeamError(
        'STORE_CLOSED',
        `transcript store ${this.dir} refuses appends after a failed write (${this.#failure.message}); reopen the team`,
        { cause: this.#failure, details: { dir: this.dir } },
      );
    }
    if (this.#closing) throw this.#closedError();
  }

  #closedError(): TeamError {
    return new TeamError('STORE_CLOSED', `transcript store ${this.dir} is closed`, {
      details: { dir: this.dir },
    });
  }

  /** The member's open file, opening (and, with `create`, creating) it once. */
  #member(memberId: string, create: boolean): Promise<MemberFile | undefined> {
    const pending = this.#opening.get(memberId);
    let next: Promise<MemberFile | undefined>;
    if (!pending) next = this.#openMember(memberId, create);
    else if (create) next = pending.then((file) => file ?? this.#openMember(memberId, true));
    else return pending;
    this.#opening.set(memberId, next);
    const settle = () => {
      if (this.#opening.get(memberId) === next) this.#opening.delete(memberId);
    };
    next.then(settle, settle);
    return next;
  }

  async #openMember(memberId: string, create: boolean): Promise<MemberFile | undefined> {
    const already = this.#open.get(memberId);
    if (already) return already;
    const known = this.#known.get(memberId);
    if (known) return this.#reopen(memberId, known);
    const path = join(this.dir, `${memberId}.jsonl`);
    const fs = this.#fs;
    let handle: StorageFileHandle | undefined;
    try {
      handle = await fs.open(path, 'r+');
    } catch (error) {
      if (errnoCode(error) !== 'ENOENT') throw ioError('opening', path, error);
    }
    if (!handle) {
      if (!create) return undefined;
      try {
        const sync = this.#durability === 'fsync';
        if (!(await exists(fs, this.dir))) {
          await fs.mkdir(this.dir, { recursive: true });
          if (sync) await syncDirectory(fs, dirname(this.dir));
        }
        await (await fs.open(path, 'a')).close();
        if (sync) await syncDirectory(fs, this.dir);
        handle = await fs.open(path, 'r+');
      } catch (error) {
        throw ioError('creating', path, error);
      }
    }
    try {
      const outcome = await scanTail(handle, path);
      const length = await repairTail(handle, path, outcome, this.#durability);
      if (outcome.tornBytes > 0) {
        this.#repairs.push({ memberId, path, tornBytes: outcome.tornBytes });
      }
      if (this.#closing) throw this.#closedError();
      return this.#adopt(memberId, path, handle, length);
    } catch (error) {
      await handle.close().catch(() => undefined);
      throw error;
    }
  }

  /** Opens a member file closed earlier this session: its content was checked then. */
  async #reopen(memberId: string, known: { path: string; length: number }): Promise<MemberFile> {
    let handle: StorageFileHandle;
    try {
      handle = await this.#fs.open(known.path, 'r+');
    } catch (error) {
      throw ioError('opening', known.path, error);
    }
    if (this.#closing) {
      await handle.close().catch(() => undefined);
      throw this.#closedError();
    }
    this.#known.delete(memberId);
    return this.#adopt(memberId, known.path, handle, known.length);
  }

  #adopt(memberId: string, path: string, handle: StorageFileHandle, length: number): MemberFile {
    const file: MemberFile = {
      path,
      end: length,
      pending: 0,
      writer: new AppendWriter({
        handle,
        path,
        length,
        // With the journal, member files are flushed at its checkpoints, not on every append.
        durability: this.#journal ? 'buffered' : this.#durability,
        label: 'transcript',
        onFailure: (failure) => this.#fail(failure),
      }),
    };
    if (this.#failure) file.writer.stop(this.#failure);
    this.#open.set(memberId, file);
    this.#newest = memberId;
    this.#evictIdle(memberId);
    return file;
  }

  /** Marks a member file most recently used (already so: nothing to move). */
  #touch(memberId: string, file: MemberFile): void {
    if (this.#newest === memberId) return;
    this.#open.delete(memberId);
    this.#open.set(memberId, file);
    this.#newest = memberId;
  }

  /**
   * Closes least recently used idle member files until at most `maxOpenFiles` are open. Busy files
   * stay open (the bound is exceeded only while more than that many members write at once).
   */
  #evictIdle(keep: string): void {
    if (this.#open.size <= this.#maxOpen) return;
    for (const [memberId, file] of this.#open) {
      if (this.#open.size <= this.#maxOpen) break;
      if (
        memberId === keep ||
        !file.writer.idle ||
        file.pending > 0 ||
        this.#waiting.has(memberId)
      ) {
        continue;
      }
      this.#open.delete(memberId);
      this.#known.set(memberId, { path: file.path, length: file.writer.length });
      const closing = file.writer.close();
      this.#evicting.add(closing);
      void closing.finally(() => this.#evicting.delete(closing));
    }
  }

  /** One failed transcript write stops the whole store: the disk is suspect, reopen the team. */
  #fail(failure: TeamError): void {
    if (this.#failure) return;
    this.#failure = failure;
    this.#journal?.stop(failure);
    for (const file of this.#open.values()) file.writer.stop(failure);
  }
}

function noop(): void {}

/** Flushes the file at `path` (fdatasync) through a handle of its own. */
async function syncFile(fs: StorageFs, path: string): Promise<void> {
  let handle: StorageFileHandle;
  try {
    handle = await fs.open(path, 'r+');
  } catch (error) {
    throw ioError('opening', path, error);
  }
  try {
    await handle.datasync();
  } catch (error) {
    throw ioError('syncing', path, error);
  } finally {
    await handle.close().catch(() => undefined);
  }
}

const NEWLINE = 0x0a;
/** Reads from the end of a transcript go back this many bytes at a time. */
const BACKWARD_CHUNK = 64 * 1024;

/** Every line of a transcript, validated, repaired as `load` promises. */
async function readWhole(
  handle: StorageFileHandle,
  path: string,
  length: number,
): Promise<TranscriptEntry[]> {
  const entries: TranscriptEntry[] = [];
  let line = 0;
  for await (const raw of iterateLines(handle, path, 0, length)) {
    line++;
    try {
      entries.push(parseTranscriptEntry(JSON.parse(decodeLine(raw))));
    } catch (error) {
      throw lineError(path, line, error);
    }
  }
  return repairTranscript(entries);
}

/** Reads exactly `length` bytes at `position` into `buffer` (short reads continued). */
async function readExactly(
  handle: StorageFileHandle,
  path: string,
  buffer: Buffer,
  length: number,
  position: number,
): Promise<void> {
  let done = 0;
  while (done < length) {
    let bytesRead: number;
    try {
      ({ bytesRead } = await handle.read(buffer, done, length - done, position + done));
    } catch (error) {
      throw ioError('reading', path, error);
    }
    if (bytesRead === 0) {
      throw ioError('reading', path, new Error(`the file ended before byte ${position + length}`));
    }
    done += bytesRead;
  }
}

/**
 * Streams the lines between byte offsets `start` and `end` from the last to the first, a chunk of
 * at most `chunkSize` bytes at a time. `start` must be a line start. A final line with no newline
 * is given with `terminated: false`. A line longer than a chunk is kept as pieces and joined once,
 * so memory stays one chunk plus the longest line read. `bytes` is only valid until the next line.
 */
export async function* linesBackward(
  handle: StorageFileHandle,
  path: string,
  start: number,
  end: number,
  chunkSize = BACKWARD_CHUNK,
): AsyncGenerator<JsonlLine> {
  if (end <= start) return;
  const buffer = Buffer.allocUnsafe(Math.min(chunkSize, end - start));
  let position = end;
  // Pieces of the line being assembled, last piece first.
  let pieces: Buffer[] = [];
  let piecesLength = 0;
  let first = true;
  let terminated = true;
  while (position > start) {
    const want = Math.min(buffer.length, position - start);
    const from = position - want;
    await readExactly(handle, path, buffer, want, from);
    let to = want;
    if (first) {
      first = false;
      if (buffer[want - 1] === NEWLINE) to = want - 1;
      else terminated = false;
    }
    for (;;) {
      const newline = to > 0 ? buffer.lastIndexOf(NEWLINE, to - 1) : -1;
      if (newline === -1) break;
      const piece = buffer.subarray(newline + 1, to);
      const bytes =
        pieces.length === 0
          ? piece
          : Buffer.concat([piece, ...pieces.reverse()], piece.length + piecesLength);
      pieces = [];
      piecesLength = 0;
      yield { bytes, offset: from + newline + 1, terminated };
      terminated = true;
      to = newline;
    }
    if (to > 0) {
      pieces.push(Buffer.from(buffer.subarray(0, to)));
      piecesLength += to;
    }
    position = from;
  }
  // The first line: what is left before the earliest newline (empty when the region starts
  // with one).
  yield { bytes: Buffer.concat(pieces.reverse(), piecesLength), offset: start, terminated };
}

/** The 1-based number of the line starting at byte `offset` (counts newlines before it). */
async function lineNumberAt(
  handle: StorageFileHandle,
  path: string,
  offset: number,
): Promise<number> {
  const buffer = Buffer.allocUnsafe(Math.min(BACKWARD_CHUNK, Math.max(1, offset)));
  let count = 1;
  for (let position = 0; position < offset; ) {
    const want = Math.min(buffer.length, offset - position);
    await readExactly(handle, path, buffer, want, position);
    for (let i = buffer.indexOf(NEWLINE, 0); i !== -1 && i < want; ) {
      count++;
      i = buffer.indexOf(NEWLINE, i + 1);
    }
    position += want;
  }
  return count;
}

/**
 * What opening a member file must know, read from its end only: a torn final line (an
 * unterminated line that is not UTF-8 JSON) is reported for repair, a final line that parses but
 * lacks its newline gets it, and the last complete line (the one appends continue after) must be
 * a valid entry. Lines before it are validated by whoever reads them (`load`: every line;
 * `loadContext`: the lines it needs). An invalid line found here is `CORRUPT_LOG` naming its line
 * number, as `load` names it.
 */
async function scanTail(handle: StorageFileHandle, path: string): Promise<ScanOutcome> {
  let fileLength: number;
  try {
    fileLength = (await handle.stat()).size;
  } catch (error) {
    throw ioError('reading', path, error);
  }
  const outcome: ScanOutcome = {
    lines: 0,
    fileLength,
    validLength: fileLength,
    tornBytes: 0,
    missingNewline: false,
  };
  let failure: { offset: number; error: unknown } | undefined;
  for await (const line of linesBackward(handle, path, 0, fileLength)) {
    let value: unknown;
    try {
      value = JSON.parse(decodeLine(line));
    } catch (error) {
      if (!line.terminated) {
        outcome.tornBytes = line.bytes.length;
        outcome.validLength = line.offset;
        continue;
      }
      failure = { offset: line.offset, error };
      break;
    }
    try {
      parseTranscriptEntry(value);
    } catch (error) {
      failure = { offset: line.offset, error };
      break;
    }
    outcome.lines++;
    if (!line.terminated) {
      outcome.missingNewline = true;
      continue;
    }
    break;
  }
  if (failure !== undefined) {
    throw lineError(path, await lineNumberAt(handle, path, failure.offset), failure.error);
  }
  return outcome;
}

/** A transcript line read while loading a context, with where it starts. */
interface Located {
  entry: TranscriptEntry;
  offset: number;
}

/** A message of the context being rebuilt: position `p` of the context before compaction `at`. */
interface Ref {
  slot: number;
  p: number;
}

/** Raised inside {@link readContext} when only a whole read can answer. */
class ReadWhole extends Error {}

function compactionOf(entry: TranscriptEntry): CompactionSource | undefined {
  return isCompaction(entry.message) ? entry.message.source : undefined;
}

/** `lead` and the tool results after it, repaired as in a whole transcript (`nextAt`: the entry after). */
function repairGroup(
  lead: TranscriptEntry,
  results: readonly TranscriptEntry[],
  nextAt: number,
): TranscriptEntry[] {
  const after: TranscriptEntry = {
    schemaVersion: 1,
    at: nextAt,
    message: { role: 'user', content: [] },
  };
  return repairTranscript([lead, ...results, after]).slice(0, -1);
}

/** True when the shape of `source` is one `applyCompaction` could accept (indices in range). */
function plausible(source: CompactionSource): boolean {
  if (source.head + source.replaced > source.contextLength) return false;
  let previous = -1;
  for (const offset of source.retained) {
    if (offset <= previous || offset >= source.replaced) return false;
    previous = offset;
  }
  return true;
}

/**
 * `loadContext` of one file, or undefined when only reading it whole can answer (no compaction
 * needs that: the function then reads every line anyway; a line it needs is invalid, so `load`
 * must name it; compactions that do not fit together; a summary the last compaction keeps).
 *
 * The lines are read from the end, in chunks: the entries after the last compaction `K`, then,
 * going back, those the context before `K` is made of. That context `C` is the one after the
 * previous compaction `J` (`head` messages, `J`'s summary, its retained prompts, the messages after
 * the range it replaced) followed by the entries between `J` and `K`, so each position of `C` is
 * either one of those entries or, through `J`'s shape, a position of the context before `J`, and
 * so on back. Only the runs of entries holding a position still needed are read, each from its end
 * and only as far back as the earliest such position. Positions inside a compaction's `head` are
 * the transcript's first entries (read from the start): every compaction keeps as head at most
 * the messages the earlier ones kept, which is checked against each compaction read. An older
 * summary that `K` replaces is given without its `source` (it is replaced either way). Every entry
 * read is validated; runs are repaired as `load` repairs them in place.
 */
async function readContext(
  handle: StorageFileHandle,
  path: string,
  length: number,
): Promise<TranscriptEntry[] | undefined> {
  const lines = linesBackward(handle, path, 0, length);
  const previous = async (): Promise<Located | undefined> => {
    const next = await lines.next();
    if (next.done) return undefined;
    const line = next.value;
    if (!line.terminated) throw new ReadWhole();
    try {
      return { entry: parseTranscriptEntry(JSON.parse(decodeLine(line))), offset: line.offset };
    } catch {
      throw new ReadWhole();
    }
  };
  try {
    const after: TranscriptEntry[] = [];
    let last: Located | undefined;
    for (let got = await previous(); got !== undefined; got = await previous()) {
      if (compactionOf(got.entry) !== undefined) {
        last = got;
        break;
      }
      after.push(got.entry);
    }
    after.reverse();
    if (last === undefined) return repairTranscript(after);
    const lastSource = compactionOf(last.entry) as CompactionSource;
    if (!plausible(lastSource)) return undefined;
    const keptByLast = (slot: number) =>
      slot < lastSource.head ||
      slot >= lastSource.head + lastSource.replaced ||
      lastSource.retained.includes(slot - lastSource.head);

    const slots: (TranscriptEntry | undefined)[] = new Array(lastSource.contextLength);
    const fromStart: Ref[] = [];
    let startMax = -1;
    let refs: Ref[] = Array.from({ length: lastSource.contextLength }, (_, p) => ({ slot: p, p }));
    let at = last;
    for (;;) {
      const source = compactionOf(at.entry) as CompactionSource;
      // the positions already sent to the start must lie in this compaction's head too
      if (startMax >= source.head) return undefined;
      const rest: Ref[] = [];
      for (const ref of refs) {
        if (ref.p < source.head) {
          fromStart.push({ slot: ref.slot, p: ref.p });
          startMax = Math.max(startMax, ref.p);
        } else rest.push(ref);
      }
      if (rest.length === 0) break;
      let lowest = source.contextLength;
      for (const ref of rest) lowest = Math.min(lowest, ref.p);
      // The run before `at`, from its end, a group (a message and its tool results) at a time.
      const groups: TranscriptEntry[][] = [];
      let count = 0;
      let results: TranscriptEntry[] = [];
      let nextAt = at.entry.at;
      let before: Located | undefined;
      while (count < source.contextLength - lowest) {
        const got = await previous();
        if (got === undefined) break;
        if (compactionOf(got.entry) !== undefined) {
          before = got;
          break;
        }
        if (got.entry.message.role === 'tool') {
          results.push(got.entry);
          continue;
        }
        const group = repairGroup(got.entry, results.reverse(), nextAt);
        results = [];
        groups.push(group);
        count += group.length;
        nextAt = got.entry.at;
      }
      const run = groups.reverse().flat();
      const base = source.contextLength - count;
      const deeper: Ref[] = [];
      for (const ref of rest) {
        if (ref.p >= base) slots[ref.slot] = run[ref.p - base];
        else deeper.push(ref);
      }
      if (deeper.length === 0) break;
      // The run was read whole: what precedes it is the context after `before`.
      if (before === undefined) return undefined;
      const shape = compactionOf(before.entry) as CompactionSource;
      if (!plausible(shape)) return undefined;
      const kept = shape.retained.length;
      if (base !== shape.contextLength - shape.replaced + 1 + kept) return undefined;
      refs = [];
      for (const ref of deeper) {
        const q = ref.p;
        if (q < shape.head) refs.push(ref);
        else if (q === shape.head) {
          // an older summary: replaced by the last compaction, or the context cannot be given
          if (keptByLast(ref.slot)) return undefined;
          const { source: _replaced, ...message } = before.entry.message;
          slots[ref.slot] = { ...before.entry, message: message as TranscriptEntry['message'] };
        } else if (q <= shape.head + kept) {
          refs.push({
            slot: ref.slot,
            p: shape.head + (shape.retained[q - shape.head - 1] as number),
          });
        } else {
          refs.push({
            slot: ref.slot,
            p: shape.head + shape.replaced + (q - shape.head - 1 - kept),
          });
        }
      }
      at = before;
    }

    if (fromStart.length > 0) {
      const head = await readHead(handle, path, at.offset, at.entry.at, startMax + 1);
      if (head === undefined) return undefined;
      for (const ref of fromStart) slots[ref.slot] = head[ref.p];
    }
    const context: TranscriptEntry[] = [];
    for (const slot of slots) {
      if (slot === undefined) return undefined;
      context.push(slot);
    }
    return [...context, last.entry, ...repairTranscript(after)];
  } catch (error) {
    if (error instanceof ReadWhole) return undefined;
    throw error;
  } finally {
    await lines.return(undefined);
  }
}

/**
 * The first `count` entries of the transcript, repaired, read from its start and never past
 * `end` (the earliest compaction read, whose `at` is `endAt`). Undefined when a compaction comes
 * first or a line is invalid.
 */
async function readHead(
  handle: StorageFileHandle,
  path: string,
  end: number,
  endAt: number,
  count: number,
): Promise<TranscriptEntry[] | undefined> {
  const head: TranscriptEntry[] = [];
  let lead: TranscriptEntry | undefined;
  let results: TranscriptEntry[] = [];
  const close = (nextAt: number) => {
    if (lead !== undefined) head.push(...repairGroup(lead, results, nextAt));
    lead = undefined;
    results = [];
  };
  for await (const line of iterateLines(handle, path, 0, end, BACKWARD_CHUNK)) {
    let entry: TranscriptEntry;
    try {
      entry = parseTranscriptEntry(JSON.parse(decodeLine(line)));
    } catch {
      return undefined;
    }
    if (entry.message.role === 'tool') {
      if (lead !== undefined) results.push(entry);
      continue;
    }
    close(entry.at);
    if (head.length >= count) return head;
    if (compactionOf(entry) !== undefined) return undefined;
    lead = entry;
  }
  close(endAt);
  return head.length >= count ? head : undefined;
}
