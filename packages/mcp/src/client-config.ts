/** How a client reaches one member: over HTTP with its token, or by starting a stdio server. */
export type McpClientTarget =
  | {
      /** The server entry's name in the client's configuration (e.g. `teamwire-alice`). */
      name: string;
      /** The HTTP endpoint, e.g. `http://127.0.0.1:43117/mcp`. */
      url: string;
      /** The member's bearer token. */
      token: string;
    }
  | {
      /** The server entry's name in the client's configuration. */
      name: string;
      /** The command that starts a stdio server for the member. */
      command: string;
      /** Its arguments. */
      args: readonly string[];
    };

/** Ready-to-paste client configuration; see {@link clientConfig}. */
export interface McpClientConfig {
  /** A `claude mcp add ...` command line for Claude Code. */
  claudeCode: string;
  /** The `mcpServers` entry of Cursor's `mcp.json` (`~/.cursor/mcp.json` or `.cursor/mcp.json`). */
  cursor: {
    /** One entry, named after the target. */
    mcpServers: Record<string, unknown>;
  };
}

/** Quotes `value` for a POSIX shell when it needs it. */
function shellQuote(value: string): string {
  return /^[A-Za-z0-9_@%+=:,./-]+$/.test(value) ? value : `'${value.replace(/'/g, `'\\''`)}'`;
}

/**
 * The configuration that connects Claude Code and Cursor to a member: for HTTP, the endpoint with
 * an `Authorization` header carrying the member's token; for stdio, the command that starts a
 * server for it. The token is a secret: print it only where the person running the team reads it.
 */
export function clientConfig(target: McpClientTarget): McpClientConfig {
  if ('url' in target) {
    return {
      claudeCode: [
        'claude mcp add --transport http',
        shellQuote(target.name),
        shellQuote(target.url),
        '--header',
        shellQuote(`Authorization: Bearer ${target.token}`),
      ].join(' '),
      cursor: {
        mcpServers: {
          [target.name]: {
            url: target.url,
            headers: { Authorization: `Bearer ${target.token}` },
          },
        },
      },
    };
  }
  return {
    claudeCode: [
      'claude mcp add',
      shellQuote(target.name),
      '--',
      shellQuote(target.command),
      ...target.args.map(shellQuote),
    ].join(' '),
    cursor: {
      mcpServers: { [target.name]: { command: target.command, args: [...target.args] } },
    },
  };
}
