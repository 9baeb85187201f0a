import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TeamRecord } from '@teamwire/core';
import { TeamError } from '@teamwire/core';
import { afterEach, beforeEach } from 'vitest';
import type { StorageFileHandle, StorageFs } from './fs-seam.js';
import { nodeFs } from './fs-seam.js';

/** A fresh temporary folder and its removal, for tests. */
export async function tempDir(): Promise<{ path: string; remove: () => Promise<void> }> {
  const path = await mkdtemp(join(tmpdir(), 'teamwire-storage-'));
  return { path, remove: () => rm(path, { recursive: true, force: true }) };
}

/** Gives every test of the file a fresh temporary folder (passed to `use`), removed after it. */
export function eachTestInTempDir(use: (path: string) => void): void {
  let remove = async () => {};
  beforeEach(async () => {
    const made = await tempDir();
    remove = made.remove;
    use(made.path);
  });
  afterEach(() => remove());
}

/** A Node system error with `code`, as the fs layer throws it. */
export function systemError(code: string): Error {
  return Object.assign(new Error(`${code}: simulated`), { code });
}

/** Decides, per call, whether a file operation goes through; may also stall it. */
export interface FaultPlan {
  /** Before a write of `length` bytes: return a number to write only that prefix and then fail. */
  write?: (path: string, length: number) => { partial?: number; error: Error } | undefined;
  datasync?: (path: string) => Error | undefined | Promise<Error | undefined>;
  truncate?: (path: string) => Error | undefined;
}

/** Counts of the operations that went through the seam, per kind. */
export interface FsCounts {
  writes: number;
  datasyncs: number;
  dirSyncs: number;
  truncates: number;
}

/** The real file system behind the seam, with counting and planned faults. */
export function instrumentedFs(plan: FaultPlan = {}): { fs: StorageFs; counts: FsCounts } {
  const counts: FsCounts = { writes: 0, datasyncs: 0, dirSyncs: 0, truncates: 0 };
  const wrap = (path: string, handle: StorageFileHandle): StorageFileHandle => ({
    read: (buffer, offset, length, position) => handle.read(buffer, offset, length, position),
    async write(buffer, offset, length, position) {
      const fault = plan.write?.(path, length);
      if (fault) {
        if (fault.partial) await handle.write(buffer, offset, fault.partial, position);
        throw fault.error;
      }
      counts.writes++;
      return handle.write(buffer, offset, length, position);
    },
    async datasync() {
      const fault = await plan.datasync?.(path);
      if (fault) throw fault;
      counts.datasyncs++;
      return handle.datasync();
    },
    async sync() {
      counts.dirSyncs++;
      return handle.sync();
    },
    async truncate(length) {
      const fault = plan.truncate?.(path);
      if (fault) throw fault;
      counts.truncates++;
      return handle.truncate(length);
    },
    stat: () => handle.stat(),
    close: () => handle.close(),
  });
  const fs: StorageFs = {
    ...nodeFs,
    open: async (path, flags) => wrap(path, await nodeFs.open(path, flags)),
  };
  return { fs, counts };
}

/** A promise with its resolve exposed, to hold an operation until a test lets it go. */
export function gate(): { promise: Promise<void>; open: () => void } {
  let open!: () => void;
  const promise = new Promise<void>((resolve) => {
    open = resolve;
  });
  return { promise, open };
}

/** The TeamError `promise` rejects with; fails the test when it resolves or throws another error. */
export async function caught(promise: Promise<unknown>): Promise<TeamError> {
  try {
    await promise;
  } catch (error) {
    if (TeamError.isInstance(error)) return error;
    throw error;
  }
  throw new Error('expected a TeamError');
}

/** The seqs of every record a log yields, in order. */
export async function readAll(log: { read(): AsyncIterable<TeamRecord> }): Promise<number[]> {
  const seqs: number[] = [];
  for await (const record of log.read()) seqs.push(record.seq);
  return seqs;
}
