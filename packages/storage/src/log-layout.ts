import { join } from 'node:path';
import { resolveSnapshotPolicy, type SnapshotPolicy, TeamError } from '@teamwire/core';
import type { StorageFs } from './fs-seam.js';
import { errnoCode, ioError } from './fs-seam.js';

/** The team log's first segment, inside a team folder (the whole log of a team that never rotated). */
export const LOG_FILE = 'log.jsonl';
/** The folder of the log's later segments inside a team folder. */
export const SEGMENTS_DIR = 'segments';

const SEGMENT_PATTERN = /^(\d{16})\.jsonl$/;

/** How big the active segment grows before the log moves on to a new one, by default. */
export const DEFAULT_SEGMENT_BYTES = 64 << 20;

/**
 * What happens to segments wholly covered by the oldest kept snapshot: `keep` them (the
 * default: a full fold stays possible), `delete` them, or move them to `{ archiveDir }`. Without
 * them, reading from before the oldest kept record is `HISTORY_UNAVAILABLE`; opening still works
 * from the snapshot.
 */
export type SegmentRetention =
  | 'keep'
  | 'delete'
  | {
      /** The folder covered segments are moved to (created when missing). */
      archiveDir: string;
    };

/** One segment file of the log: `log.jsonl` (from seq 1) or `segments/<first seq>.jsonl`. */
export interface SegmentFile {
  /** The seq of its first record. */
  first: number;
  /** The segment file. */
  path: string;
}

/** The path of the segment starting at `first`. */
export function segmentPath(dir: string, first: number): string {
  return first === 1
    ? join(dir, LOG_FILE)
    : join(dir, SEGMENTS_DIR, `${String(first).padStart(16, '0')}.jsonl`);
}

/** The segment files of the team folder `dir`, oldest first. */
export async function listSegments(fs: StorageFs, dir: string): Promise<SegmentFile[]> {
  const segments: SegmentFile[] = [];
  try {
    const stat = await fs.stat(join(dir, LOG_FILE));
    if (stat.isFile()) segments.push({ first: 1, path: join(dir, LOG_FILE) });
  } catch (error) {
    const code = errnoCode(error);
    if (code !== 'ENOENT' && code !== 'ENOTDIR') {
      throw ioError('reading', join(dir, LOG_FILE), error);
    }
  }
  let names: string[] = [];
  try {
    names = await fs.readdir(join(dir, SEGMENTS_DIR));
  } catch (error) {
    const code = errnoCode(error);
    if (code !== 'ENOENT' && code !== 'ENOTDIR') {
      throw ioError('listing', join(dir, SEGMENTS_DIR), error);
    }
  }
  for (const name of names) {
    const match = SEGMENT_PATTERN.exec(name);
    if (!match) continue;
    const first = Number(match[1]);
    // seq 1 is always log.jsonl; a segments/ file claiming it is not the log's
    if (first > 1) segments.push({ first, path: join(dir, SEGMENTS_DIR, name) });
  }
  return segments.sort((a, b) => a.first - b.first);
}

/** Checks and completes the layout options of a store. */
export function resolveLayout(options: {
  segmentBytes?: number | undefined;
  snapshots?: Partial<SnapshotPolicy> | false | undefined;
  retention?: SegmentRetention | undefined;
}): { segmentBytes: number; snapshots: SnapshotPolicy | false; retention: SegmentRetention } {
  const segmentBytes = options.segmentBytes ?? DEFAULT_SEGMENT_BYTES;
  if (!Number.isSafeInteger(segmentBytes) || segmentBytes < 4096) {
    throw argument('segmentBytes must be an integer >= 4096', { segmentBytes });
  }
  const snapshots = resolveSnapshotPolicy(options.snapshots);
  const retention = options.retention ?? 'keep';
  const archiveDir =
    typeof retention === 'object' && retention !== null ? retention.archiveDir : '';
  if (
    retention !== 'keep' &&
    retention !== 'delete' &&
    !(typeof archiveDir === 'string' && archiveDir.length > 0)
  ) {
    throw argument("retention must be 'keep', 'delete' or { archiveDir: string }", {});
  }
  if (retention !== 'keep' && snapshots === false) {
    throw argument(
      'a retention other than keep needs snapshots: without one the team could not open',
      {},
    );
  }
  return { segmentBytes, snapshots, retention };
}

function argument(message: string, details: Record<string, unknown>): TeamError {
  return new TeamError('INVALID_ARGUMENT', message, { details });
}
