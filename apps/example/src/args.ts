import { CommanderError, Option, Command as Program } from 'commander';
import { CONTEXT_WINDOW_RANGE } from './context-window.js';

/** The options the review and the fix command share. */
interface TeamOptions {
  dir: string;
  model?: string | undefined;
  protocol: 'xml' | 'json' | 'tool-call';
  resume?: string | undefined;
  stateDir: string;
  report: string;
  durability: 'fsync' | 'buffered';
  plain: boolean;
  paceMs: number;
  /** `--context-window`: the model's context window in tokens; absent: the model's default. */
  contextWindow?: number | undefined;
  /** `--web`: serve the team's dashboard on 127.0.0.1 at this port (0: any). */
  web?: { port: number } | undefined;
}

/** Where and how a review keeps its team when it is not a JSONL folder. */
interface ProcessOptions {
  /** `--store`: a PostgreSQL URL; the team, its transcripts and settings live there. */
  store?: string | undefined;
  /** `--workers`: worker processes that run the reviewers (needs `store`); the main one runs the lead. */
  workers?: number | undefined;
  /** `--chaos`: SIGKILL one worker mid-run (needs `workers` >= 2). */
  chaos: boolean;
  /** `--mcp`: a member run by an MCP client joins, served over HTTP on 127.0.0.1 at this port (0: any). */
  mcp?: { port: number } | undefined;
}

/** Command-line arguments of `teamwire-example`. */
export type Command =
  /** `--help` (or `help [command]`): `text` is the help of the command it was asked of. */
  | { command: 'help'; text: string }
  | ({ command: 'review'; teammates: number } & TeamOptions & ProcessOptions)
  | ({
      command: 'fix';
      /**
       * Test-only, never set from the command line: a root file every reviewer also writes, so
       * that their branches conflict when merged.
       */
      conflictFile?: string | undefined;
      /**
       * Test-only, never set from the command line: the team's limit of live teammates (core's
       * `maxMembers`), lower than its default so a test has more folders than places.
       */
      maxMembers?: number | undefined;
      /**
       * `--approve`: each reviewer's commit waits for a decision of the host (the terminal, or the
       * dashboard with `--web`); `expiresInMs` (`--approve-expires`): one left undecided that long
       * is rejected as expired.
       */
      approve?: { expiresInMs?: number | undefined } | undefined;
      /** `--store`: a PostgreSQL URL; the team, its transcripts and settings live there. */
      store?: string | undefined;
      /**
       * `--workers`: worker processes that run the reviewers (needs `store`), each where the
       * scratch repository is reachable; this process runs the lead.
       */
      workers?: number | undefined;
    } & TeamOptions)
  | {
      command: 'web';
      teamId: string;
      stateDir: string;
      /** The PostgreSQL URL the team lives in, when it is not a JSONL folder. */
      store?: string | undefined;
      port: number;
    }
  | {
      command: 'worker';
      /** The PostgreSQL URL the team lives in. */
      store: string;
      teamId: string;
      paceMs: number;
    };

/** The arguments of a review (the default command). */
export type ReviewCommand = Extract<Command, { command: 'review' }>;

/** A bad command line; the CLI prints `message` on one line and exits 2. */
export class UsageError extends Error {
  override name = 'UsageError';
}

/** The form `--store` takes, for messages. */
export const STORE_URL_FORM = 'postgres://[user[:password]@]host[:port]/database';

/** `url` with its password, if any, replaced by `***` (for messages and summaries). */
export function redactUrl(raw: string): string {
  try {
    const url = new URL(raw);
    if (!url.password) return raw;
    url.password = '***';
    return url.toString();
  } catch {
    // not a URL node can read; mask what looks like `scheme://user:password@` all the same
    return raw.replace(/^([a-z][a-z0-9+.-]*:\/\/[^:/@]*):[^@/]*@/i, '$1:***@');
  }
}

const NAME = 'teamwire-example';
const PROTOCOLS = ['xml', 'json', 'tool-call'] as const;

