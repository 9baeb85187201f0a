import { chmodSync, existsSync, mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import type { ToolContext } from '@teamwire/core';
import { describe, expect, it } from 'vitest';
import { fixWriteTools } from './fix-tools.js';
import { gitOut, makeFixRepo, tempDir } from './test-support.js';

function put(root: string, file: string, text: string): void {
  mkdirSync(path.dirname(path.join(root, file)), { recursive: true });
  writeFileSync(path.join(root, file), text);
}

describe("the fix job's write tools", () => {
  it('never commit a folder holding a repository of its own, nor write into a .git', async () => {
    const work = tempDir('fix-tools');
    const repo = path.join(work, 'repo');
    makeFixRepo(repo);
    const base = gitOut(repo, ['rev-parse', 'HEAD']).trim();
    const tree = path.join(work, 'reviewer');
    gitOut(repo, ['worktree', 'add', '--quiet', '-b', 'reviewer', tree, base]);
    // A nested repository whose config names an fsmonitor hook of the reviewer's, put there by
    // other means than write_file.
    const marker = path.join(work, 'fsmonitor-ran');
    const hook = path.join(tree, 'vendor', 'hook.sh');
    put(tree, 'vendor/.git/HEAD', 'ref: refs/heads/main\n');
    put(tree, 'vendor/.git/refs/heads/main', `${base}\n`);
    put(tree, 'vendor/.git/objects/info/alternates', `${path.join(repo, '.git', 'objects')}\n`);
    put(
      tree,
      'vendor/.git/config',
      `[core]\n\trepositoryformatversion = 0\n\tfsmonitor = ${hook}\n`,
    );
    put(tree, 'vendor/hook.sh', `#!/bin/sh\ntouch '${marker}'\nexit 1\n`);
    chmodSync(hook, 0o755);

    const [writeFile, commitChanges] = fixWriteTools({ base, repo });
    const ctx = { cwd: tree, signal: new AbortController().signal } as unknown as ToolContext;
    await expect(
      commitChanges!.execute({ message: 'vendor', paths: ['vendor'] }, ctx),
    ).rejects.toMatchObject({ code: 'PATH_OUTSIDE_WORKSPACE' });
    expect(gitOut(tree, ['rev-parse', 'HEAD']).trim()).toBe(base);
    await expect(
      writeFile!.execute({ path: 'beta/.git/config', content: '[core]\n' }, ctx),
    ).rejects.toMatchObject({ code: 'PATH_OUTSIDE_WORKSPACE' });
    expect(existsSync(path.join(tree, 'beta', '.git'))).toBe(false);
    expect(existsSync(marker)).toBe(false);

    // Other work still commits, at the base's date, as the fix job's identity.
    await writeFile!.execute({ path: 'beta/REVIEW.md', content: '# beta\n' }, ctx);
    const done = await commitChanges!.execute({ message: 'beta', paths: ['beta'] }, ctx);
    expect(done).toMatchObject({ committed: true, files: ['beta/REVIEW.md'] });
    expect(gitOut(tree, ['log', '-1', '--format=%an %cI']).trim()).toBe(
      'teamwire-example 2024-01-01T00:00:00+00:00',
    );
  });
});
