import { createHash } from 'node:crypto';
import { join } from 'node:path';
import type { SnapshotPartApart, StoredText, TeamStateSnapshot } from '@teamwire/core';
import {
  joinTeamStateSnapshot,
  SNAPSHOT_PARTS_APART,
  splitTeamStateSnapshot,
  TeamError,
} from '@teamwire/core';
import type { StorageFileHandle, StorageFs } from './fs-seam.js';
import { errnoCode, ioError, syncDirectory, writeFully } from './fs-seam.js';

/** The folder of state snapshots inside a team folder. */
export const SNAPSHOTS_DIR = 'snapshots';
/** The `format` of a snapshot file's header line. */
export const SNAPSHOT_FILE_FORMAT = 'teamwire.snapshot';
/**
 * The version of the snapshot file format this code writes; it reads this one and version 1
 * (which has no tombstones section).
 */
export const SNAPSHOT_FILE_VERSION = 2;
/** A header line is short; a longer first line is not a snapshot. */
const MAX_HEADER_BYTES = 4096;
/** The largest state a snapshot file may hold; a bigger one is refused, never buffered. */
export const MAX_SNAPSHOT_STATE_BYTES = 1 << 30;

const FILE_PATTERN = /^(\d{16})\.snapshot$/;

/** Where a record lies in the log: its segment (by first seq), byte offset and line length. */
export interface RecordPosition {
  /** The first seq of the segment holding the record. */
  segment: number;
  /** Byte offset of the record's line in that segment. */
  offset: number;
  /** Bytes of the line, its newline included. */
  length: number;
}

/**
 * The first line of a snapshot file. The state follows on the second line, `state.bytes` long
 * (newline excluded), and must hash to `state.sha256`: a torn or altered file fails one of them.
 * From version 2 the parts of the state that grow with history (core's `SNAPSHOT_PARTS_APART`:
 * the deleted tasks, then the delivered message ids) follow the state line, each `parts.<name>`
 * long and hashing to its sha-256: read with the state, checked and parsed only when first needed.
 */
export interface SnapshotHeader {
  format: typeof SNAPSHOT_FILE_FORMAT;
  version: 1 | typeof SNAPSHOT_FILE_VERSION;
  teamId: string;
  /** The seq of the last record folded into the state. */
  seq: number;
  /** The record at `seq` (seq > 0): where it lies and the sha-256 of its line, to tie the
   * snapshot to this very log. */
  record?: RecordPosition & { sha256: string };
  /** The state's length and hash. */
  state: { bytes: number; sha256: string };
  /** Version 2: the length and hash of each part kept apart, in file order. */
  parts?: Record<SnapshotPartApart, { bytes: number; sha256: string }>;
  /** When it was written (ISO 8601), for people. */
  writtenAt: string;
}

/** A snapshot file found on disk, its header read and checked (the state not yet read). */
export interface SnapshotFile {
  path: string;
  header: SnapshotHeader;
  /** Byte offset of the state line. */
  stateOffset: number;
}

/** Hex sha-256 of `bytes`. */
export function sha256(bytes: Uint8Array | string): string {
  return createHash('sha256').update(bytes).digest('hex');
}

/** The snapshot file name of `seq`: its seq padded to 16 digits, so names sort by seq. */
export function snapshotFileName(seq: number): string {
  return `${String(seq).padStart(16, '0')}.snapshot`;
}

/** Seqs of the snapshot files in `dir`, newest first (a missing folder has none). */
export async function listSnapshotSeqs(fs: StorageFs, dir: string): Promise<number[]> {
  let names: string[];
  try {
    names = await fs.readdir(dir);
  } catch (error) {
    if (errnoCode(error) === 'ENOENT') return [];
    throw ioError('listing', dir, error);
  }
  const seqs: number[] = [];
  for (const name of names) {
    const match = FILE_PATTERN.exec(name);
    if (match) seqs.push(Number(match[1]));
  }
  return seqs.sort((a, b) => b - a);
}

/**
 * Reads and checks the header of the snapshot file at `path`: `SNAPSHOT_INVALID` for anything
 * this version did not write (a torn header included), `UNSUPPORTED_SCHEMA_VERSION` for a newer
 * version. The state is not read.
 */
export async function readSnapshotHeader(
  fs: StorageFs,
  path: string,
  teamId: string,
  seq: number,
): Promise<SnapshotFile> {
  let handle: StorageFileHandle;
  try {
    handle = await fs.open(path, 'r');
  } catch (error) {
    throw ioError('opening', path, error);
  }
  try {
    const buffer = Buffer.alloc(MAX_HEADER_BYTES);
    let bytesRead: number;
    try {
      ({ bytesRead } = await handle.read(buffer, 0, MAX_HEADER_BYTES, 0));
    } catch (error) {
      throw ioError('reading', path, error);
    }
    const newline = buffer.subarray(0, bytesRead).indexOf(0x0a);
    if (newline === -1) throw invalid(path, 'it has no complete header line');
    let value: unknown;
    try {
      value = JSON.parse(buffer.subarray(0, newline).toString('utf8'));
    } catch {
      throw invalid(path, 'its header is not JSON');
    }
    const header = checkHeader(path, value);
    if (header.teamId !== teamId) {
      throw invalid(path, `it belongs to team ${header.teamId}, not ${teamId}`);
    }
    if (header.seq !== seq) throw invalid(path, `its header says seq ${header.seq}`);
    let size: number;
    try {
      size = (await handle.stat()).size;
    } catch (error) {
      throw ioError('reading', path, error);
    }
    const stateOffset = newline + 1;
    const expected = stateOffset + stateBytesOf({ header }) + 1;
    if (size !== expected) {
      throw invalid(path, `it is ${size} bytes, not the ${expected} its header announces (torn)`);
    }
    return { path, header, stateOffset };
  } finally {
    await handle.close().catch(() => undefined);
  }
}

