import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { TranscriptEntry } from '@teamwire/core';
import { TeamError } from '@teamwire/core';
import { describe, expect, it } from 'vitest';
import type { StorageFileHandle, StorageFs } from './fs-seam.js';
import { nodeFs } from './fs-seam.js';
import { openJsonlTeamStore } from './team-store.js';
import { eachTestInTempDir } from './test-support.js';

const TEAM = '01JTEAMFILES00000000000000';
const MEMBERS = ['m-0', 'm-1', 'm-2', 'm-3', 'm-4', 'm-5'];

let dir: string;
eachTestInTempDir((path) => {
  dir = path;
});

/** The real file system, tracking how many transcript files are open for appending at once. */
function descriptorCountingFs() {
  const counts = { open: 0, peak: 0, opens: new Map<string, number>() };
  const fs: StorageFs = {
    ...nodeFs,
    async open(path, flags) {
      const handle = await nodeFs.open(path, flags);
      if (!path.includes('transcripts') || flags !== 'r+') return handle;
      counts.open++;
      counts.peak = Math.max(counts.peak, counts.open);
      counts.opens.set(path, (counts.opens.get(path) ?? 0) + 1);
      let closed = false;
      const counted: StorageFileHandle = Object.assign(Object.create(handle) as StorageFileHandle, {
        read: handle.read.bind(handle),
        write: handle.write.bind(handle),
        datasync: handle.datasync.bind(handle),
        sync: handle.sync.bind(handle),
        truncate: handle.truncate.bind(handle),
        stat: handle.stat.bind(handle),
        async close() {
          if (!closed) counts.open--;
          closed = true;
          return handle.close();
        },
      });
      return counted;
    },
  };
  return { fs, counts };
}

const entry = (member: string, n: number): TranscriptEntry => ({
  schemaVersion: 1,
  at: n,
  message: { role: 'user', content: [{ type: 'text', text: `${member} #${n}` }] },
});

describe('a transcript store with a bound on open files', () => {
  it('keeps at most maxOpenTranscripts member files open and loses nothing', async () => {
    const { fs, counts } = descriptorCountingFs();
    const store = await openJsonlTeamStore({
      teamId: TEAM,
      dir,
      durability: 'fsync',
      fs,
      maxOpenTranscripts: 2,
    });
    for (let n = 1; n <= 5; n++) {
      for (const member of MEMBERS) {
        await store.transcripts.append({ memberId: member, entries: [entry(member, n)] });
      }
    }
    // one file may be opening while the least recently used one closes
    expect(counts.peak).toBeLessThanOrEqual(3);
    // files closed to make room were opened again (without a re-scan), every round
    expect(Math.min(...counts.opens.values())).toBeGreaterThanOrEqual(5);
    for (const member of MEMBERS) {
      const texts = (await store.transcripts.load({ memberId: member })).map((e) => e.at);
      expect(texts).toEqual([1, 2, 3, 4, 5]);
    }
    await store.close();
    expect(counts.open).toBe(0);
  });

  it('without a tight bound every member file stays open', async () => {
    const { fs, counts } = descriptorCountingFs();
    const store = await openJsonlTeamStore({ teamId: TEAM, dir, durability: 'buffered', fs });
    for (const member of MEMBERS) {
      await store.transcripts.append({ memberId: member, entries: [entry(member, 1)] });
    }
    expect(counts.peak).toBe(MEMBERS.length);
    await store.close();
    expect(counts.open).toBe(0);
  });

  it('keeps every member in append order under concurrent appends to more members than files', async () => {
    const store = await openJsonlTeamStore({
      teamId: TEAM,
      dir,
      durability: 'fsync',
      maxOpenTranscripts: 2,
    });
    const appends: Promise<void>[] = [];
    for (let n = 1; n <= 40; n++) {
      // members in a shifting order, so files are evicted and reopened mid-stream
      for (let i = 0; i < MEMBERS.length; i++) {
        const member = MEMBERS[(i * 5 + n) % MEMBERS.length] as string;
        appends.push(store.transcripts.append({ memberId: member, entries: [entry(member, n)] }));
      }
    }
    await Promise.all(appends);
    await store.close();
    const again = await openJsonlTeamStore({ teamId: TEAM, dir, durability: 'fsync' });
    for (const member of MEMBERS) {
      const loaded = await again.transcripts.load({ memberId: member });
      expect(loaded.map((e) => e.at)).toEqual(Array.from({ length: 40 }, (_, i) => i + 1));
      const file = await readFile(join(dir, 'transcripts', `${member}.jsonl`), 'utf8');
      expect(file.endsWith('\n')).toBe(true);
      expect(file.split('\n')).toHaveLength(41);
    }
    expect(again.transcripts.repairs()).toEqual([]);
    await again.close();
  });

  it('refuses a bound that is not a positive integer', async () => {
    for (const maxOpenTranscripts of [0, -1, 1.5, Number.NaN]) {
      const error = await openJsonlTeamStore({ teamId: TEAM, dir, maxOpenTranscripts }).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(TeamError.hasCode(error, 'INVALID_ARGUMENT'), String(maxOpenTranscripts)).toBe(true);
    }
  });
});
