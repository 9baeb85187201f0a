import { TeamError } from './errors.js';

/*
 * The one backoff rule of teamwire: how long to wait before the next attempt. Pure arithmetic on
 * an injectable random source: it never sleeps and sets no timer, so a caller waits however it
 * waits (a `Clock` timer, an abortable sleep, a browser timeout). It imports nothing that needs
 * Node, so the dashboard's page bundles it too.
 */

/**
 * How the waits between attempts grow. Wait `n` (counted from 0) is a step of
 * `min(maxDelayMs, initialDelayMs * 2^n)` ms, multiplied by a factor drawn uniformly from
 * `jitter`.
 */
export interface BackoffPolicy {
  /** The first step, in ms. */
  readonly initialDelayMs: number;
  /** Steps double up to this many ms. */
  readonly maxDelayMs: number;
  /**
   * The range `[low, high]` of the factor each step is multiplied by, so that processes that
   * failed together do not retry in lockstep: {@link EQUAL_JITTER} keeps half of each step and
   * draws the other half; `[0.75, 1.25]` spreads each step by a quarter either way. Default
   * `[1, 1]`: every wait is its step.
   */
  readonly jitter?: readonly [low: number, high: number] | undefined;
}

/** Half of each step fixed, half drawn at random ("equal jitter"). */
export const EQUAL_JITTER: readonly [low: number, high: number] = Object.freeze([0.5, 1]) as [
  number,
  number,
];

/** Exponents past this give a step of `maxDelayMs` anyway; capping them keeps `2^n` finite. */
const EXPONENT_MAX = 1000;

/**
 * The wait before retry `attempt` (0 for the first retry) under `policy`, in ms: the step
 * `min(maxDelayMs, initialDelayMs * 2^attempt)` times a factor between the policy's jitter bounds,
 * `random()` (a number in [0, 1)) picking where.
 */
export function backoffDelay(
  policy: BackoffPolicy,
  attempt: number,
  random: () => number = Math.random,
): number {
  const exponent = Math.min(Math.max(0, Math.floor(attempt)), EXPONENT_MAX);
  const step = Math.min(policy.maxDelayMs, policy.initialDelayMs * 2 ** exponent);
  const [low, high] = policy.jitter ?? [1, 1];
  return low === high ? step * low : step * (low + random() * (high - low));
}

/**
 * Checks `policy`: finite, non-negative delays and jitter bounds with `low <= high`
 * (`INVALID_ARGUMENT` naming the field otherwise).
 */
export function checkBackoffPolicy(policy: BackoffPolicy): void {
  const fields: [string, unknown][] = [
    ['initialDelayMs', policy?.initialDelayMs],
    ['maxDelayMs', policy?.maxDelayMs],
    ...(policy?.jitter === undefined
      ? []
      : ([
          ['jitter[0]', policy.jitter[0]],
          ['jitter[1]', policy.jitter[1]],
        ] as [string, unknown][])),
  ];
  for (const [field, value] of fields) {
    if (typeof value !== 'number' || !Number.isFinite(value) || value < 0) {
      throw new TeamError('INVALID_ARGUMENT', `backoff ${field} must be a finite number >= 0`, {
        details: { field, value },
      });
    }
  }
  if (policy.jitter !== undefined && policy.jitter[0] > policy.jitter[1]) {
    throw new TeamError('INVALID_ARGUMENT', 'backoff jitter must be [low, high] with low <= high', {
      details: { field: 'jitter', value: [...policy.jitter] },
    });
  }
}

/**
 * The waits of one run of attempts under a {@link BackoffPolicy}: each {@link Backoff.next} is
 * the wait before the next attempt, doubling up to the cap; {@link Backoff.reset} starts over
 * (after a success). It only counts: the caller sleeps.
 */
export class Backoff {
  readonly #policy: BackoffPolicy;
  readonly #random: () => number;
  #attempt = 0;

  /**
   * Checks `policy` (see {@link checkBackoffPolicy}); `random` gives numbers in [0, 1) for the
   * jitter (default `Math.random`; inject a fixed one in tests).
   */
  constructor(policy: BackoffPolicy, random: () => number = Math.random) {
    checkBackoffPolicy(policy);
    this.#policy = { ...policy };
    this.#random = random;
  }

  /** The wait before the next attempt, in ms; the one after it is one step longer. */
  next(): number {
    const delay = backoffDelay(this.#policy, this.#attempt, this.#random);
    if (this.#attempt < EXPONENT_MAX) this.#attempt++;
    return delay;
  }

  /** Starts over from the first step. */
  reset(): void {
    this.#attempt = 0;
  }
}
