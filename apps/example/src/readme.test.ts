import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { HELP } from './args.js';

const read = (relative: string) => readFileSync(new URL(relative, import.meta.url), 'utf8');

describe('the root README', () => {
  it('shows the usage example that typechecks with this app', () => {
    const readme = read('../../../README.md');
    const block = /## Using the packages\n\n```ts\n([\s\S]*?)```/.exec(readme)?.[1];
    const snippet = read('./readme-usage.snippet.ts').split('\n').slice(1).join('\n');
    expect(block).toBe(snippet);
  });

  it('documents the demo options the CLI has', () => {
    const readme = read('../../../README.md');
    for (const option of ['--resume', '--model', '--help']) {
      expect(HELP).toContain(option);
      expect(readme).toContain(option);
    }
  });
});
