import { dirname, join } from 'node:path';
import type { TranscriptEntry, TranscriptStore } from '@teamwire/core';
import { parseTranscriptEntry, repairTranscript, TeamError } from '@teamwire/core';
import type { Durability } from './append-writer.js';
import { AppendWriter } from './append-writer.js';
import type { StorageFileHandle, StorageFs } from './fs-seam.js';
import { errnoCode, exists, ioError, syncDirectory } from './fs-seam.js';
import { decodeLine, iterateLines, lineError, scanJsonl } from './jsonl-lines.js';
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
}

/**
 * Member ids name files, so they are restricted to safe file-name characters: letters, digits,
 * `_`, `-` and inner dots (ulids and uuids pass), at most 200 characters.
 */
export const SAFE_ID_PATTERN = /^[A-Za-z0-9_-](?:[A-Za-z0-9_.-]{0,198}[A-Za-z0-9_-])?$/;

/** Refuses an id that cannot safely name a file or folder. */
export function checkSafeId(kind: string, id: string): void {
  if (typeof id !== 'string' || !SAFE_ID_PATTERN.test(id) || id.includes('..')) {
    throw new TeamError(
      'INVALID_ARGUMENT',
      `${kind} ${JSON.stringify(id)} cannot name a file: use letters, digits, '_', '-' and inner '.'`,
      { details: { [kind]: id } },
    );
  }
}

interface Waiter {
  bytes: Buffer;
  resolve: () => void;
  reject: (error: unknown) => void;
}

interface MemberFile {
  path: string;
  writer: AppendWriter;
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
}): JsonlTranscriptStore {
  return new JsonlTranscriptStoreImpl(options);
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
  /** Member files scanned and repaired this session, then closed to bound open descriptors. */
  readonly #known = new Map<string, { path: string; length: number }>();
  readonly #evicting = new Set<Promise<void>>();
  readonly #opening = new Map<string, Promise<MemberFile | undefined>>();
  readonly #waiting = new Map<string, Waiter[]>();
  readonly #repairs: TranscriptRepair[] = [];
  #failure: TeamError | undefined;
  #closing: Promise<void> | undefined;

  constructor(options: {
    fs: StorageFs;
    dir: string;
    durability: Durability;
    onClosed: () => void;
    maxOpenFiles?: number;
  }) {
    this.#fs = options.fs;
    this.dir = options.dir;
    this.#durability = options.durability;
    this.#onClosed = options.onClosed;
    this.#maxOpen = options.maxOpenFiles ?? DEFAULT_MAX_OPEN_TRANSCRIPTS;
  }

  async append({
    memberId,
    entries,
  }: {
    memberId: string;
    entries: readonly TranscriptEntry[];
  }): Promise<void> {
    this.#assertWritable();
    checkSafeId('memberId', memberId);
    if (entries.length === 0) return;
    // Validation builds a fresh copy; one stringify writes it.
    const lines = entries.map((entry) => toLine(parseTranscriptEntry(entry)));
    const bytes = Buffer.from(`${lines.join('\n')}\n`, 'utf8');
    const open = this.#open.get(memberId);
    if (open && !this.#waiting.has(memberId)) {
      this.#touch(memberId, open);
      return open.writer.enqueue(bytes, noop);
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
      waiting.push({ bytes, resolve, reject });
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
        file.writer.enqueue(waiter.bytes, noop).then(waiter.resolve, waiter.reject);
      } catch (refused) {
        waiter.reject(refused);
      }
    }
  }

  async load({ memberId }: { memberId: string }): Promise<TranscriptEntry[]> {
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
    const entries: TranscriptEntry[] = [];
    try {
      let line = 0;
      for await (const raw of iterateLines(handle, file.path, 0, file.writer.length)) {
        line++;
        try {
          entries.push(parseTranscriptEntry(JSON.parse(decodeLine(raw))));
        } catch (error) {
          throw lineError(file.path, line, error);
        }
      }
    } finally {
      await handle.close().catch(() => undefined);
    }
    return repairTranscript(entries);
  }

  repairs(): readonly TranscriptRepair[] {
    return this.#repairs;
  }

  close(): Promise<void> {
    this.#closing ??= (async () => {
      try {
        await Promise.allSettled(this.#opening.values());
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
      const outcome = await scanJsonl(handle, path, (value) => {
        parseTranscriptEntry(value);
      });
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
      writer: new AppendWriter({
        handle,
        path,
        length,
        durability: this.#durability,
        label: 'transcript',
        onFailure: (failure) => this.#fail(failure),
      }),
    };
    if (this.#failure) file.writer.stop(this.#failure);
    this.#open.set(memberId, file);
    this.#evictIdle(memberId);
    return file;
  }

  /** Marks a member file most recently used. */
  #touch(memberId: string, file: MemberFile): void {
    this.#open.delete(memberId);
    this.#open.set(memberId, file);
  }

  /**
   * Closes least recently used idle member files until at most `maxOpenFiles` are open. Busy files
   * stay open (the bound is exceeded only while more than that many members write at once).
   */
  #evictIdle(keep: string): void {
    if (this.#open.size <= this.#maxOpen) return;
    for (const [memberId, file] of this.#open) {
      if (this.#open.size <= this.#maxOpen) break;
      if (memberId === keep || !file.writer.idle || this.#waiting.has(memberId)) continue;
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
    for (const file of this.#open.values()) file.writer.stop(failure);
  }
}

function noop(): void {}
