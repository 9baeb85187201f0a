import { mkdir, readFile, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { TranscriptEntry } from '@teamwire/core';
import { describe, expect, it } from 'vitest';
import type { StorageFs } from './fs-seam.js';
import { nodeFs } from './fs-seam.js';
import { readTranscript } from './inspect.js';
import type { OpenJsonlTeamStoreOptions } from './team-store.js';
import { openJsonlTeamStore, TRANSCRIPTS_DIR } from './team-store.js';
import { eachTestInTempDir, instrumentedFs } from './test-support.js';
import {
  JOURNAL_CHECKPOINT_BYTES,
  JOURNAL_HEADER,
  TRANSCRIPT_JOURNAL_FILE,
} from './transcript-journal.js';

const TEAM = '01JTEAMJOURNAL000000000000';
const ALICE = 'alice';
const BOB = 'bob';

let dir: string;
eachTestInTempDir((path) => {
  dir = path;
});

const entry = (at: number, text = `m${at}`): TranscriptEntry => ({
  schemaVersion: 1,
  at,
  message: { role: 'user', content: [{ type: 'text', text }] },
});
const line = (value: unknown) => `${JSON.stringify(value)}\n`;
const journalPath = () => join(dir, TRANSCRIPT_JOURNAL_FILE);
const memberPath = (member: string) => join(dir, TRANSCRIPTS_DIR, `${member}.jsonl`);
const batch = (member: string, offset: number, entries: TranscriptEntry[]) =>
  line({ member, offset, entries });

function open(options: Partial<OpenJsonlTeamStoreOptions> = {}) {
  return openJsonlTeamStore({ teamId: TEAM, dir, durability: 'fsync', ...options });
}

/** A team folder holding member files and a journal as a kill could leave them. */
async function writeFolder(members: Record<string, string>, journal: string): Promise<void> {
  await mkdir(join(dir, TRANSCRIPTS_DIR), { recursive: true });
  await writeFile(join(dir, 'log.jsonl'), '');
  for (const [member, text] of Object.entries(members)) await writeFile(memberPath(member), text);
  await writeFile(journalPath(), journal);
}

async function rejection(promise: Promise<unknown>): Promise<{ code?: string; message: string }> {
  try {
    await promise;
  } catch (error) {
    return error as { code?: string; message: string };
  }
  throw new Error('expected a rejection');
}

describe('the transcript journal', () => {
  it('opens a folder of the layout before the journal and creates it', async () => {
    await mkdir(join(dir, TRANSCRIPTS_DIR), { recursive: true });
    await writeFile(join(dir, 'log.jsonl'), '');
    await writeFile(memberPath(ALICE), line(entry(1)) + line(entry(2)));
    const store = await open();
    expect(store.recovered.transcriptJournal).toEqual({ batches: 0, rewritten: [], tornBytes: 0 });
    expect(await readFile(journalPath(), 'utf8')).toBe(JOURNAL_HEADER);
    expect(await store.transcripts.load({ memberId: ALICE })).toEqual([entry(1), entry(2)]);
    await store.transcripts.append({ memberId: ALICE, entries: [entry(3)] });
    await store.close();
    const reopened = await open();
    expect(await reopened.transcripts.load({ memberId: ALICE })).toEqual([
      entry(1),
      entry(2),
      entry(3),
    ]);
    await reopened.close();
  });

  it('writes appends of many members with one shared sync, and leaves it empty on close', async () => {
    const { fs, counts } = instrumentedFs();
    const store = await open({ fs });
    const members = Array.from({ length: 32 }, (_, i) => `m-${i}`);
    // first appends create the files (each created file syncs its folder)
    await Promise.all(
      members.map((memberId) => store.transcripts.append({ memberId, entries: [entry(1)] })),
    );
    const before = counts.datasyncs;
    await Promise.all(
      members.map((memberId) => store.transcripts.append({ memberId, entries: [entry(2)] })),
    );
    const syncs = counts.datasyncs - before;
    expect(syncs).toBeGreaterThanOrEqual(1);
    expect(syncs).toBeLessThanOrEqual(2);
    for (const memberId of members) {
      expect(await store.transcripts.load({ memberId })).toEqual([entry(1), entry(2)]);
    }
    expect((await stat(journalPath())).size).toBeGreaterThan(JOURNAL_HEADER.length);
    await store.close();
    expect(await readFile(journalPath(), 'utf8')).toBe(JOURNAL_HEADER);
    const reopened = await open();
    expect(reopened.recovered.transcriptJournal.batches).toBe(0);
    expect(await reopened.transcripts.load({ memberId: 'm-7' })).toEqual([entry(1), entry(2)]);
    await reopened.close();
  });

  it('restores appends a kill left in the journal only, and cuts bytes past it', async () => {
    const first = line(entry(1));
    const second = line(entry(2));
    await writeFolder(
      {
        // alice's second append is missing; bob's file has a torn line past the journal
        [ALICE]: first,
        [BOB]: `${line(entry(5))}{"schemaVersion":1,"at":6,"mess`,
      },
      JOURNAL_HEADER +
        batch(ALICE, 0, [entry(1)]) +
        batch(BOB, 0, [entry(5)]) +
        batch(ALICE, Buffer.byteLength(first), [entry(2), entry(3)]),
    );
    // read without the lock, before any open: the files with the journal's appends
    expect((await readTranscript(dir, ALICE)).map((e) => e.at)).toEqual([1, 2, 3]);
    expect(await readTranscript(dir, BOB)).toEqual([entry(5)]);
    expect(await readFile(memberPath(ALICE), 'utf8')).toBe(first);
    const store = await open();
    expect(store.recovered.transcriptJournal).toEqual({
      batches: 3,
      rewritten: [ALICE, BOB],
      tornBytes: 0,
    });
    expect(await readFile(memberPath(ALICE), 'utf8')).toBe(first + second + line(entry(3)));
    expect(await readFile(memberPath(BOB), 'utf8')).toBe(line(entry(5)));
    expect(await readFile(journalPath(), 'utf8')).toBe(JOURNAL_HEADER);
    await store.transcripts.append({ memberId: ALICE, entries: [entry(4)] });
    expect((await store.transcripts.load({ memberId: ALICE })).map((e) => e.at)).toEqual([
      1, 2, 3, 4,
    ]);
    await store.close();
  });

  it('creates a member file the journal names but the disk lost', async () => {
    await writeFolder({}, JOURNAL_HEADER + batch(BOB, 0, [entry(1)]));
    expect(await readTranscript(dir, BOB)).toEqual([entry(1)]);
    const store = await open();
    expect(store.recovered.transcriptJournal.rewritten).toEqual([BOB]);
    expect(await store.transcripts.load({ memberId: BOB })).toEqual([entry(1)]);
    await store.close();
  });

  it('cuts a torn final journal line: its append never resolved', async () => {
    const torn = batch(ALICE, Buffer.byteLength(line(entry(1))), [entry(2)]).slice(0, 30);
    await writeFolder(
      { [ALICE]: line(entry(1)) },
      JOURNAL_HEADER + batch(ALICE, 0, [entry(1)]) + torn,
    );
    expect(await readTranscript(dir, ALICE)).toEqual([entry(1)]);
    const store = await open();
    expect(store.recovered.transcriptJournal).toEqual({
      batches: 1,
      rewritten: [],
      tornBytes: torn.length,
    });
    expect(await store.transcripts.load({ memberId: ALICE })).toEqual([entry(1)]);
    await store.close();
  });

  it('refuses a damaged journal line, a gap in a member run or a lost flushed prefix, changing nothing', async () => {
    const cases: [string, Record<string, string>, string][] = [
      [
        'not JSON',
        { [ALICE]: line(entry(1)) },
        `${JOURNAL_HEADER}${batch(ALICE, 0, [entry(1)])}{not json}\n`,
      ],
      [
        'not an entry',
        { [ALICE]: '' },
        JOURNAL_HEADER + line({ member: ALICE, offset: 0, entries: [{ at: 'x' }] }),
      ],
      [
        'a gap',
        { [ALICE]: line(entry(1)) },
        JOURNAL_HEADER + batch(ALICE, 0, [entry(1)]) + batch(ALICE, 999, [entry(2)]),
      ],
      ['a bad member id', {}, JOURNAL_HEADER + batch('../x', 0, [entry(1)])],
      ['a lost prefix', { [ALICE]: '' }, JOURNAL_HEADER + batch(ALICE, 40, [entry(2)])],
      ['no header', { [ALICE]: '' }, batch(ALICE, 0, [entry(1)])],
    ];
    for (const [what, members, journal] of cases) {
      await writeFolder(members, journal);
      const error = await rejection(open());
      expect(error.code, what).toBe('CORRUPT_LOG');
      expect(error.message, what).toContain(what === 'a lost prefix' ? 'alice' : 'journal');
      expect(await readFile(journalPath(), 'utf8'), what).toBe(journal);
      for (const [member, text] of Object.entries(members)) {
        expect(await readFile(memberPath(member), 'utf8'), what).toBe(text);
      }
    }
  });

  it('reads the journal once more when a lock-free read overlapped a checkpoint', async () => {
    const good = JOURNAL_HEADER + batch(ALICE, 0, [entry(1)]);
    await writeFolder({ [ALICE]: '' }, good);
    // the first read of the journal sees the end of a line, as a read racing a checkpoint can
    let journalReads = 0;
    const racing: StorageFs = {
      ...nodeFs,
      async open(path, flags) {
        if (path.endsWith(TRANSCRIPT_JOURNAL_FILE) && journalReads++ === 0) {
          const torn = join(dir, 'journal-as-read-mid-checkpoint');
          await writeFile(torn, `${JOURNAL_HEADER}ies":[]}\n`);
          return nodeFs.open(torn, flags);
        }
        return nodeFs.open(path, flags);
      },
    };
    expect(await readTranscript(dir, ALICE, { fs: racing })).toEqual([entry(1)]);
    expect(journalReads).toBe(2);
    // damage that stays is reported
    await writeFile(journalPath(), `${JOURNAL_HEADER}ies":[]}\n`);
    const error = await rejection(readTranscript(dir, ALICE));
    expect(error.code).toBe('CORRUPT_LOG');
  });

  it('refuses a journal of a newer version', async () => {
    const journal = line({ format: 'teamwire.transcript-journal', version: 2 });
    await writeFolder({}, journal);
    const error = await rejection(open());
    expect(error.code).toBe('UNSUPPORTED_SCHEMA_VERSION');
    expect(await readFile(journalPath(), 'utf8')).toBe(journal);
  });

  it('is replayed by a buffered open too, which then writes member files directly', async () => {
    await writeFolder({ [ALICE]: '' }, JOURNAL_HEADER + batch(ALICE, 0, [entry(1)]));
    const store = await open({ durability: 'buffered' });
    expect(store.recovered.transcriptJournal.rewritten).toEqual([ALICE]);
    await store.transcripts.append({ memberId: ALICE, entries: [entry(2)] });
    expect(await readFile(journalPath(), 'utf8')).toBe(JOURNAL_HEADER);
    expect(await store.transcripts.load({ memberId: ALICE })).toEqual([entry(1), entry(2)]);
    await store.close();
  });

  it('flushes the member files and empties itself once it passes its checkpoint size', async () => {
    const { fs, counts } = instrumentedFs();
    const store = await open({ fs, maxOpenTranscripts: 2 });
    const text = 'x'.repeat(64 * 1024);
    const members = [ALICE, BOB, 'carol'];
    const rounds = Math.ceil(JOURNAL_CHECKPOINT_BYTES / text.length / members.length) + 2;
    const truncatesBefore = counts.truncates;
    for (let round = 0; round < rounds; round++) {
      await Promise.all(
        members.map((memberId) =>
          store.transcripts.append({ memberId, entries: [entry(round, text)] }),
        ),
      );
    }
    // the journal was emptied once past the checkpoint size, and holds only what followed
    expect(counts.truncates - truncatesBefore).toBe(1);
    expect((await stat(journalPath())).size).toBeLessThan(JOURNAL_CHECKPOINT_BYTES / 2);
    // a reopen without the close's checkpoint: replay covers what followed the last one
    const copy = await readFile(journalPath());
    await store.close();
    await writeFile(journalPath(), copy);
    const reopened = await open();
    const replayed = reopened.recovered.transcriptJournal.batches;
    expect(replayed).toBeGreaterThan(0);
    expect(replayed).toBeLessThan(rounds * members.length);
    for (const memberId of members) {
      const loaded = await reopened.transcripts.load({ memberId });
      expect(loaded.map((e) => e.at)).toEqual(Array.from({ length: rounds }, (_, i) => i));
    }
    await reopened.close();
  });
});