const OFFLINE_MODEL = `
The default model is an offline, deterministic policy — not an LLM — that drives the real
runtime (mailboxes, task board, transcripts, event hub) with no network and no API key.
`;

// Value parsers: each refuses a bad value with a one-line UsageError of its own, which commander
// passes through untouched (so a password never reaches commander's "argument ... is invalid").

function wholeNumber(option: string, range: { min: number; max: number }, what: string) {
  return (raw: string): number => {
    const n = /^\d+$/.test(raw) ? Number(raw) : Number.NaN;
    if (!(n >= range.min && n <= range.max)) {
      throw new UsageError(
        `${option} must be ${what} from ${range.min} to ${range.max} (got ${raw})`,
      );
    }
    return n;
  };
}

/** `--approve-expires`: from a tenth of a second to a day. */
export const APPROVE_EXPIRES_RANGE = { min: 100, max: 86_400_000 } as const;

const count = (option: string) => wholeNumber(option, { min: 1, max: 8 }, 'a whole number');
const port = (option: string) => wholeNumber(option, { min: 0, max: 65_535 }, 'a port number');

/** A value that is not the next option: `--dir --plain` forgot the directory. */
function text(option: string) {
  return (raw: string): string => {
    if (raw.startsWith('-')) throw new UsageError(`${option} needs a value, not ${raw}`);
    return raw;
  };
}

/** A `--store` value: a PostgreSQL URL with a host (shown without its password when refused). */
function storeUrl(raw: string): string {
  let url: URL | undefined;
  try {
    url = new URL(raw);
  } catch {
    url = undefined;
  }
  if (!url || (url.protocol !== 'postgres:' && url.protocol !== 'postgresql:') || !url.hostname) {
    throw new UsageError(
      `--store must be a PostgreSQL URL, ${STORE_URL_FORM} (got ${redactUrl(raw)})`,
    );
  }
  return raw;
}

const option = (flags: string, description: string) => new Option(flags, description);
/** A default, shown in the help as it is typed. */
const plain = <T extends string | number>(o: Option, value: T) => o.default(value, String(value));
const stateDir = () =>
  plain(option('--state-dir <path>', 'where teams live'), '.teamwire').argParser(
    text('--state-dir'),
  );
const store = (description: string) => option('--store <url>', description).argParser(storeUrl);
const pace = () =>
  plain(
    option('--pace <ms>', 'pause the offline model before each step, to watch the board'),
    0,
  ).argParser(wholeNumber('--pace', { min: 0, max: 60_000 }, 'a whole number of milliseconds'));

