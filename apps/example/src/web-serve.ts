import { TeamError, type TeamService } from '@teamwire/core';
import { OPERATOR_AGENT } from '@teamwire/dashboard';
import { startTeamEdge, type TeamEdge } from '@teamwire/edge';
import { createTokenIssuer } from '@teamwire/mcp';
import { CODER_NAME, configLines, spawnCoder } from './mcp-serve.js';
import { type RunHooks, untilAborted } from './team-run.js';

/*
 * `--web` and `--mcp`: one HTTP edge (`@teamwire/edge`) next to the running team, on 127.0.0.1
 * and ONE port. With `--web` it serves the team's dashboard, where the person at the page steers
 * the team as the member `operator`; with `--mcp` it serves the `coder` member to an MCP client
 * (a coding agent such as Claude Code or Cursor) at `/mcp`, and prints the client configuration.
 * After the run it keeps serving until Ctrl-C.
 */

export { OPERATOR_AGENT };

/** Hooks of a run with `--web`, `--mcp` or both: one edge serves what they ask for. */
export function serveHooks(options: {
  /** `--web`: the dashboard, at this port (0: any). */
  web?: { port: number } | undefined;
  /** `--mcp`: the coder over MCP, at this port (0: any), its tokens signed with `secret()`. */
  mcp?: { port: number; secret: () => Promise<string> } | undefined;
  say: (line: string) => void;
  signal?: AbortSignal | undefined;
  /** The edge, once it serves (for tests): the page's URL, the MCP endpoint and coder's token. */
  onServing?: (serving: { url: string; mcpUrl: string; token: string | undefined }) => void;
}): RunHooks {
  const { web, mcp } = options;
  let edge: TeamEdge | undefined;
  return {
    async started(run) {
      const { team } = run;
      const port = onePort(web?.port, mcp?.port);
      let coderToken: string | undefined;
      let tokens: ReturnType<typeof createTokenIssuer> | undefined;
      if (mcp !== undefined) {
        await spawnCoder(team);
        tokens = createTokenIssuer({ secret: await mcp.secret(), teamId: team.teamId });
        coderToken = tokens.tokenFor(CODER_NAME);
      }
      edge = await startTeamEdge({
        team,
        log: run.log,
        hub: run.hub,
        port,
        dashboard: web === undefined ? false : { transcripts: run.transcripts },
        mcp: tokens === undefined ? undefined : { tokens },
      });
      if (web !== undefined) {
        options.say(
          `web: the dashboard is at ${edge.url} (the token in it is the key; keep it private)`,
        );
      }
      if (coderToken !== undefined) {
        for (const line of configLines({
          url: edge.mcpUrl,
          token: coderToken,
          member: CODER_NAME,
        })) {
          options.say(line);
        }
      }
      options.onServing?.({ url: edge.url, mcpUrl: edge.mcpUrl, token: coderToken });
    },
    async serveAfter(_team: TeamService) {
      const { signal } = options;
      if (signal === undefined || signal.aborted) return;
      if (web !== undefined) {
        options.say(
          `web: the run is done; the dashboard stays at ${edge?.url ?? ''} (Ctrl-C to stop)`,
        );
      }
      if (mcp !== undefined) {
        options.say(
          `MCP: the review is done; still serving ${edge?.mcpUrl ?? ''} (Ctrl-C to stop)`,
        );
      }
      await untilAborted(signal);
    },
    async stopped() {
      await edge?.close();
    },
  };
}

/** The one port of `--web-port` and `--mcp-port`: both name it, or one does, or any (0). */
function onePort(webPort: number | undefined, mcpPort: number | undefined): number {
  const named = [webPort, mcpPort].filter(
    (port): port is number => port !== undefined && port !== 0,
  );
  const [first] = named;
  if (named.some((port) => port !== first)) {
    throw new TeamError(
      'INVALID_ARGUMENT',
      `--web and --mcp share one port: --web-port ${webPort} and --mcp-port ${mcpPort} differ`,
    );
  }
  return first ?? 0;
}