/**
 * Reads a checked snapshot's state: its bytes must hash to the header's sha-256. The parts kept
 * apart (version 2) are handed to core as `StoredText`: read (with `fs.readRangeSync`; without
 * it, now, with the state), checked against their sha-256 and decoded only when first needed.
 */
export async function readSnapshotState(fs: StorageFs, file: SnapshotFile): Promise<unknown> {
  const { path, header, stateOffset } = file;
  let handle: StorageFileHandle;
  try {
    handle = await fs.open(path, 'r');
  } catch (error) {
    throw ioError('opening', path, error);
  }
  try {
    const bytes = await readBytes(handle, path, stateOffset, header.state.bytes);
    if (sha256(bytes) !== header.state.sha256) {
      throw invalid(path, 'its state does not match its checksum');
    }
    let state: unknown;
    try {
      state = JSON.parse(bytes.toString('utf8'));
    } catch {
      throw invalid(path, 'its state is not JSON');
    }
    const parts = header.parts;
    if (parts === undefined) return state;
    const apart: Partial<Record<SnapshotPartApart, StoredText>> = {};
    let offset = stateOffset + header.state.bytes + 1;
    for (const name of SNAPSHOT_PARTS_APART) {
      const { bytes: length, sha256: hash } = parts[name];
      const at = offset;
      const readSync = fs.readRangeSync?.bind(fs);
      const read =
        readSync === undefined || length === 0
          ? await readBytes(handle, path, at, length)
          : () => readPartSync(readSync, path, at, length);
      apart[name] = storedText(`${path} (${name})`, length, read, hash);
      offset += length;
    }
    return joinTeamStateSnapshot(state, apart);
  } finally {
    await handle.close().catch(() => undefined);
  }
}

/** `length` bytes of the file at `offset` (`SNAPSHOT_INVALID` when it ends before them). */
async function readBytes(
  handle: StorageFileHandle,
  path: string,
  offset: number,
  length: number,
): Promise<Buffer> {
  const bytes = Buffer.allocUnsafe(length);
  let done = 0;
  while (done < length) {
    let bytesRead: number;
    try {
      ({ bytesRead } = await handle.read(bytes, done, length - done, offset + done));
    } catch (error) {
      throw ioError('reading', path, error);
    }
    if (bytesRead === 0) throw invalid(path, 'it ends before its header says (torn)');
    done += bytesRead;
  }
  return bytes;
}

/** The `length` bytes of a part at `position`, read now (`SNAPSHOT_INVALID` when cut short). */
function readPartSync(
  readSync: NonNullable<StorageFs['readRangeSync']>,
  path: string,
  position: number,
  length: number,
): Uint8Array {
  let bytes: Uint8Array;
  try {
    bytes = readSync(path, position, length);
  } catch (error) {
    throw ioError('reading', path, error);
  }
  if (bytes.length !== length) throw invalid(path, 'it ends before its header says (torn)');
  return bytes;
}

/**
 * A part of a snapshot of `bytes` bytes (read already, or read by `read` on first need), checked
 * against `hash` and decoded on first need, once.
 */
function storedText(
  what: string,
  bytes: number,
  read: Uint8Array | (() => Uint8Array),
  hash: string,
): StoredText {
  let text: string | undefined;
  return {
    bytes,
    text() {
      if (text === undefined) {
        const data = typeof read === 'function' ? read() : read;
        if (sha256(data) !== hash) throw invalid(what, 'it does not match its checksum');
        text = Buffer.from(data.buffer, data.byteOffset, data.byteLength).toString('utf8');
      }
      return text;
    },
  };
}

/**
 * Writes a snapshot file: header line, state line, then a flush of the file and of its folder
 * (`sync`). Written under its final name: a kill midway leaves a file whose size or checksum
 * gives it away, and it is skipped, then replaced by the next snapshot of the same seq.
 */
