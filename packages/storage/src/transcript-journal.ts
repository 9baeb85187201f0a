import { dirname, join } from 'node:path';
import type { TranscriptEntry } from '@teamwire/core';
import { parseTranscriptEntry, TeamError } from '@teamwire/core';
import type { Durability } from './append-writer.js';
import type { StorageFileHandle, StorageFs } from './fs-seam.js';
import { errnoCode, exists, ioError, syncDirectory, writeFully } from './fs-seam.js';
import type { ScanOutcome } from './jsonl-lines.js';
import { scanJsonl } from './jsonl-lines.js';
import { isSafeId } from './safe-id.js';

/**
 * The team-wide transcript journal, in the team folder: every transcript append of every member
 * is written here first, and one fdatasync of this file makes the appends of a whole group
 * durable, whichever members they are for. The members' own files are written after, without a
 * sync of their own, and are rebuilt from the journal on open.
 */
export const TRANSCRIPT_JOURNAL_FILE = 'transcript-journal.jsonl';
/** The `format` of the journal's header line. */
export const TRANSCRIPT_JOURNAL_FORMAT = 'teamwire.transcript-journal';
/** The journal version this store writes and reads. */
export const TRANSCRIPT_JOURNAL_VERSION = 1;
/**
 * Once the journal holds this many bytes, the member files written since the last checkpoint are
 * flushed and the journal is emptied (its header kept), so it stays small and quick to replay.
 */
export const JOURNAL_CHECKPOINT_BYTES = 4 << 20;

/** The header line of the journal, newline included. */
export const JOURNAL_HEADER = `${JSON.stringify({
  format: TRANSCRIPT_JOURNAL_FORMAT,
  version: TRANSCRIPT_JOURNAL_VERSION,
})}\n`;
/** The header's byte length (ASCII). */
export const JOURNAL_HEADER_BYTES = JOURNAL_HEADER.length;

/**
 * The journal line of one transcript append: `lines` (each entry's JSON) for `memberId`, to be
 * written at byte `offset` of its file. `length` is the UTF-8 length of the member file's text
 * (the lines each with its newline); the line's own length is `prefix.length + length + 2`.
 */
export function journalLine(
  memberId: string,
  offset: number,
  lines: readonly string[],
  length: number,
): { text: string; length: number } {
  // Member ids are ASCII (checked before), so the prefix's length is its byte length.
  const prefix = `{"member":"${memberId}","offset":${offset},"entries":[`;
  return {
    text: `${prefix}${lines.join(',')}]}\n`,
    length: prefix.length + length + 2,
  };
}

/** What replaying the journal on open did. */
export interface JournalReplay {
  /** Appends found in the journal (since its last checkpoint). */
  batches: number;
  /** Member files whose end was rewritten from the journal (missing or differing bytes). */
  rewritten: string[];
  /** Bytes of a torn final journal line cut away (an append that never resolved). */
  tornBytes: number;
}

/** One member's appends in the journal, validated. */
export interface MemberRun {
  memberId: string;
  /** Where the member's first journaled append starts in its file. */
  base: number;
  /** The bytes every journaled append of the member adds, in order. */
  texts: string[];
  /** The entries of those appends, validated, in order. */
  entries: TranscriptEntry[];
  /** The offset the next append must carry. */
  next: number;
}

/** The parsed header, or an error saying why it is not one this store reads. */
function checkHeader(value: unknown): void {
  const header = value as { format?: unknown; version?: unknown } | null;
  if (
    typeof header !== 'object' ||
    header === null ||
    header.format !== TRANSCRIPT_JOURNAL_FORMAT ||
    typeof header.version !== 'number' ||
    !Number.isSafeInteger(header.version) ||
    header.version < 1
  ) {
    throw new Error(
      `the first line is not a transcript journal header ({"format":"${TRANSCRIPT_JOURNAL_FORMAT}","version":1})`,
    );
  }
  if (header.version > TRANSCRIPT_JOURNAL_VERSION) {
    throw new TeamError(
      'UNSUPPORTED_SCHEMA_VERSION',
      `transcript journal version ${header.version} is newer than this store reads (${TRANSCRIPT_JOURNAL_VERSION})`,
      { details: { version: header.version } },
    );
  }
}

