// A server process for the end-to-end tests: opens the fixture team in a folder and serves one
// member over stdio (`--stdio <member>`) and/or every member over HTTP (`--http`), printing the
// HTTP endpoint as one JSON line on stderr. `--prompt <text>` prompts the scripted lead first.
import { createTokenIssuer, serveHttp, serveStdio } from '../dist/index.js';
import { openFixtureTeam, SECRET, TEAM_ID } from './team-fixture.mjs';

const args = process.argv.slice(2);
const option = (name) => {
  const at = args.indexOf(name);
  return at === -1 ? undefined : args[at + 1];
};
const dir = option('--dir');
if (dir === undefined) throw new Error('--dir is required');

const fixture = await openFixtureTeam({ dir });
const prompt = option('--prompt');
if (prompt !== undefined) await fixture.team.promptLead(prompt);

let http;
if (args.includes('--http')) {
  http = await serveHttp({
    team: fixture.team,
    tokens: createTokenIssuer({ secret: SECRET, teamId: TEAM_ID }),
    agentTypes: fixture.agentTypes,
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
