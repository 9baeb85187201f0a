import { createRequire } from 'node:module';
import { TeamError } from '@teamwire/core';
import { isUsageError, parseCommandLine, usageError } from './args.js';
import type { CliCommand, CommandIo } from './commands/command.js';
import { COMMANDS } from './commands/registry.js';

/** The text of `teamwire --help`. */
export function mainHelp(commands: readonly CliCommand[]): string {
  const width = Math.max(...commands.map((c) => c.name.length)) + 2;
  return `teamwire — run and look at your teamwire teams from the command line

Usage:
  teamwire <command> [options]

Commands:
${commands.map((c) => `  ${c.name.padEnd(width)}${c.summary}`).join('\n')}

Every command takes --dir <state folder> (a JSONL team, @teamwire/storage) or --store
postgres://… (@teamwire/postgres), and --team <id>; relative paths are resolved against the
current directory. \`teamwire <command> --help\` shows its options.

Exit codes: 0 done, 1 failed (a TeamError code and a line on stderr), 2 wrong command line.
`;
}

function version(): string {
  const require = createRequire(import.meta.url);
  return (require('../package.json') as { version: string }).version;
}

/** One line on stderr: `teamwire <command>: CODE: message`. */
function describe(error: unknown): string {
  const text = TeamError.isInstance(error)
    ? `${error.code}: ${error.message}`
    : error instanceof Error
      ? error.message
      : String(error);
  return text.replace(/\s*\n\s*/g, ' ');
}

/** Runs `teamwire <argv>`; resolves with the exit code. */
export async function main(argv: readonly string[], io: CommandIo): Promise<number> {
  const [name, ...rest] = argv;
  if (name === undefined || name === '--help' || name === '-h' || name === 'help') {
    (name === undefined ? io.stderr : io.stdout).write(mainHelp(COMMANDS));
    return name === undefined ? 2 : 0;
  }
  if (name === '--version' || name === '-v') {
    io.stdout.write(`${version()}\n`);
    return 0;
  }
  const command = COMMANDS.find((c) => c.name === name);
  const label = command === undefined ? 'teamwire' : `teamwire ${command.name}`;
  try {
    if (command === undefined) {
      throw usageError(
        `unknown command ${JSON.stringify(name.slice(0, 64))} (commands: ${COMMANDS.map((c) => c.name).join(', ')})`,
      );
    }
    const values = parseCommandLine(rest, command.options);
    if (values.help === true) {
      io.stdout.write(command.help);
      return 0;
    }
    return await command.run(values, io);
  } catch (error) {
    const usage = isUsageError(error);
    io.stderr.write(`${label}: ${describe(error)}${usage ? ` (see ${label} --help)` : ''}\n`);
    return usage ? 2 : 1;
  }
}
