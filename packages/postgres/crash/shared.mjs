// Helpers shared by the PostgreSQL crash test's driver (run.mjs), workers (worker.mjs) and checks
// (checks.mjs). createRng, UsageError and parseArgs are copies of ../../storage/crash/shared.mjs,
// kept here so the two packages' crash tests do not depend on each other.

import { parseArgs as parseNodeArgs } from 'node:util';

/**
 * A small seeded PRNG (mulberry32): the same seed gives the same kill delays and the same
 * scripted choices, so a failing run can be replayed with its printed seed.
 */
export function createRng(seed) {
  let state = seed >>> 0;
  const next = () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  return {
    next,
    /** An integer in [min, max]. */
    int: (min, max) => min + Math.floor(next() * (max - min + 1)),
    /** One element of a non-empty array. */
    pick: (items) => items[Math.floor(next() * items.length)],
    chance: (p) => next() < p,
  };
}

/** A bad command line: `message` is one line saying what is wrong. */
export class UsageError extends Error {
  name = 'UsageError';
}

/**
 * Parses `--name value` and `--flag` arguments with node's own `parseArgs`, strictly: `options`
 * is its option config, e.g. `{ kills: { type: 'string' }, keep: { type: 'boolean' } }`, and an
 * unknown option, a missing value or a stray argument throws a `UsageError`. Values stay strings.
 * A `--` is skipped: it is what `pnpm run script -- --flag` passes along.
 */
export function parseArgs(argv, options) {
  const args = argv.filter((arg) => arg !== '--');
  try {
    return parseNodeArgs({ args, options, strict: true, allowPositionals: false }).values;
  } catch (error) {
    if (!String(error?.code).startsWith('ERR_PARSE_ARGS_')) throw error;
    throw new UsageError(explain(error, args, options));
  }
}

/**
 * The one-line reason for node's parse error. Node names the offending argument only in prose, so
 * the arguments are read again, leniently, as tokens to find it.
 */
function explain(error, args, options) {
  const { tokens } = parseNodeArgs({
    args,
    options,
    strict: false,
    allowPositionals: true,
    tokens: true,
  });
  for (const token of tokens) {
    if (token.kind === 'positional') return `unexpected argument ${JSON.stringify(token.value)}`;
    if (token.kind !== 'option') continue;
    const type = Object.hasOwn(options, token.name) ? options[token.name].type : undefined;
    if (type === undefined) {
      const known = Object.keys(options).map((name) => `--${name}`);
      return `unknown option ${token.rawName} (known: ${known.join(' ')})`;
    }
    if (type === 'boolean' && token.value !== undefined) {
      return `${token.rawName} takes no value (got ${args[token.index]})`;
    }
    // node takes a value that starts with a dash only when it is attached with `=`
    const value = token.value;
    if (
      type === 'string' &&
      (value === undefined || (!token.inlineValue && value.startsWith('-')))
    ) {
      return `${token.rawName} needs a value`;
    }
  }
  return error.message.split('\n')[0];
}

/** The agent types of the scripted team. */
export const LEAD_TYPE = 'lead';
export const WORKER_TYPE = 'worker';

/** The database the crash test uses unless --url or TEAMWIRE_PG_URL says otherwise. */
export const DEFAULT_PG_URL = 'postgres://postgres@127.0.0.1:5432/test';

/** Every worker's processId starts with this, then its slot: `crash-<slot>-<pid>`. */
export const PROCESS_PREFIX = 'crash-';

/**
 * Runtime `error` event codes a worker may report under chaos without it being a bug: a member
 * taken over by another process, a service that broke or was disposed, a database unreachable.
 */
export const EXPECTED_ERROR_CODES = new Set([
  'FENCED',
  'STORE_CLOSED',
  'DISPOSED',
  'STORE_UNAVAILABLE',
]);

/** The exit code of a worker whose team service broke (STORE_CLOSED): allowed, but listed. */
export const EXIT_SERVICE_BROKE = 3;
/** The exit code of a worker that hit something it cannot explain (a bug): fails the test. */
export const EXIT_FATAL = 2;
