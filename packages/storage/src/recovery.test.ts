import { appendFile, mkdir, readFile, stat, truncate, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { TeamRecord } from '@teamwire/core';
import { TeamError } from '@teamwire/core';
import { conformanceRecords } from '@teamwire/core/testing';
import { describe, expect, it } from 'vitest';
import { listTeams, readTeamLog } from './inspect.js';
import { LOCK_FILE } from './lock.js';
import { openJsonlTeamStore } from './team-store.js';
import { caught, eachTestInTempDir } from './test-support.js';

const TEAM = '01JTEAMRECOVERY00000000000';
const ALICE = '01JALICE0000000000000000AA';

let dir: string;
eachTestInTempDir((path) => {
  dir = path;
});

const open = (durability: 'fsync' | 'buffered' = 'buffered') =>
  openJsonlTeamStore({ teamId: TEAM, dir, durability });

async function seed(count: number): Promise<TeamRecord[]> {
  const store = await open();
  const records = conformanceRecords(TEAM, 1, count);
  await store.log.append({ records });
  await store.close();
  return records;
}

async function readAll(store: { log: { read(): AsyncIterable<TeamRecord> } }) {
  const out: TeamRecord[] = [];
  for await (const record of store.log.read()) out.push(record);
  return out;
}

const logPath = () => join(dir, 'log.jsonl');

describe('opening a team folder', () => {
  it('creates the folder layout on first open and reports it', async () => {
    const store = await open('fsync');
    expect(store.recovered).toEqual({
      created: true,
      records: 0,
      lastSeq: 0,
      tornBytes: 0,
      transcriptJournal: { batches: 0, rewritten: [], tornBytes: 0 },
      snapshotSeq: 0,
      snapshotsSkipped: 0,
      firstSeq: 1,
    });
    expect((await stat(logPath())).size).toBe(0);
    expect(JSON.parse(await readFile(join(dir, LOCK_FILE), 'utf8'))).toMatchObject({
      pid: process.pid,
    });
    await store.close();
    const again = await open();
    expect(again.recovered.created).toBe(false);
    await again.close();
  });

  it('refuses a missing team with TEAM_NOT_FOUND when create is false', async () => {
    const error = await caught(
      openJsonlTeamStore({ teamId: TEAM, dir: join(dir, 'nope'), create: false }),
    );
    expect(error.code).toBe('TEAM_NOT_FOUND');
    expect(error.message).toContain(join(dir, 'nope'));
  });

  it('writes one JSON record per line, line n holding seq n', async () => {
    const records = await seed(5);
    const lines = (await readFile(logPath(), 'utf8')).split('\n');
    expect(lines.at(-1)).toBe('');
    expect(lines.slice(0, -1).map((line) => JSON.parse(line))).toEqual(
      JSON.parse(JSON.stringify(records)),
    );
  });
});

describe('torn tail repair', () => {
  it('cuts an unterminated, unparsable final line away and appends after it', async () => {
    await seed(3);
    const sizeBefore = (await stat(logPath())).size;
    const torn = '{"seq":4,"at":17,"teamId":"01JT';
    await appendFile(logPath(), torn);
    const store = await open();
    expect(store.recovered).toMatchObject({ records: 3, lastSeq: 3, tornBytes: torn.length });
    expect((await stat(logPath())).size).toBe(sizeBefore);
    await store.log.append({ records: conformanceRecords(TEAM, 4, 1) });
    expect((await readAll(store)).map((r) => r.seq)).toEqual([1, 2, 3, 4]);
    await store.close();
  });

  it('keeps a valid final line that lost only its newline', async () => {
    await seed(2);
    const text = await readFile(logPath(), 'utf8');
    await writeFile(logPath(), text.slice(0, -1));
    const store = await open();
    expect(store.recovered).toMatchObject({ records: 2, tornBytes: 0 });
    expect(await readFile(logPath(), 'utf8')).toBe(text);
    await store.log.append({ records: conformanceRecords(TEAM, 3, 1) });
    expect(store.log.lastSeq()).toBe(3);
    await store.close();
  });

  it('recovers a prefix of the records wherever the last write was cut', async () => {
    const records = await seed(5);
    const full = await readFile(logPath());
    const ends: number[] = [];
    for (let i = 0; i < full.length; i++) if (full[i] === 0x0a) ends.push(i + 1);
    // Every cut point inside the last two lines, plus the first line's.
    const cuts = new Set<number>();
    for (let cut = 0; cut <= full.length; cut++) {
      if (cut <= ends[0]! || cut > ends[2]!) cuts.add(cut);
    }
    for (const cut of cuts) {
      await writeFile(logPath(), full.subarray(0, cut));
      const snapshot = await readTeamLog(dir);
      const complete = ends.filter((end) => end <= cut).length;
      // A cut just before a newline leaves a whole record without it: kept.
      const kept = ends.includes(cut + 1) ? complete + 1 : complete;
      expect(snapshot.records.map((r) => r.seq)).toEqual(records.slice(0, kept).map((r) => r.seq));
      expect(snapshot.tornBytes).toBe(kept > complete ? 0 : cut - (ends[complete - 1] ?? 0));
    }
    // And the owner's open repairs it, once, into a file it can append to.
    await writeFile(logPath(), full.subarray(0, ends[3]! + 7));
    const store = await open();
    expect(store.recovered).toMatchObject({ records: 4, tornBytes: 7 });
    await store.log.append({ records: conformanceRecords(TEAM, 5, 1) });
    await store.close();
    expect((await readTeamLog(dir)).records).toHaveLength(5);
  });

  it('repairs a torn transcript tail on first use and keeps appending', async () => {
    const store = await open();
    const entry = {
      schemaVersion: 1 as const,
      at: 1,
      message: { role: 'user' as const, content: [{ type: 'text' as const, text: 'hi' }] },
    };
    await store.transcripts.append({ memberId: ALICE, entries: [entry] });
    await store.close();
    const path = join(dir, 'transcripts', `${ALICE}.jsonl`);
    await appendFile(path, '{"schemaVersion":1,"at":2,"mess');
    const again = await open();
    expect(await again.transcripts.load({ memberId: ALICE })).toEqual([entry]);
    expect(again.transcripts.repairs()).toEqual([{ memberId: ALICE, path, tornBytes: 31 }]);
    await again.transcripts.append({ memberId: ALICE, entries: [{ ...entry, at: 3 }] });
    expect((await again.transcripts.load({ memberId: ALICE })).map((e) => e.at)).toEqual([1, 3]);
    await again.close();
  });
});

describe('corruption', () => {
  async function corruptLine(line: number, text: string): Promise<void> {
    const lines = (await readFile(logPath(), 'utf8')).split('\n');
    lines[line - 1] = text;
    await writeFile(logPath(), lines.join('\n'));
  }

  it('reports an unparsable middle line as CORRUPT_LOG naming the file and line', async () => {
    await seed(4);
    await corruptLine(2, '{"seq":2,"at":1,,}');
    const error = await caught(open());
    expect(error.code).toBe('CORRUPT_LOG');
    expect(error.message).toContain(`${logPath()} line 2`);
    expect(error.details).toEqual({ file: logPath(), line: 2 });
    // The failed open released the lock: fixing the file lets the team open again.
    await corruptLine(2, JSON.stringify(conformanceRecords(TEAM, 2, 1)[0]));
    const store = await open();
    expect(store.log.lastSeq()).toBe(4);
    await store.close();
  });

  it('reports a complete line that fails validation, and an empty line', async () => {
    await seed(3);
    await corruptLine(3, JSON.stringify({ ...conformanceRecords(TEAM, 3, 1)[0], type: 'nope' }));
    const invalid = await caught(open());
    expect(invalid.code).toBe('CORRUPT_LOG');
    expect(invalid.details).toMatchObject({ line: 3 });
    expect(TeamError.hasCode(invalid.cause, 'INVALID_RECORD')).toBe(true);
    await corruptLine(3, '');
    expect((await caught(open())).details).toMatchObject({ line: 3 });
  });

  it('reports an unterminated final line that is JSON but not a record (not a torn write)', async () => {
    await seed(2);
    await appendFile(logPath(), '{"seq":3}');
    const error = await caught(open());
    expect(error.code).toBe('CORRUPT_LOG');
    expect(error.details).toMatchObject({ line: 3 });
  });

  it('reports a seq that does not match its line, and a record of another team', async () => {
    await seed(3);
    await corruptLine(2, JSON.stringify(conformanceRecords(TEAM, 5, 1)[0]));
    const gap = await caught(open());
    expect(gap.code).toBe('CORRUPT_LOG');
    expect(gap.message).toContain('expected seq 2');
    await corruptLine(2, JSON.stringify(conformanceRecords('another-team', 2, 1)[0]));
    const foreign = await caught(open());
    expect(foreign.message).toContain('belongs to team another-team');
  });

  it('refuses a record of a newer schemaVersion clearly, naming the line', async () => {
    await seed(2);
    await corruptLine(
      2,
      JSON.stringify({ ...conformanceRecords(TEAM, 2, 1)[0], schemaVersion: 7 }),
    );
    const error = await caught(open());
    expect(error.code).toBe('UNSUPPORTED_SCHEMA_VERSION');
    expect(error.message).toContain('line 2');
    expect(error.message).toContain('upgrade @teamwire/core');
    expect(error.details).toMatchObject({ line: 2, schemaVersion: 7 });
  });

  it('reports a corrupt transcript line with its member file and line', async () => {
    const transcripts = join(dir, 'transcripts');
    const store = await open();
    await store.close();
    await mkdir(transcripts, { recursive: true });
    const good = JSON.stringify({
      schemaVersion: 1,
      at: 1,
      message: { role: 'user', content: [{ type: 'text', text: 'hi' }] },
    });
    await writeFile(join(transcripts, `${ALICE}.jsonl`), `${good}\nnot json\n${good}\n`);
    const again = await open();
    const error = await caught(again.transcripts.load({ memberId: ALICE }));
    expect(error.code).toBe('CORRUPT_LOG');
    expect(error.details).toEqual({ file: join(transcripts, `${ALICE}.jsonl`), line: 2 });
    await again.close();
  });

  it('refuses member ids that cannot name a file', async () => {
    const store = await open();
    for (const memberId of ['../escape', 'a/b', '', '.hidden', 'a..b']) {
      expect((await caught(store.transcripts.load({ memberId }))).code).toBe('INVALID_ARGUMENT');
    }
    await store.close();
  });
});

describe('inspection', () => {
  it('lists team folders with their log size and owner', async () => {
    const root = join(dir, 'teams');
    const a = await openJsonlTeamStore({ teamId: 'team-a', dir: join(root, 'team-a') });
    await a.log.append({ records: conformanceRecords('team-a', 1, 2) });
    const b = await openJsonlTeamStore({ teamId: 'team-b', dir: join(root, 'team-b') });
    await b.close();
    await mkdir(join(root, 'not-a-team'));
    const teams = await listTeams(root);
    expect(teams.map((t) => t.teamId)).toEqual(['team-a', 'team-b']);
    expect(teams[0]!.logBytes).toBe((await stat(join(root, 'team-a', 'log.jsonl'))).size);
    expect(teams[0]!.owner?.pid).toBe(process.pid);
    expect(teams[1]!.owner).toBeUndefined();
    expect(await listTeams(join(dir, 'missing'))).toEqual([]);
    await a.close();
  });

  it('reads a log without locking or repairing it', async () => {
    const records = await seed(3);
    await appendFile(logPath(), '{"torn');
    const size = (await stat(logPath())).size;
    const snapshot = await readTeamLog(dir);
    expect(snapshot).toMatchObject({ teamId: TEAM, tornBytes: 6, path: logPath() });
    expect(snapshot.records).toEqual(JSON.parse(JSON.stringify(records)));
    expect((await stat(logPath())).size).toBe(size);
    // Works while the owner holds the lock.
    const held = await open();
    expect((await readTeamLog(dir)).records).toHaveLength(3);
    await held.close();
    await truncate(logPath(), 0);
    expect((await readTeamLog(dir)).teamId).toBe(dir.split('/').at(-1));
    expect((await caught(readTeamLog(join(dir, 'missing')))).code).toBe('TEAM_NOT_FOUND');
  });
});

describe('validation on append', () => {
  it('refuses what could not be read back, writing nothing', async () => {
    const store = await open();
    const foreign = conformanceRecords('another-team', 1, 1);
    expect((await caught(store.log.append({ records: foreign }))).code).toBe('INVALID_ARGUMENT');
    const entry = {
      schemaVersion: 1 as const,
      at: 1,
      message: { role: 'user' as const, content: [{ type: 'text' as const, text: 'hi' }] },
    };
    const invalid = { ...entry, message: { role: 'robot' } } as unknown as typeof entry;
    const future = { ...entry, schemaVersion: 2 } as unknown as typeof entry;
    const unserializable = { ...entry, at: 10n } as unknown as typeof entry;
    // free-form tool input passes the schema but cannot be written as JSON
    const bigInput = {
      ...entry,
      message: {
        role: 'assistant',
        content: [],
        toolCalls: [{ id: 'c1', name: 'count', input: { n: 10n } }],
      },
    } as unknown as typeof entry;
    for (const [bad, code] of [
      [invalid, 'INVALID_RECORD'],
      [future, 'UNSUPPORTED_SCHEMA_VERSION'],
      [unserializable, 'INVALID_RECORD'],
      [bigInput, 'INVALID_RECORD'],
    ] as const) {
      const error = await caught(
        store.transcripts.append({ memberId: ALICE, entries: [entry, bad] }),
      );
      expect(error.code).toBe(code);
    }
    expect(await store.transcripts.load({ memberId: ALICE })).toEqual([]);
    expect(store.log.lastSeq()).toBe(0);
    await store.close();
    expect((await stat(logPath())).size).toBe(0);
  });

  it('refuses a team id that cannot name the default folder', async () => {
    for (const teamId of ['../escape', 'a/b', '']) {
      expect((await caught(openJsonlTeamStore({ teamId }))).code).toBe('INVALID_ARGUMENT');
    }
  });
});
