import * as nodeFsPromises from 'node:fs/promises';
import { TeamError } from '@teamwire/core';

/**
 * The part of an open file the store uses. `node:fs/promises` `FileHandle` satisfies it; tests wrap
 * it to inject faults (a full disk, a failing sync) and to count syncs.
 */
export interface StorageFileHandle {
  read(
    buffer: Uint8Array,
    offset: number,
    length: number,
    position: number,
  ): Promise<{ bytesRead: number }>;
  write(
    buffer: Uint8Array,
    offset: number,
    length: number,
    position: number,
  ): Promise<{ bytesWritten: number }>;
  /** Flushes the file's data (fdatasync); `append` in `fsync` mode resolves only after it. */
  datasync(): Promise<void>;
  /** Flushes data and metadata (fsync); used on directories after creating an entry. */
  sync(): Promise<void>;
  truncate(length: number): Promise<void>;
  stat(): Promise<{ size: number }>;
  close(): Promise<void>;
}

/**
 * The small file-system seam of the JSONL store, a subset of `node:fs/promises`. Every byte the
 * store reads or writes goes through it, so fault injection needs no mocking of Node modules.
 */
export interface StorageFs {
  open(path: string, flags: string): Promise<StorageFileHandle>;
  readFile(path: string): Promise<Uint8Array>;
  mkdir(path: string, options: { recursive: true }): Promise<unknown>;
  readdir(path: string): Promise<string[]>;
  stat(path: string): Promise<{ size: number; isFile(): boolean; isDirectory(): boolean }>;
  link(existingPath: string, newPath: string): Promise<void>;
  rename(oldPath: string, newPath: string): Promise<void>;
  unlink(path: string): Promise<void>;
}

/** The real file system. */
export const nodeFs: StorageFs = {
  open: (path, flags) => nodeFsPromises.open(path, flags),
  readFile: (path) => nodeFsPromises.readFile(path),
  mkdir: (path, options) => nodeFsPromises.mkdir(path, options),
  readdir: (path) => nodeFsPromises.readdir(path),
  stat: (path) => nodeFsPromises.stat(path),
  link: (existingPath, newPath) => nodeFsPromises.link(existingPath, newPath),
  rename: (oldPath, newPath) => nodeFsPromises.rename(oldPath, newPath),
  unlink: (path) => nodeFsPromises.unlink(path),
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
