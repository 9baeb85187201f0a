import { describe, expect, it } from 'vitest';
import { HELP, parseArgs, UsageError } from './args.js';
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
    expect(parseArgs(['worker', '--help'], { cwd })).toEqual({ command: 'help' });
  });

  it('lets a request for help win over a mistake on the same line', () => {
    expect(parseArgs(['--frobnicate', '-h'], { cwd })).toEqual({ command: 'help' });
    expect(parseArgs(['--teammates', '0', '--help'], { cwd })).toEqual({ command: 'help' });
    expect(parseArgs(['worker', '--dir', 'x', '--help'], { cwd })).toEqual({ command: 'help' });
    expect(parseArgs(['--dir', 'x', '--help'], { cwd })).toEqual({ command: 'help' });
  });

  it('skips the -- that `pnpm run demo -- ...` passes along, and takes --flag=value', () => {
    expect(parseArgs(['--', '--dir', 'src', '--plain'], { cwd })).toMatchObject({
      command: 'review',
      dir: 'src',
      plain: true,
    });
    expect(parseArgs(['--', 'fix'], { cwd })).toMatchObject({ command: 'fix', dir: cwd });
    expect(parseArgs(['--', '--help'], { cwd })).toEqual({ command: 'help' });
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
    [['--protocol', 'yaml'], '--protocol must be one of xml, json, tool-call (got yaml)'],
    [['--durability', 'never'], '--durability must be fsync or buffered (got never)'],
    [['--pace=-1'], '--pace must be a whole number of milliseconds from 0 to 60000 (got -1)'],
    [['--pace', '-1'], '--pace needs a value; to pass -1, write --pace=-1'],
    [
      ['--pace', '70000'],
      '--pace must be a whole number of milliseconds from 0 to 60000 (got 70000)',
    ],
    [['--dir'], '--dir needs a value'],
    [['--dir', '--plain'], '--dir needs a value'],
    [['--plain=yes'], '--plain takes no value (got --plain=yes)'],
    [['--frobnicate'], 'unknown option --frobnicate'],
    [['--frobnicate=1'], 'unknown option --frobnicate=1'],
    [['--plain', '-x'], 'unknown option -x'],
    [['stray'], 'unexpected argument stray'],
    [['--plain', 'stray', '--frobnicate'], 'unexpected argument stray'],
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
    [['--store'], '--store needs a value'],
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
      '--state-dir is for the JSONL store; with --store the team lives in PostgreSQL',
    ],
    [
      ['--store', 'postgres://h/d', '--durability', 'fsync'],
      '--durability is for the JSONL store; PostgreSQL makes every write durable when it commits',
    ],
    [
      ['fix', '--store', 'postgres://h/d'],
      "--store is for the review only: fix's reviewers work in git worktrees of this machine, which a team spread over processes cannot give them",
    ],
    [
      ['fix', '--chaos'],
      "--chaos is for the review only: fix's reviewers work in git worktrees of this machine, which a team spread over processes cannot give them",
    ],
    [
      ['worker', '--team', 'T1'],
      'worker needs --store postgres://[user[:password]@]host[:port]/database: the database the team lives in',
    ],
    [
      ['worker', '--store', 'postgres://h/d'],
      'worker needs --team <teamId>: the id of the team the review started',
    ],
    [
      ['worker', '--store', 'http://h/d', '--team', 'T1'],
      '--store must be a PostgreSQL URL, postgres://[user[:password]@]host[:port]/database (got http://h/d)',
    ],
    [
      ['worker', '--store', 'postgres://h/d', '--team', 'T1', '--dir', 'x'],
      'unknown option --dir for worker',
    ],
    [['worker', '--store', 'postgres://h/d', '--team', 'T1', 'extra'], 'unexpected argument extra'],
    [['--mcp-port', '4100'], '--mcp-port needs --mcp'],
    [
      ['--mcp', '--mcp-port', '70000'],
      '--mcp-port must be a port number from 0 to 65535 (got 70000)',
    ],
    [
      ['--mcp', '--store', 'postgres://h/d', '--workers', '2'],
      '--mcp serves its member from this process; with --workers use teamwire mcp --store <url> --team <teamId> --member coder',
    ],
    [['fix', '--mcp'], '--mcp is for the review only'],
    [['--web-port', '4200'], '--web-port needs --web'],
    [['web'], 'web needs --team <teamId>: the team to watch'],
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
    [['--context-window'], '--context-window needs a value'],
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
  });

  it('--mcp parses to a port', () => {
    expect(parseArgs(['--mcp'], { cwd })).toMatchObject({ command: 'review', mcp: { port: 0 } });
    expect(parseArgs(['--mcp', '--mcp-port', '4100'], { cwd })).toMatchObject({
      mcp: { port: 4100 },
    });
    expect(parseArgs(['--plain'], { cwd })).toMatchObject({ mcp: undefined });
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
      stderr: 'teamwire-example: unknown option --frobnicate (see --help)\n',
    });
    const help = await runCli(['--', '--help'], { cwd: work });
    expect(help).toMatchObject({ code: 0, stdout: HELP, stderr: '' });
  });
});
