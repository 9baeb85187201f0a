import { TeamError } from '@teamwire/core';

/** The largest record or transcript entry the store writes, in UTF-8 bytes of its JSON. */
export const MAX_VALUE_BYTES = 8 * 1024 * 1024;

/** The most one `append` (of the log or of a transcript) writes, in UTF-8 bytes of JSON. */
export const MAX_APPEND_BYTES = 64 * 1024 * 1024;

/** The longest id (team, member, actor, process) the store accepts, in characters. */
export const MAX_ID_LENGTH = 256;

/**
 * The largest activity report a process stores (`processes.activity`), in UTF-8 bytes of its
 * JSON. A report names only the members the process runs; one that would be larger keeps a
 * prefix of them in member-id order (see `PostgresPlacement.report`).
 */
export const MAX_ACTIVITY_BYTES = 64 * 1024;

/** The most bytes PostgreSQL takes in one `NOTIFY` payload (it refuses 8000 or more). */
export const NOTIFY_PAYLOAD_BYTES_MAX = 7999;

/** Rows fetched per query when reading the log or loading a transcript. */
export const PAGE_SIZE = 1000;

/** Whether PostgreSQL `text` and `jsonb` hold `text` as given: no NUL, no unpaired surrogate. */
export function storableText(text: string): boolean {
  return !/\u0000|\p{Cs}/u.test(text);
}

/**
 * Refuses an id that PostgreSQL `text` cannot hold as given (NUL, an unpaired surrogate) or that
 * is empty or longer than {@link MAX_ID_LENGTH}.
 */
export function checkId(kind: string, id: unknown): asserts id is string {
  if (typeof id !== 'string' || id.length === 0 || id.length > MAX_ID_LENGTH || !storableText(id)) {
    throw new TeamError(
      'INVALID_ARGUMENT',
      `${kind} must be a string of 1 to ${MAX_ID_LENGTH} characters without NUL or unpaired surrogates, got ${JSON.stringify(id)?.slice(0, 80)}`,
      { details: { [kind]: typeof id === 'string' ? id.slice(0, 80) : id } },
    );
  }
}

/** Serializes a validated value, refusing one JSON cannot hold or one over {@link MAX_VALUE_BYTES}. */
export function toJsonText(value: unknown, what: string): string {
  let text: string;
  try {
    text = JSON.stringify(value);
  } catch (error) {
    throw new TeamError('INVALID_RECORD', `${what} cannot be stored as JSON: ${String(error)}`, {
      cause: error,
    });
  }
  const bytes = Buffer.byteLength(text, 'utf8');
  if (bytes > MAX_VALUE_BYTES) {
    throw new TeamError(
      'INVALID_ARGUMENT',
      `${what} is ${bytes} bytes of JSON; the store keeps at most ${MAX_VALUE_BYTES} per value`,
      { details: { bytes, limit: MAX_VALUE_BYTES } },
    );
  }
  return text;
}

/** Refuses an append whose values add up to more than {@link MAX_APPEND_BYTES}. */
export function checkAppendSize(texts: readonly string[], what: string): void {
  let total = 0;
  for (const text of texts) total += Buffer.byteLength(text, 'utf8');
  if (total > MAX_APPEND_BYTES) {
    throw new TeamError(
      'INVALID_ARGUMENT',
      `${what} is ${total} bytes of JSON; one append writes at most ${MAX_APPEND_BYTES}: split it`,
      { details: { bytes: total, limit: MAX_APPEND_BYTES } },
    );
  }
}
