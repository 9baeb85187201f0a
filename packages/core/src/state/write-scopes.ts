import { TeamError } from '../errors.js';
import { TASK_WRITE_SCOPES_MAX, WRITE_SCOPE_MAX } from '../limits.js';
import { checkListLimit, checkTextLimit } from './input-limits.js';

const DRIVE_LETTER = /^[A-Za-z]:/;

/**
 * Normalizes one write scope (a relative path prefix a task expects to write under) so that two
 * spellings of the same folder compare equal: `\` becomes `/`, one leading `./` and one trailing
 * `/` are stripped. Scopes that could escape or ignore the workspace root are refused with
 * `INVALID_WRITE_SCOPE`: empty, absolute (`/x`, `\\server`), drive-lettered (`C:x`), or holding a
 * `.`, `..` or empty segment.
 */
export function normalizeWriteScope(scope: string): string {
  if (typeof scope !== 'string') {
    throw new TeamError('INVALID_WRITE_SCOPE', 'a write scope must be a string', {
      details: { scope },
    });
  }
  const out = canonicalSpelling(scope);
  const why = whyInvalid(out);
  if (why !== undefined) {
    throw new TeamError(
      'INVALID_WRITE_SCOPE',
      `invalid write scope ${JSON.stringify(scope)}: ${why}`,
      {
        details: { scope },
      },
    );
  }
  return out;
}

/** `\` to `/`, one leading `./` and one trailing `/` stripped. */
function canonicalSpelling(scope: string): string {
  let out = scope.replaceAll('\\', '/');
  if (out.startsWith('./')) out = out.slice(2);
  if (out.endsWith('/')) out = out.slice(0, -1);
  return out;
}

/** Why a canonically spelled scope could escape or ignore the workspace root, if it could. */
function whyInvalid(scope: string): string | undefined {
  if (scope.length === 0) return 'it is empty';
  if (scope.startsWith('/')) return 'it is absolute';
  if (DRIVE_LETTER.test(scope)) return 'it has a drive letter';
  for (const segment of scope.split('/')) {
    if (segment === '') return 'it has an empty segment';
    if (segment === '.' || segment === '..') return `it has a "${segment}" segment`;
  }
  return undefined;
}

/**
 * True when `scopes` is what {@link normalizeWriteScopes} returns for it: valid, normalized
 * scopes without repeats. The invariant replay holds every stored task to; commands establish it
 * by normalizing. An empty list (most tasks) costs nothing.
 */
export function isNormalizedWriteScopeList(scopes: readonly string[]): boolean {
  for (const scope of scopes) {
    if (
      typeof scope !== 'string' ||
      canonicalSpelling(scope) !== scope ||
      whyInvalid(scope) !== undefined
    ) {
      return false;
    }
  }
  return scopes.length < 2 || new Set(scopes).size === scopes.length;
}

/**
 * Normalizes every scope (see {@link normalizeWriteScope}) and drops repeats, keeping the first
 * occurrence's position, so a task's scope list is canonical and comparable.
 */
export function normalizeWriteScopes(scopes: readonly string[]): string[] {
  if (!Array.isArray(scopes)) {
    throw new TeamError('INVALID_WRITE_SCOPE', 'write scopes must be an array of strings');
  }
  const seen = new Set<string>();
  const out: string[] = [];
  for (const scope of scopes) {
    const normalized = normalizeWriteScope(scope);
    if (!seen.has(normalized)) {
      seen.add(normalized);
      out.push(normalized);
    }
  }
  return out;
}

/**
 * Checks a task's write scopes, as given, against their input limits (`INVALID_ARGUMENT`): at most
 * {@link TASK_WRITE_SCOPES_MAX} entries of at most {@link WRITE_SCOPE_MAX} characters each. Task
 * commands run it before {@link normalizeWriteScopes}; replay does not, and the normalizers stay
 * free of it, so a scope list stored before the limits existed still folds.
 */
export function checkWriteScopeLimits(scopes: unknown): void {
  // a non-array and non-string entries are left to normalizeWriteScopes (INVALID_WRITE_SCOPE)
  if (!Array.isArray(scopes)) return;
  checkListLimit('writeScopes', scopes, TASK_WRITE_SCOPES_MAX);
  scopes.forEach((scope, i) => {
    if (typeof scope === 'string') checkTextLimit(`writeScopes[${i}]`, scope, WRITE_SCOPE_MAX);
  });
}

/**
 * True when two normalized scopes overlap: equal, or one is a prefix of the other on whole path
 * segments (`src` overlaps `src/a`, but not `srcx`).
 */
export function writeScopesOverlap(a: string, b: string): boolean {
  if (a === b) return true;
  return a.length < b.length ? b.startsWith(`${a}/`) : a.startsWith(`${b}/`);
}

/** True when any scope of `a` overlaps any scope of `b`. */
export function anyWriteScopeOverlaps(a: readonly string[], b: readonly string[]): boolean {
  for (const x of a) {
    for (const y of b) {
      if (writeScopesOverlap(x, y)) return true;
    }
  }
  return false;
}
