// The consumer checks: what a user who installs the published packages gets. Each check works in a
// fresh folder outside the workspace and throws a ConsumerCheckError saying what is wrong. The
// same functions check the real packages and the broken fixtures (see run.mjs).
import { spawn, spawnSync } from 'node:child_process';
import {
  existsSync,
  readdirSync,
  readFileSync,
  realpathSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { createRequire, isBuiltin } from 'node:module';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
// The workspace's TypeScript, only to list a file's imports (consumers install their own).
const ts = createRequire(import.meta.url)('typescript');

export class ConsumerCheckError extends Error {}

const fail = (message) => {
  throw new ConsumerCheckError(message);
};

/** Runs a command; throws with its output when it fails. */
export function exec(command, args, { cwd, env, allowFailure = false }) {
  const result = spawnSync(command, args, { cwd, env, encoding: 'utf8' });
  if (result.error) throw result.error;
  if (result.status !== 0 && !allowFailure) {
    const output = `${result.stdout}\n${result.stderr}`.trim().split('\n').slice(-30).join('\n');
    fail(`\`${command} ${args.join(' ')}\` failed in ${cwd} (exit ${result.status}):\n${output}`);
  }
  return result;
}

const readJson = (file) => JSON.parse(readFileSync(file, 'utf8'));

/**
 * Every package installed under `dir`'s node_modules (npm's flat layout or pnpm's symlinked one):
 * name -> the set of real folders holding a copy of it.
 */
export function installedPackages(dir) {
  const found = new Map();
  const seen = new Set();
  const visitPackage = (path) => {
    if (!existsSync(join(path, 'package.json'))) return;
    const real = realpathSync(path);
    if (seen.has(real)) return;
    seen.add(real);
    const { name } = readJson(join(real, 'package.json'));
    if (!found.has(name)) found.set(name, new Set());
    found.get(name).add(real);
    if (existsSync(join(real, 'node_modules'))) visitNodeModules(join(real, 'node_modules'));
  };
  const visitNodeModules = (nodeModules) => {
    for (const entry of readdirSync(nodeModules)) {
      const path = join(nodeModules, entry);
      if (entry === '.pnpm') {
        for (const id of readdirSync(path)) {
          const nested = join(path, id, 'node_modules');
          if (existsSync(nested)) visitNodeModules(nested);
        }
        if (existsSync(join(path, 'node_modules'))) visitNodeModules(join(path, 'node_modules'));
      } else if (entry.startsWith('.')) {
        // .bin, .package-lock.json, .modules.yaml, ...
      } else if (entry.startsWith('@')) {
        for (const scoped of readdirSync(path)) visitPackage(join(path, scoped));
      } else {
        visitPackage(path);
      }
    }
  };
  if (existsSync(join(dir, 'node_modules'))) visitNodeModules(join(dir, 'node_modules'));
  return found;
}

/** The folder Node would load `name` from when imported by a file in `fromDir`. */
function resolvePackageDir(fromDir, name) {
  for (let dir = fromDir; ; dir = join(dir, '..')) {
    const candidate = join(dir, 'node_modules', name);
    if (existsSync(join(candidate, 'package.json'))) return realpathSync(candidate);
    if (join(dir, '..') === dir) return undefined;
  }
}

function exportTargets(value, path, out) {
  if (typeof value === 'string') out.push([path, value]);
  else if (value && typeof value === 'object') {
    for (const [key, inner] of Object.entries(value))
      exportTargets(inner, `${path}[${JSON.stringify(key)}]`, out);
  }
  return out;
}

function filesUnder(dir) {
  return readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((entry) => entry.isFile())
    .map((entry) => join(entry.parentPath ?? entry.path, entry.name))
    .filter((file) => !relative(dir, file).split('/').includes('node_modules'));
}

/** The modules a file imports (static, dynamic, `export from`, `import type`), comments aside. */
function importsOf(file) {
  const { importedFiles } = ts.preProcessFile(readFileSync(file, 'utf8'), true, true);
  return importedFiles.map((imported) => imported.fileName);
}

/**
 * Checks an installed (or unpacked) package the way a consumer meets it: every `exports`, `main`
 * and `types` target is in the package (a `files` list that leaves out dist, an export pointing
 * nowhere), and every package its JavaScript and declarations import is a dependency or peer
 * dependency it declares (an undeclared dependency works in the workspace and nowhere else).
 */
export function inspectPackage(dir) {
  const manifest = readJson(join(dir, 'package.json'));
  const id = `${manifest.name}@${manifest.version}`;
  const problems = [];
  const targets = exportTargets(manifest.exports ?? {}, 'exports', []);
  if (manifest.main) targets.push(['main', manifest.main]);
  if (manifest.types) targets.push(['types', manifest.types]);
  if (targets.length === 0) problems.push('it has no exports, main or types');
  for (const [field, target] of targets) {
    if (!existsSync(join(dir, target)) || !statSync(join(dir, target)).isFile()) {
      problems.push(`${field} is ${target}, which is not in the published package`);
    }
  }
  const declared = new Set([
    manifest.name,
    ...Object.keys(manifest.dependencies ?? {}),
    ...Object.keys(manifest.peerDependencies ?? {}),
    ...Object.keys(manifest.optionalDependencies ?? {}),
  ]);
  const undeclared = new Map();
  for (const file of filesUnder(dir).filter((f) => /\.(m?js|d\.m?ts)$/.test(f))) {
    for (const specifier of importsOf(file)) {
      if (specifier.startsWith('.') || specifier.startsWith('/') || isBuiltin(specifier)) continue;
      if (/^[a-z]+:/.test(specifier)) continue; // data:, http: in bundled browser code
      const parts = specifier.split('/');
      const name = specifier.startsWith('@') ? parts.slice(0, 2).join('/') : parts[0];
      if (!declared.has(name)) undeclared.set(name, relative(dir, file));
    }
  }
  for (const [name, file] of undeclared) {
    problems.push(
      `${file} imports "${name}", which is not in its dependencies or peerDependencies`,
    );
  }
  if (problems.length > 0) fail(`${id} is broken as published:\n  - ${problems.join('\n  - ')}`);
  return manifest;
}

/** A folder's package.json for a consumer project. */
function initProject(dir, name) {
  writeFileSync(
    join(dir, 'package.json'),
    `${JSON.stringify({ name, version: '1.0.0', private: true, type: 'module' }, null, 2)}\n`,
  );
}

/** Runs an ESM file with Node in `dir` and returns its last line of output, parsed as JSON. */
function runSnippet(dir, file, env) {
  const result = exec(process.execPath, [file], { cwd: dir, env, allowFailure: true });
  if (result.status !== 0) {
    const error = result.stderr.trim().split('\n').slice(0, 12).join('\n');
    fail(`${file} failed in ${dir} (exit ${result.status}):\n${error}`);
  }
  const last = result.stdout.trim().split('\n').at(-1) ?? '';
  try {
    return JSON.parse(last);
  } catch {
    return fail(`${file} printed ${JSON.stringify(last)}, not its JSON summary`);
  }
}

/** The core-only usage snippet (consumers/snippets/core-only.ts; plain JavaScript too). */
export const coreOnlySnippet = () =>
  readFileSync(new URL('./snippets/core-only.ts', import.meta.url), 'utf8');

/**
 * The root README's usage example ("## Using the packages") with one change: the model is core's
 * scripted model rather than `createModel` from @teamwire/host-adapters (no network, no key).
 * The lead spawns two engineers, who answer; the snippet then prints how often each was called.
 */
export function readmeUsageSnippet() {
  const readme = readFileSync(join(root, 'README.md'), 'utf8');
  const block = /## Using the packages\n\n```ts\n([\s\S]*?)```/.exec(readme)?.[1];
  if (!block) throw new Error('README.md has no ts block under "## Using the packages"');
  const replace = (text, from, to) => {
    if (text.split(from).length !== 2) {
      throw new Error(
        `README.md's usage example no longer has exactly one ${JSON.stringify(from)}`,
      );
    }
    return text.replace(from, to);
  };
  let snippet = replace(
    block,
    "import { createModel } from '@teamwire/host-adapters';\n",
    "import { createScriptedModel } from '@teamwire/core/testing';\n",
  );
  snippet = replace(
    snippet,
    "const model = createModel('openai:gpt-4.1-mini'); // OPENAI_API_KEY, OPENAI_BASE_URL\n",
    `const model = createScriptedModel({
  scripts: {
    lead: ({ call }) =>
      call === 1
        ? {
            toolCalls: ['ada', 'grace'].map((name) => ({
              name: 'spawn_teammate',
              input: { name, description: 'An engineer', prompt: 'Migrate your half.' },
            })),
          }
        : { text: 'Noted.' },
    ada: () => ({ text: 'Migrated my half.' }),
    grace: () => ({ text: 'Migrated my half.' }),
  },
});
`,
  );
  return `${snippet}console.log(JSON.stringify({ calls: ['lead', 'ada', 'grace'].map((n) => model.calls(n)) }));\n`;
}

function expectTeamRan(summary, where) {
  const [lead, ada, grace] = summary.calls ?? [];
  if (!(lead >= 2 && ada >= 1 && grace >= 1)) {
    fail(`${where}: the team did not run (model calls lead, ada, grace: ${summary.calls})`);
  }
}

/**
 * (a) npm: `npm install @teamwire/core@<version>` alone in a fresh folder. Exactly core and its
 * own dependencies are installed (no peer, no dev dependency); the core-only snippet runs as ESM.
 */
export function checkNpmCore({ dir, spec, env, expectInstalled }) {
  initProject(dir, 'consumer-npm');
  exec('npm', ['install', '--no-audit', '--no-fund', '--loglevel=error', spec], { cwd: dir, env });
  const installed = installedPackages(dir);
  const core = installed.get('@teamwire/core');
  if (!core) fail(`npm install ${spec} installed no @teamwire/core`);
  inspectPackage([...core][0]);
  const names = [...installed.keys()].sort();
  if (names.join() !== [...expectInstalled].sort().join()) {
    fail(
      `npm install ${spec} should install exactly ${[...expectInstalled].sort().join(', ')}; ` +
        `it installed ${names.join(', ')}`,
    );
  }
  writeFileSync(join(dir, 'core-only.mjs'), coreOnlySnippet());
  expectTeamRan(runSnippet(dir, 'core-only.mjs', env), `${spec}: core-only.mjs`);
  return { installed: names };
}

/**
 * (b) pnpm: core, storage and protocol in a fresh folder (plus typescript and @types/node for
 * (c)). One copy of core is in the tree and storage and protocol load that copy; the README's
 * usage example runs as ESM on a JSONL store in the folder.
 */
export function checkPnpmTrio({ dir, specs, devSpecs, env }) {
  initProject(dir, 'consumer-pnpm');
  // pnpm 12 holds back versions younger than a day (adding each to minimumReleaseAgeExclude);
  // these were published seconds ago.
  writeFileSync(join(dir, 'pnpm-workspace.yaml'), 'minimumReleaseAge: 0\n');
  const pnpm = (args) => exec('pnpm', [...args, '--reporter=append-only'], { cwd: dir, env });
  pnpm(['add', ...specs]);
  pnpm(['add', '--save-dev', ...devSpecs]);
  const installed = installedPackages(dir);
  const cores = installed.get('@teamwire/core') ?? new Set();
  if (cores.size !== 1) {
    fail(`pnpm installed ${cores.size} copies of @teamwire/core: ${[...cores].join(', ')}`);
  }
  const [core] = cores;
  for (const name of ['@teamwire/core', '@teamwire/storage', '@teamwire/protocol']) {
    const [pkg] = installed.get(name) ?? [];
    if (!pkg) fail(`pnpm add did not install ${name}`);
    inspectPackage(pkg);
    const loads = resolvePackageDir(pkg, '@teamwire/core');
    if (loads !== core)
      fail(`${name} loads @teamwire/core from ${loads}, not the one copy ${core}`);
  }
  writeFileSync(join(dir, 'usage.mjs'), readmeUsageSnippet());
  expectTeamRan(runSnippet(dir, 'usage.mjs', env), 'README usage (usage.mjs)');
  const log = join(dir, '.teamwire/teams/migration-1/log.jsonl');
  if (!existsSync(log)) fail(`the README usage left no team log at ${log}`);
  const members = readFileSync(log, 'utf8')
    .trim()
    .split('\n')
    .map((line) => JSON.parse(line))
    .filter((record) => record.type === 'member')
    .map((record) => record.member.name);
  for (const name of ['ada', 'grace']) {
    if (!members.includes(name)) fail(`the team log has no member ${name}: ${members.join(', ')}`);
  }
  return { installed: [...installed.keys()].sort(), records: members.length };
}

const TSCONFIGS = {
  node16: { module: 'node16', moduleResolution: 'node16' },
  bundler: { module: 'esnext', moduleResolution: 'bundler' },
};

/**
 * (c) TypeScript: the README's usage example and the core-only snippet as .ts, type-checked
 * against the installed declarations (skipLibCheck off) with `module`/`moduleResolution`
 * node16/node16 and esnext/bundler, strict, noEmit.
 */
export async function checkTypes({ dir, env }) {
  writeFileSync(join(dir, 'usage.ts'), readmeUsageSnippet());
  writeFileSync(join(dir, 'core-only.ts'), coreOnlySnippet());
  const tsc = join(dir, 'node_modules/typescript/bin/tsc');
  const checks = Object.entries(TSCONFIGS).map(async ([name, options]) => {
    const tsconfig = {
      compilerOptions: {
        ...options,
        target: 'es2022',
        lib: ['es2023'],
        types: ['node'],
        strict: true,
        noEmit: true,
        skipLibCheck: false,
      },
      files: ['usage.ts', 'core-only.ts'],
    };
    writeFileSync(join(dir, `tsconfig.${name}.json`), `${JSON.stringify(tsconfig, null, 2)}\n`);
    const { code, output } = await new Promise((resolve, reject) => {
      const child = spawn(process.execPath, [tsc, '-p', `tsconfig.${name}.json`], {
        cwd: dir,
        env,
      });
      let output = '';
      child.stdout.on('data', (chunk) => {
        output += chunk;
      });
      child.stderr.on('data', (chunk) => {
        output += chunk;
      });
      child.on('error', reject);
      child.on('close', (code) => resolve({ code, output }));
    });
    if (code !== 0) fail(`tsc (${name}) fails on the usage snippets:\n${output.trim()}`);
    return name;
  });
  return Promise.all(checks);
}
