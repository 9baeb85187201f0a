import { TeamError } from '@teamwire/core';
import type { StorageFileHandle } from './fs-seam.js';
import { ioError, writeFully } from './fs-seam.js';

/**
 * How durable an append is when it resolves.
 * - `fsync`: written and flushed with fdatasync; survives a process kill, an OS crash and a
 *   power loss (as far as the disk honours flushes). Concurrent appends share one flush.
 * - `buffered`: written to the operating system (one write), not flushed; survives a process
 *   kill, but an OS crash or power loss can lose the latest appends.
 */
export type Durability = 'fsync' | 'buffered';

interface Batch {
  /** Whole lines, turned into bytes with the rest of their group. */
  text: string;
  /** UTF-8 bytes of `text`. */
  length: number;
  onDurable: (offset: number) => void;
  resolve: () => void;
  reject: (error: unknown) => void;
}

/** Groups are capped so one burst cannot build an unbounded buffer; a batch is never split. */
const MAX_GROUP_BYTES = 8 << 20;

/**
 * The append path of one JSONL file with group commit: batches queued while a write and its sync
 * are in flight are written together by the next single write and share its sync. On a failed
 * write or sync the file is cut back to its last good length and the writer refuses everything
 * after (`STORE_CLOSED`, the failure attached), because after a failed fsync the state of the page
 * cache is unknown and only a reopen re-reads the truth from disk.
 */
export class AppendWriter {
  readonly path: string;
  readonly #handle: StorageFileHandle;
  readonly #durability: Durability;
  readonly #label: string;
  readonly #onFailure: ((error: TeamError) => void) | undefined;
  readonly #beforeGroup: ((length: number) => Promise<number | undefined>) | undefined;
  #length: number;
  #syncing: Promise<void> | undefined;
  #queue: Batch[] = [];
  #flushing: Promise<void> | undefined;
  #failure: TeamError | undefined;
  #closed = false;
  #closing: Promise<void> | undefined;

  constructor(options: {
    handle: StorageFileHandle;
    path: string;
    length: number;
    durability: Durability;
    /** What the file is, for messages: `team log`, `transcript`. */
    label: string;
    onFailure?: (error: TeamError) => void;
    /**
     * Runs before each group is written, with the file's length; a number it returns becomes the
     * new length (the file was cut back to it). A failure fails the group like a failed write.
     */
    beforeGroup?: (length: number) => Promise<number | undefined>;
  }) {
    this.#handle = options.handle;
    this.path = options.path;
    this.#length = options.length;
    this.#durability = options.durability;
    this.#label = options.label;
    this.#onFailure = options.onFailure;
    this.#beforeGroup = options.beforeGroup;
  }

  /** Bytes of the file known to be written (and flushed, in `fsync` mode). */
  get length(): number {
    return this.#length;
  }

  /** Nothing queued or in flight and not closed: the file can be closed without waiting. */
  get idle(): boolean {
    return (
      this.#queue.length === 0 &&
      this.#flushing === undefined &&
      this.#syncing === undefined &&
      !this.#closed
    );
  }

  /** The write failure that stopped this writer, if any. */
  get failure(): TeamError | undefined {
    return this.#failure;
  }

