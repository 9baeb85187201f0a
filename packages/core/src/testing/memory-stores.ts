import type { TranscriptEntry } from '../chat.js';
import { TeamError } from '../errors.js';
import type { TeamLog } from '../ports/team-log.js';
import type { TranscriptStore } from '../ports/transcript-store.js';
import type { TeamRecord } from '../records.js';
import { parseTeamRecord } from '../records.js';
import { repairTranscript } from '../transcript-repair.js';

/** An in-memory TeamLog. Records are deep-copied through JSON on the way in, like a real store. */
export interface MemoryTeamLog extends TeamLog {
  /** Every record appended so far (validated copies). */
  records(): readonly TeamRecord[];
}

/** Creates a {@link MemoryTeamLog} for `teamId`, optionally seeded with `records` (validated, as a store would on read). */
export function createMemoryTeamLog(options: {
  teamId: string;
  records?: readonly TeamRecord[];
}): MemoryTeamLog {
  const stored: TeamRecord[] = [];
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
        const copy = parseTeamRecord(JSON.parse(JSON.stringify(record)));
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