/** The options of the review and the fix; `review` adds those of a team spread over processes. */
function teamOptions(command: Program, cwd: string, review: boolean): void {
  const { min, max } = CONTEXT_WINDOW_RANGE;
  const options = [
    option('--dir <path>', 'directory to review')
      .default(cwd, 'the current directory')
      .argParser(text('--dir')),
    review &&
      plain(option('--teammates <n>', 'number of reviewers, 1-8'), 3).argParser(
        count('--teammates'),
      ),
    option(
      '--model <spec>',
      'a real LLM instead of the offline policy model, e.g. openai:gpt-4.1-mini (OPENAI_API_KEY, OPENAI_BASE_URL), anthropic:claude-sonnet-4-5 (ANTHROPIC_API_KEY)',
    ).argParser(text('--model')),
    option(
      '--context-window <tokens>',
      `the model's context window, ${min}-${max}: past 75% of it a member's older conversation is compacted into a summary (default: by --model provider, e.g. 200000 for anthropic, 128000 for openai; offline 24000, for the reviewers${review ? '' : '; fix needs --model for it'})`,
    ).argParser(wholeNumber('--context-window', { min, max }, 'a whole number of tokens')),
    plain(option('--protocol <format>', 'wire format of team mail').choices(PROTOCOLS), 'xml'),
    option('--resume <teamId>', 'continue a team that was stopped or killed').argParser(
      text('--resume'),
    ),
    review ? stateDir().conflicts('store') : stateDir(),
    plain(option('--report <path>', 'where the report is written'), 'team-report.md').argParser(
      text('--report'),
    ),
    plain(
      option(
        '--durability <mode>',
        'fsync: every answer is on disk; buffered: faster, a crash may lose the last writes',
      ).choices(['fsync', 'buffered']),
      'fsync',
    ).conflicts('store'),
    option('--plain', 'plain timestamped lines even on a terminal'),
    pace(),
    ...(review
      ? [
          store(
            `keep the team in PostgreSQL instead of --state-dir (then without --state-dir and --durability: every write is durable when it commits): ${STORE_URL_FORM}`,
          ),
          option(
            '--workers <n>',
            'run the reviewers in n worker processes, 1-8 (needs --store); this process runs the lead',
          ).argParser(count('--workers')),
          option(
            '--chaos',
            'SIGKILL one worker mid-run; the others take its reviewers over (needs --workers 2 or more)',
          ),
          option(
            '--mcp',
            'add a member "coder" run by an MCP client (Claude Code, Cursor, ...), served over HTTP on 127.0.0.1; prints the configuration to paste and keeps serving after the review until Ctrl-C (not with --workers: there, serve it with teamwire mcp --store <url> --team <teamId> --member coder)',
          ).conflicts('workers'),
          option(
            '--mcp-port <port>',
            "the port of --mcp: the team's one HTTP edge, shared with --web (default: any free port)",
          ).argParser(port('--mcp-port')),
        ]
      : // fix takes --store and --workers, not the others, and says why
        [
          store(
            `keep the team in PostgreSQL (the scratch repository stays under --state-dir on this machine): ${STORE_URL_FORM}`,
          ),
          option(
            '--workers <n>',
            'run the reviewers in n worker processes, 1-8 (needs --store); they run only where the scratch repository is, and this process runs the lead',
          ).argParser(count('--workers')),
          reviewOnly('--chaos', ''),
          reviewOnly('--mcp', ''),
          reviewOnly('--mcp-port <port>', ''),
          option(
            '--approve',
            "ask before each reviewer's commit: the CLI prints each request and reads the answers from stdin (y, n <reason>, <id> y, <id> n <reason>); with --web the dashboard can decide too",
          ).conflicts('store'),
          option(
            '--approve-expires <ms>',
            `with --approve: a commit left undecided this long is rejected as expired, ${APPROVE_EXPIRES_RANGE.min}-${APPROVE_EXPIRES_RANGE.max} (default: it waits)`,
          ).argParser(
            wholeNumber(
              '--approve-expires',
              APPROVE_EXPIRES_RANGE,
              'a whole number of milliseconds',
            ),
          ),
        ]),
    option(
      '--web',
      "serve the team's web dashboard on 127.0.0.1 and print its URL (with its access token); keeps serving after the run until Ctrl-C",
    ),
    option(
      '--web-port <port>',
      `the port of --web${review ? ": the team's one HTTP edge, shared with --mcp" : ''} (default: any free port)`,
    ).argParser(port('--web-port')),
  ];
  for (const declared of options) if (declared) command.addOption(declared);
}

/** An option of the review that `fix` refuses with the reason, hidden from fix's help. */
function reviewOnly(flags: string, why: string): Option {
  const name = flags.split(' ')[0] as string;
  return option(flags, '')
    .hideHelp()
    .argParser(() => {
      throw new UsageError(`${name} is for the review only${why}`);
    });
}

/** What commander hands the actions: the declared options, parsed. */
interface Values {
  dir: string;
  teammates?: number;
  model?: string;
  contextWindow?: number;
  protocol: (typeof PROTOCOLS)[number];
  resume?: string;
  stateDir: string;
  report: string;
  durability: 'fsync' | 'buffered';
  plain?: true;
  pace: number;
  store?: string;
  workers?: number;
  chaos?: true;
  mcp?: true;
  mcpPort?: number;
  web?: true;
  webPort?: number;
  team?: string;
  port?: number;
  approve?: true;
  approveExpires?: number;
}

