import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { TeamErrorCode } from '../errors.js';
import * as limits from '../limits.js';

const readme = readFileSync(new URL('../../README.md', import.meta.url), 'utf8');

describe('packages/core/README.md', () => {
  it.each(Object.values(TeamErrorCode))('documents error code %s in the error table', (code) => {
    // a row: | `CODE` | meaning | what to do |  (cells may be padded by the formatter)
    const cell = '[^|]*[^|\\s][^|]*';
    expect(readme).toMatch(new RegExp(`^\\|\\s*\`${code}\`\\s*\\|${cell}\\|${cell}\\|$`, 'm'));
  });

  const inputLimits = Object.entries(limits as Record<string, unknown>).filter(
    (entry): entry is [string, number] => typeof entry[1] === 'number',
  );

  it('reads the limits from limits.ts', () => {
    expect(inputLimits.map(([name]) => name)).toContain('MESSAGE_SUMMARY_MAX');
  });

  it.each(inputLimits)(
    'documents the input limit %s = %d in the input limits table',
    (name, value) => {
      const table = readme.slice(readme.indexOf('### Input limits'), readme.indexOf('## Roster'));
      expect(table).toMatch(new RegExp(`^\\|.*\`${name}\` = ${value}\\b.*\\|$`, 'm'));
    },
  );

  it.each(['member', 'task', 'message.queued', 'message.delivered'])(
    'documents the %s record with its schema version',
    (type) => {
      expect(readme).toContain(`### \`${type}\` — schemaVersion 1`);
    },
  );
});
