// A server process for the end-to-end tests: opens the fixture team in a folder (or, with
// `--pg-url`, joins it in PostgreSQL as a process serving `--serve <member>`) and serves one
// member over stdio (`--stdio <member>`) and/or every member over HTTP (`--http`), printing the
// HTTP endpoint as one JSON line on stderr. `--prompt <text>` prompts the scripted lead first.
import { createMcpRoutes, createTokenIssuer, serveStdio } from '../dist/index.js';
import { serveRoutes } from './serve-http.mjs';
import { openFixtureTeam, SECRET, TEAM_ID } from './team-fixture.mjs';

const args = process.argv.slice(2);
const option = (name) => {
  const at = args.indexOf(name);
  return at === -1 ? undefined : args[at + 1];
};
const dir = option('--dir');
const pgUrl = option('--pg-url');
if (dir === undefined && pgUrl === undefined) throw new Error('--dir or --pg-url is required');
const serve = option('--serve');

const fixture = await openFixtureTeam({
  dir,
  ...(pgUrl === undefined
    ? {}
    : {
        pg: {
          url: pgUrl,
          schema: option('--pg-schema'),
          lead: false,
          leaseMs: Number(option('--lease-ms') ?? 2000),
        },
      }),
  ...(serve === undefined ? {} : { externalMembers: { serve: [serve] } }),
});
const prompt = option('--prompt');
if (prompt !== undefined) await fixture.team.promptLead(prompt);

let http;
if (args.includes('--http')) {
  const tokens = createTokenIssuer({ secret: SECRET, teamId: TEAM_ID });
  http = await serveRoutes({
    routes: createMcpRoutes({
      team: fixture.team,
      cursors: tokens,
      agentTypes: fixture.agentTypes,
    }),
    tokens,
  });
  process.stderr.write(`${JSON.stringify({ url: http.url })}\n`);
}
const member = option('--stdio');
if (member !== undefined) {
  const serving = await serveStdio({ team: fixture.team, member, agentTypes: fixture.agentTypes });
  await serving.closed;
  await http?.close();
  await fixture.close();
  process.exit(0);
}
process.stderr.write(`${JSON.stringify({ ready: true })}\n`);
