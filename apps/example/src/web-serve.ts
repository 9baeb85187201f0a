import { type DashboardServer, OPERATOR_AGENT, serveDashboard } from '@teamwire/dashboard';
import { type RunHooks, untilAborted } from './team-run.js';

/*
 * `--web`: the team's dashboard, served next to the running team on 127.0.0.1. The person at the
 * page steers the team as the member `operator`; after the run it keeps serving until Ctrl-C.
 */

export { OPERATOR_AGENT };

/** Hooks of a run with `--web`. */
export function webHooks(options: {
  port: number;
  say: (line: string) => void;
  signal?: AbortSignal | undefined;
  /** The page's URL, once it serves (for tests). */
  onServing?: (url: string) => void;
}): RunHooks {
  let server: DashboardServer | undefined;
  return {
    async started(run) {
      server = await serveDashboard({
        log: run.log,
        hub: run.hub,
        team: run.team,
        port: options.port,
      });
      options.say(
        `web: the dashboard is at ${server.url} (the token in it is the key; keep it private)`,
      );
      options.onServing?.(server.url);
    },
    async serveAfter() {
      const { signal } = options;
      if (signal === undefined || signal.aborted) return;
      options.say(
        `web: the run is done; the dashboard stays at ${server?.url ?? ''} (Ctrl-C to stop)`,
      );
      await untilAborted(signal);
    },
    async stopped() {
      await server?.close();
    },
  };
}
