import type { CliCommand } from './command.js';
import { inspectCommand } from './inspect.js';
import { mcpCommand } from './mcp.js';
import { serveCommand } from './serve.js';
import { verifyCommand } from './verify.js';
import { workerCommand } from './worker.js';

/** Every `teamwire` command, in the order `teamwire --help` lists them. A new one is one line. */
export const COMMANDS: readonly CliCommand[] = [
  serveCommand,
  mcpCommand,
  workerCommand,
  inspectCommand,
  verifyCommand,
];
