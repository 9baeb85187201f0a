import { TeamError } from '../errors.js';
import { isWithinTextLimit, textLength } from '../limits.js';

/**
 * Refuses with `INVALID_ARGUMENT` a `field` that is not a string of `min` to `max` code points
 * (see `textLength`). Details carry `{field, min, max, length}`; the value itself is never echoed,
 * since it may be megabytes.
 */
export function checkTextLimit(field: string, value: unknown, max: number, min = 0): void {
  if (typeof value !== 'string') {
    throw new TeamError('INVALID_ARGUMENT', `${field} must be a string (got ${typeOf(value)})`, {
      details: { field, min, max },
    });
  }
  if (isWithinTextLimit(value, max) && (min === 0 || textLength(value) >= min)) return;
  const length = textLength(value);
  throw new TeamError(
    'INVALID_ARGUMENT',
    `${field} must be ${min === 0 ? `at most ${max}` : `${min} to ${max}`} characters (got ${length})`,
    { details: { field, min, max, length } },
  );
}

/**
 * Refuses with `INVALID_ARGUMENT` a `field` that is not an array of at most `max` entries. Details
 * carry `{field, max, count}`.
 */
export function checkListLimit(field: string, value: unknown, max: number): void {
  if (!Array.isArray(value)) {
    throw new TeamError('INVALID_ARGUMENT', `${field} must be an array (got ${typeOf(value)})`, {
      details: { field, max },
    });
  }
  if (value.length > max) {
    throw new TeamError(
      'INVALID_ARGUMENT',
      `${field} holds ${value.length} entries, over the limit of ${max}`,
      { details: { field, max, count: value.length } },
    );
  }
}

function typeOf(value: unknown): string {
  return value === null ? 'null' : Array.isArray(value) ? 'array' : typeof value;
}
