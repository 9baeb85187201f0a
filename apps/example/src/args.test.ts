import { describe, expect, it } from 'vitest';
import { HELP, helpText, parseArgs, UsageError } from './args.js';
import { runCli, tempDir } from './test-support.js';

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
      chaos: false,
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
      chaos: false,
    });
  });

  it('reads --store and --workers of fix', () => {
    expect(
      parseArgs(['fix', '--store', 'postgres://u@db/t', '--workers', '2'], { cwd }),
    ).toMatchObject({
      command: 'fix',
      store: 'postgres://u@db/t',
      workers: 2,
    });
  });

  it('reads --store, --workers and --chaos', () => {
    const url = 'postgres://postgres@127.0.0.1:5432/test';
    expect(parseArgs(['--store', url], { cwd })).toMatchObject({
      command: 'review',
      store: url,
      workers: undefined,
      chaos: false,
    });
    expect(
      parseArgs(['--store', url, '--workers', '3', '--chaos', '--resume', 'T1'], { cwd }),
    ).toMatchObject({ command: 'review', store: url, workers: 3, chaos: true, resume: 'T1' });
    expect(
      parseArgs([`--store=postgresql://u:p@db-host/teamwire`, '--workers=1'], { cwd }),
    ).toMatchObject({ store: 'postgresql://u:p@db-host/teamwire', workers: 1, chaos: false });
  });

  it('parses the worker command', () => {
    const url = 'postgres://user@db-host/teamwire';
    expect(parseArgs(['worker', '--store', url, '--team', 'T1'], { cwd })).toEqual({
      command: 'worker',
      store: url,
      teamId: 'T1',
      paceMs: 0,
    });
    expect(
      parseArgs(['--', 'worker', '--team=T2', '--store', url, '--pace', '5'], { cwd }),
    ).toEqual({ command: 'worker', store: url, teamId: 'T2', paceMs: 5 });
  });

  it('answers --help with the help of the command it was asked of, generated from the declarations', () => {
    expect(parseArgs(['--help'], { cwd })).toEqual({ command: 'help', text: HELP });
    expect(parseArgs(['-h'], { cwd })).toEqual({ command: 'help', text: HELP });
    expect(HELP).toMatch(/^Usage: teamwire-example \[options\] \[command\]\n/);
    expect(HELP).toMatch(/^ {2}--teammates <n> +number of reviewers, 1-8 \(default: 3\)$/m);
    expect(HELP).toMatch(/^ {2}fix \[options\] +write and commit each folder's REVIEW\.md/m);
    expect(HELP).toContain('The default model is an offline, deterministic policy');
    for (const name of ['fix', 'web', 'worker'] as const) {
      const text = helpText(name);
      expect(text).toMatch(new RegExp(`^Usage: teamwire-example ${name} \\[options\\]\n`));
      expect(parseArgs([name, '--help'], { cwd })).toEqual({ command: 'help', text });
      expect(parseArgs(['help', name], { cwd })).toEqual({ command: 'help', text });
    }
    // fix's help leaves out what fix refuses
    expect(helpText('fix')).not.toMatch(/--teammates|--chaos|--mcp/);
    expect(helpText('fix')).toMatch(/^ {2}--workers <n> +run the reviewers in n worker processes/m);
    expect(helpText('worker')).toMatch(/^ {2}--team <teamId> /m);
  });

  it('lets a request for help win over a mistake on the same line', () => {
    expect(parseArgs(['--frobnicate', '-h'], { cwd })).toEqual({ command: 'help', text: HELP });
    expect(parseArgs(['--teammates', '0', '--help'], { cwd })).toMatchObject({ command: 'help' });
    expect(parseArgs(['worker', '--store', 'x', '--help'], { cwd })).toEqual({
      command: 'help',
      text: helpText('worker'),
    });
    // after a --, --help is an argument like any other
    expect(() => parseArgs(['--plain', '--', '--help'], { cwd })).toThrow(
      new UsageError('unexpected argument --help'),
    );
  });

  it('skips the -- that `pnpm run demo -- ...` passes along, and takes --flag=value', () => {
    expect(parseArgs(['--', '--dir', 'src', '--plain'], { cwd })).toMatchObject({
      command: 'review',
      dir: 'src',
      plain: true,
    });
    expect(parseArgs(['--', 'fix'], { cwd })).toMatchObject({ command: 'fix', dir: cwd });
    expect(parseArgs(['--', '--help'], { cwd })).toEqual({ command: 'help', text: HELP });
    expect(parseArgs(['--teammates=2', '--pace=5'], { cwd })).toMatchObject({
      teammates: 2,
      paceMs: 5,
    });
    // a later -- ends the options: what follows is an argument, which review takes none of
    expect(() => parseArgs(['--plain', '--', '--dir', 'x'], { cwd })).toThrow(
      new UsageError('unexpected argument --dir'),
    );
  });

  it.each([
    [['--teammates', '0'], '--teammates must be a whole number from 1 to 8 (got 0)'],
    [['--teammates', 'many'], '--teammates must be a whole number from 1 to 8 (got many)'],
    [
      ['--protocol', 'yaml'],
      "option '--protocol <format>' argument 'yaml' is invalid. Allowed choices are xml, json, tool-call.",
    ],
    [
      ['--durability', 'never'],
      "option '--durability <mode>' argument 'never' is invalid. Allowed choices are fsync, buffered.",
    ],
    [['--pace=-1'], '--pace must be a whole number of milliseconds from 0 to 60000 (got -1)'],
    [['--pace', '-1'], '--pace must be a whole number of milliseconds from 0 to 60000 (got -1)'],
    [
      ['--pace', '70000'],
      '--pace must be a whole number of milliseconds from 0 to 60000 (got 70000)',
    ],
    [['--dir'], "option '--dir <path>' argument missing"],
    [['--dir', '--plain'], '--dir needs a value, not --plain'],
    [['web', '--team', '-x'], '--team needs a value, not -x'],
    [['--plain=yes'], "unknown option '--plain=yes'"],
    [['--frobnicate'], "unknown option '--frobnicate'"],
    [['--frobnicate=1'], "unknown option '--frobnicate=1'"],
    [['--plain', '-x'], "unknown option '-x'"],
    [['--plain', '--dri', 'x'], "unknown option '--dri' (Did you mean --dir?)"],
    [['stray'], 'unexpected argument stray'],
    [['fix', 'stray'], 'unexpected argument stray'],
    [['--plain', 'stray', '--frobnicate'], "unknown option '--frobnicate'"],
    [
      ['--plain', 'fix'],
      '--plain comes before the command fix; write teamwire-example fix [options]',
    ],
    [['fix', '--teammates', '2'], "unknown option '--teammates'"],
    [['help', 'inspect'], 'help takes a command: fix, web, worker (got inspect)'],
    [
      ['--store', 'mysql://db/x'],
      '--store must be a PostgreSQL URL, postgres://[user[:password]@]host[:port]/database (got mysql://db/x)',
    ],
    [
      ['--store', 'teamwire.db'],
      '--store must be a PostgreSQL URL, postgres://[user[:password]@]host[:port]/database (got teamwire.db)',
    ],
    [
      ['--store', 'postgres://u:secret@/db'],
      '--store must be a PostgreSQL URL, postgres://[user[:password]@]host[:port]/database (got postgres://u:***@/db)',
    ],
    [['--store'], "option '--store <url>' argument missing"],
    [
      ['--workers', '2'],
      '--workers needs --store postgres://[user[:password]@]host[:port]/database: the workers share the team through PostgreSQL',
    ],
    [
      ['--store', 'postgres://h/d', '--workers', '0'],
      '--workers must be a whole number from 1 to 8 (got 0)',
    ],
    [
      ['--store', 'postgres://h/d', '--workers', '9'],
      '--workers must be a whole number from 1 to 8 (got 9)',
    ],
    [
      ['--chaos'],
      "--chaos needs --workers 2 or more, so that a worker survives to take the killed one's reviewers over (got no --workers)",
    ],
    [
      ['--store', 'postgres://h/d', '--workers', '1', '--chaos'],
      "--chaos needs --workers 2 or more, so that a worker survives to take the killed one's reviewers over (got --workers 1)",
    ],
    [
      ['--store', 'postgres://h/d', '--state-dir', 's'],
      "option '--state-dir <path>' cannot be used with option '--store <url>'",
    ],
    [
      ['--store', 'postgres://h/d', '--durability', 'fsync'],
      "option '--durability <mode>' cannot be used with option '--store <url>'",
    ],
    [['fix', '--chaos'], '--chaos is for the review only'],
    [
      ['fix', '--workers', '2'],
      '--workers needs --store postgres://[user[:password]@]host[:port]/database: the workers share the team through PostgreSQL',
    ],
    [
      ['fix', '--store', 'postgres://h/d', '--approve'],
      "option '--approve' cannot be used with option '--store <url>'",
    ],
    [
      ['fix', '--store', 'postgres://h/d', '--durability', 'buffered'],
      "option '--durability <mode>' cannot be used with option '--store <url>'",
    ],
    [['fix', '--mcp-port', '4100'], '--mcp-port is for the review only'],
    [['worker', '--team', 'T1'], "required option '--store <url>' not specified"],
    [['worker', '--store', 'postgres://h/d'], "required option '--team <teamId>' not specified"],
    [
      ['worker', '--store', 'http://h/d', '--team', 'T1'],
      '--store must be a PostgreSQL URL, postgres://[user[:password]@]host[:port]/database (got http://h/d)',
    ],
    [
      ['worker', '--store', 'postgres://h/d', '--team', 'T1', '--dir', 'x'],
      "unknown option '--dir'",
    ],
    [['worker', '--store', 'postgres://h/d', '--team', 'T1', 'extra'], 'unexpected argument extra'],
    [['--mcp-port', '4100'], '--mcp-port needs --mcp'],
    [
      ['--mcp', '--mcp-port', '70000'],
      '--mcp-port must be a port number from 0 to 65535 (got 70000)',
    ],
    [
      ['--mcp', '--store', 'postgres://h/d', '--workers', '2'],
      "option '--mcp' cannot be used with option '--workers <n>'",
    ],
    [['fix', '--mcp'], '--mcp is for the review only'],
    [['--web-port', '4200'], '--web-port needs --web'],
    [['web'], "required option '--team <teamId>' not specified"],
    [
      ['web', '--team', 'T1', '--store', 'postgres://h/d', '--state-dir', 'x'],
      "option '--state-dir <path>' cannot be used with option '--store <url>'",
    ],
    [
      ['web', '--team', 'T1', '--store', 'postgres://u:secret@/d'],
      '--store must be a PostgreSQL URL, postgres://[user[:password]@]host[:port]/database (got postgres://u:***@/d)',
    ],
    [
      ['web', '--team', 'T1', '--port', 'x'],
      '--port must be a port number from 0 to 65535 (got x)',
    ],
    [
      ['--context-window', '255'],
      '--context-window must be a whole number of tokens from 256 to 100000000 (got 255)',
    ],
    [
      ['--context-window', '128k'],
      '--context-window must be a whole number of tokens from 256 to 100000000 (got 128k)',
    ],
    [
      ['--context-window=1e9'],
      '--context-window must be a whole number of tokens from 256 to 100000000 (got 1e9)',
    ],
    [
      ['--model', 'openai:gpt-4.1-mini', '--context-window', '3000.5'],
      '--context-window must be a whole number of tokens from 256 to 100000000 (got 3000.5)',
    ],
    [['--context-window'], "option '--context-window <tokens>' argument missing"],
    [
      ['fix', '--context-window', '8000'],
      "fix's --context-window needs --model: on the offline policy model the fix team keeps its whole conversation",
    ],
  ])('refuses %j with one line', (argv, message) => {
    expect(() => parseArgs(argv, { cwd })).toThrow(new UsageError(message));
  });
});

