import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { CompactionSource } from '../chat.js';
import type { AgentEvent } from '../ports/events.js';
import { type ContextBudget, resolveContextBudget } from './context-budget.js';

const readme = readFileSync(new URL('../../README.md', import.meta.url), 'utf8');

function section(): string {
  const start = readme.indexOf('### Context budget and compaction');
  expect(start).toBeGreaterThan(-1);
  const end = readme.indexOf('\n### ', start + 1);
  return readme.slice(start, end === -1 ? undefined : end);
}

/** The first column of the first table after `after` in the section, backticks removed. */
function firstColumn(text: string, after: string): string[] {
  const from = text.indexOf(after);
  expect(from).toBeGreaterThan(-1);
  const lines = text.slice(from).split('\n');
  const end = lines.findIndex((line) => !line.startsWith('|'));
  const rows = lines.slice(2, end === -1 ? undefined : end);
  const table: string[] = [];
  for (const row of rows) {
    const cell = row.split('|')[1]?.trim() ?? '';
    table.push(...cell.split(',').map((name) => name.trim().replaceAll('`', '')));
  }
  return table;
}

/** Every budget option, checked by the compiler: adding one fails typecheck until listed here. */
const OPTIONS: Record<keyof ContextBudget, true> = {
  windowTokens: true,
  targetShare: true,
  recentShare: true,
  summaryShare: true,
  keepFirst: true,
  bytesPerToken: true,
  policy: true,
};

describe('packages/core/README.md: context budget and compaction', () => {
  it('lists every budget option with the default the code uses', () => {
    const text = section();
    const options = firstColumn(text, '| Option');
    expect(options.sort()).toEqual(Object.keys(OPTIONS).sort());
    const resolved = resolveContextBudget({ windowTokens: 1000 }, 'readme');
    for (const key of [
      'targetShare',
      'recentShare',
      'summaryShare',
      'keepFirst',
      'bytesPerToken',
    ] as const) {
      const row = text.split('\n').find((line) => line.startsWith(`| \`${key}\``));
      expect(row, key).toContain(`| ${resolved[key]} `);
    }
    expect(resolved.policy.name).toBe('model');
  });

  it('documents every field of the compaction entry', () => {
    const fields = firstColumn(section(), '| Field');
    expect(fields.sort()).toEqual(Object.keys(CompactionSource.shape).sort());
  });

  it('names every field of the compaction events', () => {
    const compacted: Record<keyof Extract<AgentEvent, { type: 'context.compacted' }>, true> = {
      type: true,
      compactionId: true,
      reason: true,
      tokensBefore: true,
      tokensAfter: true,
      estimated: true,
      replacedMessages: true,
      retainedMessages: true,
      durationMs: true,
      policy: true,
    };
    const text = section();
    const line = text.slice(text.indexOf('`context.compacted`'));
    for (const field of Object.keys(compacted).filter((f) => f !== 'type' && f !== 'reason')) {
      expect(line, field).toContain(`\`${field}\``);
    }
  });
});
