import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { HELP, helpText } from './args.js';

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
  it('documents every option of every help text, and the worker command', () => {
    const readme = read('../README.md');
    const helps = [HELP, helpText('fix'), helpText('web'), helpText('worker')];
    const options = helps.flatMap((help) =>
      [...help.matchAll(/^ {2}(--[a-z-]+)/gm)].map((m) => m[1] as string),
    );
    expect(options).toEqual(
      expect.arrayContaining(['--store', '--workers', '--chaos', '--team', '--port']),
    );
    for (const option of new Set(options)) {
      // --team and --port are those of web and worker, shown in their command lines
      const shown = { '--team': '--team <teamId>', '--port': '--port <port>' }[option];
      expect(readme, option).toContain(shown ?? `\`${option}`);
    }
    for (const command of ['fix', 'web', 'worker']) {
      expect(HELP).toMatch(new RegExp(`^ {2}${command} \\[options\\] `, 'm'));
    }
    expect(readme).toContain('teamwire-example worker --store <url> --team <teamId>');
    expect(readme).toContain(
      'teamwire-example worker --store postgres://user@db-host/teamwire --team <teamId>',
    );
  });

  it('points at the teamwire command for what the example no longer does itself', () => {
    const readme = read('../README.md');
    expect(HELP).not.toMatch(/^ {2}(inspect|mcp) /m);
    expect(readme).toContain('teamwire verify --dir .teamwire --team');
    expect(readme).toContain('teamwire mcp --dir .teamwire --team 01J... --member coder');
    expect(readme).not.toMatch(/teamwire-example (inspect|mcp)\b/);
  });
});
