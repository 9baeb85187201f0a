import { type ParseArgsConfig, parseArgs } from 'node:util';
import { TeamError } from '@teamwire/core';

/*
 * Command lines are parsed with `node:util`'s `parseArgs` (strict: an unknown option or a stray
 * argument is refused), and every value is bounded before it is used.
 */

/** Bytes one command-line value may take (a path, a URL, a team id). */
export const ARG_BYTES_MAX = 4096;
/** Arguments one command line may have. */
export const ARG_COUNT_MAX = 64;

/** The options a command accepts, as `parseArgs` takes them. */
export type OptionSpec = NonNullable<ParseArgsConfig['options']>;

/** A command line a command cannot run with: one line on stderr, exit code 2. */
export function usageError(message: string): TeamError {
  return new TeamError('INVALID_ARGUMENT', message, { details: { usage: true } });
}

/** True for the errors {@link usageError} makes. */
export function isUsageError(error: unknown): boolean {
  return (
    TeamError.isInstance(error) &&
    error.code === 'INVALID_ARGUMENT' &&
    (error.details as { usage?: unknown } | undefined)?.usage === true
  );
}

/** The parsed values of a command line: strings and booleans by option name. */
export type ParsedValues = Record<string, string | boolean | undefined>;

/** Parses `argv` against `options` strictly; `--help` / `-h` is added to every command. */
export function parseCommandLine(argv: readonly string[], options: OptionSpec): ParsedValues {
  if (argv.length > ARG_COUNT_MAX) {
    throw usageError(`too many arguments (${argv.length}; at most ${ARG_COUNT_MAX})`);
  }
  for (const arg of argv) {
    if (Buffer.byteLength(arg, 'utf8') > ARG_BYTES_MAX) {
      throw usageError(`an argument is longer than ${ARG_BYTES_MAX} bytes`);
    }
  }
  try {
    const { values } = parseArgs({
      args: [...argv],
      options: { ...options, help: { type: 'boolean', short: 'h' } },
      strict: true,
      allowPositionals: false,
    });
    return values as ParsedValues;
  } catch (error) {
    // parseArgs says what is wrong in one sentence (`Unknown option '--x'`, ...)
    const message = error instanceof Error ? error.message.split('\n')[0] : String(error);
    throw usageError(message ?? 'invalid arguments');
  }
}

/** The string value of `name`, or undefined. */
export function stringOption(values: ParsedValues, name: string): string | undefined {
  const value = values[name];
  return typeof value === 'string' ? value : undefined;
}

/** The string value of `name`; a usage error naming the option when it is missing or empty. */
export function requiredOption(values: ParsedValues, name: string): string {
  const value = stringOption(values, name);
  if (value === undefined || value === '') throw usageError(`--${name} is required`);
  return value;
}
