import { TeamError } from '@teamwire/core';
import type { StorageFileHandle } from './fs-seam.js';
import { ioError } from './fs-seam.js';

const NEWLINE = 0x0a;
const DEFAULT_CHUNK = 1 << 20;

/** One line of a JSONL file, without its newline. `bytes` is only valid until the next line. */
export interface JsonlLine {
  bytes: Buffer;
  /** Byte offset of the line's first byte. */
  offset: number;
  /** False only for a final line with no newline after it. */
  terminated: boolean;
}

/**
 * Streams the lines of `handle` between byte offsets `start` and `end`, a chunk at a time, so a
 * log of any length is read in bounded memory. `end` may be a function, read before every chunk,
 * to follow a file that grows while it is read.
 *
 * A line longer than a chunk is kept as a list of pieces and joined once, when its newline (or
 * the end) is reached, so reading it copies each byte at most twice whatever its length (joining
 * the carried bytes again for every chunk would make a long line quadratic).
 */
export async function* iterateLines(
  handle: StorageFileHandle,
  path: string,
  start: number,
  end: number | (() => number),
  chunkSize = DEFAULT_CHUNK,
): AsyncGenerator<JsonlLine> {
  const limit = typeof end === 'number' ? () => end : end;
  const buffer = Buffer.allocUnsafe(chunkSize);
  let position = start;
  // The start of the current line, carried over from earlier chunks (copied out of `buffer`,
  // which the next read overwrites).
  const carry: Buffer[] = [];
  let carryLength = 0;
  let lineOffset = start;
  for (;;) {
    const want = Math.min(chunkSize, limit() - position);
    if (want <= 0) break;
    let bytesRead: number;
    try {
      ({ bytesRead } = await handle.read(buffer, 0, want, position));
    } catch (error) {
      throw ioError('reading', path, error);
    }
    if (bytesRead === 0) break;
    const chunk = buffer.subarray(0, bytesRead);
    let from = 0;
    for (;;) {
      const newline = chunk.indexOf(NEWLINE, from);
      if (newline === -1) break;
      const piece = chunk.subarray(from, newline);
      let bytes = piece;
      if (carry.length > 0) {
        carry.push(piece);
        bytes = Buffer.concat(carry, carryLength + piece.length);
        carry.length = 0;
        carryLength = 0;
      }
      yield { bytes, offset: lineOffset, terminated: true };
      lineOffset = position + newline + 1;
      from = newline + 1;
    }
    if (from < bytesRead) {
      carry.push(Buffer.from(chunk.subarray(from)));
      carryLength += bytesRead - from;
    }
    position += bytesRead;
  }
  if (carryLength > 0) {
    const bytes = carry.length === 1 ? (carry[0] as Buffer) : Buffer.concat(carry, carryLength);
    yield { bytes, offset: lineOffset, terminated: false };
  }
}

const utf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

/**
 * The text of `line`, decoded strictly: every file is written as UTF-8 (JSON.stringify escapes
 * lone surrogates), so bytes that are not UTF-8 are damage, and replacing them with U+FFFD would
 * hide it. Throws an `Error` naming the file offset of the first bad byte; callers turn it into
 * `CORRUPT_LOG` for the line (or a torn tail, for an unterminated final line). A byte order mark
 * is kept as a character, so JSON.parse refuses it as before.
 */
export function decodeLine(line: JsonlLine): string {
  // The native decoder is the fast path; a U+FFFD in its output is either written in the file
  // (bytes EF BF BD) or stands for bad bytes, and only then does the strict decoder tell which.
  const text = line.bytes.toString('utf8');
  if (!text.includes('\uFFFD')) return text;
  try {
    return utf8.decode(line.bytes);
  } catch {
    const index = invalidUtf8At(line.bytes);
    const byte = (line.bytes[index] ?? 0).toString(16).padStart(2, '0');
    throw new Error(`it is not valid UTF-8 (byte 0x${byte} at file offset ${line.offset + index})`);
  }
}

/**
 * Where strict UTF-8 decoding of `bytes` fails: the first byte that starts no valid character
 * (a stray continuation byte, a byte never used in UTF-8, or the first byte of a sequence that is
 * cut short, overlong, a surrogate or above U+10FFFF). Only called after the decoder refused
 * `bytes`, so speed does not matter.
 */
