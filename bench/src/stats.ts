import { performance } from 'node:perf_hooks';

/** The median of `values` (the mean of the middle two for an even count); NaN when empty. */
export function median(values: readonly number[]): number {
  return percentile(values, 0.5);
}

/**
 * The `p`-quantile (0..1) of `values` by linear interpolation between closest ranks, the same
 * definition tinybench uses, so manual loops and tinybench figures read alike.
 */
export function percentile(values: readonly number[], p: number): number {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  const rank = (sorted.length - 1) * p;
  const low = Math.floor(rank);
  const high = Math.ceil(rank);
  const a = sorted[low] as number;
  const b = sorted[high] as number;
  return a + (b - a) * (rank - low);
}

/** Milliseconds since an arbitrary origin, sub-microsecond resolution. */
export function now(): number {
  return performance.now();
}

/** Runs `fn` once and returns how long it took, in milliseconds. */
export async function timeIt(fn: () => unknown): Promise<number> {
  const start = now();
  await fn();
  return now() - start;
}

/** A thing measured against its baseline in one repetition. */
export interface PairedTimes {
  subject: number[];
  baseline: number[];
}

/**
 * Median-of-N for runs too big for a micro-benchmark harness: `warmups` discarded repetitions,
 * then `repeats` measured ones. Subject and baseline alternate inside every repetition (their
 * order flipping each time), so slow drifts of a noisy machine hit both sides alike.
 */
export async function pairedRuns(options: {
  repeats: number;
  warmups: number;
  subject: () => unknown;
  baseline: () => unknown;
  /** Called between runs (not timed), e.g. to collect garbage left by the previous one. */
  between?: () => unknown;
}): Promise<PairedTimes> {
  const out: PairedTimes = { subject: [], baseline: [] };
  const total = options.warmups + options.repeats;
  for (let i = 0; i < total; i++) {
    const order =
      i % 2 === 0 ? (['baseline', 'subject'] as const) : (['subject', 'baseline'] as const);
    for (const side of order) {
      await options.between?.();
      const ms = await timeIt(side === 'subject' ? options.subject : options.baseline);
      if (i >= options.warmups) out[side].push(ms);
    }
  }
  return out;
}

/** Forces a full collection when the process runs with `--expose-gc`; reports whether it could. */
export function collectGarbage(): boolean {
  const gc = (globalThis as { gc?: () => void }).gc;
  if (typeof gc !== 'function') return false;
  gc();
  gc();
  return true;
}

/** Heap in use after a forced collection (bytes). Without `--expose-gc` the figure is noisier. */
export function settledHeap(): number {
  collectGarbage();
  return process.memoryUsage().heapUsed;
}

/** Yields to the event loop (timers and I/O included), not just to the microtask queue. */
export function nextMacrotask(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

/**
 * Rejects when `promise` has not settled within `ms`, naming `what`: a benchmark that stops making
 * progress fails loudly instead of hanging the run.
 */
export async function within<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} did not finish within ${ms} ms`)), ms);
  });
  try {
    return await Promise.race([promise, timeout]);
  } finally {
    clearTimeout(timer);
  }
}