describe('--context-window', () => {
  it('reads a window in tokens for the review and, with --model, the fix', () => {
    expect(parseArgs([], { cwd })).toMatchObject({ contextWindow: undefined });
    expect(parseArgs(['--context-window', '8000'], { cwd })).toMatchObject({
      command: 'review',
      contextWindow: 8000,
    });
    expect(parseArgs(['--context-window=256'], { cwd })).toMatchObject({ contextWindow: 256 });
    expect(
      parseArgs(['fix', '--model', 'anthropic:claude-sonnet-4-5', '--context-window', '100000'], {
        cwd,
      }),
    ).toMatchObject({ command: 'fix', contextWindow: 100_000 });
  });
});

describe('--mcp and --web', () => {
  it('--web parses for the review and the fix, and web for a team', () => {
    expect(parseArgs(['--web', '--web-port', '4200'], { cwd })).toMatchObject({
      command: 'review',
      web: { port: 4200 },
    });
    expect(parseArgs(['fix', '--web'], { cwd })).toMatchObject({
      command: 'fix',
      web: { port: 0 },
    });
    expect(parseArgs(['web', '--team', 'T1', '--port', '4300'], { cwd })).toEqual({
      command: 'web',
      teamId: 'T1',
      stateDir: '.teamwire',
      store: undefined,
      port: 4300,
    });
    expect(parseArgs(['web', '--team=T1', '--store', 'postgres://h/d'], { cwd })).toMatchObject({
      command: 'web',
      store: 'postgres://h/d',
      port: 0,
    });
  });

  it('--mcp parses to a port', () => {
    expect(parseArgs(['--mcp'], { cwd })).toMatchObject({ command: 'review', mcp: { port: 0 } });
    expect(parseArgs(['--mcp', '--mcp-port', '4100'], { cwd })).toMatchObject({
      mcp: { port: 4100 },
    });
    expect(parseArgs(['--plain'], { cwd })).toMatchObject({ mcp: undefined });
    // --mcp and --workers conflict, each alone is fine
    expect(parseArgs(['--store', 'postgres://h/d', '--workers', '2'], { cwd })).toMatchObject({
      workers: 2,
      mcp: undefined,
    });
  });
});

describe('the CLI on a bad command line', () => {
  it('prints one line and exits 2; --help prints the help and exits 0', async () => {
    const work = tempDir('args');
    const bad = await runCli(['--', '--teammates', '9'], { cwd: work });
    expect(bad).toMatchObject({
      code: 2,
      stdout: '',
      stderr:
        'teamwire-example: --teammates must be a whole number from 1 to 8 (got 9) (see --help)\n',
    });
    const unknown = await runCli(['--frobnicate'], { cwd: work });
    expect(unknown).toMatchObject({
      code: 2,
      stderr: "teamwire-example: unknown option '--frobnicate' (see --help)\n",
    });
    const help = await runCli(['--', '--help'], { cwd: work });
    expect(help).toMatchObject({ code: 0, stdout: HELP, stderr: '' });
    const fixHelp = await runCli(['fix', '-h'], { cwd: work });
    expect(fixHelp).toMatchObject({ code: 0, stdout: helpText('fix'), stderr: '' });
  });
});
