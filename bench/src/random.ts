/** A small, fast, seedable PRNG (mulberry32), so every run generates the same data. */
export function createRandom(seed: number): Random {
  let state = seed >>> 0;
  const next = (): number => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  return {
    next,
    int: (min, max) => min + Math.floor(next() * (max - min + 1)),
    chance: (p) => next() < p,
    pick: (items) => items[Math.floor(next() * items.length)] as (typeof items)[number],
  };
}

export interface Random {
  /** Uniform in [0, 1). */
  next(): number;
  /** Uniform integer in [min, max]. */
  int(min: number, max: number): number;
  chance(p: number): boolean;
  pick<T>(items: readonly T[]): T;
}

const CROCKFORD = '0123456789ABCDEFGHJKMNPQRSTVWXYZ';

/**
 * Ulid-shaped ids (26 Crockford base32 characters: 10 of time, 16 of randomness) drawn from a
 * seeded PRNG, so generated logs have the byte sizes of real ones and are reproducible.
 */
export function createUlidLike(random: Random, now: () => number): { next(): string } {
  return {
    next() {
      let time = Math.max(0, Math.floor(now()));
      let head = '';
      for (let i = 0; i < 10; i++) {
        head = CROCKFORD[time % 32] + head;
        time = Math.floor(time / 32);
      }
      let tail = '';
      for (let i = 0; i < 16; i++) tail += CROCKFORD[Math.floor(random.next() * 32)];
      return head + tail;
    },
  };
}

const WORDS = (
  'the a to of and in for on with that this is it be as by from at not are was were will can ' +
  'test tests fixture reader writer parser log line lines record records task tasks message ' +
  'lead review patch branch commit merge fix bug failing passes green red retry backoff cache ' +
  'index query schema migration endpoint handler request response timeout error errors stack ' +
  'trace file files folder module package build typecheck lint coverage benchmark latency ' +
  'throughput memory heap queue worker teammate mailbox transcript durable append fsync replay ' +
  'state fold invariant revision owner claim release complete blocked scope scopes path paths ' +
  'src/http/client.ts src/store/log.ts packages/core README.md CHANGELOG.md `npm test` `pnpm build`'
).split(' ');

/** Prose-like text of about `length` characters, ending with a full stop. */
export function prose(random: Random, length: number): string {
  const parts: string[] = [];
  let size = 0;
  let sentence = 0;
  while (size < length) {
    let word = random.pick(WORDS);
    if (sentence === 0) word = word.charAt(0).toUpperCase() + word.slice(1);
    sentence++;
    if (sentence > 6 && random.chance(0.15)) {
      word += '.';
      sentence = 0;
    } else if (random.chance(0.05)) {
      word += ',';
    }
    parts.push(word);
    size += word.length + 1;
  }
  const text = parts.join(' ');
  return text.endsWith('.') ? text : `${text}.`;
}
