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

describe('the example README', () => {
  it('documents every option of the help text, and the worker command', () => {
    const readme = read('../README.md');
    const options = [...HELP.matchAll(/^ {2}(--[a-z-]+)/gm)].map((m) => m[1] as string);
    expect(options).toEqual(expect.arrayContaining(['--store', '--workers', '--chaos', '--team']));
    for (const option of new Set(options)) {
      // --team is the worker's, shown in its command line
      expect(readme, option).toContain(option === '--team' ? '--team <teamId>' : `\`${option}`);
    }
    expect(HELP).toContain('teamwire-example worker --store <url> --team <teamId>');
    expect(readme).toContain('teamwire-example worker --store <url> --team <teamId>');
    expect(readme).toContain(
      'teamwire-example worker --store postgres://user@db-host/teamwire --team <teamId>',
    );
  });
});
