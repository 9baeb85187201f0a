import type { TranscriptEntry } from '../chat.js';
import { TeamError } from '../errors.js';
import type { TeamLog, TeamLogSnapshots } from '../ports/team-log.js';
import type { TranscriptStore } from '../ports/transcript-store.js';
import type { TeamRecord } from '../records.js';
import { parseTeamRecord, readTeamRecord } from '../records.js';
import { resolveSnapshotPolicy, type SnapshotPolicy } from '../state/snapshot-policy.js';
import { repairTranscript } from '../transcript-repair.js';

/** An in-memory TeamLog. Records are deep-copied through JSON on the way in, like a real store. */
export interface MemoryTeamLog extends TeamLog {
  /** Every record appended so far (validated copies). */
  records(): readonly TeamRecord[];
  /** The snapshots written so far (with `snapshots` on), oldest first, as stored JSON text. */
  storedSnapshots(): readonly MemoryStoredSnapshot[];
}

/** A snapshot as the memory log keeps it. */
export interface MemoryStoredSnapshot {
  /** The seq of the last record folded into it. */
  seq: number;
  /** The `TeamStateSnapshot` as JSON text. */
  text: string;
}

/**
 * Options of {@link createMemoryTeamLog}'s snapshot store. Its snapshots cost no durable bytes
 * (they report a size of 0), so `everyRecords` and `everyBytes` alone decide when one is due.
 */
export interface MemorySnapshotOptions {
  /** A snapshot is due after this many records since the last one (see `SnapshotPolicy`). */
  everyRecords: number;
  /** …or this many bytes of record JSON (default: core's default policy). */
  everyBytes?: number;
  /** Snapshots kept (default: core's default policy). */
  keep?: number;
  /** Snapshots present before the log is opened, e.g. from an earlier log of the same records. */
  stored?: readonly MemoryStoredSnapshot[];
  /** Every write fails with `STORAGE_IO` (to test that the team carries on). */
  failWrites?: boolean;
  /** Offer the stored snapshots as `anchored` (the store vouches they are of this log). */
  anchored?: boolean;
}

/** Creates a {@link MemoryTeamLog} for `teamId`, optionally seeded with `records` (validated, as a store would on read). */
export function createMemoryTeamLog(options: {
  teamId: string;
  records?: readonly TeamRecord[];
  /** Keep snapshots of the folded state (`TeamLog.snapshots`), as a durable store would. */
  snapshots?: MemorySnapshotOptions;
}): MemoryTeamLog {
  const stored: TeamRecord[] = [];
  let snapshotTexts = [...(options.snapshots?.stored ?? [])];
  const rejected = new Set<number>();
  let logBytes = 0;
  const given = options.snapshots;
  const policy =
    given &&
    (resolveSnapshotPolicy({
      everyRecords: given.everyRecords,
      ...(given.everyBytes === undefined ? {} : { everyBytes: given.everyBytes }),
      ...(given.keep === undefined ? { keep: Number.MAX_SAFE_INTEGER } : { keep: given.keep }),
    }) as SnapshotPolicy);
  const snapshots: TeamLogSnapshots | undefined = given &&
    policy && {
      policy,
      async *list() {
        for (const { seq, text } of [...snapshotTexts].reverse()) {
          if (rejected.has(seq) || seq > stored.length) continue;
          yield {
            seq,
            state: JSON.parse(text),
            bytes: 0,
            source: `memory snapshot ${seq}`,
            ...(given.anchored === true ? { anchored: true } : {}),
          };
        }
      },
      logBytes: () => logBytes,
      async write(snapshot) {
        if (given.failWrites) {
          throw new TeamError('STORAGE_IO', 'writing the snapshot failed: disk full');
        }
        if (snapshot.seq > stored.length) {
          throw new TeamError('INVALID_ARGUMENT', `seq ${snapshot.seq} is not durable yet`);
        }
        const text = JSON.stringify(snapshot);
        snapshotTexts.push({ seq: snapshot.seq, text });
        return { bytes: 0 };
      },
      async prune({ keep }) {
        snapshotTexts = snapshotTexts.slice(-keep);
      },
      rejected(snapshot) {
        rejected.add(snapshot.seq);
      },
    };
  const listeners = new Set<(record: TeamRecord) => void>();
  let closed = false;
  for (const record of options.records ?? []) stored.push(parseTeamRecord(structuredClone(record)));
  return {
    specificationVersion: 'v1',
    teamId: options.teamId,
    async append({ records }) {
      if (closed) throw new TeamError('STORE_CLOSED', 'team log is closed');
      let expected = stored.length + 1;
      const copies: TeamRecord[] = [];
      for (const record of records) {
        const text = JSON.stringify(record);
        logBytes += text.length;
        const copy = readTeamRecord(JSON.parse(text));
        if (copy.seq !== expected) {
          throw new TeamError(
            'LOG_INVARIANT',
            `append out of order: expected seq ${expected}, got ${copy.seq}`,
            {
              details: { expected, seq: copy.seq },
            },
          );
        }
        expected++;
        copies.push(copy);
      }
      for (const copy of copies) {
        stored.push(copy);
        for (const listener of listeners) listener(copy);
      }
    },
    async *read(readOptions = {}) {
      const from = Math.max(1, readOptions.fromSeq ?? 1);
      for (let i = from - 1; i < stored.length; i++) {
        readOptions.signal?.throwIfAborted();
        yield stored[i]!;
      }
    },
    subscribe({ listener }) {
      listeners.add(listener);
      return () => {
        listeners.delete(listener);
      };
    },
    lastSeq: () => stored.length,
    async close() {
      closed = true;
      listeners.clear();
    },
    records: () => stored,
    storedSnapshots: () => snapshotTexts,
    ...(snapshots ? { snapshots } : {}),
  };
}

/** An in-memory TranscriptStore with the same repair-on-load rules as the durable stores. */
export interface MemoryTranscriptStore extends TranscriptStore {
  /** The raw entries of a member, without repair. */
  raw(memberId: string): readonly TranscriptEntry[];
}

/** Creates an empty {@link MemoryTranscriptStore}. */
export function createMemoryTranscriptStore(): MemoryTranscriptStore {
  const byMember = new Map<string, TranscriptEntry[]>();
  let closed = false;
  return {
    specificationVersion: 'v1',
    async append({ memberId, entries }) {
      if (closed) throw new TeamError('STORE_CLOSED', 'transcript store is closed');
      let list = byMember.get(memberId);
      if (!list) {
        list = [];
        byMember.set(memberId, list);
      }
      for (const entry of entries) list.push(structuredClone(entry));
    },
    async load({ memberId }) {
      return repairTranscript(structuredClone(byMember.get(memberId) ?? []));
    },
    async close() {
      closed = true;
    },
    raw: (memberId) => byMember.get(memberId) ?? [],
  };
}
