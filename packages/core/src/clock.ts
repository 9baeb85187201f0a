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

/** ULID ids (monotonic within one millisecond), stamped from `clock`. */
export function ulidIdSource(clock: Clock = systemClock): IdSource {
  const factory = monotonicFactory();
  return { next: () => factory(clock.now()) };
}
