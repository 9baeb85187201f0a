import { chmodSync, readFileSync, writeFileSync } from 'node:fs';
import { devNull } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { commitPaths } from './commit-paths.js';
import { createGitRunner } from './git-runner.js';
import { createGitWorkspaces } from './git-workspaces.js';
import { mergeBranch } from './merge-branch.js';
import { commitAll, git, IDENTITY, makeRepo, removeTempDirs, tempDir } from './test-support.js';

afterEach(() => {
  vi.unstubAllEnvs();
  removeTempDirs();
});

const TEAM = '01JFORCEDCONFIG00000000000';

/** Settings that must reach every git command, stated here rather than read from the runner. */
const REQUIRED = [
  'core.fsmonitor=false',
  `core.hooksPath=${devNull}`,
  'core.untrackedCache=false',
  'submodule.recurse=false',
  'diff.ignoreSubmodules=all',
  'status.submoduleSummary=false',
  'protocol.allow=never',
  'protocol.file.allow=never',
  'core.sshCommand=false',
  'credential.helper=',
  'commit.gpgSign=false',
];

interface Call {
  args: string[];
  env: Record<string, string>;
}

/** A `git` that records its arguments and a few variables, then runs the real git. */
function loggingGit(): { binary: string; calls: () => Call[] } {
  const dir = tempDir();
  const log = join(dir, 'calls.log');
  const binary = join(dir, 'logging-git');
  const vars = [
    'GIT_CONFIG_NOSYSTEM',
    'GIT_ALLOW_PROTOCOL',
    'GIT_CONFIG_PARAMETERS',
    'GIT_SSH_COMMAND',
  ];
  // \x1d ends a call, \x1e ends the variables, \x1f ends each field.
  const record = vars.map((v) => `printf '%s=%s\\037' ${v} "\${${v}-<unset>}"`).join('; ');
  writeFileSync(
    binary,
    `#!/bin/sh\n{ ${record}; printf '\\036'; for a in "$@"; do printf '%s\\037' "$a"; done; printf '\\035'; } >> '${log}'\nexec git "$@"\n`,
  );
  chmodSync(binary, 0o755);
  writeFileSync(log, '');
  const calls = () =>
    readFileSync(log, 'utf8')
      .split('\x1d')
      .filter(Boolean)
      .map((text) => {
        const [vars = '', args = ''] = text.split('\x1e');
        const env = Object.fromEntries(
          vars
            .split('\x1f')
            .filter(Boolean)
            .map((pair) => [pair.slice(0, pair.indexOf('=')), pair.slice(pair.indexOf('=') + 1)]),
        );
        return { args: args.split('\x1f').slice(0, -1), env };
      });
  return { binary, calls };
}

/** The `-c` settings given before the command (the leading options). */
function leadingConfig(args: string[]): { config: string[]; command: string | undefined } {
  const config: string[] = [];
  let i = 0;
  while (i < args.length) {
    if (args[i] === '--no-pager') i++;
    else if (args[i] === '-c') {
      config.push(args[i + 1] ?? '');
      i += 2;
    } else break;
  }
  // The command is the first argument that is not an option or an option's value.
  const rest = args.slice(i);
  let command: string | undefined;
  for (let j = 0; j < rest.length; j++) {
    const arg = rest[j]!;
    if (['-C', '--git-dir', '--work-tree'].includes(arg)) j++;
    else if (!arg.startsWith('-')) {
      command = arg;
      break;
    }
  }
  return { config, command };
}

function expectHardened(calls: Call[]): Set<string> {
  const commands = new Set<string>();
  for (const call of calls) {
    const { config, command } = leadingConfig(call.args);
    const shown = call.args.slice(-8).join(' ');
    for (const entry of REQUIRED) expect(config, shown).toContain(entry);
    expect(call.env, shown).toMatchObject({
      GIT_CONFIG_NOSYSTEM: '1',
      GIT_ALLOW_PROTOCOL: '',
      GIT_CONFIG_PARAMETERS: '<unset>',
      GIT_SSH_COMMAND: '<unset>',
    });
    commands.add(command ?? call.args.at(-1) ?? '');
  }
  return commands;
}

describe('every git command runs with the forced configuration', () => {
  it('in acquire, release, mergeBranch (both methods) and commitPaths', async () => {
    // Inherited variables a parent git or the user set must not get through either.
    vi.stubEnv('GIT_CONFIG_PARAMETERS', "'core.abbrev'='12'");
    vi.stubEnv('GIT_SSH_COMMAND', 'false');
    const { binary, calls } = loggingGit();
    const repo = makeRepo({ 'a.txt': 'a\n', 'b.txt': 'b\n' });
    git(repo, 'branch', 'integration');
    git(repo, 'branch', 'other');
    const workspaces = createGitWorkspaces({ repoDir: repo, git: binary, base: 'integration' });
    const alice = { id: 'A', name: 'alice' };
    const bob = { id: 'B', name: 'bob' };
    const a = await workspaces.acquire({ teamId: TEAM, member: alice });
    const b = await workspaces.acquire({ teamId: TEAM, member: bob });

    writeFileSync(join(a.path, 'a.txt'), 'alice\n');
    const committed = await commitPaths({
      dir: a.path,
      paths: ['a.txt'],
      message: 'alice',
      author: IDENTITY,
      git: binary,
    });
    expect(committed.committed).toBe(true);
    writeFileSync(join(repo, 'b.txt'), 'lead\n');
    commitAll(repo, 'lead moves on');
    git(repo, 'branch', '-f', 'integration', 'HEAD');
    git(repo, 'branch', '-f', 'other', 'HEAD');
    git(repo, 'checkout', '--quiet', '--detach');
    for (const [method, into] of [
      ['merge-tree', 'integration'],
      ['worktree', 'other'],
    ] as const) {
      const merged = await mergeBranch({
        repoDir: repo,
        branch: a.branch!,
        into,
        method,
        author: IDENTITY,
        git: binary,
      });
      expect(merged).toMatchObject({ merged: true, kind: 'merge' });
    }
    expect(await workspaces.release({ teamId: TEAM, member: alice, recorded: a })).toMatchObject({
      kept: true,
    });
    expect(await workspaces.release({ teamId: TEAM, member: bob, recorded: b })).toMatchObject({
      kept: false,
    });

    const commands = expectHardened(calls());
    // The commands that read a member's files are among those checked.
    for (const command of ['worktree', 'status', 'add', 'commit', 'merge-tree', 'merge']) {
      expect(commands).toContain(command);
    }
  });

  it('a call cannot take the forced variables away', async () => {
    const { binary, calls } = loggingGit();
    await createGitRunner(binary, 30_000).run(['--version'], {
      env: { GIT_ALLOW_PROTOCOL: 'file:ext', GIT_CONFIG_PARAMETERS: "'core.abbrev'='12'" },
    });
    expectHardened(calls());
    expect(calls()).toHaveLength(1);
  });
});