/** Validates one append line and adds it to its member's run. */
function takeBatch(value: unknown, runs: Map<string, MemberRun>): void {
  const batch = value as { member?: unknown; offset?: unknown; entries?: unknown } | null;
  if (typeof batch !== 'object' || batch === null || Array.isArray(batch)) {
    throw new Error('it is not an object');
  }
  const { member, offset, entries } = batch;
  if (!isSafeId(member)) {
    throw new Error('its member is not a member id');
  }
  if (typeof offset !== 'number' || !Number.isSafeInteger(offset) || offset < 0) {
    throw new Error('its offset is not an integer >= 0');
  }
  if (!Array.isArray(entries) || entries.length === 0) {
    throw new Error('its entries are not a non-empty list');
  }
  let text = '';
  const parsed: TranscriptEntry[] = [];
  for (const entry of entries) {
    parsed.push(parseTranscriptEntry(entry));
    // The bytes the append wrote: the JSON of each entry as stored (JSON text read and written
    // again is the same text), one per line.
    text += `${JSON.stringify(entry)}\n`;
  }
  const run = runs.get(member);
  if (run === undefined) {
    runs.set(member, {
      memberId: member,
      base: offset,
      texts: [text],
      entries: parsed,
      next: offset + Buffer.byteLength(text),
    });
    return;
  }
  if (offset !== run.next) {
    throw new Error(
      `its offset ${offset} does not continue the member's previous append (which ends at ${run.next})`,
    );
  }
  run.texts.push(text);
  for (const entry of parsed) run.entries.push(entry);
  run.next += Buffer.byteLength(text);
}

/**
 * Opens the transcript journal of a team folder, creating it (with its header) when missing, and
 * replays it: each member's file is brought to exactly what the journal says follows its last
 * checkpointed length (bytes that differ or are missing are rewritten; bytes past it, from an
 * append that never resolved, are cut), the member files are flushed, and the journal is emptied
 * to its header. Returns the open journal (positioned after the header) and what was done.
 *
 * A torn final line is an append that never resolved and is cut; any other invalid line is
 * `CORRUPT_LOG` naming the journal and line, and a header of a newer version is
 * `UNSUPPORTED_SCHEMA_VERSION`; either is found before any file is changed.
 */
export async function openTranscriptJournal(options: {
  fs: StorageFs;
  /** The team folder (the journal's folder). */
  dir: string;
  /** The members' transcript folder. */
  transcriptsDir: string;
  durability: Durability;
}): Promise<{ handle: StorageFileHandle; path: string; length: number; replay: JournalReplay }> {
  const { fs, dir, transcriptsDir, durability } = options;
  const sync = durability === 'fsync';
  const path = join(dir, TRANSCRIPT_JOURNAL_FILE);
  let handle: StorageFileHandle | undefined;
  let created = false;
  try {
    handle = await fs.open(path, 'r+');
  } catch (error) {
    if (errnoCode(error) !== 'ENOENT') throw ioError('opening', path, error);
  }
  if (handle === undefined) {
    try {
      await (await fs.open(path, 'a')).close();
      handle = await fs.open(path, 'r+');
    } catch (error) {
      throw ioError('creating', path, error);
    }
    created = true;
  }
  try {
    const { runs, batches, headerSeen, outcome } = await scanJournal(handle, path);
    const rewritten: string[] = [];
    const ordered = [...runs.values()].sort((a, b) => (a.memberId < b.memberId ? -1 : 1));
    let createdFiles = false;
    for (const run of ordered) {
      const result = await replayMember(fs, transcriptsDir, run, durability);
      if (result.rewritten) rewritten.push(run.memberId);
      if (result.created) createdFiles = true;
    }
    if (createdFiles && sync) await syncDirectory(fs, transcriptsDir);
    // The journal is emptied to its header (written again when it was torn or missing).
    const fresh = !headerSeen || outcome.fileLength !== JOURNAL_HEADER_BYTES;
    if (fresh) {
      try {
        await handle.truncate(0);
        await writeFully(handle, Buffer.from(JOURNAL_HEADER), 0);
        if (sync) await handle.datasync();
      } catch (error) {
        throw ioError('emptying', path, error);
      }
    }
    if (created && sync) await syncDirectory(fs, dir);
    return {
      handle,
      path,
      length: JOURNAL_HEADER_BYTES,
      replay: { batches, rewritten, tornBytes: headerSeen ? outcome.tornBytes : 0 },
    };
  } catch (error) {
    await handle.close().catch(() => undefined);
    throw error;
  }
}

