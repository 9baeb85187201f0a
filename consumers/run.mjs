// `pnpm test:consumers`: publish every package to a throwaway local registry with the release
// script, then install them the way users do, in fresh folders outside the workspace, and use
// them. See the root README ("Releasing") for what is checked.
//
//   node consumers/run.mjs [--keep]   (--keep: leave the temporary folder for a look)
import {
  cpSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  ConsumerCheckError,
  checkNpmCore,
  checkPnpmTrio,
  checkTypes,
  exec,
  inspectPackage,
} from './check.mjs';
import { checkCli } from './cli-check.mjs';
import { brokenFixtures } from './fixtures/broken.mjs';
import { LOCAL_REGISTRY, startRegistry } from './registry.mjs';

const root = fileURLToPath(new URL('..', import.meta.url));
const keep = process.argv.includes('--keep');
const readJson = (file) => JSON.parse(readFileSync(file, 'utf8'));

const started = Date.now();
const seconds = (since) => `${((Date.now() - since) / 1000).toFixed(1)} s`;
// Ctrl-C reaches npm or pnpm first; once it returns, stop at the next step and clean up.
let interrupted = false;
for (const signal of ['SIGINT', 'SIGTERM']) {
  process.on(signal, () => {
    interrupted = true;
  });
}
async function step(title, work) {
  if (interrupted) throw new Error('interrupted');
  const since = Date.now();
  const result = await work();
  console.log(`consumers: ${title} (${seconds(since)})`);
  return result;
}

const rootManifest = readJson(join(root, 'package.json'));
const packages = readdirSync(join(root, 'packages'))
  .map((dir) => ({
    dir: join(root, 'packages', dir),
    manifest: readJson(join(root, 'packages', dir, 'package.json')),
  }))
  .filter(({ manifest }) => !manifest.private);
const versionOf = (name) => {
  const found = packages.find(({ manifest }) => manifest.name === name);
  if (!found) throw new Error(`no package ${name} in packages/`);
  return found.manifest.version;
};