export async function writeSnapshotFile(options: {
  fs: StorageFs;
  dir: string;
  header: Omit<SnapshotHeader, 'state' | 'tombstones' | 'format' | 'version'>;
  snapshot: TeamStateSnapshot;
  sync: boolean;
}): Promise<{ path: string; bytes: number; stateBytes: number }> {
  const { fs, dir, sync } = options;
  const split = splitTeamStateSnapshot(options.snapshot);
  const stateBytes = Buffer.from(JSON.stringify(split.state), 'utf8');
  const partBytes = SNAPSHOT_PARTS_APART.map((name) => Buffer.from(split.parts[name], 'utf8'));
  const total = partBytes.reduce((sum, part) => sum + part.length, stateBytes.length);
  if (total > MAX_SNAPSHOT_STATE_BYTES) {
    throw new TeamError(
      'INVALID_ARGUMENT',
      `the team state is ${total} bytes, more than a snapshot holds (${MAX_SNAPSHOT_STATE_BYTES})`,
      { details: { bytes: total } },
    );
  }
  const parts = {} as Record<SnapshotPartApart, { bytes: number; sha256: string }>;
  SNAPSHOT_PARTS_APART.forEach((name, i) => {
    const part = partBytes[i] as Buffer;
    parts[name] = { bytes: part.length, sha256: sha256(part) };
  });
  const header: SnapshotHeader = {
    format: SNAPSHOT_FILE_FORMAT,
    version: SNAPSHOT_FILE_VERSION,
    ...options.header,
    state: { bytes: stateBytes.length, sha256: sha256(stateBytes) },
    parts,
  };
  const path = join(dir, snapshotFileName(header.seq));
  const bytes = Buffer.concat([
    Buffer.from(`${JSON.stringify(header)}\n`, 'utf8'),
    stateBytes,
    Buffer.from('\n'),
    ...partBytes,
  ]);
  try {
    await fs.mkdir(dir, { recursive: true });
  } catch (error) {
    throw ioError('creating folder', dir, error);
  }
  // A file left by a write that was killed midway is replaced.
  await fs.unlink(path).catch(() => undefined);
  let handle: StorageFileHandle;
  try {
    handle = await fs.open(path, 'wx');
  } catch (error) {
    throw ioError('creating', path, error);
  }
  try {
    await writeFully(handle, bytes, 0);
    if (sync) await handle.datasync();
  } catch (error) {
    throw ioError('writing', path, error);
  } finally {
    await handle.close().catch(() => undefined);
  }
  if (sync) await syncDirectory(fs, dir);
  return { path, bytes: bytes.length, stateBytes: total };
}

/** Bytes of the state a snapshot file holds, its parts kept apart included (what the policy weighs). */
export function stateBytesOf(file: Pick<SnapshotFile, 'header'>): number {
  const { state, parts } = file.header;
  let bytes = state.bytes;
  for (const name of SNAPSHOT_PARTS_APART) bytes += parts?.[name].bytes ?? 0;
  return bytes;
}

function checkHeader(path: string, value: unknown): SnapshotHeader {
  const header = value as Partial<SnapshotHeader> | null;
  if (typeof header !== 'object' || header === null || header.format !== SNAPSHOT_FILE_FORMAT) {
    throw invalid(path, 'it is not a teamwire snapshot');
  }
  if (typeof header.version === 'number' && header.version > SNAPSHOT_FILE_VERSION) {
    throw new TeamError(
      'UNSUPPORTED_SCHEMA_VERSION',
      `${path} is snapshot version ${header.version}, newer than this version of teamwire reads (${SNAPSHOT_FILE_VERSION})`,
      { details: { path, version: header.version, supported: SNAPSHOT_FILE_VERSION } },
    );
  }
  const state = header.state as Partial<SnapshotHeader['state']> | undefined;
  const parts = header.parts as Record<string, Partial<SnapshotHeader['state']>> | undefined;
  const record = header.record as Partial<SnapshotHeader['record']> | undefined;
  const ok =
    (header.version === 1
      ? parts === undefined
      : header.version === SNAPSHOT_FILE_VERSION &&
        typeof parts === 'object' &&
        parts !== null &&
        SNAPSHOT_PARTS_APART.every((name) => {
          const part = parts[name];
          return (
            typeof part === 'object' &&
            part !== null &&
            isCount(part.bytes) &&
            part.bytes <= MAX_SNAPSHOT_STATE_BYTES &&
            isHash(part.sha256)
          );
        })) &&
    typeof header.teamId === 'string' &&
    isCount(header.seq) &&
    typeof header.writtenAt === 'string' &&
    typeof state === 'object' &&
    state !== null &&
    isCount(state.bytes) &&
    state.bytes <= MAX_SNAPSHOT_STATE_BYTES &&
    isHash(state.sha256) &&
    (header.seq === 0
      ? record === undefined
      : typeof record === 'object' &&
        record !== null &&
        isCount(record.segment) &&
        record.segment >= 1 &&
        isCount(record.offset) &&
        isCount(record.length) &&
        record.length >= 2 &&
        isHash(record.sha256));
  if (!ok) throw invalid(path, 'its header is malformed');
  return header as SnapshotHeader;
}

function isCount(value: unknown): value is number {
  return typeof value === 'number' && Number.isSafeInteger(value) && value >= 0;
}

function isHash(value: unknown): value is string {
  return typeof value === 'string' && /^[0-9a-f]{64}$/.test(value);
}

function invalid(path: string, reason: string): TeamError {
  return new TeamError('SNAPSHOT_INVALID', `snapshot ${path} is skipped: ${reason}`, {
    details: { path },
  });
}
