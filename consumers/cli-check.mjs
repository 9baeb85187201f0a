// The consumer check of @teamwire/cli: installed from the registry into a fresh folder outside
// the workspace, its `teamwire` bin serves a member over MCP stdio to the official SDK client and
// inspects and verifies the team, and `teamwire serve` answers its dashboard over HTTP with its
// token only (see snippets/cli-drive.mjs). Throws a ConsumerCheckError.
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { ConsumerCheckError, exec, inspectPackage, installedPackages } from './check.mjs';

const fail = (message) => {
  throw new ConsumerCheckError(message);
};

/**
 * (d) npm: `npm install @teamwire/cli` with core, storage, protocol and the MCP SDK (to make a team
 * and to be the client). One copy of core; the bin serves, inspects and verifies from elsewhere.
 */
export function checkCli({ dir, specs, env }) {
  writeFileSync(
    join(dir, 'package.json'),
    `${JSON.stringify({ name: 'consumer-cli', version: '1.0.0', private: true, type: 'module' }, null, 2)}\n`,
  );
  exec('npm', ['install', '--no-audit', '--no-fund', '--loglevel=error', ...specs], {
    cwd: dir,
    env,
  });
  const installed = installedPackages(dir);
  const cores = installed.get('@teamwire/core') ?? new Set();
  if (cores.size !== 1) fail(`npm installed ${cores.size} copies of @teamwire/core`);
  const [cli] = installed.get('@teamwire/cli') ?? [];
  if (!cli) fail('npm install did not install @teamwire/cli');
  inspectPackage(cli);
  const bin = join(dir, 'node_modules', '.bin', 'teamwire');
  if (!existsSync(bin)) fail(`@teamwire/cli installed no bin at ${bin}`);
  writeFileSync(
    join(dir, 'cli-drive.mjs'),
    readFileSync(new URL('./snippets/cli-drive.mjs', import.meta.url), 'utf8'),
  );
  const result = exec(process.execPath, ['cli-drive.mjs'], { cwd: dir, env, allowFailure: true });
  if (result.status !== 0) {
    fail(
      `cli-drive.mjs failed (exit ${result.status}):\n${result.stderr.trim().split('\n').slice(0, 15).join('\n')}`,
    );
  }
  const seen = JSON.parse(result.stdout.trim().split('\n').at(-1) ?? '{}');
  const problems = [];
  for (const tool of ['read_inbox', 'ack_inbox', 'send_message', 'task_list']) {
    if (!seen.tools?.includes(tool)) problems.push(`tools/list has no ${tool}: ${seen.tools}`);
  }
  const [prompt, note] = seen.inbox ?? [];
  if (
    seen.inbox?.length !== 2 ||
    !prompt.includes('Write the parser') ||
    !note.includes('Start with the lexer')
  ) {
    problems.push(`read_inbox gave ${JSON.stringify(seen.inbox)}`);
  }
  if (seen.acknowledged !== 2) problems.push(`ack_inbox acknowledged ${seen.acknowledged}, not 2`);
  if (!seen.serverStderr?.includes('serving alice of team consumer-cli')) {
    problems.push(`the server said ${JSON.stringify(seen.serverStderr)}`);
  }
  if (
    seen.inspect?.status !== 0 ||
    seen.inspect.members?.join() !== 'lead,alice' ||
    seen.inspect.pendingMail !== 0
  ) {
    problems.push(`teamwire inspect: ${JSON.stringify(seen.inspect)}`);
  }
  if (seen.verify?.status !== 0 || !/\nok\n/.test(seen.verify.stdout)) {
    problems.push(`teamwire verify: ${JSON.stringify(seen.verify)}`);
  }
  const serve = seen.serve ?? {};
  if (
    serve.withoutToken !== 401 ||
    serve.withToken !== 200 ||
    serve.teamId !== 'consumer-cli' ||
    serve.code !== 0
  ) {
    problems.push(`teamwire serve: ${JSON.stringify(serve)}`);
  }
  if (problems.length > 0) fail(`@teamwire/cli as installed:\n  - ${problems.join('\n  - ')}`);
  return { tools: seen.tools.length };
}
