import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { TeamErrorCode } from '../errors.js';

const readme = readFileSync(new URL('../../README.md', import.meta.url), 'utf8');

describe('packages/core/README.md', () => {
  it.each(Object.values(TeamErrorCode))('documents error code %s in the error table', (code) => {
    // a row: | `CODE` | meaning | what to do |  (cells may be padded by the formatter)
    const cell = '[^|]*[^|\\s][^|]*';
    expect(readme).toMatch(new RegExp(`^\\|\\s*\`${code}\`\\s*\\|${cell}\\|${cell}\\|$`, 'm'));
  });

  it.each(['member', 'task', 'message.queued', 'message.delivered'])(
    'documents the %s record with its schema version',
    (type) => {
      expect(readme).toContain(`### \`${type}\` — schemaVersion 1`);
    },
  );
});
