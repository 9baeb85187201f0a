import type { OptionSpec, ParsedValues } from '../args.js';

/** What a command runs with: the process's streams, directory, environment and stop signal. */
export interface CommandIo {
  /** Machine or human output (for `mcp`, nothing but MCP). */
  stdout: NodeJS.WritableStream;
  /** Diagnostics, one line each. */
  stderr: NodeJS.WritableStream;
  /** For `mcp`: where the client's requests come from. */
  stdin: NodeJS.ReadableStream;
  /** The caller's working directory: every path is resolved against it. */
  cwd: string;
  env: NodeJS.ProcessEnv;
  /** Aborted on SIGINT / SIGTERM. */
  signal: AbortSignal;
}

/** One `teamwire <name>` command: a module under `commands/`, listed in `registry.ts`. */
export interface CliCommand {
  /** The word after `teamwire`. */
  name: string;
  /** One line for `teamwire --help`. */
  summary: string;
  /** The text of `teamwire <name> --help`. */
  help: string;
  /** Its options (`--help` is added to every command). */
  options: OptionSpec;
  /** Runs it; resolves with the exit code. Throws a `TeamError` for a failure. */
  run(values: ParsedValues, io: CommandIo): Promise<number>;
}
