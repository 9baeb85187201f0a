// `pnpm release:publish`: build and test everything, then `changeset publish` every package whose
// version is not on the registry yet (changesets publishes with pnpm, which turns `workspace:^`
// ranges into real ones, and tags each release in git).
//
//   node scripts/release.mjs [changeset publish flags, e.g. --otp 123456]
//   node scripts/release.mjs --skip-checks   (the consumer test: publish only, to a local registry)
//
// `--skip-checks` skips the build and the tests and creates no git tags. It publishes only to a
// registry on 127.0.0.1 or localhost, given as `npm_config_registry`, and refuses anything else,
// so a test can never publish to the public registry.
import { spawnSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
const LOCAL_REGISTRY = /^http:\/\/(127\.0\.0\.1|localhost):\d+\/?$/;

const args = process.argv.slice(2);
const skipChecks = args.includes('--skip-checks');
const publishArgs = args.filter((arg) => arg !== '--skip-checks');

function run(command, commandArgs, env = process.env) {
  console.log(`release: ${command} ${commandArgs.join(' ')}`);
  const result = spawnSync(command, commandArgs, { cwd: root, stdio: 'inherit', env });
  if (result.status !== 0) {
    console.error(`release: ${command} ${commandArgs.join(' ')} failed`);
    process.exit(result.status ?? 1);
  }
}

function fail(message) {
  console.error(`release: ${message}`);
  process.exit(1);
}

let env = process.env;
if (skipChecks) {
  // npm reads npm_config_* case-insensitively: every spelling of the registry must agree.
  const registries = new Set(
    Object.entries(process.env)
      .filter(([key]) => key.toLowerCase() === 'npm_config_registry')
      .map(([, value]) => value),
  );
  const [registry = ''] = registries;
  if (registries.size > 1) fail(`npm_config_registry is set twice: ${[...registries].join(', ')}`);
  if (!LOCAL_REGISTRY.test(registry)) {
    fail(
      `--skip-checks publishes only to a local registry (http://127.0.0.1:PORT/); ` +
        `npm_config_registry is ${registry ? `"${registry}"` : 'not set'}. ` +
        'Release to the public registry with `pnpm release:publish`, which builds and tests first.',
    );
  }
  // A scoped registry or a package's publishConfig.registry would win over npm_config_registry:
  // pin the scope to the same local registry and refuse a package that names its own.
  for (const [key, value] of Object.entries(process.env)) {
    if (/^npm_config_@.+:registry$/i.test(key) && value !== registry) {
      fail(`${key}=${value} would override the local registry ${registry}`);
    }
  }
  for (const dir of readdirSync(join(root, 'packages'))) {
    const manifest = JSON.parse(readFileSync(join(root, 'packages', dir, 'package.json'), 'utf8'));
    const config = manifest.publishConfig ?? {};
    const own = Object.keys(config).filter(
      (key) => key === 'registry' || key.endsWith(':registry'),
    );
    if (own.length > 0) fail(`${manifest.name} sets publishConfig.${own[0]}; refusing`);
  }
  env = {
    ...process.env,
    npm_config_registry: registry,
    'npm_config_@teamwire:registry': registry,
  };
  if (!publishArgs.includes('--no-git-tag')) publishArgs.push('--no-git-tag');
} else {
  run('pnpm', ['run', 'build']);
  run('pnpm', ['run', 'test']);
}

run('pnpm', ['exec', 'changeset', 'publish', ...publishArgs], env);
