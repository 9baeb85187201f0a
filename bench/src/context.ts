import type { Figure } from './report.js';

/** What every benchmark is given. */
export interface BenchContext {
  quick: boolean;
  /** Progress lines (stderr), so stdout stays the table. */
  log(message: string): void;
}

/** A benchmark: a name for `--only`, one line of what it shows, and the run itself. */
export interface Bench {
  name: string;
  title: string;
  run(context: BenchContext): Promise<Figure[]>;
}

/** `10^6` for 1_000_000, else the number with separators. */
export function sizeLabel(n: number): string {
  const exponent = Math.log10(n);
  if (Number.isInteger(exponent)) return `10^${exponent}`;
  return n.toLocaleString('en-US');
}
