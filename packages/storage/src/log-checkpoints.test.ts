import { randomTeamRecords } from '@teamwire/core/testing';
import { describe, expect, it } from 'vitest';
import { openJsonlTeamStore } from './team-store.js';
import { caught, eachTestInTempDir } from './test-support.js';

const TEAM = '01JTEAMCHECKPOINTS00000000';

let dir: string;
eachTestInTempDir((path) => {
  dir = path;
});

describe('the byte offsets the log remembers for reads from a seq', () => {
  it('points at the right line when the remembered record sits inside a multi-record append', async () => {
    // Offsets are remembered every 1024 records; batches of 7 put seq 1025 and 2049 mid-batch
    // (third and sixth line of their appends), so a wrong offset within the batch would start the
    // read on another record.
    const records = randomTeamRecords(TEAM, 2100, 3);
    const store = await openJsonlTeamStore({ teamId: TEAM, dir, durability: 'buffered' });
    try {
      for (let i = 0; i < records.length; i += 7) {
        await store.log.append({ records: records.slice(i, i + 7) });
      }
      for (const from of [1024, 1025, 1026, 2048, 2049, 2050, 2100]) {
        const read: number[] = [];
        for await (const record of store.log.read({ fromSeq: from })) read.push(record.seq);
        expect(read).toEqual(records.slice(from - 1).map((record) => record.seq));
      }
    } finally {
      await store.close();
    }
  });
});

describe('appends refused before they are queued', () => {
  it('are rejected promises, never throws, and leave the store writable', async () => {
    const records = randomTeamRecords(TEAM, 3, 5);
    const store = await openJsonlTeamStore({ teamId: TEAM, dir, durability: 'buffered' });
    try {
      let outOfOrder: Promise<void> | undefined;
      expect(() => {
        outOfOrder = store.log.append({ records: records.slice(1) });
      }).not.toThrow();
      expect((await caught(outOfOrder as Promise<void>)).code).toBe('LOG_INVARIANT');
      let badMember: Promise<void> | undefined;
      expect(() => {
        badMember = store.transcripts.append({ memberId: '../x', entries: [] });
      }).not.toThrow();
      expect((await caught(badMember as Promise<void>)).code).toBe('INVALID_ARGUMENT');
      await store.log.append({ records });
      expect(store.log.lastSeq()).toBe(3);
    } finally {
      await store.close();
    }
  });
});