/** Rules between options that commander's `.conflicts()` cannot say: one that needs another. */
function needs(rules: [broken: boolean, message: string][]): void {
  for (const [broken, message] of rules) if (broken) throw new UsageError(message);
}

function teamCommand(v: Values) {
  needs([[v.webPort !== undefined && !v.web, '--web-port needs --web']]);
  return {
    dir: v.dir,
    model: v.model,
    contextWindow: v.contextWindow,
    protocol: v.protocol,
    resume: v.resume,
    stateDir: v.stateDir,
    report: v.report,
    durability: v.durability,
    plain: v.plain === true,
    paceMs: v.pace,
    web: v.web ? { port: v.webPort ?? 0 } : undefined,
  };
}

function reviewCommand(v: Values): Command {
  const workers = v.workers;
  needs([
    [
      workers !== undefined && v.store === undefined,
      `--workers needs --store ${STORE_URL_FORM}: the workers share the team through PostgreSQL`,
    ],
    [v.mcpPort !== undefined && !v.mcp, '--mcp-port needs --mcp'],
    [
      v.chaos === true && (workers ?? 0) < 2,
      `--chaos needs --workers 2 or more, so that a worker survives to take the killed one's reviewers over (got ${workers === undefined ? 'no --workers' : `--workers ${workers}`})`,
    ],
  ]);
  return {
    command: 'review',
    teammates: v.teammates ?? 3,
    ...teamCommand(v),
    store: v.store,
    workers,
    chaos: v.chaos === true,
    mcp: v.mcp ? { port: v.mcpPort ?? 0 } : undefined,
  };
}

function fixCommand(v: Values): Command {
  needs([
    [
      v.contextWindow !== undefined && v.model === undefined && v.resume === undefined,
      "fix's --context-window needs --model: on the offline policy model the fix team keeps its whole conversation",
    ],
  ]);
  needs([[v.approveExpires !== undefined && !v.approve, '--approve-expires needs --approve']]);
  needs([
    [
      v.workers !== undefined && v.store === undefined,
      `--workers needs --store ${STORE_URL_FORM}: the workers share the team through PostgreSQL`,
    ],
  ]);
  return {
    command: 'fix',
    ...teamCommand(v),
    ...(v.store === undefined ? {} : { store: v.store }),
    ...(v.workers === undefined ? {} : { workers: v.workers }),
    ...(v.approve
      ? {
          approve: v.approveExpires === undefined ? {} : { expiresInMs: v.approveExpires },
        }
      : {}),
  };
}

/**
 * The command line of `teamwire-example`, declared once: commander parses it and writes the help
 * from it. Nothing is run here: the action of the command given sets `done`.
 */
