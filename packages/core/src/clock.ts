import { monotonicFactory } from 'ulid';

/**
 * Source of time. Injected everywhere time matters so tests can drive it by hand
 * (see `createManualClock` in `@teamwire/core/testing`) and never sleep.
 */
export interface Clock {
  /** Milliseconds since the Unix epoch. */
  now(): number;
  /**
   * Calls `callback` once after `ms` milliseconds. Returns a function that cancels the timer.
   * Timers must not keep the process alive on their own.
   */
  setTimer(ms: number, callback: () => void): () => void;
}

/** The wall clock of this process. */
export const systemClock: Clock = {
  now: () => Date.now(),
  setTimer(ms, callback) {
    const handle = setTimeout(callback, ms);
    handle.unref?.();
    return () => clearTimeout(handle);
  },
};

/** Source of unique, sortable ids (message ids, member ids). */
export interface IdSource {
  /** Returns a new id, unique within the process and sortable by creation time. */
  next(): string;
}

/** Random bytes drawn from the platform's `crypto` at a time: enough for 16 ids' random parts. */
const RANDOM_BLOCK = 256;

/**
 * A ulid random source on the platform's `crypto.getRandomValues`, as ulid's own default is, but
 * drawing a block of bytes at a time instead of one call per character (16 per id). `undefined`
 * where there is no `crypto.getRandomValues`: ulid then finds its own source.
 */
function blockRandom(): (() => number) | undefined {
  const crypto = (globalThis as { crypto?: { getRandomValues?(bytes: Uint8Array): unknown } })
    .crypto;
  if (typeof crypto?.getRandomValues !== 'function') return undefined;
  const bytes = new Uint8Array(RANDOM_BLOCK);
  let next = RANDOM_BLOCK;
  return () => {
    if (next === RANDOM_BLOCK) {
      crypto.getRandomValues?.(bytes);
      next = 0;
    }
    return (bytes[next++] as number) / 256;
  };
}

/** ULID ids (monotonic within one millisecond), stamped from `clock`. */
export function ulidIdSource(clock: Clock = systemClock): IdSource {
  const factory = monotonicFactory(blockRandom());
  return { next: () => factory(clock.now()) };
}