/** Every line of the journal validated, its appends gathered per member (a torn final line left out). */
export async function scanJournal(
  handle: StorageFileHandle,
  path: string,
): Promise<{
  runs: Map<string, MemberRun>;
  batches: number;
  headerSeen: boolean;
  outcome: ScanOutcome;
}> {
  const runs = new Map<string, MemberRun>();
  let batches = 0;
  let headerSeen = false;
  const outcome = await scanJsonl(handle, path, (value, line) => {
    if (line === 1) {
      checkHeader(value);
      headerSeen = true;
      return;
    }
    takeBatch(value, runs);
    batches++;
  });
  return { runs, batches, headerSeen, outcome };
}

/**
 * The appends of `memberId` in the journal of team folder `dir`, read without the lock and
 * without repairing anything (undefined when the journal holds none, or does not exist). A
 * running owner may empty the journal at a checkpoint while it is read, which can make the read
 * see the end of a line or a gap in a member's appends; such a read is made once more, and
 * `CORRUPT_LOG` is reported only when the second read fails too.
 */
export async function readJournalRun(
  fs: StorageFs,
  dir: string,
  memberId: string,
): Promise<MemberRun | undefined> {
  const path = join(dir, TRANSCRIPT_JOURNAL_FILE);
  for (let attempt = 1; ; attempt++) {
    let handle: StorageFileHandle;
    try {
      handle = await fs.open(path, 'r');
    } catch (error) {
      if (errnoCode(error) === 'ENOENT') return undefined;
      throw ioError('opening', path, error);
    }
    try {
      return (await scanJournal(handle, path)).runs.get(memberId);
    } catch (error) {
      if (attempt > 1 || !TeamError.hasCode(error, 'CORRUPT_LOG')) throw error;
    } finally {
      await handle.close().catch(() => undefined);
    }
  }
}

/**
 * Brings one member file to `run.base` bytes it already had, followed by the run's appends:
 * nothing is written when it holds exactly that; else it is cut at `base`, the appends are
 * written again and the file is flushed.
 */
async function replayMember(
  fs: StorageFs,
  transcriptsDir: string,
  run: MemberRun,
  durability: Durability,
): Promise<{ rewritten: boolean; created: boolean }> {
  const path = join(transcriptsDir, `${run.memberId}.jsonl`);
  let handle: StorageFileHandle | undefined;
  let created = false;
  try {
    handle = await fs.open(path, 'r+');
  } catch (error) {
    if (errnoCode(error) !== 'ENOENT') throw ioError('opening', path, error);
  }
  if (handle === undefined) {
    if (run.base !== 0) throw lostPrefix(path, run, 0);
    try {
      if (!(await exists(fs, transcriptsDir))) {
        await fs.mkdir(transcriptsDir, { recursive: true });
        if (durability === 'fsync') await syncDirectory(fs, dirname(transcriptsDir));
      }
      await (await fs.open(path, 'a')).close();
      handle = await fs.open(path, 'r+');
    } catch (error) {
      throw ioError('creating', path, error);
    }
    created = true;
  }
  try {
    let size: number;
    try {
      size = (await handle.stat()).size;
    } catch (error) {
      throw ioError('reading', path, error);
    }
    if (size < run.base) throw lostPrefix(path, run, size);
    const expected = Buffer.from(run.texts.join(''), 'utf8');
    if (size === run.base + expected.length) {
      const actual = Buffer.allocUnsafe(expected.length);
      let done = 0;
      try {
        while (done < actual.length) {
          const { bytesRead } = await handle.read(
            actual,
            done,
            actual.length - done,
            run.base + done,
          );
          if (bytesRead === 0) break;
          done += bytesRead;
        }
      } catch (error) {
        throw ioError('reading', path, error);
      }
      if (done === actual.length && actual.equals(expected)) return { rewritten: false, created };
    }
    try {
      await handle.truncate(run.base);
      await writeFully(handle, expected, run.base);
      if (durability === 'fsync') await handle.datasync();
    } catch (error) {
      throw ioError('rewriting the end of', path, error);
    }
    return { rewritten: true, created };
  } finally {
    await handle.close().catch(() => undefined);
  }
}

/** `CORRUPT_LOG`: the member file is shorter than where the journal continues it. */
export function lostPrefix(path: string, run: MemberRun, size: number): TeamError {
  return new TeamError(
    'CORRUPT_LOG',
    `${path} holds ${size} bytes, but the transcript journal continues it at byte ${run.base}: ` +
      'the file lost lines that had been flushed. Restore it from a backup.',
    { details: { file: path, size, journalOffset: run.base } },
  );
}
