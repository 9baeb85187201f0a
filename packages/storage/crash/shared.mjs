// Helpers shared by the crash test's parent (run.mjs) and child (child.mjs).

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

/** Parses `--name value` and `--flag` arguments into an object (values stay strings). */
export function parseArgs(argv) {
  const out = {};
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    if (arg === '--') continue; // what `pnpm run script -- --flag` passes along
    if (!arg.startsWith('--')) throw new Error(`unexpected argument ${JSON.stringify(arg)}`);
    const key = arg.slice(2);
    const value = argv[i + 1];
    if (value === undefined || value.startsWith('--')) out[key] = true;
    else {
      out[key] = value;
      i++;
    }
  }
  return out;
}

/** The agent types of the scripted team. */
export const LEAD_TYPE = 'lead';
export const WORKER_TYPE = 'worker';

/** How many active teammates the child keeps (it spawns more when a spawn was cut by a kill). */
export const TEAMMATES = 4;
