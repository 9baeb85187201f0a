/** Command-line arguments of `teamwire-example`. */
export type Command =
  | { command: 'help' }
  | {
      command: 'review';
      dir: string;
      teammates: number;
      model?: string;
      protocol: 'xml' | 'json' | 'tool-call';
      resume?: string;
      stateDir: string;
      report: string;
      durability: 'fsync' | 'buffered';
      plain: boolean;
      paceMs: number;
    }
  | { command: 'inspect'; teamId: string; stateDir: string };

/** A bad command line; the CLI prints `message` on one line and exits 2. */
export class UsageError extends Error {
  override name = 'UsageError';
}

export const HELP = `teamwire-example — review a directory with a team of agents

Usage:
  teamwire-example [options]            review a directory
  teamwire-example inspect <teamId>     print a team's roster, board and transcripts

Options:
  --dir <path>              directory to review (default: the current directory)
  --teammates <n>           number of reviewers, 1-8 (default: 3)
  --model <spec>            a real LLM instead of the offline policy model, e.g.
                            openai:gpt-4.1-mini (OPENAI_API_KEY, OPENAI_BASE_URL),
                            anthropic:claude-sonnet-4-5 (ANTHROPIC_API_KEY)
  --protocol <format>       wire format of team mail: xml (default), json, tool-call
  --resume <teamId>         continue a team that was stopped or killed
  --state-dir <path>        where teams live (default: .teamwire)
  --report <path>           where the report is written (default: team-report.md)
  --durability <mode>       fsync (default: every answer is on disk) or buffered (faster, a
                            crash may lose the last writes)
  --plain                   plain timestamped lines even on a terminal
  --pace <ms>               pause the offline model before each step, to watch the board
                            (default: 0)
  -h, --help                this text

The default model is an offline, deterministic policy — not an LLM — that drives the real
runtime (mailboxes, task board, transcripts, event hub) with no network and no API key.
`;

const PROTOCOLS = ['xml', 'json', 'tool-call'] as const;

export function parseArgs(argv: readonly string[], options: { cwd: string }): Command {
  const args = [...argv];
  if (args.includes('-h') || args.includes('--help')) return { command: 'help' };
  let stateDir = '.teamwire';
  if (args[0] === 'inspect') {
    args.shift();
    let teamId: string | undefined;
    while (args.length > 0) {
      const arg = args.shift() as string;
      if (arg === '--state-dir') stateDir = value(arg, args);
      else if (arg.startsWith('-')) throw new UsageError(`unknown option ${arg} for inspect`);
      else if (teamId) throw new UsageError(`unexpected argument ${arg}`);
      else teamId = arg;
    }
    if (!teamId) throw new UsageError('inspect needs a team id: teamwire-example inspect <teamId>');
    return { command: 'inspect', teamId, stateDir };
  }
  const out: Extract<Command, { command: 'review' }> = {
    command: 'review',
    dir: options.cwd,
    teammates: 3,
    protocol: 'xml',
    stateDir,
    report: 'team-report.md',
    durability: 'fsync',
    plain: false,
    paceMs: 0,
  };
  while (args.length > 0) {
    const arg = args.shift() as string;
    switch (arg) {
      case '--dir':
        out.dir = value(arg, args);
        break;
      case '--teammates': {
        const raw = value(arg, args);
        const n = Number(raw);
        if (!Number.isInteger(n) || n < 1 || n > 8) {
          throw new UsageError(`--teammates must be a whole number from 1 to 8 (got ${raw})`);
        }
        out.teammates = n;
        break;
      }
      case '--model':
        out.model = value(arg, args);
        break;
      case '--protocol': {
        const raw = value(arg, args);
        if (!(PROTOCOLS as readonly string[]).includes(raw)) {
          throw new UsageError(`--protocol must be one of ${PROTOCOLS.join(', ')} (got ${raw})`);
        }
        out.protocol = raw as (typeof PROTOCOLS)[number];
        break;
      }
      case '--resume':
        out.resume = value(arg, args);
        break;
      case '--state-dir':
        out.stateDir = value(arg, args);
        break;
      case '--report':
        out.report = value(arg, args);
        break;
      case '--durability': {
        const raw = value(arg, args);
        if (raw !== 'fsync' && raw !== 'buffered') {
          throw new UsageError(`--durability must be fsync or buffered (got ${raw})`);
        }
        out.durability = raw;
        break;
      }
      case '--plain':
        out.plain = true;
        break;
      case '--pace': {
        const raw = value(arg, args);
        const n = Number(raw);
        if (!Number.isInteger(n) || n < 0 || n > 60_000) {
          throw new UsageError(
            `--pace must be a whole number of milliseconds from 0 to 60000 (got ${raw})`,
          );
        }
        out.paceMs = n;
        break;
      }
      default:
        throw new UsageError(
          arg.startsWith('-') ? `unknown option ${arg}` : `unexpected argument ${arg}`,
        );
    }
  }
  return out;
}

function value(flag: string, args: string[]): string {
  const next = args.shift();
  if (next === undefined || next.startsWith('--')) throw new UsageError(`${flag} needs a value`);
  return next;
}
