import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect, it } from 'vitest';
import { EXAMPLES_DIR } from './run-example.js';

const read = (path: string) => readFileSync(join(EXAMPLES_DIR, path), 'utf8');
const examples = readdirSync(EXAMPLES_DIR).filter(
  (name) => name.endsWith('.ts') && name !== 'vitest.config.ts',
);
const PUBLISHED = [
  '@teamwire/core',
  '@teamwire/core/testing',
  '@teamwire/storage',
  '@teamwire/postgres',
  '@teamwire/mcp',
  '@teamwire/dashboard',
  '@teamwire/edge',
  '@teamwire/a2a',
  '@teamwire/host-adapters',
  '@teamwire/protocol',
];

it('lists every example in examples/README.md and in the root README', () => {
  expect(examples).toHaveLength(9);
  const readme = read('README.md');
  const root = read('../README.md');
  for (const file of examples) {
    expect(readme).toContain(`[\`${file}\`](${file})`);
    expect(root).toContain(`[\`${file}\`](examples/${file})`);
  }
});

it.each(examples)(
  '%s is a file to copy: a short header, under 100 lines, published imports',
  (file) => {
    const lines = read(file).trimEnd().split('\n');
    expect(lines.length).toBeLessThan(100);
    const header = lines.slice(
      0,
      lines.findIndex((line) => !line.startsWith('//')),
    );
    expect(header.length).toBeGreaterThanOrEqual(2);
    expect(header.length).toBeLessThanOrEqual(4);
    expect(header.at(-1)).toMatch(/^\/\/ Run: .*pnpm --filter @teamwire\/examples exec tsx /);
    for (const line of lines) {
      const from =
        /^import .* from '([^']+)';$/.exec(line)?.[1] ?? /^} from '([^']+)';$/.exec(line)?.[1];
      if (from === undefined) continue;
      const allowed =
        from.startsWith('node:') ||
        from.startsWith('@modelcontextprotocol/sdk/') ||
        from === 'zod' ||
        PUBLISHED.includes(from);
      expect(allowed, `${file} imports ${from}`).toBe(true);
    }
  },
);
