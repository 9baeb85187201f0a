import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';

const root = new URL('../', import.meta.url);
const readme = readFileSync(new URL('README.md', root), 'utf8');

/** The README's "Inside the runtime" section: the map of core's sources. */
function mapSection(): string {
  const start = readme.indexOf('### Inside the runtime');
  expect(start).toBeGreaterThan(-1);
  const end = readme.indexOf('\n### ', start + 1);
  return readme.slice(start, end === -1 ? undefined : end);
}

describe('packages/core/README.md: the map of the sources', () => {
  const files = [
    ...new Set([...mapSection().matchAll(/`(src\/[\w/.-]+\.ts)`/g)].map((m) => m[1] as string)),
  ];

  it('names files', () => {
    expect(files.length).toBeGreaterThan(20);
  });

  it.each(files)('names %s, which exists', (file) => {
    expect(existsSync(new URL(file, root))).toBe(true);
  });
});

describe("core's sources", () => {
  it("hold no HTTP code: protocol-level HTTP is the edge packages' job", () => {
    const src = new URL('src/', root);
    const sources = (readdirSync(src, { recursive: true }) as string[]).filter(
      (file) => file.endsWith('.ts') && !file.endsWith('.test.ts'),
    );
    expect(sources.length).toBeGreaterThan(50);
    const http = sources.filter((file) =>
      /from ['"]node:https?['"]/.test(readFileSync(new URL(file, src), 'utf8')),
    );
    expect(http).toEqual([]);
  });
});
