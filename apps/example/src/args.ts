import { type ParseArgsConfig, parseArgs as parseNodeArgs } from 'node:util';
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
  | { command: 'help' }
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

export const HELP = `teamwire-example — review a directory with a team of agents

Usage:
  teamwire-example [options]            review a directory
  teamwire-example fix [options]        write and commit each folder's REVIEW.md, each reviewer
                                        in its own git worktree of a scratch clone of --dir,
                                        and merge them into the branch teamwire-fix/<teamId>
  teamwire-example web --team <teamId> [--store <url>] [--port <port>]
                                        watch a team's dashboard, read-only, from another
                                        process (a running or a stopped team)
  teamwire-example worker --store <url> --team <teamId>
                                        run reviewers of a team kept in PostgreSQL (on this or
                                        another machine: it needs the reviewed directory at the
                                        same path); exits when the review is done

Options:
  --dir <path>              directory to review (default: the current directory)
  --teammates <n>           number of reviewers, 1-8 (default: 3; fix: one per folder)
  --model <spec>            a real LLM instead of the offline policy model, e.g.
                            openai:gpt-4.1-mini (OPENAI_API_KEY, OPENAI_BASE_URL),
                            anthropic:claude-sonnet-4-5 (ANTHROPIC_API_KEY)
  --context-window <tokens> the model's context window: past 75% of it a member's older
                            conversation is compacted into a summary (default: by --model
                            provider, e.g. 200000 for anthropic, 128000 for openai; offline
                            24000, for the reviewers)
  --protocol <format>       wire format of team mail: xml (default), json, tool-call
  --resume <teamId>         continue a team that was stopped or killed
  --state-dir <path>        where teams live (default: .teamwire)
  --report <path>           where the report is written (default: team-report.md)
  --durability <mode>       fsync (default: every answer is on disk) or buffered (faster, a
                            crash may lose the last writes)
  --plain                   plain timestamped lines even on a terminal
  --pace <ms>               pause the offline model before each step, to watch the board
                            (default: 0)
  --store <url>             keep the team in PostgreSQL instead of <state-dir>:
                            postgres://[user[:password]@]host[:port]/database
  --workers <n>             run the reviewers in n worker processes, 1-8 (needs --store);
                            this process runs the lead
  --chaos                   SIGKILL one worker mid-run; the others take its reviewers over
                            (needs --workers 2 or more)
  --mcp                     add a member "coder" run by an MCP client (Claude Code, Cursor,
                            ...), served over HTTP on 127.0.0.1; prints the configuration to
                            paste and keeps serving after the review until Ctrl-C (not with
                            --workers: serve it with teamwire mcp --store <url> --team <teamId>
                            --member coder)
  --mcp-port <port>         the port of --mcp: the team's one HTTP edge, shared with --web
                            (default: any free port)
  --web                     serve the team's web dashboard on 127.0.0.1 and print its URL
                            (with its access token); keeps serving after the run until Ctrl-C
  --web-port <port>         the port of --web: the team's one HTTP edge, shared with --mcp
                            (default: any free port)
  -h, --help                this text

Web options (teamwire-example web):
  --team <teamId>           the team to watch
  --state-dir <path>        as above
  --store <url>             the PostgreSQL URL the team was started with
  --port <port>             the dashboard's port (default: any free port)

Worker options:
  --store <url>             the PostgreSQL URL the team was started with
  --team <teamId>           the team to work for
  --pace <ms>               as above

The default model is an offline, deterministic policy — not an LLM — that drives the real
runtime (mailboxes, task board, transcripts, event hub) with no network and no API key.
`;

const PROTOCOLS = ['xml', 'json', 'tool-call'] as const;

type OptionsConfig = NonNullable<ParseArgsConfig['options']>;

const HELP_OPTION = { help: { type: 'boolean', short: 'h' } } as const;

