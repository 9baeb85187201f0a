// The repositories the liveness runs review: small, with review numbers known by construction, so
// a report is checked folder by folder and not only for being there.

import { execFileSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';

/** The name of the i-th folder (0-based) of a fixture. */
export const folderName = (i) => `unit${String(i + 1).padStart(2, '0')}`;

/**
 * What the review must report for folder i: `files` files, each with one export and one TODO,
 * two lines long.
 */
export function expectedFolder(i) {
  const files = 2 + (i % 3);
  return { files, lines: 2 * files, todo: files, exports: files };
}

function put(root, file, text) {
  const full = join(root, file);
  mkdirSync(dirname(full), { recursive: true });
  writeFileSync(full, text);
}

/** A repository of `folders` review units (and a root file no unit holds). */
export function makeReviewRepo(root, folders) {
  put(root, 'README.md', '# liveness fixture\nTODO in no unit\n');
  for (let i = 0; i < folders; i++) {
    const { files } = expectedFolder(i);
    for (let f = 1; f <= files; f++) {
      put(root, `${folderName(i)}/file${f}.ts`, `export const v${f} = ${f};\n// TODO ${i}.${f}\n`);
    }
  }
}

/** The same repository, committed, for `demo fix` (it reviews what is committed at HEAD). */
export function makeFixRepo(root, folders) {
  makeReviewRepo(root, folders);
  const git = (...args) =>
    execFileSync('git', ['-C', root, ...args], {
      stdio: 'ignore',
      env: {
        ...process.env,
        GIT_AUTHOR_DATE: '2024-01-01T00:00:00Z',
        GIT_COMMITTER_DATE: '2024-01-01T00:00:00Z',
      },
    });
  git('init', '--quiet', '--initial-branch=main');
  git('add', '.');
  git('-c', 'user.name=fixture', '-c', 'user.email=fixture@localhost', 'commit', '-q', '-m', 'x');
}

/** The rows of a review report's table: unit -> { files, lines, todo, exports }. */
export function reportRows(markdown) {
  const rows = new Map();
  for (const line of markdown.split('\n')) {
    const m = /^\| ([^|*]+?) \| (\d+) \| (\d+) \| (\d+) \| (\d+) \| ([^|]+) \|$/.exec(line);
    if (m) {
      rows.set(m[1], {
        files: Number(m[2]),
        lines: Number(m[3]),
        todo: Number(m[4]),
        exports: Number(m[5]),
      });
    }
  }
  return rows;
}