function program(cwd: string, out: { text: string }, done: (command: Command) => void): Program {
  const root = new Program(NAME)
    .description('review a directory with a team of agents')
    .exitOverride()
    .configureOutput({
      writeOut: (text) => {
        out.text += text;
      },
      writeErr: () => {},
      outputError: () => {},
    })
    .configureHelp({ helpWidth: 100 })
    .helpOption('-h, --help', 'this text')
    .helpCommand('help [command]', 'the help of a command')
    .allowExcessArguments()
    .enablePositionalOptions()
    .addHelpText('after', OFFLINE_MODEL);
  teamOptions(root, cwd, true);
  root.action((values: Values, self: Program) => {
    done(reviewCommand(checked(self, values)));
  });

  const fix = root
    .command('fix')
    .description(
      "write and commit each folder's REVIEW.md, each reviewer (one per folder) in its own git worktree of a scratch clone of --dir, and merge them into the branch teamwire-fix/<teamId>",
    );
  teamOptions(fix, cwd, false);
  fix.action((values: Values, self: Program) => done(fixCommand(checked(self, values))));

  root
    .command('web')
    .description(
      "watch a team's dashboard, read-only, from another process: a stopped team, or one another process runs (its log is followed as it grows)",
    )
    .addOption(
      option('--team <teamId>', 'the team to watch')
        .makeOptionMandatory()
        .argParser(text('--team')),
    )
    .addOption(stateDir().conflicts('store'))
    .addOption(store(`the PostgreSQL URL the team was started with, ${STORE_URL_FORM}`))
    .addOption(
      option('--port <port>', "the dashboard's port (default: any free port)").argParser(
        port('--port'),
      ),
    )
    .action((values: Values, self: Program) => {
      const v = checked(self, values);
      done({
        command: 'web',
        teamId: v.team as string,
        stateDir: v.stateDir,
        store: v.store,
        port: v.port ?? 0,
      });
    });

  root
    .command('worker')
    .description(
      'run reviewers of a team kept in PostgreSQL (on this or another machine: it needs the reviewed directory at the same path); exits when the review is done',
    )
    .addOption(
      store(
        `the PostgreSQL URL the team was started with, ${STORE_URL_FORM}`,
      ).makeOptionMandatory(),
    )
    .addOption(
      option('--team <teamId>', 'the team to work for (the id the review printed)')
        .makeOptionMandatory()
        .argParser(text('--team')),
    )
    .addOption(pace())
    .action((values: Values, self: Program) => {
      const v = checked(self, values);
      done({
        command: 'worker',
        store: v.store as string,
        teamId: v.team as string,
        paceMs: v.pace,
      });
    });
  return root;
}

/** `values`, once no stray argument follows the options and no option came before a command. */
function checked(command: Program, values: Values): Values {
  const [stray] = command.args;
  if (stray !== undefined) throw new UsageError(`unexpected argument ${stray}`);
  const root = command.parent;
  const early = root?.options.find((o) => root.getOptionValueSource(o.attributeName()) === 'cli');
  if (early !== undefined) {
    throw new UsageError(
      `${early.long} comes before the command ${command.name()}; write ${NAME} ${command.name()} [options]`,
    );
  }
  return values;
}

/** `-h` or `--help` anywhere before a `--` that ends the options. */
function asksForHelp(args: readonly string[]): boolean {
  const end = args.indexOf('--');
  return (end === -1 ? args : args.slice(0, end)).some((a) => a === '-h' || a === '--help');
}

/**
 * Reads the command line: the command it asks for, or a `UsageError` with a one-line message.
 * Asking for help anywhere on the line wins over any mistake on it.
 */
export function parseArgs(argv: readonly string[], options: { cwd: string }): Command {
  // `pnpm run demo -- --dir x` passes its `--` along; it ends pnpm's options, not ours
  const args = argv[0] === '--' ? argv.slice(1) : [...argv];
  const out = { text: '' };
  let parsed: Command | undefined;
  const root = program(options.cwd, out, (command) => {
    parsed = command;
  });
  if (asksForHelp(args)) {
    const target = root.commands.find((c) => c.name() === args[0]) ?? root;
    target.outputHelp();
    return { command: 'help', text: out.text };
  }
  try {
    root.parse(args, { from: 'user' });
  } catch (error) {
    if (!(error instanceof CommanderError)) throw error;
    if (error.exitCode === 0) return { command: 'help', text: out.text };
    if (error.code === 'commander.help') {
      const names = root.commands.map((c) => c.name()).join(', ');
      throw new UsageError(`help takes a command: ${names} (got ${args[1]})`);
    }
    throw new UsageError(error.message.replace(/^error: /, '').replace(/\s*\n\s*/g, ' '));
  }
  if (parsed === undefined) throw new Error('no command ran');
  return parsed;
}

/** The help of `teamwire-example` (`command`: of one of its commands), as `--help` prints it. */
export function helpText(command?: 'fix' | 'web' | 'worker'): string {
  const asked = parseArgs(command === undefined ? ['--help'] : [command, '--help'], { cwd: '.' });
  return asked.command === 'help' ? asked.text : '';
}

/** The help `teamwire-example --help` prints. */
export const HELP = helpText();