const REVIEW_OPTIONS = {
  dir: { type: 'string' },
  teammates: { type: 'string' },
  model: { type: 'string' },
  'context-window': { type: 'string' },
  protocol: { type: 'string' },
  resume: { type: 'string' },
  'state-dir': { type: 'string' },
  report: { type: 'string' },
  durability: { type: 'string' },
  plain: { type: 'boolean' },
  pace: { type: 'string' },
  store: { type: 'string' },
  workers: { type: 'string' },
  chaos: { type: 'boolean' },
  mcp: { type: 'boolean' },
  'mcp-port': { type: 'string' },
  web: { type: 'boolean' },
  'web-port': { type: 'string' },
  ...HELP_OPTION,
} as const satisfies OptionsConfig;

const {
  teammates: _teammates,
  store: _store,
  workers: _workers,
  chaos: _chaos,
  mcp: _mcp,
  'mcp-port': _mcpPort,
  ...FIX_OPTIONS
} = REVIEW_OPTIONS;

/** Why `fix` has no `--store`, `--workers`, `--chaos` or `--mcp`. */
const FIX_HINTS: Record<string, string> = Object.fromEntries([
  ...['store', 'workers', 'chaos'].map((name) => [
    name,
    `--${name} is for the review only: fix's reviewers work in git worktrees of this machine, which a team spread over processes cannot give them`,
  ]),
  ...['mcp', 'mcp-port'].map((name) => [name, `--${name} is for the review only`]),
]);

const WORKER_OPTIONS = {
  store: { type: 'string' },
  team: { type: 'string' },
  pace: { type: 'string' },
  ...HELP_OPTION,
} as const satisfies OptionsConfig;

/** The form `--store` takes, for messages. */
export const STORE_URL_FORM = 'postgres://[user[:password]@]host[:port]/database';

const WEB_OPTIONS = {
  team: { type: 'string' },
  'state-dir': { type: 'string' },
  store: { type: 'string' },
  port: { type: 'string' },
  ...HELP_OPTION,
} as const satisfies OptionsConfig;

export function parseArgs(argv: readonly string[], options: { cwd: string }): Command {
  // `pnpm run demo -- --dir x` passes its `--` along; it ends pnpm's options, not ours
  const args = argv[0] === '--' ? argv.slice(1) : [...argv];
  if (args[0] === 'fix') return fixCommand(args.slice(1), options.cwd);
  if (args[0] === 'worker') return workerCommand(args.slice(1));
  if (args[0] === 'web') return webCommand(args.slice(1));
  return reviewCommand(args, options.cwd);
}

function workerCommand(args: string[]): Command {
  const read = readStrict(args, WORKER_OPTIONS, { positionals: false, context: ' for worker' });
  if (!read.parsed) return read.explained;
  const { values } = read.parsed;
  if (values.help) return { command: 'help' };
  if (values.store === undefined) {
    throw new UsageError(`worker needs --store ${STORE_URL_FORM}: the database the team lives in`);
  }
  if (values.team === undefined) {
    throw new UsageError('worker needs --team <teamId>: the id of the team the review started');
  }
  return {
    command: 'worker',
    store: storeUrl(values.store),
    teamId: values.team,
    paceMs: pace(values.pace),
  };
}

function port(raw: string | undefined, option: string): number {
  return wholeNumber(raw, 0, { min: 0, max: 65_535 }, (value) => {
    return `${option} must be a port number from 0 to 65535 (got ${value})`;
  });
}

function webCommand(args: string[]): Command {
  const read = readStrict(args, WEB_OPTIONS, { positionals: false, context: ' for web' });
  if (!read.parsed) return read.explained;
  const { values } = read.parsed;
  if (values.help) return { command: 'help' };
  if (values.team === undefined) {
    throw new UsageError('web needs --team <teamId>: the team to watch');
  }
  const store = values.store === undefined ? undefined : storeUrl(values.store);
  if (store !== undefined && values['state-dir'] !== undefined) {
    throw new UsageError(
      '--state-dir is for the JSONL store; with --store the team lives in PostgreSQL',
    );
  }
  return {
    command: 'web',
    teamId: values.team,
    stateDir: values['state-dir'] ?? '.teamwire',
    store,
    port: port(values.port, '--port'),
  };
}

