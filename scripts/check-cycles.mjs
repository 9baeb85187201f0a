#!/usr/bin/env node
/**
 * Fails when the TypeScript sources of a package import each other in a circle.
 *
 *   node scripts/check-cycles.mjs [dir ...]      (default: ./src)
 *
 * The dirs make one graph (a page in `ui/` importing `src/` is an edge like any other). Every
 * relative `import` / `export ... from` / `import()` of every `.ts`, `.tsx` or `.mts` file under
 * them is an edge, `import type` included: a cycle of types is still two files that cannot change
 * apart.
 * Imports of other packages are not followed (a package is used only through its exports).
 * Test files (`*.test.ts`, `*.test.tsx`) are left out: they sit on top of what they test.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';

const IMPORT =
  /(?:^|[;\n}])\s*(?:import|export)\s+(?:type\s+)?(?:[^'";]*?\s+from\s+)?['"]([^'"]+)['"]|\bimport\(\s*['"]([^'"]+)['"]\s*\)/g;

const SOURCE = /\.(?:ts|tsx|mts)$/;

function sourceFiles(dir) {
  const out = [];
  for (const name of readdirSync(dir)) {
    if (name === 'node_modules' || name === 'dist' || name.startsWith('.')) continue;
    const path = join(dir, name);
    if (statSync(path).isDirectory()) out.push(...sourceFiles(path));
    else if (SOURCE.test(name) && !/\.test\.tsx?$/.test(name) && !/\.d\.m?ts$/.test(name)) {
      out.push(path);
    }
  }
  return out;
}

/** Strips comments (not inside strings, which is good enough for import lines). */
function stripComments(text) {
  return text.replace(/\/\*[\s\S]*?\*\//g, '').replace(/(^|[^:'"`])\/\/[^\n]*/g, '$1');
}

function resolveImport(from, specifier, known) {
  if (!specifier.startsWith('.')) return undefined;
  const base = resolve(dirname(from), specifier);
  const candidates = [
    base.replace(/\.js$/, '.ts'),
    base.replace(/\.js$/, '.tsx'),
    base.replace(/\.mjs$/, '.mts'),
    base,
    `${base}.ts`,
    `${base}.tsx`,
    join(base, 'index.ts'),
    join(base, 'index.tsx'),
  ];
  return candidates.find((candidate) => known.has(candidate));
}

function graphOf(dirs) {
  const files = dirs.flatMap((dir) => sourceFiles(dir));
  const known = new Set(files);
  const graph = new Map();
  for (const file of files) {
    const text = stripComments(readFileSync(file, 'utf8'));
    const edges = new Set();
    for (const match of text.matchAll(IMPORT)) {
      const target = resolveImport(file, match[1] ?? match[2], known);
      if (target !== undefined && target !== file) edges.add(target);
    }
    graph.set(file, [...edges].sort());
  }
  return graph;
}

/** Strongly connected components with more than one file (Tarjan), each as one sample cycle. */
function cycles(graph) {
  let index = 0;
  const indices = new Map();
  const low = new Map();
  const stack = [];
  const onStack = new Set();
  const found = [];
  const connect = (node) => {
    indices.set(node, index);
    low.set(node, index);
    index++;
    stack.push(node);
    onStack.add(node);
    for (const next of graph.get(node) ?? []) {
      if (!indices.has(next)) {
        connect(next);
        low.set(node, Math.min(low.get(node), low.get(next)));
      } else if (onStack.has(next)) {
        low.set(node, Math.min(low.get(node), indices.get(next)));
      }
    }
    if (low.get(node) === indices.get(node)) {
      const component = [];
      let member;
      do {
        member = stack.pop();
        onStack.delete(member);
        component.push(member);
      } while (member !== node);
      if (component.length > 1) found.push(sampleCycle(graph, new Set(component)));
    }
  };
  for (const node of [...graph.keys()].sort()) if (!indices.has(node)) connect(node);
  return found;
}

/** One concrete circle inside a component: a shortest path from its first file back to itself. */
function sampleCycle(graph, component) {
  const start = [...component].sort()[0];
  const previous = new Map([[start, undefined]]);
  const queue = [start];
  while (queue.length > 0) {
    const node = queue.shift();
    for (const next of graph.get(node) ?? []) {
      if (!component.has(next)) continue;
      if (next === start) {
        const path = [node];
        for (let at = previous.get(node); at !== undefined; at = previous.get(at)) path.push(at);
        return [...path.reverse(), start];
      }
      if (!previous.has(next)) {
        previous.set(next, node);
        queue.push(next);
      }
    }
  }
  return [start, start];
}

const given = process.argv.slice(2);
const dirs = (given.length > 0 ? given : ['src']).map((dir) => resolve(dir));
const found = cycles(graphOf(dirs));
for (const cycle of found) {
  console.error(`import cycle: ${cycle.map((f) => relative(process.cwd(), f)).join(' -> ')}`);
}
if (found.length > 0) process.exit(1);