  /** Throws `STORE_CLOSED` when the writer is closed or stopped by an earlier failure. */
  assertWritable(failure: TeamError | undefined = this.#failure): void {
    if (failure) throw refusal(this.#label, this.path, failure);
    if (this.#closed) {
      throw new TeamError('STORE_CLOSED', `${this.#label} ${this.path} is closed`, {
        details: { path: this.path },
      });
    }
  }

  /**
   * Queues `text` (whole lines; `length` is its UTF-8 byte length, which the caller needed first)
   * for the next group write. A group's texts become bytes in one conversion, not one buffer per
   * append plus a copy into the group's. `onDurable` runs with the batch's file offset once it is
   * durable, before the returned promise resolves and before later batches.
   */
  enqueue(text: string, length: number, onDurable: (offset: number) => void): Promise<void> {
    this.assertWritable();
    return new Promise<void>((resolve, reject) => {
      this.queue(text, length, onDurable, resolve, reject);
    });
  }

  /**
   * {@link enqueue} settling the caller's own callbacks instead of a promise of its own, for a
   * caller that chains appends of two writers into one promise. Throws `STORE_CLOSED` like
   * `enqueue` rejects.
   */
  queue(
    text: string,
    length: number,
    onDurable: (offset: number) => void,
    resolve: () => void,
    reject: (error: unknown) => void,
  ): void {
    this.assertWritable();
    this.#queue.push({ text, length, onDurable, resolve, reject });
    this.#flushing ??= this.#flush();
  }

  /** Stops this writer from outside (a sibling file failed); queued batches are refused. */
  stop(failure: TeamError): void {
    if (this.#failure) return;
    this.#failure = failure;
    for (const batch of this.#queue.splice(0))
      batch.reject(refusal(this.#label, this.path, failure));
  }

  /** Resolves once nothing is queued or in flight (failed or not). */
  async drain(): Promise<void> {
    while (this.#flushing) await this.#flushing;
  }

  /**
   * Waits for the writes in flight, then flushes the file (fdatasync) whatever the durability:
   * how a file written without syncs is made durable at a chosen moment. A failure is
   * `STORAGE_IO` and stops the writer.
   */
  sync(): Promise<void> {
    const run = (async () => {
      await this.drain();
      if (this.#failure) throw refusal(this.#label, this.path, this.#failure);
      try {
        await this.#handle.datasync();
      } catch (error) {
        const failure = ioError(`syncing ${this.#label}`, this.path, error);
        this.#failure ??= failure;
        this.#onFailure?.(failure);
        throw failure;
      }
    })();
    this.#syncing = run;
    const settle = () => {
      if (this.#syncing === run) this.#syncing = undefined;
    };
    run.then(settle, settle);
    return run;
  }

  /** Lets queued batches and a sync in flight finish, then closes the file. Idempotent. */
  close(): Promise<void> {
    this.#closed = true;
    this.#closing ??= (async () => {
      while (this.#flushing || this.#syncing) {
        await (this.#flushing ?? this.#syncing)?.catch(() => undefined);
      }
      await this.#handle.close().catch(() => undefined);
    })();
    return this.#closing;
  }

  async #flush(): Promise<void> {
    // One turn of the event loop's microtasks lets appends issued together join one group.
    await Promise.resolve();
    while (this.#queue.length > 0 && !this.#failure) {
      if (this.#beforeGroup) {
        try {
          this.#length = (await this.#beforeGroup(this.#length)) ?? this.#length;
        } catch (error) {
          const failure = TeamError.isInstance(error)
            ? error
            : ioError(`preparing ${this.#label}`, this.path, error);
          await this.#fail(this.#queue.splice(0), failure);
          break;
        }
        if (this.#queue.length === 0 || this.#failure) break;
      }
      const group = this.#takeGroup();
      const bytes = Buffer.from(
        group.length === 1 ? group[0]!.text : group.map((b) => b.text).join(''),
        'utf8',
      );
      const start = this.#length;
      try {
        await writeFully(this.#handle, bytes, start);
        if (this.#durability === 'fsync') await this.#handle.datasync();
      } catch (error) {
        await this.#fail(group, ioError(`appending to ${this.#label}`, this.path, error));
        break;
      }
      this.#length = start + bytes.length;
      let offset = start;
      for (const batch of group) {
        batch.onDurable(offset);
        offset += batch.length;
        batch.resolve();
      }
    }
    this.#flushing = undefined;
  }

  /** The next group: the oldest batches up to {@link MAX_GROUP_BYTES}, at least one. */
  #takeGroup(): Batch[] {
    const queue = this.#queue;
    let size = 0;
    let count = 0;
    while (count < queue.length) {
      const length = queue[count]!.length;
      if (count > 0 && size + length > MAX_GROUP_BYTES) break;
      size += length;
      count++;
    }
    // One cut of the queue, not a shift per batch (a shift moves every batch behind it).
    return count === queue.length ? queue.splice(0) : queue.splice(0, count);
  }

  async #fail(group: Batch[], failure: TeamError): Promise<void> {
    this.#failure = failure;
    try {
      await this.#handle.truncate(this.#length);
      if (this.#durability === 'fsync') await this.#handle.datasync();
    } catch (error) {
      // The torn bytes stay; the next open repairs them like a crash's torn tail.
      if (failure.details) failure.details.truncateFailed = String(error);
    }
    for (const batch of group) batch.reject(failure);
    for (const batch of this.#queue.splice(0))
      batch.reject(refusal(this.#label, this.path, failure));
    this.#onFailure?.(failure);
  }
}

function refusal(label: string, path: string, failure: TeamError): TeamError {
  return new TeamError(
    'STORE_CLOSED',
    `${label} ${path} refuses appends after a failed write (${failure.message}); reopen the team`,
    { cause: failure, details: { path } },
  );
}
