#!/usr/bin/env node
/**
 * Fails when the API docs site (built by `pnpm docs` into docs-site/) does not hold what it
 * promises:
 *
 *   node scripts/check-docs-site.mjs [site-dir]      (default: ./docs-site)
 *
 * - typedoc.json documents exactly the published packages under packages/ (every package.json
 *   that is not private), so a new package cannot be left out of the site;
 * - each package has a landing page that renders its README: the README's first heading and its
 *   second-level headings (outside code blocks) appear there as headings of the page's text;
 * - each subpath export (`@teamwire/core/testing`, ...) has a module page, linked from the
 *   package's landing page;
 * - the top index page links to every package's landing page.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';

const root = resolve(import.meta.dirname, '..');
const site = resolve(process.argv[2] ?? join(root, 'docs-site'));
const failures = [];
const fail = (message) => failures.push(message);

/** typedoc's file name for a reflection name: `@teamwire/core` -> `_teamwire_core`. */
const slug = (name) => name.replace(/[^a-z0-9-]/gi, '_');

const ENTITIES = { amp: '&', lt: '<', gt: '>', quot: '"', '#39': "'", '#x27': "'", nbsp: ' ' };
const decode = (text) => text.replace(/&(#?\w+);/g, (m, e) => ENTITIES[e] ?? m);
const normalize = (text) => decode(text).replace(/\s+/g, ' ').trim();

/** The text of every heading a markdown page rendered into (`<hN class="tsd-anchor-link">`). */
function renderedHeadings(html) {
  const out = new Set();
  for (const m of html.matchAll(
    /<h([1-6])\b[^>]*class="tsd-anchor-link"[^>]*>([\s\S]*?)<\/h\1>/g,
  )) {
    out.add(normalize(m[2].replace(/<[^>]*>/g, '')));
  }
  return out;
}

/** The level-1 and level-2 headings of a README, outside fenced code blocks, as plain text. */
function readmeHeadings(markdown) {
  const headings = [];
  let fence;
  for (const line of markdown.split('\n')) {
    const f = /^\s*(```+|~~~+)/.exec(line);
    if (f) {
      if (!fence) fence = f[1][0];
      else if (f[1][0] === fence) fence = undefined;
      continue;
    }
    if (fence) continue;
    const h = /^(#{1,2})\s+(.*?)\s*#*\s*$/.exec(line);
    if (!h) continue;
    const text = h[2]
      .replace(/!?\[([^\]]*)\]\([^)]*\)/g, '$1')
      .replace(/`([^`]*)`/g, '$1')
      .replace(/(\*\*|__|\*|_)(\S(?:.*?\S)?)\1/g, '$2');
    headings.push({ level: h[1].length, text: normalize(text) });
  }
  return headings;
}

function read(path) {
  if (!existsSync(path)) {
    fail(`missing ${path}`);
    return '';
  }
  return readFileSync(path, 'utf8');
}

// The published packages, and the ones the site documents.
const published = [];
for (const dir of readdirSync(join(root, 'packages')).sort()) {
  const pkgPath = join(root, 'packages', dir, 'package.json');
  if (!existsSync(pkgPath)) continue;
  const pkg = JSON.parse(readFileSync(pkgPath, 'utf8'));
  if (pkg.private) continue;
  published.push({ dir: `packages/${dir}`, pkg });
}
const config = JSON.parse(readFileSync(join(root, 'typedoc.json'), 'utf8'));
const documented = new Set(
  (config.entryPoints ?? []).map((e) => e.replace(/^\.\//, '').replace(/\/$/, '')),
);
for (const { dir } of published) {
  if (!documented.has(dir))
    fail(`typedoc.json: entryPoints leaves out the published package ${dir}`);
}
for (const dir of documented) {
  if (!published.some((p) => p.dir === dir))
    fail(`typedoc.json: ${dir} is not a published package`);
}

const index = read(join(site, 'index.html'));
if (index && !/<h1\b[^>]*class="tsd-anchor-link"/.test(index)) {
  fail('index.html: the landing page (typedoc-index.md) was not rendered');
}

for (const { dir, pkg } of published) {
  const page = `modules/${slug(pkg.name)}.html`;
  const html = read(join(site, page));
  const linkTexts = [...index.matchAll(/<a\b[^>]*href="([^"]*)"[^>]*>([\s\S]*?)<\/a>/g)]
    .filter((m) => m[1] === page)
    .map((m) => normalize(m[2].replace(/<[^>]*>/g, '')));
  if (!linkTexts.includes(pkg.name)) {
    fail(`index.html: no link named ${pkg.name} to ${page} (found: ${JSON.stringify(linkTexts)})`);
  }
  if (!html) continue;

  const headings = renderedHeadings(html);
  const readme = readmeHeadings(read(join(root, dir, 'README.md')));
  if (readme.length === 0) fail(`${dir}/README.md: no heading`);
  const wanted = readme.filter((h, i) => i === 0 || h.level === 2);
  for (const h of wanted) {
    if (!headings.has(h.text)) {
      fail(`${page}: ${pkg.name}'s README heading "${h.text}" is not on its landing page`);
    }
  }

  // Subpath exports ("./testing") are modules of their own, linked from the landing page.
  for (const key of Object.keys(pkg.exports ?? {})) {
    if (key === '.' || key === './package.json') continue;
    const sub = key.replace(/^\.\//, '');
    const subPage = `${slug(pkg.name)}.${slug(sub)}.html`;
    read(join(site, 'modules', subPage));
    if (!html.includes(`href="${subPage}"`)) {
      fail(`${page}: no link to ${pkg.name}/${sub} (modules/${subPage})`);
    }
  }
}

if (failures.length > 0) {
  console.error(`check-docs-site: ${failures.length} problem(s) in ${site}:`);
  for (const f of failures) console.error(`  - ${f}`);
  process.exit(1);
}
console.log(
  `check-docs-site: ${published.length} packages, each with its README as landing page, all linked from index.html`,
);