/** Checks a `--store` value: a PostgreSQL URL with a host. */
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

function contextWindow(raw: string | undefined): number | undefined {
  if (raw === undefined) return undefined;
  const { min, max } = CONTEXT_WINDOW_RANGE;
  return wholeNumber(raw, 0, { min, max }, (value) => {
    return `--context-window must be a whole number of tokens from ${min} to ${max} (got ${value})`;
  });
}

function pace(raw: string | undefined): number {
  return wholeNumber(raw, 0, { min: 0, max: 60_000 }, (value) => {
    return `--pace must be a whole number of milliseconds from 0 to 60000 (got ${value})`;
  });
}

function fixCommand(args: string[], cwd: string): Command {
  const read = readStrict(args, FIX_OPTIONS, {
    positionals: false,
    context: ' for fix',
    hints: FIX_HINTS,
  });
  if (!read.parsed) return read.explained;
  const { values } = read.parsed;
  if (values.help) return { command: 'help' };
  const review = reviewCommand(
    Object.entries(values).flatMap(([key, value]) =>
      value === true ? [`--${key}`] : typeof value === 'string' ? [`--${key}=${value}`] : [],
    ),
    cwd,
  );
  if (review.command !== 'review') return review;
  if (review.contextWindow !== undefined && review.model === undefined && !review.resume) {
    throw new UsageError(
      "fix's --context-window needs --model: on the offline policy model the fix team keeps its whole conversation",
    );
  }
  const {
    teammates: _unused,
    command: _review,
    store: _noStore,
    workers: _noWorkers,
    chaos: _noChaos,
    mcp: _noMcp,
    ...rest
  } = review;
  return { ...rest, command: 'fix' };
}

function reviewCommand(args: string[], cwd: string): Command {
  const read = readStrict(args, REVIEW_OPTIONS, { positionals: false, context: '' });
  if (!read.parsed) return read.explained;
  const { values } = read.parsed;
  if (values.help) return { command: 'help' };
  const protocol = values.protocol ?? 'xml';
  if (!(PROTOCOLS as readonly string[]).includes(protocol)) {
    throw new UsageError(`--protocol must be one of ${PROTOCOLS.join(', ')} (got ${protocol})`);
  }
  const durability = values.durability ?? 'fsync';
  if (durability !== 'fsync' && durability !== 'buffered') {
    throw new UsageError(`--durability must be fsync or buffered (got ${durability})`);
  }
  const store = values.store === undefined ? undefined : storeUrl(values.store);
  if (store !== undefined && values['state-dir'] !== undefined) {
    throw new UsageError(
      '--state-dir is for the JSONL store; with --store the team lives in PostgreSQL',
    );
  }
  if (store !== undefined && values.durability !== undefined) {
    throw new UsageError(
      '--durability is for the JSONL store; PostgreSQL makes every write durable when it commits',
    );
  }
  const workers =
    values.workers === undefined
      ? undefined
      : wholeNumber(values.workers, 1, { min: 1, max: 8 }, (raw) => {
          return `--workers must be a whole number from 1 to 8 (got ${raw})`;
        });
  if (workers !== undefined && store === undefined) {
    throw new UsageError(
      `--workers needs --store ${STORE_URL_FORM}: the workers share the team through PostgreSQL`,
    );
  }
  if (values['mcp-port'] !== undefined && values.mcp !== true) {
    throw new UsageError('--mcp-port needs --mcp');
  }
  const mcp = values.mcp === true ? { port: port(values['mcp-port'], '--mcp-port') } : undefined;
  if (values['web-port'] !== undefined && values.web !== true) {
    throw new UsageError('--web-port needs --web');
  }
  const web = values.web === true ? { port: port(values['web-port'], '--web-port') } : undefined;
  if (mcp !== undefined && workers !== undefined) {
    throw new UsageError(
      '--mcp serves its member from this process; with --workers use teamwire mcp --store <url> --team <teamId> --member coder',
    );
  }
  const chaos = values.chaos ?? false;
  if (chaos && (workers ?? 0) < 2) {
    throw new UsageError(
      `--chaos needs --workers 2 or more, so that a worker survives to take the killed one's reviewers over (got ${workers === undefined ? 'no --workers' : `--workers ${workers}`})`,
    );
  }
  return {
    command: 'review',
    dir: values.dir ?? cwd,
    teammates: wholeNumber(values.teammates, 3, { min: 1, max: 8 }, (raw) => {
      return `--teammates must be a whole number from 1 to 8 (got ${raw})`;
    }),
    model: values.model,
    contextWindow: contextWindow(values['context-window']),
    protocol: protocol as (typeof PROTOCOLS)[number],
    resume: values.resume,
    stateDir: values['state-dir'] ?? '.teamwire',
    report: values.report ?? 'team-report.md',
    durability,
    plain: values.plain ?? false,
    paceMs: pace(values.pace),
    store,
    workers,
    chaos,
    mcp,
    web,
  };
}