function invalidUtf8At(bytes: Uint8Array): number {
  let i = 0;
  while (i < bytes.length) {
    const lead = bytes[i] as number;
    if (lead < 0x80) {
      i++;
      continue;
    }
    let need: number;
    let low = 0x80;
    let high = 0xbf;
    if (lead >= 0xc2 && lead <= 0xdf) need = 1;
    else if (lead >= 0xe0 && lead <= 0xef) {
      need = 2;
      if (lead === 0xe0) low = 0xa0; // overlong
      if (lead === 0xed) high = 0x9f; // surrogates
    } else if (lead >= 0xf0 && lead <= 0xf4) {
      need = 3;
      if (lead === 0xf0) low = 0x90; // overlong
      if (lead === 0xf4) high = 0x8f; // above U+10FFFF
    } else return i;
    for (let k = 1; k <= need; k++) {
      const next = bytes[i + k];
      if (next === undefined || next < low || next > high) return i;
      low = 0x80;
      high = 0xbf;
    }
    i += need + 1;
  }
  return bytes.length;
}

/** What a scan found: how much of the file is good and what must be repaired. */
export interface ScanOutcome {
  /** Number of valid lines (including a valid final line that lacks its newline). */
  lines: number;
  /** Length of the file before repair. */
  fileLength: number;
  /** Bytes up to the end of the last valid line (excluding a newline it lacks). */
  validLength: number;
  /** Bytes of an unterminated, unparsable final line: a torn write, cut away by repair. */
  tornBytes: number;
  /** The final line is valid but its newline is missing; repair appends it. */
  missingNewline: boolean;
}

/**
 * Turns a failure to accept line `line` of `path` into the error a user sees: `CORRUPT_LOG` naming
 * the file and line, or `UNSUPPORTED_SCHEMA_VERSION` (kept as such, also naming them).
 */
export function lineError(path: string, line: number, error: unknown): TeamError {
  const details = { file: path, line };
  if (TeamError.hasCode(error, 'UNSUPPORTED_SCHEMA_VERSION')) {
    return new TeamError('UNSUPPORTED_SCHEMA_VERSION', `${path} line ${line}: ${error.message}`, {
      cause: error,
      details: { ...error.details, ...details },
    });
  }
  const reason = error instanceof Error ? error.message : String(error);
  return new TeamError(
    'CORRUPT_LOG',
    `${path} line ${line} is corrupt: ${reason}. Restore the file from a backup, or cut it ` +
      `before line ${line} to keep only the lines before it.`,
    { cause: error, details },
  );
}

/**
 * Reads a JSONL file and hands every line's parsed JSON to `visit` (which validates it and
 * throws to refuse it): the whole file, or from byte `from` on, numbering the first line read
 * `firstLine` (default 1) in messages. An invalid complete line anywhere (not UTF-8, not JSON,
 * refused by `visit`) is an error naming its line number; an unterminated final line that is not
 * UTF-8 JSON is a torn write and is reported for repair (a cut can fall inside a multi-byte
 * character). A final line that parses is never torn (no proper prefix of a JSON object is JSON),
 * so it is kept.
 */
export async function scanJsonl(
  handle: StorageFileHandle,
  path: string,
  visit: (value: unknown, line: number, offset: number, length: number) => void,
  options: { from?: number; firstLine?: number } = {},
): Promise<ScanOutcome> {
  let fileLength: number;
  try {
    fileLength = (await handle.stat()).size;
  } catch (error) {
    throw ioError('reading', path, error);
  }
  const from = options.from ?? 0;
  const firstLine = options.firstLine ?? 1;
  let lines = 0;
  let validLength = from;
  let tornBytes = 0;
  let missingNewline = false;
  for await (const line of iterateLines(handle, path, from, fileLength)) {
    const { bytes, offset, terminated } = line;
    const lineNumber = firstLine + lines;
    let value: unknown;
    try {
      value = JSON.parse(decodeLine(line));
    } catch (error) {
      if (!terminated) {
        tornBytes = bytes.length;
        break;
      }
      throw lineError(path, lineNumber, error);
    }
    try {
      visit(value, lineNumber, offset, bytes.length + (terminated ? 1 : 0));
    } catch (error) {
      throw lineError(path, lineNumber, error);
    }
    lines++;
    validLength = offset + bytes.length + (terminated ? 1 : 0);
    missingNewline = !terminated;
  }
  return { lines, fileLength, validLength, tornBytes, missingNewline };
}
