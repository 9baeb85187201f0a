import { z } from 'zod';

/** The subject of the lead's own task: writing the team report (never a reviewer's). */
export const SUMMARY_SUBJECT = 'Write the team report';

/** What a reviewer reports about one folder. Sent to the lead inside a `findings:` line. */
export const Findings = z.object({
  unit: z.string(),
  taskId: z.string(),
  files: z.number().int(),
  lines: z.number().int(),
  largest: z.array(z.object({ path: z.string(), lines: z.number().int() })),
  todoFixme: z.number().int(),
  exportedSymbols: z.number().int(),
  exportNames: z.array(z.string()),
  notes: z.array(z.string()),
});
export type Findings = z.infer<typeof Findings>;

const MARKER = 'findings: ';

/** The message a reviewer sends: readable lines, then one machine-readable line. */
export function formatFindingsMessage(findings: Findings): string {
  const largest = findings.largest.map((f) => `${f.path} (${f.lines} lines)`).join(', ') || 'none';
  return [
    `Review of ${findings.unit} (${findings.taskId})`,
    `files: ${findings.files}, lines: ${findings.lines}, TODO/FIXME: ${findings.todoFixme}, exported symbols: ${findings.exportedSymbols}`,
    `largest: ${largest}`,
    ...findings.notes.map((note) => `note: ${note}`),
    `${MARKER}${JSON.stringify(findings)}`,
  ].join('\n');
}

/** Reads the findings back from a message body; `undefined` when it carries none. */
export function parseFindingsMessage(text: string): Findings | undefined {
  for (const line of text.split('\n')) {
    if (!line.startsWith(MARKER)) continue;
    try {
      const parsed = Findings.safeParse(JSON.parse(line.slice(MARKER.length)));
      if (parsed.success) return parsed.data;
    } catch {
      // not JSON: not findings
    }
  }
  return undefined;
}

/** Renders the team report from every folder's findings, in the order of the review units. */
export function renderReport(options: {
  dir: string;
  units: readonly string[];
  findings: ReadonlyMap<string, Findings>;
  reviewers: ReadonlyMap<string, string>;
}): string {
  const out: string[] = ['# Team review report', '', `Directory: \`${options.dir}\``, ''];
  let files = 0;
  let lines = 0;
  let todos = 0;
  for (const f of options.findings.values()) {
    files += f.files;
    lines += f.lines;
    todos += f.todoFixme;
  }
  out.push('| folder | files | lines | TODO/FIXME | exported symbols | reviewer |');
  out.push('|---|---:|---:|---:|---:|---|');
  for (const unit of options.units) {
    const f = options.findings.get(unit);
    out.push(
      f
        ? `| ${unit} | ${f.files} | ${f.lines} | ${f.todoFixme} | ${f.exportedSymbols} | ${options.reviewers.get(unit) ?? '?'} |`
        : `| ${unit} | - | - | - | - | not reviewed |`,
    );
  }
  out.push(`| **total** | ${files} | ${lines} | ${todos} | | |`, '');
  for (const unit of options.units) {
    const f = options.findings.get(unit);
    out.push(`## ${unit}`, '');
    if (!f) {
      out.push('No findings were received for this folder.', '');
      continue;
    }
    out.push(`- files: ${f.files}`);
    out.push(`- lines: ${f.lines}`);
    out.push(`- TODO/FIXME: ${f.todoFixme}`);
    out.push(`- exported symbols: ${f.exportedSymbols}`);
    out.push(
      `- largest files: ${f.largest.map((l) => `\`${l.path}\` (${l.lines})`).join(', ') || 'none'}`,
    );
    if (f.exportNames.length > 0) {
      const more = f.exportedSymbols - f.exportNames.length;
      out.push(
        `- exports: ${f.exportNames.map((n) => `\`${n}\``).join(', ')}${more > 0 ? ` and ${more} more` : ''}`,
      );
    }
    out.push(`- reviewer: ${options.reviewers.get(unit) ?? 'unknown'}`);
    if (f.notes.length > 0) {
      out.push('', 'Reviewer notes:', '', ...f.notes.map((n) => `- ${n}`));
    }
    out.push('');
  }
  return out.join('\n');
}
