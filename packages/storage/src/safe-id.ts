import { TeamError } from '@teamwire/core';

/**
 * Member ids name files, so they are restricted to safe file-name characters: letters, digits,
 * `_`, `-` and inner dots (ulids and uuids pass), at most 200 characters.
 */
export const SAFE_ID_PATTERN = /^[A-Za-z0-9_-](?:[A-Za-z0-9_.-]{0,198}[A-Za-z0-9_-])?$/;

/** Whether `id` can safely name a file or folder. */
export function isSafeId(id: unknown): id is string {
  return typeof id === 'string' && SAFE_ID_PATTERN.test(id) && !id.includes('..');
}

/** Refuses an id that cannot safely name a file or folder. */
export function checkSafeId(kind: string, id: string): void {
  if (!isSafeId(id)) {
    throw new TeamError(
      'INVALID_ARGUMENT',
      `${kind} ${JSON.stringify(id)} cannot name a file: use letters, digits, '_', '-' and inner '.'`,
      { details: { [kind]: id } },
    );
  }
}