/**
 * Parses `args` strictly; a mistake is explained (a `UsageError`), and asking for help anywhere on
 * the line wins over it (`explained`).
 */
function readStrict<const O extends OptionsConfig, const P extends boolean>(
  args: string[],
  options: O,
  where: { positionals: P; context: string; hints?: Record<string, string> },
) {
  try {
    return {
      parsed: parseNodeArgs({ args, options, strict: true, allowPositionals: where.positionals }),
    };
  } catch (error) {
    return { parsed: undefined, explained: explain(error, args, options, where) };
  }
}

function wholeNumber(
  raw: string | undefined,
  fallback: number,
  range: { min: number; max: number },
  message: (raw: string) => string,
): number {
  if (raw === undefined) return fallback;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < range.min || n > range.max) throw new UsageError(message(raw));
  return n;
}

/**
 * Turns node's parse error into this CLI's one-line message. Node names the offending argument
 * only in prose, so the arguments are read again, leniently, as tokens to find it. Asking for
 * help wins over any mistake on the same line.
 */
function explain(
  error: unknown,
  args: string[],
  options: OptionsConfig,
  where: { positionals: boolean; context: string; hints?: Record<string, string> },
): Command {
  const code = (error as { code?: unknown } | null)?.code;
  if (typeof code !== 'string' || !code.startsWith('ERR_PARSE_ARGS_')) throw error;
  const { tokens } = parseNodeArgs({
    args,
    options,
    strict: false,
    allowPositionals: true,
    tokens: true,
  });
  if (tokens.some((t) => t.kind === 'option' && t.name === 'help')) return { command: 'help' };
  for (const token of tokens) {
    if (token.kind === 'positional' && !where.positionals) {
      throw new UsageError(`unexpected argument ${token.value}`);
    }
    if (token.kind !== 'option') continue;
    const type = options[token.name]?.type;
    if (type === undefined) {
      const hints = where.hints ?? {};
      if (Object.hasOwn(hints, token.name)) throw new UsageError(hints[token.name] as string);
      throw new UsageError(`unknown option ${args[token.index]}${where.context}`);
    }
    if (type === 'boolean' && token.value !== undefined) {
      throw new UsageError(`${token.rawName} takes no value (got ${args[token.index]})`);
    }
    if (type !== 'string') continue;
    const value = token.value;
    if (value === undefined || (!token.inlineValue && value.startsWith('--'))) {
      throw new UsageError(`${token.rawName} needs a value`);
    }
    if (!token.inlineValue && value.startsWith('-')) {
      // node takes a value that starts with a dash only when it is attached with `=`
      throw new UsageError(
        `${token.rawName} needs a value; to pass ${value}, write ${token.rawName}=${value}`,
      );
    }
  }
  throw new UsageError((error as Error).message.split('\n')[0] ?? String(error));
}
