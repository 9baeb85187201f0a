import { closeSync, openSync, readSync } from 'node:fs';
import * as nodeFsPromises from 'node:fs/promises';
import { TeamError } from '@teamwire/core';

/**
 * The part of an open file the store uses. `node:fs/promises` `FileHandle` satisfies it; tests wrap
 * it to inject faults (a full disk, a failing sync) and to count syncs.
 */
export interface StorageFileHandle {
  /**
   * Reads up to `length` bytes at file offset `position` into `buffer` from `offset`. May read
   * fewer than asked; `bytesRead` is 0 only at the end of the file. Does not move any cursor.
   */
  read(
    buffer: Uint8Array,
    offset: number,
    length: number,
    position: number,
  ): Promise<{
    /** Bytes placed in `buffer`; 0 at the end of the file. */
    bytesRead: number;
  }>;
  /**
   * Writes `length` bytes of `buffer` from `offset` at file offset `position`. May write fewer
   * (a short write); the store then writes the rest.
   */
  write(
    buffer: Uint8Array,
    offset: number,
    length: number,
    position: number,
  ): Promise<{
    /** Bytes taken from `buffer`; fewer than `length` is a short write, not an error. */
    bytesWritten: number;
  }>;
  /** Flushes the file's data (fdatasync); `append` in `fsync` mode resolves only after it. */
  datasync(): Promise<void>;
  /** Flushes data and metadata (fsync); used on directories after creating an entry. */
  sync(): Promise<void>;
  /** Cuts the file to `length` bytes: how a torn final line or a failed append is removed. */
  truncate(length: number): Promise<void>;
  /** The file's current size: where a scan of its lines stops. */
  stat(): Promise<{
    /** Size in bytes. */
    size: number;
  }>;
  /** Releases the handle; the store closes every handle it opens, also after a failure. */
  close(): Promise<void>;
}

/**
 * The small file-system seam of the JSONL store, a subset of `node:fs/promises`. Every byte the
 * store reads or writes goes through it, so fault injection needs no mocking of Node modules.
 */
export interface StorageFs {
  /**
   * Opens `path` with a Node flag string: `r` (read), `r+` (read and write an existing file), `a`
   * (create if missing), `wx` (create, failing with `EEXIST` when it exists, as the lock relies
   * on). A missing file rejects with `ENOENT`.
   */
  open(path: string, flags: string): Promise<StorageFileHandle>;
  /** The whole file; rejects with `ENOENT` when it does not exist. */
  readFile(path: string): Promise<Uint8Array>;
  /** Creates `path` and its missing parents; an existing directory is not an error. */
  mkdir(path: string, options: { recursive: true }): Promise<unknown>;
  /** The entry names in `path` (not full paths), in any order; `ENOENT` when it is missing. */
  readdir(path: string): Promise<string[]>;
  /** Follows symbolic links; rejects with `ENOENT` (or `ENOTDIR`) when there is no such entry. */
  stat(path: string): Promise<{
    /** Size in bytes. */
    size: number;
    /** True for a regular file. */
    isFile(): boolean;
    /** True for a directory. */
    isDirectory(): boolean;
  }>;
  /**
   * Creates the hard link `newPath` to `existingPath`, failing with `EEXIST` when `newPath`
   * exists: the atomic step that publishes a fully written lock file. File systems without hard
   * links reject with `EPERM`, `ENOTSUP`, `ENOSYS` or similar, and the lock falls back to an
   * exclusive create.
   */
  link(existingPath: string, newPath: string): Promise<void>;
  /** Removes a file; rejects with `ENOENT` when it is already gone. */
  unlink(path: string): Promise<void>;
  /**
   * Optional: up to `length` bytes of `path` from byte `position`, read synchronously (fewer only
   * at the end of the file); throws as `node:fs` does. The parts of a snapshot that only a rare
   * read needs (its deleted tasks, its delivered message ids) are read this way when first
   * needed; without it they are read with the snapshot.
   */
  readRangeSync?(path: string, position: number, length: number): Uint8Array;
}

/** The real file system. */
export const nodeFs: StorageFs = {
  open: (path, flags) => nodeFsPromises.open(path, flags),
  readFile: (path) => nodeFsPromises.readFile(path),
  mkdir: (path, options) => nodeFsPromises.mkdir(path, options),
  readdir: (path) => nodeFsPromises.readdir(path),
  stat: (path) => nodeFsPromises.stat(path),
  link: (existingPath, newPath) => nodeFsPromises.link(existingPath, newPath),
  unlink: (path) => nodeFsPromises.unlink(path),
  readRangeSync(path, position, length) {
    const fd = openSync(path, 'r');
    try {
      const bytes = Buffer.allocUnsafe(length);
      let done = 0;
      while (done < length) {
        const read = readSync(fd, bytes, done, length - done, position + done);
        if (read === 0) break;
        done += read;
      }
      return bytes.subarray(0, done);
    } finally {
      closeSync(fd);
    }
  },
};

/** The `code` of a Node system error (`ENOENT`, `ENOSPC`, ...), if it has one. */
export function errnoCode(error: unknown): string | undefined {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' ? code : undefined;
}

/** Wraps a failed file operation as `STORAGE_IO`, naming the path and the system error. */
export function ioError(action: string, path: string, error: unknown): TeamError {
  if (TeamError.isInstance(error)) return error;
  const code = errnoCode(error);
  const reason = error instanceof Error ? error.message : String(error);
  return new TeamError('STORAGE_IO', `${action} ${path} failed: ${reason}`, {
    cause: error,
    details: { path, ...(code ? { errno: code } : {}) },
  });
}

/** True when `path` exists (any kind of entry). */
export async function exists(fs: StorageFs, path: string): Promise<boolean> {
  try {
    await fs.stat(path);
    return true;
  } catch (error) {
    if (errnoCode(error) === 'ENOENT') return false;
    throw ioError('checking', path, error);
  }
}

/**
 * Makes a directory entry (a created or renamed file) durable by syncing its directory. Windows
 * cannot open a directory for syncing; NTFS journals the entry itself, so the failure is ignored.
 */
export async function syncDirectory(fs: StorageFs, dir: string): Promise<void> {
  let handle: StorageFileHandle;
  try {
    handle = await fs.open(dir, 'r');
  } catch (error) {
    if (process.platform === 'win32') return;
    throw ioError('opening directory', dir, error);
  }
  try {
    await handle.sync();
  } catch (error) {
    const code = errnoCode(error);
    if (process.platform !== 'win32' && code !== 'EINVAL' && code !== 'EISDIR') {
      throw ioError('syncing directory', dir, error);
    }
  } finally {
    await handle.close().catch(() => undefined);
  }
}

/** Writes all of `bytes` at `position`, continuing after a short write. */
export async function writeFully(
  handle: StorageFileHandle,
  bytes: Uint8Array,
  position: number,
): Promise<void> {
  let offset = 0;
  while (offset < bytes.length) {
    const { bytesWritten } = await handle.write(
      bytes,
      offset,
      bytes.length - offset,
      position + offset,
    );
    if (bytesWritten <= 0) {
      throw Object.assign(new Error('write made no progress'), { code: 'EIO' });
    }
    offset += bytesWritten;
  }
}
