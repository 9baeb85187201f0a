import { mkdir, open as openFile, readFile, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { conformanceRecords } from '@teamwire/core/testing';
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { StorageFileHandle } from './fs-seam.js';
import { readTeamLog } from './inspect.js';
import type { JsonlLine } from './jsonl-lines.js';
import { decodeLine, iterateLines } from './jsonl-lines.js';
import { openJsonlTeamStore } from './team-store.js';
import { caught, eachTestInTempDir, readAll } from './test-support.js';

const TEAM = '01JTEAMJSONLLINES000000000';
const ALICE = '01JALICE0000000000000000AA';

const userEntry = (at: number, text: string) => ({
  schemaVersion: 1 as const,
  at,
  message: { role: 'user' as const, content: [{ type: 'text' as const, text }] },
});

/** A read-only handle over bytes in memory. */
function memoryHandle(bytes: Uint8Array): StorageFileHandle {
  const refuse = () => Promise.reject(new Error('read-only test handle'));
  return {
    async read(buffer, offset, length, position) {
      const part = bytes.subarray(position, position + length);
      buffer.set(part, offset);
      return { bytesRead: part.length };
    },
    write: refuse,
    datasync: refuse,
    sync: refuse,
    truncate: refuse,
    stat: async () => ({ size: bytes.length }),
    close: async () => {},
  };
}

async function collect(bytes: Uint8Array, chunkSize: number) {
  const out: { text: string; offset: number; terminated: boolean }[] = [];
  for await (const line of iterateLines(memoryHandle(bytes), 'mem', 0, bytes.length, chunkSize)) {
    out.push({
      text: line.bytes.toString('latin1'),
      offset: line.offset,
      terminated: line.terminated,
    });
  }
  return out;
}

describe('iterateLines', () => {
  afterEach(() => {
    vi.restoreAllMocks();
  });

  it('yields every line with its offset at any chunk size', async () => {
    const text = 'a\n\nbcdefghij\nklmnopqrstuvwxyz0123456789\nend';
    const expected: { text: string; offset: number; terminated: boolean }[] = [];
    let offset = 0;
    const parts = text.split('\n');
    parts.forEach((part, i) => {
      expected.push({ text: part, offset, terminated: i < parts.length - 1 });
      offset += part.length + 1;
    });
    for (let chunkSize = 1; chunkSize <= text.length + 1; chunkSize++) {
      expect(await collect(Buffer.from(text, 'latin1'), chunkSize)).toEqual(expected);
    }
  });

  it('copies a line spanning many chunks a bounded number of times, not once per chunk', async () => {
    // Joining the carried part of a line again at every chunk copies a line of n chunks about
    // n²/2 chunks' worth of bytes; carrying pieces and joining them once copies it twice at most.
    const chunkSize = 64;
    const long = 'x'.repeat(chunkSize * 256 - 10);
    const file = Buffer.from(`{"a":1}\n${long}\n${long}`, 'latin1');
    const copies = countCopies();
    const lines = await collect(file, chunkSize);
    vi.restoreAllMocks();
    expect(lines.map((l) => l.text.length)).toEqual([7, long.length, long.length]);
    expect(lines.map((l) => l.terminated)).toEqual([true, true, false]);
    // The read itself (the test handle copies each byte into the read buffer), then at most a
    // copy out of the reused read buffer and the one join: three times the file, plus a chunk.
    expect(copies.bytes).toBeGreaterThanOrEqual(2 * file.length); // the counter sees copies
    expect(copies.bytes).toBeLessThanOrEqual(3 * file.length + chunkSize);
  });
});

/**
 * Counts the bytes copied through the ways JavaScript code can copy bytes: `Buffer.concat`,
 * `Buffer.from`, `buf.copy`, `TypedArray#set` and `TypedArray#slice`. Node's own internals use
 * captured primordials, so a copy made inside `Buffer.concat` is not counted twice.
 */
function countCopies(): { bytes: number } {
  const counter = { bytes: 0 };
  const { concat, from } = Buffer;
  const { copy } = Buffer.prototype;
  const { set, slice } = Uint8Array.prototype;
  vi.spyOn(Buffer, 'concat').mockImplementation((list, totalLength) => {
    const result = concat(list, totalLength);
    counter.bytes += result.length;
    return result;
  });
  vi.spyOn(Buffer, 'from').mockImplementation(((...args: unknown[]) => {
    const result = (from as (...a: unknown[]) => Buffer)(...args);
    counter.bytes += result.length;
    return result;
  }) as typeof Buffer.from);
  vi.spyOn(Buffer.prototype, 'copy').mockImplementation(function (this: Buffer, ...args) {
    const copied = copy.apply(this, args);
    counter.bytes += copied;
    return copied;
  });
  vi.spyOn(Uint8Array.prototype, 'set').mockImplementation(function (
    this: Uint8Array,
    array: ArrayLike<number>,
    offset?: number,
  ) {
    counter.bytes += array.length;
    set.call(this, array, offset);
  });
  vi.spyOn(Uint8Array.prototype, 'slice').mockImplementation(function (
    this: Uint8Array,
    start?: number,
    end?: number,
  ) {
    const result = slice.call(this, start, end);
    counter.bytes += result.length;
    return result;
  });
  return counter;
}

describe('decodeLine', () => {
  const line = (bytes: number[], offset = 100): JsonlLine => ({
    bytes: Buffer.from(bytes),
    offset,
    terminated: true,
  });

  it('decodes UTF-8 and keeps a byte order mark as a character', () => {
    expect(decodeLine(line([0x22, 0xc3, 0xbc, 0xf0, 0x9f, 0x98, 0x80, 0x22]))).toBe('"ü😀"');
    expect(decodeLine(line([0xef, 0xbb, 0xbf, 0x7b, 0x7d]))).toBe('\uFEFF{}');
  });

  it('refuses bytes that are not UTF-8, naming the first bad byte by file offset', () => {
    const refused = (bytes: number[]) => () => decodeLine(line(bytes));
    expect(refused([0x22, 0xff, 0x22])).toThrow(
      'it is not valid UTF-8 (byte 0xff at file offset 101)',
    );
    // a lone continuation byte; a lead byte followed by ASCII; an overlong '/'
    expect(refused([0x41, 0x80])).toThrow('(byte 0x80 at file offset 101)');
    expect(refused([0x22, 0xc3, 0x22])).toThrow('(byte 0xc3 at file offset 101)');
    expect(refused([0xc0, 0xaf])).toThrow('(byte 0xc0 at file offset 100)');
    // an encoded surrogate, a character above U+10FFFF, a line ending inside a character
    expect(refused([0x41, 0x42, 0xed, 0xa0, 0x80])).toThrow('(byte 0xed at file offset 102)');
    expect(refused([0xf4, 0x90, 0x80, 0x80])).toThrow('(byte 0xf4 at file offset 100)');
    expect(refused([0x41, 0xf0, 0x9f, 0x98])).toThrow('(byte 0xf0 at file offset 101)');
  });
});

describe('invalid UTF-8 in the files', () => {
  let dir: string;
  eachTestInTempDir((path) => {
    dir = path;
  });
  const logPath = () => join(dir, 'log.jsonl');
  const open = () => openJsonlTeamStore({ teamId: TEAM, dir, durability: 'buffered' });

  /** Seeds three records; line 2 is a task whose description holds `ü` (bytes C3 BC). */
  async function seed(): Promise<Buffer> {
    const store = await open();
    await store.log.append({ records: conformanceRecords(TEAM, 1, 3) });
    await store.close();
    return readFile(logPath());
  }

  /** The file offset of the `ü` in line 2, whose first byte the tests overwrite with 0xFF. */
  function umlaut(file: Buffer): number {
    const at = file.indexOf(Buffer.from('ü'));
    expect(at).toBeGreaterThan(file.indexOf(0x0a));
    expect(at).toBeLessThan(file.indexOf(0x0a, file.indexOf(0x0a) + 1));
    return at;
  }

  it('reports a complete line that is not UTF-8 as CORRUPT_LOG naming the file and line', async () => {
    const file = await seed();
    const at = umlaut(file);
    file[at] = 0xff;
    await writeFile(logPath(), file);
    const error = await caught(open());
    expect(error.code).toBe('CORRUPT_LOG');
    expect(error.details).toEqual({ file: logPath(), line: 2 });
    expect(error.message).toContain(
      `line 2 is corrupt: it is not valid UTF-8 (byte 0xff at file offset ${at})`,
    );
    const inspected = await caught(readTeamLog(dir));
    expect(inspected.code).toBe('CORRUPT_LOG');
    expect(inspected.details).toEqual({ file: logPath(), line: 2 });
  });

  it('reports a line damaged after open when the owner reads the log', async () => {
    const at = umlaut(await seed());
    const store = await open();
    expect(await readAll(store.log)).toEqual([1, 2, 3]);
    const raw = await openFile(logPath(), 'r+');
    await raw.write(Buffer.from([0xff]), 0, 1, at);
    await raw.close();
    const error = await caught(readAll(store.log));
    expect(error.code).toBe('CORRUPT_LOG');
    expect(error.details).toEqual({ file: logPath(), line: 2 });
    expect(error.message).toContain('not valid UTF-8');
    await store.close();
  });

  it('repairs a torn final line cut inside a multi-byte character', async () => {
    const file = await seed();
    const line2 = file.subarray(file.indexOf(0x0a) + 1, file.indexOf(0x0a, file.indexOf(0x0a) + 1));
    const emoji = line2.indexOf(Buffer.from('😀'));
    for (const inside of [1, 2, 3]) {
      const torn = line2.subarray(0, emoji + inside);
      await writeFile(logPath(), Buffer.concat([file, torn]));
      expect((await readTeamLog(dir)).tornBytes).toBe(torn.length);
      const store = await open();
      expect(store.recovered).toMatchObject({ records: 3, tornBytes: torn.length });
      await store.close();
      expect((await stat(logPath())).size).toBe(file.length);
    }
  });

  it('treats an unterminated final line that is not UTF-8 as torn, like one that is not JSON', async () => {
    const file = await seed();
    const record = JSON.stringify(conformanceRecords(TEAM, 4, 1)[0]);
    // A whole message.delivered record, without its newline, with a bad byte in its messageId.
    // Read with U+FFFD in place of the byte it would be a valid record; it is damage instead.
    const bad = Buffer.from(record);
    bad[bad.indexOf('msg-3') + 1] = 0xff;
    await writeFile(logPath(), Buffer.concat([file, bad]));
    const store = await open();
    expect(store.recovered).toMatchObject({ records: 3, tornBytes: bad.length });
    await store.close();
    expect(await readFile(logPath())).toEqual(file);
  });

  it('reports a transcript line that is not UTF-8 with its member file and line', async () => {
    const store = await open();
    await store.close();
    const transcripts = join(dir, 'transcripts');
    const path = join(transcripts, `${ALICE}.jsonl`);
    await mkdir(transcripts, { recursive: true });
    const good = JSON.stringify(userEntry(1, 'grüße'));
    const bytes = Buffer.from(`${good}\n${good}\n`);
    const second = bytes.indexOf(Buffer.from('ü'), good.length);
    bytes[second] = 0xff;
    await writeFile(path, bytes);
    const again = await open();
    const error = await caught(again.transcripts.load({ memberId: ALICE }));
    expect(error.code).toBe('CORRUPT_LOG');
    expect(error.details).toEqual({ file: path, line: 2 });
    expect(error.message).toContain('not valid UTF-8');
    await again.close();
  });

  it('reports a transcript line damaged after the file was opened, on load', async () => {
    const store = await open();
    await store.transcripts.append({
      memberId: ALICE,
      entries: [userEntry(1, 'one'), userEntry(2, 'grüße')],
    });
    const path = join(dir, 'transcripts', `${ALICE}.jsonl`);
    const at = (await readFile(path)).indexOf(Buffer.from('ü'));
    const raw = await openFile(path, 'r+');
    await raw.write(Buffer.from([0xff]), 0, 1, at);
    await raw.close();
    const error = await caught(store.transcripts.load({ memberId: ALICE }));
    expect(error.code).toBe('CORRUPT_LOG');
    expect(error.details).toEqual({ file: path, line: 2 });
    await store.close();
  });
});
