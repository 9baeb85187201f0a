import type { Clock, IdSource } from '../clock.js';

/** A Clock that only moves when told to. Timers fire in due order during {@link advance}. */
export interface ManualClock extends Clock {
  /** Moves time forward by `ms`, firing every timer that falls due, in order. */
  advance(ms: number): void;
  /** Number of timers not yet fired or cancelled. */
  pendingTimers(): number;
}

/** Creates a {@link ManualClock} reading `start` (default 2026-01-01T00:00:00Z) until advanced. */
export function createManualClock(options: { start?: number } = {}): ManualClock {
  let now = options.start ?? Date.UTC(2026, 0, 1);
  let nextId = 0;
  const timers = new Map<number, { due: number; callback: () => void }>();
  return {
    now: () => now,
    setTimer(ms, callback) {
      const id = nextId++;
      timers.set(id, { due: now + Math.max(0, ms), callback });
      return () => {
        timers.delete(id);
      };
    },
    advance(ms) {
      const target = now + ms;
      for (;;) {
        let nextKey: number | undefined;
        let next: { due: number; callback: () => void } | undefined;
        for (const [key, timer] of timers) {
          if (timer.due <= target && (next === undefined || timer.due < next.due)) {
            nextKey = key;
            next = timer;
          }
        }
        if (next === undefined || nextKey === undefined) break;
        timers.delete(nextKey);
        now = Math.max(now, next.due);
        next.callback();
      }
      now = target;
    },
    pendingTimers: () => timers.size,
  };
}

/** Ids `prefix-0001`, `prefix-0002`, ... : deterministic and sortable. */
export function createSequentialIds(prefix = 'id'): IdSource {
  let n = 0;
  return { next: () => `${prefix}-${String(++n).padStart(6, '0')}` };
}
