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
  let carry: Buffer | undefined;
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
      const bytes = carry ? Buffer.concat([carry, piece]) : piece;
      carry = undefined;
      yield { bytes, offset: lineOffset, terminated: true };
      lineOffset = position + newline + 1;
      from = newline + 1;
    }
    if (from < bytesRead) {
      const rest = Buffer.from(chunk.subarray(from));
      carry = carry ? Buffer.concat([carry, rest]) : rest;
    }
    position += bytesRead;
  }
  if (carry && carry.length > 0) yield { bytes: carry, offset: lineOffset, terminated: false };
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
 * Reads a whole JSONL file and hands every line's parsed JSON to `visit` (which validates it and
 * throws to refuse it). An invalid complete line anywhere is an error naming its line number; an
 * unterminated final line that is not JSON is a torn write and is reported for repair. A final
 * line that parses is never torn (no proper prefix of a JSON object is JSON), so it is kept.
 */
export async function scanJsonl(
  handle: StorageFileHandle,
  path: string,
  visit: (value: unknown, line: number, offset: number, length: number) => void,
): Promise<ScanOutcome> {
  let fileLength: number;
  try {
    fileLength = (await handle.stat()).size;
  } catch (error) {
    throw ioError('reading', path, error);
  }
  let lines = 0;
  let validLength = 0;
  let tornBytes = 0;
  let missingNewline = false;
  for await (const { bytes, offset, terminated } of iterateLines(handle, path, 0, fileLength)) {
    const lineNumber = lines + 1;
    let value: unknown;
    try {
      value = JSON.parse(bytes.toString('utf8'));
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
    lines = lineNumber;
    validLength = offset + bytes.length + (terminated ? 1 : 0);
    missingNewline = !terminated;
  }
  return { lines, fileLength, validLength, tornBytes, missingNewline };
}
