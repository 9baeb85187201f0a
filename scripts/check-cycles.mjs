#!/usr/bin/env node
/**
 * Fails when the TypeScript sources of a package import each other in a circle.
 *
 *   node scripts/check-cycles.mjs [dir ...]      (default: ./src)
 *
 * Every relative `import` / `export ... from` / `import()` of every `.ts` file under each dir is an
 * edge, `import type` included: a cycle of types is still two files that cannot change apart.
 * Imports of other packages are not followed (a package is used only through its exports).
 * Test files (`*.test.ts`) are left out: they sit on top of what they test.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';

const IMPORT =
  /(?:^|[;\n}])\s*(?:import|export)\s+(?:type\s+)?(?:[^'";]*?\s+from\s+)?['"]([^'"]+)['"]|\bimport\(\s*['"]([^'"]+)['"]\s*\)/g;

function sourceFiles(dir) {
  const out = [];
  for (const name of readdirSync(dir)) {
    if (name === 'node_modules' || name === 'dist' || name.startsWith('.')) continue;
    const path = join(dir, name);
    if (statSync(path).isDirectory()) out.push(...sourceFiles(path));
    else if (name.endsWith('.ts') && !name.endsWith('.test.ts') && !name.endsWith('.d.ts')) {
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
    base.replace(/\.mjs$/, '.mts'),
    `${base}.ts`,
    join(base, 'index.ts'),
  ];
  return candidates.find((candidate) => known.has(candidate));
}

function graphOf(dir) {
  const files = sourceFiles(dir);
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

const dirs = process.argv.slice(2);
let failed = false;
for (const dir of dirs.length > 0 ? dirs : ['src']) {
  const root = resolve(dir);
  for (const cycle of cycles(graphOf(root))) {
    failed = true;
    console.error(
      `import cycle in ${relative(process.cwd(), root) || '.'}: ${cycle.map((f) => relative(root, f)).join(' -> ')}`,
    );
  }
}
if (failed) process.exit(1);
