import { mkdir, rename, writeFile } from 'node:fs/promises';
import { cpus, freemem, platform, release, totalmem } from 'node:os';
import { dirname } from 'node:path';

/** A bound a ratio must respect: `ratio <= value` or `ratio >= value`. */
export interface Target {
  op: '<=' | '>=';
  value: number;
}

/** An absolute measurement, shown for context and never asserted. */
export interface Measure {
  label: string;
  value: number;
  unit: string;
}

/**
 * One row of the results: what was measured, what it was compared with in the same run, and the
 * ratio between them. Only the ratio is held against a target, because absolute times on shared
 * machines say more about the neighbours than about the code.
 */
export interface Figure {
  /** The benchmark it belongs to (`replay`, `op-cost`, ...). */
  bench: string;
  /** Short, unique within the run, e.g. `fold 10^6 records`. */
  name: string;
  subject: Measure;
  baseline?: Measure;
  /** How `ratio` is formed, e.g. `subject / baseline`. */
  ratioOf?: string;
  ratio?: number;
  target?: Target;
  /** `met`/`missed` against the target; `info` when the row has no target. */
  verdict: 'met' | 'missed' | 'info';
  /** One line on what the figure means or how it was taken. */
  note?: string;
}

/** Builds a figure and decides its verdict. */
export function figure(options: Omit<Figure, 'verdict'>): Figure {
  let verdict: Figure['verdict'] = 'info';
  if (options.target !== undefined && options.ratio !== undefined) {
    const { op, value } = options.target;
    const ok =
      Number.isFinite(options.ratio) &&
      (op === '<=' ? options.ratio <= value : options.ratio >= value);
    verdict = ok ? 'met' : 'missed';
  } else if (options.target !== undefined) {
    verdict = 'missed';
  }
  return { ...options, verdict };
}

/** The machine a run was taken on. */
export interface MachineInfo {
  cpus: number;
  cpuModel: string;
  memoryBytes: number;
  freeMemoryBytes: number;
  node: string;
  v8: string;
  platform: string;
  release: string;
  arch: string;
  exposeGc: boolean;
}

export function machineInfo(): MachineInfo {
  const list = cpus();
  return {
    cpus: list.length,
    cpuModel: list[0]?.model.trim() ?? 'unknown',
    memoryBytes: totalmem(),
    freeMemoryBytes: freemem(),
    node: process.version,
    v8: process.versions.v8,
    platform: platform(),
    release: release(),
    arch: process.arch,
    exposeGc: typeof (globalThis as { gc?: unknown }).gc === 'function',
  };
}

/** What `latest.json` holds. */
export interface RunReport {
  /** Version of this file's shape. */
  format: 1;
  startedAt: string;
  wallSeconds: number;
  mode: 'full' | 'quick';
  command: string;
  machine: MachineInfo;
  benches: string[];
  figures: Figure[];
  summary: { met: number; missed: number; info: number };
  /** Benchmarks that threw, with the error; their figures are absent. */
  failures: { bench: string; error: string }[];
}

/** Writes the report atomically (a reader never sees half a file). */
export async function writeReport(path: string, report: RunReport): Promise<void> {
  await mkdir(dirname(path), { recursive: true });
  const tmp = `${path}.${process.pid}.tmp`;
  await writeFile(tmp, `${JSON.stringify(report, null, 2)}\n`);
  await rename(tmp, path);
}

/** A number with a sensible count of significant digits and thousands separators. */
export function formatNumber(value: number): string {
  if (!Number.isFinite(value)) return String(value);
  const abs = Math.abs(value);
  if (abs >= 1000) return Math.round(value).toLocaleString('en-US');
  if (abs >= 100) return value.toFixed(0);
  if (abs >= 10) return value.toFixed(1);
  if (abs >= 1) return value.toFixed(2);
  if (abs === 0) return '0';
  return value.toPrecision(2);
}

function formatMeasure(measure: Measure | undefined): string {
  if (measure === undefined) return '';
  return `${formatNumber(measure.value)} ${measure.unit}`;
}

function formatRatio(ratio: number | undefined): string {
  if (ratio === undefined) return '';
  if (!Number.isFinite(ratio)) return String(ratio);
  return `${ratio >= 100 ? ratio.toFixed(0) : ratio >= 10 ? ratio.toFixed(1) : ratio.toFixed(2)}x`;
}

const HEADERS = ['bench', 'figure', 'measured', 'baseline (same run)', 'ratio', 'target', 'result'];

/** The rows of the results table, as plain strings. */
export function tableRows(figures: readonly Figure[]): string[][] {
  return figures.map((f) => [
    f.bench,
    f.name,
    formatMeasure(f.subject),
    f.baseline === undefined ? '' : `${f.baseline.label}: ${formatMeasure(f.baseline)}`,
    formatRatio(f.ratio),
    f.target === undefined ? '' : `${f.target.op} ${f.target.value}`,
    f.verdict === 'info' ? '' : f.verdict,
  ]);
}

/** A fixed-width table for the terminal. */
export function textTable(figures: readonly Figure[]): string {
  const rows = [HEADERS, ...tableRows(figures)];
  const widths = HEADERS.map((_, i) => Math.max(...rows.map((row) => (row[i] ?? '').length)));
  const line = (row: string[]) =>
    row
      .map((cell, i) => cell.padEnd(widths[i] ?? 0))
      .join('  ')
      .trimEnd();
  const rule = widths.map((w) => '-'.repeat(w)).join('  ');
  return [line(HEADERS), rule, ...rows.slice(1).map(line)].join('\n');
}

/** The same table as GitHub Markdown, for the README's Performance section. */
export function markdownTable(figures: readonly Figure[]): string {
  const escapeCell = (cell: string) => cell.replaceAll('|', '\\|');
  const row = (cells: string[]) => `| ${cells.map(escapeCell).join(' | ')} |`;
  return [
    row(HEADERS),
    row(HEADERS.map(() => '---')),
    ...tableRows(figures).map((cells) =>
      row(cells.map((cell, i) => (i === 6 && cell === 'missed' ? '**missed**' : cell))),
    ),
  ].join('\n');
}
