import { describe, expect, it } from 'vitest';
import { parseArgs, UsageError } from './args.js';

const cwd = '/work/here';

describe('parseArgs', () => {
  it('has defaults for every review option', () => {
    expect(parseArgs([], { cwd })).toEqual({
      command: 'review',
      dir: cwd,
      teammates: 3,
      protocol: 'xml',
      stateDir: '.teamwire',
      report: 'team-report.md',
      durability: 'fsync',
      plain: false,
      paceMs: 0,
    });
  });

  it('reads every option', () => {
    const parsed = parseArgs(
      [
        '--dir',
        'src',
        '--teammates',
        '5',
        '--model',
        'openai:gpt-4.1-mini',
        '--protocol',
        'tool-call',
        '--resume',
        'T1',
        '--state-dir',
        's',
        '--report',
        'r.md',
        '--durability',
        'buffered',
        '--plain',
        '--pace',
        '25',
      ],
      { cwd },
    );
    expect(parsed).toEqual({
      command: 'review',
      dir: 'src',
      teammates: 5,
      model: 'openai:gpt-4.1-mini',
      protocol: 'tool-call',
      resume: 'T1',
      stateDir: 's',
      report: 'r.md',
      durability: 'buffered',
      plain: true,
      paceMs: 25,
    });
  });

  it('parses inspect and help', () => {
    expect(parseArgs(['inspect', 'T1'], { cwd })).toEqual({
      command: 'inspect',
      teamId: 'T1',
      stateDir: '.teamwire',
    });
    expect(parseArgs(['--dir', 'x', '--help'], { cwd })).toEqual({ command: 'help' });
  });

  it.each([
    [['--teammates', '0'], '--teammates must be a whole number from 1 to 8 (got 0)'],
    [['--teammates', 'many'], '--teammates must be a whole number from 1 to 8 (got many)'],
    [['--protocol', 'yaml'], '--protocol must be one of xml, json, tool-call (got yaml)'],
    [['--durability', 'never'], '--durability must be fsync or buffered (got never)'],
    [['--pace', '-1'], '--pace must be a whole number of milliseconds from 0 to 60000 (got -1)'],
    [['--dir'], '--dir needs a value'],
    [['--dir', '--plain'], '--dir needs a value'],
    [['--frobnicate'], 'unknown option --frobnicate'],
    [['stray'], 'unexpected argument stray'],
    [['inspect'], 'inspect needs a team id: teamwire-example inspect <teamId>'],
    [['inspect', 'a', 'b'], 'unexpected argument b'],
  ])('refuses %j with one line', (argv, message) => {
    expect(() => parseArgs(argv, { cwd })).toThrow(new UsageError(message));
  });
});
