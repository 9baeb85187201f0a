import { TeamError } from '@teamwire/core';
import { describeError, sqlState } from './connection.js';

/** A stored row that does not decode to a valid value: `CORRUPT_LOG`, or the newer-version refusal. */
export function corruptRow(
  where: string,
  details: Record<string, unknown>,
  error: unknown,
): TeamError {
  if (TeamError.hasCode(error, 'UNSUPPORTED_SCHEMA_VERSION')) {
    return new TeamError('UNSUPPORTED_SCHEMA_VERSION', `${where}: ${error.message}`, {
      cause: error,
      details: { ...error.details, ...details },
    });
  }
  const reason = error instanceof Error ? error.message : String(error);
  return new TeamError(
    'CORRUPT_LOG',
    `${where} is corrupt: ${reason}. Restore the table from a backup, or delete this row and every later one of the same sequence.`,
    { cause: error, details },
  );
}

/** A statement PostgreSQL refused for a reason a retry would not change (privileges, a full disk). */
export function storageError(action: string, error: unknown): TeamError {
  const state = sqlState(error);
  return new TeamError('STORAGE_IO', `${action} failed: ${describeError(error)}`, {
    cause: error,
    details: state ? { sqlState: state } : undefined,
  });
}

/** The refusal of a store part that was closed. */
export function closedError(what: string): TeamError {
  return new TeamError('STORE_CLOSED', `${what} is closed`);
}

/** A write for a member this process no longer runs: `FENCED`, naming what was not written. */
export function fencedError(memberId: string, what: string): TeamError {
  return new TeamError(
    'FENCED',
    `this process no longer runs member ${memberId} (another process took it over); nothing written to ${what}`,
    { details: { memberId } },
  );
}
