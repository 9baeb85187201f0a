import { join } from 'node:path';
import { TeamError } from '@teamwire/core';
import { afterEach, describe, expect, it } from 'vitest';
import { createGitWorkspaces, repositoryCapability } from './git-workspaces.js';
import { makeRepo, removeTempDirs, tempDir } from './test-support.js';

afterEach(removeTempDirs);

describe('createGitWorkspaces: placement capability', () => {
  it('names the repository by its folder and path, the same for every provider of that path', () => {
    const repo = makeRepo();
    const capability = createGitWorkspaces({ repoDir: repo }).capability;
    expect(capability).toMatch(/^repo:[A-Za-z0-9._-]+-[0-9a-f]{16}$/);
    expect(createGitWorkspaces({ repoDir: join(repo, '.') }).capability).toBe(capability);
    expect(repositoryCapability(repo)).toBe(capability);
    expect(createGitWorkspaces({ repoDir: makeRepo() }).capability).not.toBe(capability);
    expect(repositoryCapability('/srv/my repo!')).toMatch(/^repo:my_repo_-[0-9a-f]{16}$/);
  });

  it('is reachable only where the repository opens', async () => {
    const repo = makeRepo();
    expect(await createGitWorkspaces({ repoDir: repo }).reachable?.()).toBe(true);
    expect(await createGitWorkspaces({ repoDir: tempDir() }).reachable?.()).toBe(false);
    expect(await createGitWorkspaces({ repoDir: join(tempDir(), 'missing') }).reachable?.()).toBe(
      false,
    );
  });

  it('takes a capability given, and refuses one outside the form', () => {
    const repo = makeRepo();
    expect(createGitWorkspaces({ repoDir: repo, capability: 'repo:app' }).capability).toBe(
      'repo:app',
    );
    for (const capability of ['app', 'repo:has space', '']) {
      let code: string | undefined;
      try {
        createGitWorkspaces({ repoDir: repo, capability });
      } catch (error) {
        code = TeamError.isInstance(error) ? error.code : 'other';
      }
      expect(code).toBe('INVALID_ARGUMENT');
    }
  });
});