const work = mkdtempSync(join(tmpdir(), 'teamwire-consumers-'));
if (!relative(root, work).startsWith('..')) throw new Error(`${work} is inside the workspace`);
const registry = await step('registry started', () => startRegistry(join(work, 'registry')));
let failed = false;
try {
  // Everything below installs from and publishes to this registry only.
  if (!LOCAL_REGISTRY.test(registry.url)) throw new Error(`not a local registry: ${registry.url}`);
  const { host } = new URL(registry.url);
  const npmrc = join(work, '.npmrc');
  writeFileSync(
    npmrc,
    `registry=${registry.url}\n//${host}/:_authToken=consumer-test-not-a-secret\n`,
  );
  // A clean environment: no npm/pnpm settings of the caller's (`pnpm run` passes its own on), a
  // userconfig of ours, and npm's cache and pnpm's store and cache (XDG_*) under the temporary
  // folder.
  const env = Object.fromEntries(
    Object.entries(process.env).filter(([key]) => !/^(npm|pnpm)_config_/i.test(key)),
  );
  Object.assign(env, {
    npm_config_registry: registry.url,
    'npm_config_@teamwire:registry': registry.url,
    NPM_CONFIG_USERCONFIG: npmrc,
    npm_config_globalconfig: join(work, 'global-npmrc'),
    npm_config_cache: join(work, 'npm-cache'),
    npm_config_update_notifier: 'false',
    XDG_CACHE_HOME: join(work, 'xdg-cache'),
    XDG_DATA_HOME: join(work, 'xdg-data'),
    XDG_STATE_HOME: join(work, 'xdg-state'),
    XDG_CONFIG_HOME: join(work, 'xdg-config'),
  });

  await step(`published ${packages.length} packages with \`release.mjs --skip-checks\``, () => {
    const result = exec(process.execPath, [join(root, 'scripts/release.mjs'), '--skip-checks'], {
      cwd: root,
      env,
      allowFailure: true,
    });
    if (result.status !== 0) {
      throw new Error(`the release script failed:\n${result.stdout}\n${result.stderr}`);
    }
    for (const { manifest } of packages) {
      const spec = `${manifest.name}@${manifest.version}`;
      const view = exec('npm', ['view', spec, 'version', '--json'], { cwd: work, env });
      if (JSON.parse(view.stdout) !== manifest.version)
        throw new Error(`${spec} was not published`);
    }
  });

  await step('every published package: exports present, imports declared, core a peer', () => {
    const tarballs = join(work, 'tarballs');
    mkdirSync(tarballs);
    const specs = packages.map(({ manifest }) => `${manifest.name}@${manifest.version}`);
    const packed = exec('npm', ['pack', ...specs, '--json', '--pack-destination', tarballs], {
      cwd: work,
      env,
    });
    const tarballOf = new Map(JSON.parse(packed.stdout).map((t) => [`${t.name}@${t.version}`, t]));
    for (const spec of specs) {
      const tarball = tarballOf.get(spec);
      if (!tarball) throw new Error(`npm pack did not fetch ${spec}`);
      const unpacked = join(tarballs, tarball.name.replace('/', '+'));
      mkdirSync(unpacked);
      exec(
        'tar',
        ['-xzf', join(tarballs, tarball.filename), '-C', unpacked, '--strip-components=1'],
        {
          cwd: work,
          env,
        },
      );
      const published = inspectPackage(unpacked);
      // One copy of core in a user's tree: the other packages take it as a peer, never bundle it.
      if (published.name !== '@teamwire/core') {
        if (
          !published.peerDependencies?.['@teamwire/core'] ||
          published.dependencies?.['@teamwire/core']
        ) {
          throw new Error(`${spec} must have @teamwire/core as a peerDependency, not a dependency`);
        }
      }
      for (const field of ['dependencies', 'peerDependencies']) {
        for (const [name, range] of Object.entries(published[field] ?? {})) {
          if (range.startsWith('workspace:')) {
            throw new Error(`${spec} was published with ${field}.${name} "${range}"`);
          }
        }
      }
    }
  });

  const core = `@teamwire/core@${versionOf('@teamwire/core')}`;
  const coreDependencies = Object.keys(
    readJson(join(root, 'packages/core/package.json')).dependencies,
  );
  const expectInstalled = ['@teamwire/core', ...coreDependencies];
  const npmResult = await step(
    `npm: ${core} alone installs ${expectInstalled.join(', ')} and runs`,
    () => checkNpmCore({ dir: mkdir('npm'), spec: core, env, expectInstalled }),
  );

  const pnpmDir = mkdir('pnpm');
  const specs = ['@teamwire/core', '@teamwire/storage', '@teamwire/protocol'].map(
    (name) => `${name}@${versionOf(name)}`,
  );
  const devSpecs = ['typescript', '@types/node'].map(
    (name) => `${name}@${rootManifest.devDependencies[name]}`,
  );
  await step('pnpm: core, storage and protocol: one copy of core, the README usage runs', () =>
    checkPnpmTrio({ dir: pnpmDir, specs, devSpecs, env }),
  );
  await step('typescript: the snippets type-check under node16 and bundler resolution', () =>
    checkTypes({ dir: pnpmDir, env }),
  );

  const cliSpecs = [
    '@teamwire/cli',
    '@teamwire/core',
    '@teamwire/storage',
    '@teamwire/protocol',
  ].map((name) => `${name}@${versionOf(name)}`);
  const sdk = `@modelcontextprotocol/sdk@${readJson(join(root, 'packages/mcp/package.json')).dependencies['@modelcontextprotocol/sdk']}`;
  await step(
    'npm: @teamwire/cli installs `teamwire`; from another folder it serves MCP over stdio to the SDK client, inspects and verifies',
    () => checkCli({ dir: mkdir('cli'), specs: [...cliSpecs, sdk], env }),
  );

  await step(
    `broken fixtures: the same npm check fails on each of ${brokenFixtures.length}`,
    () => {
      for (const fixture of brokenFixtures) {
        const spec = publishFixture(fixture, env);
        try {
          checkNpmCore({ dir: mkdir(`fixture-${fixture.name}`), spec, env, expectInstalled });
        } catch (error) {
          if (!(error instanceof ConsumerCheckError)) throw error;
          if (!fixture.expect.test(error.message)) {
            throw new Error(
              `fixture ${fixture.name} failed, but not as expected:\n${error.message}`,
            );
          }
          console.log(
            `  ${fixture.name} (${fixture.mistake}) is refused:\n    ${error.message.split('\n').join('\n    ')}`,
          );
          continue;
        }
        throw new Error(`the consumer check passed ${spec}, whose ${fixture.mistake}`);
      }
    },
  );
  console.log(`consumers: npm installed ${npmResult.installed.join(', ')}`);
  console.log(`consumers: all checks passed in ${seconds(started)}`);
} catch (error) {
  failed = true;
  console.error(`consumers: FAILED: ${error instanceof Error ? error.message : error}`);
  if (!(error instanceof ConsumerCheckError) && error instanceof Error) console.error(error.stack);
} finally {
  await registry.stop();
  if (keep || failed) console.log(`consumers: the temporary folder is kept: ${work}`);
  else rmSync(work, { recursive: true, force: true });
}
process.exitCode = failed ? 1 : 0;

function mkdir(name) {
  const dir = join(work, name);
  mkdirSync(dir);
  return dir;
}

/** Publishes @teamwire/core's build with the fixture's mistake as `<version>-fixture.<name>`. */
function publishFixture(fixture, env) {
  const source = join(root, 'packages/core');
  const dir = join(work, 'fixture-packages', fixture.name);
  mkdirSync(dir, { recursive: true });
  const manifest = readJson(join(source, 'package.json'));
  manifest.version = `${manifest.version}-fixture.${fixture.name}`;
  delete manifest.scripts;
  delete manifest.devDependencies;
  fixture.patch(manifest);
  writeFileSync(join(dir, 'package.json'), `${JSON.stringify(manifest, null, 2)}\n`);
  for (const entry of ['dist', 'README.md', 'CHANGELOG.md']) {
    cpSync(join(source, entry), join(dir, entry), { recursive: true });
  }
  exec('npm', ['publish', '--tag', 'fixture', '--registry', env.npm_config_registry], {
    cwd: dir,
    env,
  });
  return `${manifest.name}@${manifest.version}`;
}
