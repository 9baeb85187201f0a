import { createHash } from 'node:crypto';
import { mkdir, readdir } from 'node:fs/promises';
import { basename, dirname, isAbsolute, join, resolve } from 'node:path';
import {
  checkCapability,
  MemberWorkspace,
  TeamError,
  type WorkspaceMember,
  type WorkspaceProvider,
  type WorkspaceRelease,
} from '@teamwire/core';
import { createGitRunner, DEFAULT_GIT_TIMEOUT_MS } from './git-runner.js';
import { exists, removeIfEmptyDir, repairHalfMade } from './half-made.js';
import { type MemberMarker, readMarker, removeMarker, writeMarker } from './member-marker.js';
import { checkMember, checkTeamId, type MemberPlace, memberPlace } from './member-place.js';
import {
  at,
  countCommits,
  listWorktrees,
  openRepository,
  type Repository,
  realPathOf,
  requireWorktreeSupport,
  resolveRef,
} from './repository.js';
import { worktreeChanges } from './worktree-status.js';

/** Options of {@link createGitWorkspaces}. */
export interface GitWorkspacesOptions {
  /** The lead's working tree (any folder inside it). Members branch from its repository. */
  repoDir: string;
  /**
   * Commit-ish a new member branches from. Default: the lead's `HEAD`, resolved to a commit when
   * the member's workspace is first made and recorded as its `base`.
   */
  base?: string | undefined;
  /**
   * Folder under which worktrees live, as `<root>/<teamId>/<memberName>`. Default:
   * `<git common dir>/teamwire-worktrees`, inside `.git`, so it never shows up as untracked
   * files in the lead's working tree.
   */
  root?: string | undefined;
  /** The git binary (a name looked up on `PATH`, or a path). Default `git`. */
  git?: string | undefined;
  /** Longest one git command may run before it is killed. Default 120 000 ms. */
  timeoutMs?: number | undefined;
  /**
   * The placement capability of this repository (core's capability form, `kind:name`): in a team
   * spread over processes, members with a worktree run only on a process that reaches the
   * repository (see {@link repositoryCapability} for the default). Every process of the team
   * must be given the same one.
   */
  capability?: string | undefined;
}

/**
 * The default placement capability of the repository at `repoDir`: `repo:<folder>-<hash>`, the
 * folder's name (characters outside the capability form replaced by `_`, at most 64) and the
 * first 16 hex digits of the SHA-256 of its absolute path, so processes configured with the same
 * path agree on it and two repositories of one name do not.
 */
export function repositoryCapability(repoDir: string): string {
  const absolute = resolve(repoDir);
  const name = (basename(absolute) || 'root').replace(/[^A-Za-z0-9._-]/g, '_').slice(0, 64);
  const hash = createHash('sha256').update(absolute).digest('hex').slice(0, 16);
  return `repo:${name}-${hash}`;
}

/** Name of the provider, in events and errors. */
export const GIT_WORKSPACES_NAME = 'git-worktree';
/** Folder under the git common dir that holds worktrees when no `root` is given. */
export const DEFAULT_ROOT_DIR = 'teamwire-worktrees';

const NOTHING_KEPT: WorkspaceRelease = { kept: false, commitsAhead: 0, changedFiles: [] };

/**
 * A `WorkspaceProvider` (core's workspace port) that gives each isolated member a git worktree of its own, on the
 * branch `teamwire/<teamId>/<memberName>`. Fail-closed (`WORKSPACE_*` errors, never the shared
 * tree), idempotent per member, and repaired after a crash in the middle of `acquire`.
 */
export function createGitWorkspaces(options: GitWorkspacesOptions): WorkspaceProvider {
  const git = createGitRunner(options.git ?? 'git', options.timeoutMs ?? DEFAULT_GIT_TIMEOUT_MS);
  // One operation per member at a time in this process; the team's single owner makes it one
  // process per member.
  const queues = new Map<string, Promise<unknown>>();
  const serialized = <T>(key: string, task: () => Promise<T>): Promise<T> => {
    const previous = queues.get(key) ?? Promise.resolve();
    const next = previous.then(task, task);
    const settled = next.then(
      () => undefined,
      () => undefined,
    );
    queues.set(key, settled);
    void settled.then(() => {
      if (queues.get(key) === settled) queues.delete(key);
    });
    return next;
  };

  const open = async (signal?: AbortSignal): Promise<{ repo: Repository; root: string }> => {
    const repo = await openRepository(git, options.repoDir, { needWorkTree: true, signal });
    requireWorktreeSupport(repo);
    const root = options.root ? realPathOf(options.root) : join(repo.commonDir, DEFAULT_ROOT_DIR);
    return { repo, root };
  };

  const capability = options.capability ?? repositoryCapability(options.repoDir);
  checkCapability(capability, 'the capability of createGitWorkspaces');

  return {
    specificationVersion: 'v1',
    name: GIT_WORKSPACES_NAME,
    capability,

    /** True when the repository opens here with a work tree and a git that has worktrees. */
    async reachable() {
      try {
        await open();
        return true;
      } catch {
        return false;
      }
    },

    async acquire({ teamId, member, recorded, signal }) {
      checkTeamId(teamId);
      checkMember(member);
      const record = checkRecorded(recorded, teamId, member);
      return serialized(`${teamId}/${member.name}`, async () => {
        const { repo, root } = await open(signal);
        const place = memberPlace(root, teamId, member, record?.path);
        return acquireIn(repo, place, { teamId, member, record, base: options.base, signal });
      });
    },

    async release({ teamId, member, recorded }) {
      checkTeamId(teamId);
      checkMember(member);
      const record = checkRecorded(recorded, teamId, member);
      return serialized(`${teamId}/${member.name}`, async () => {
        let opened: { repo: Repository; root: string };
        try {
          opened = await open();
        } catch (error) {
          // Without a record the spawn failed before a workspace existed: there is nothing to
          // keep. With one, a workspace may hold work that cannot be inspected: fail.
          if (
            record === undefined &&
            (TeamError.hasCode(error, 'WORKSPACE_GIT_MISSING') ||
              TeamError.hasCode(error, 'WORKSPACE_NOT_A_REPOSITORY'))
          ) {
            return { ...NOTHING_KEPT, changedFiles: [] };
          }
          throw error;
        }
        const place = memberPlace(opened.root, teamId, member, record?.path);
        return releaseIn(opened.repo, place, { teamId, member, record });
      });
    },
  };
}

/** Parses what the member record holds; it must name this member's branch. */
function checkRecorded(
  recorded: MemberWorkspace | undefined,
  teamId: string,
  member: WorkspaceMember,
): MemberWorkspace | undefined {
  if (recorded === undefined) return undefined;
  const parsed = MemberWorkspace.safeParse(recorded);
  const expected = `teamwire/${teamId}/${member.name}`;
  if (!parsed.success || !isAbsolute(parsed.data.path) || parsed.data.branch !== expected) {
    throw new TeamError(
      'INVALID_ARGUMENT',
      `the recorded workspace of ${member.name} is not a git-worktree workspace on ${expected}`,
      { details: { recorded: JSON.stringify(recorded).slice(0, 500) } },
    );
  }
  return parsed.data;
}

interface MemberContext {
  teamId: string;
  member: WorkspaceMember;
  record: MemberWorkspace | undefined;
}

function taken(message: string, place: MemberPlace): TeamError {
  return new TeamError('WORKSPACE_TAKEN', message, {
    details: { branch: place.branch, path: place.path },
  });
}

/** Whose the deterministic branch and path are, as far as the marker and the record tell. */
async function ownership(place: MemberPlace, context: MemberContext) {
  const marker = await readMarker(place.markerPath);
  if (marker && (marker.memberId !== context.member.id || marker.branch !== place.branch)) {
    throw taken(
      `${place.branch} belongs to another member (id ${marker.memberId}) of team ${marker.teamId}`,
      place,
    );
  }
  return { marker, mine: marker !== undefined || context.record !== undefined };
}

async function acquireIn(
  repo: Repository,
  place: MemberPlace,
  context: MemberContext & { base: string | undefined; signal: AbortSignal | undefined },
): Promise<MemberWorkspace> {
  const { signal } = context;
  await repo.git.run([...at(repo), 'worktree', 'prune'], { signal });
  await repairHalfMade(repo, place);
  const { marker, mine } = await ownership(place, context);

  const worktrees = await listWorktrees(repo, signal);
  const atPath = worktrees.find((w) => realPathOf(w.path) === realPathOf(place.path));
  const onBranch = worktrees.find((w) => w.branch === place.ref);
  const markerFor = (base: string): MemberMarker => ({
    version: 1,
    teamId: context.teamId,
    memberId: context.member.id,
    memberName: context.member.name,
    branch: place.branch,
    path: place.path,
    base,
  });

  if (atPath) {
    if (atPath.branch !== place.ref) {
      throw taken(
        `${place.path} is a worktree on ${atPath.branch ?? 'a detached HEAD'}, not on ${place.branch}`,
        place,
      );
    }
    if (!mine) {
      throw taken(
        `${place.path} is a worktree on ${place.branch} that teamwire did not make`,
        place,
      );
    }
    const base = context.record?.base ?? marker?.base;
    if (!marker && base && /^[0-9a-f]{40,64}$/.test(base)) {
      await writeMarker(place.markerPath, markerFor(base));
    }
    return workspace(place, base);
  }
  if (onBranch) {
    throw taken(`${place.branch} is checked out at ${onBranch.path}`, place);
  }
  if (await exists(place.path)) {
    // An empty folder is what a kill between `mkdir` and the first file leaves; it holds nothing.
    if (!(await removeIfEmptyDir(place.path))) {
      const entries = (await readdir(place.path).catch(() => [])).slice(0, 10);
      throw new TeamError(
        'WORKSPACE_TAKEN',
        `${place.path} exists and is not a worktree of ${context.member.name} (holds ${entries.join(', ')})`,
        { details: { branch: place.branch, path: place.path, entries } },
      );
    }
  }

  const branchHead = await resolveRef(repo, place.ref, signal);
  let base: string;
  let args: string[];
  if (branchHead !== undefined) {
    if (!mine) {
      throw taken(
        `branch ${place.branch} exists and was not made by teamwire for this member`,
        place,
      );
    }
    // Reuse the branch: a killed earlier attempt made it, or the member's folder vanished.
    base = context.record?.base ?? marker?.base ?? branchHead;
    args = [place.path, place.branch];
  } else {
    const wanted = context.record?.base ?? context.base ?? 'HEAD';
    const resolved = await resolveRef(repo, wanted, signal);
    if (resolved === undefined) {
      throw new TeamError('WORKSPACE_FAILED', `base ${JSON.stringify(wanted)} names no commit`, {
        details: { base: wanted },
      });
    }
    base = resolved;
    args = ['-b', place.branch, place.path, base];
  }
  if (!marker || marker.base !== base) await writeMarker(place.markerPath, markerFor(base));
  await mkdir(dirname(place.path), { recursive: true });
  await repo.git.run(
    [
      ...at(repo),
      'worktree',
      'add',
      '--lock',
      '--reason',
      place.initializingReason,
      '--quiet',
      ...args,
    ],
    { signal },
  );
  // Only an add that returned is unlocked: a locked entry with this reason is a half-made one.
  await repo.git.run([...at(repo), 'worktree', 'unlock', place.path], { signal });
  return workspace(place, base);
}

function workspace(place: MemberPlace, base: string | undefined): MemberWorkspace {
  return base === undefined
    ? { path: place.path, branch: place.branch }
    : { path: place.path, branch: place.branch, base };
}

async function releaseIn(
  repo: Repository,
  place: MemberPlace,
  context: MemberContext,
): Promise<WorkspaceRelease> {
  await repo.git.run([...at(repo), 'worktree', 'prune']);
  await repairHalfMade(repo, place);
  const { marker, mine } = await ownership(place, context);
  // Without a marker or a record nothing here was made for this member: touch nothing.
  if (!mine) return { ...NOTHING_KEPT, changedFiles: [] };

  const worktrees = await listWorktrees(repo);
  const atPath = worktrees.find((w) => realPathOf(w.path) === realPathOf(place.path));
  const branchHead = await resolveRef(repo, place.ref);
  const base = context.record?.base ?? marker?.base ?? 'HEAD';

  if (atPath) {
    const changes = await worktreeChanges(repo, place.path);
    const head = atPath.branch ?? atPath.head ?? place.ref;
    const commitsAhead = await countCommits(repo, head, base);
    if (atPath.branch !== place.ref || changes.dirty || commitsAhead > 0 || !branchHead) {
      return kept(place, atPath.branch, commitsAhead, changes.files);
    }
    // Without --force git itself refuses a worktree that became dirty since the status above.
    try {
      await repo.git.run([...at(repo), 'worktree', 'remove', place.path]);
    } catch (error) {
      if (!TeamError.hasCode(error, 'WORKSPACE_FAILED')) throw error;
      const again = await worktreeChanges(repo, place.path);
      if (again.dirty) return kept(place, atPath.branch, commitsAhead, again.files);
      throw error;
    }
    await deleteBranch(repo, place, branchHead);
  } else if (branchHead !== undefined) {
    // A branch without a worktree: the add was killed, or the folder was deleted.
    const commitsAhead = await countCommits(repo, place.ref, base);
    if (commitsAhead > 0) {
      return { kept: true, branch: place.branch, commitsAhead, changedFiles: [] };
    }
    await deleteBranch(repo, place, branchHead);
  }
  await removeIfEmptyDir(place.path);
  await removeMarker(place.markerPath);
  await removeIfEmptyDir(dirname(place.markerPath));
  return { ...NOTHING_KEPT, changedFiles: [] };
}

function kept(
  place: MemberPlace,
  ref: string | undefined,
  commitsAhead: number,
  changedFiles: string[],
): WorkspaceRelease {
  const branch = ref?.startsWith('refs/heads/') ? ref.slice('refs/heads/'.length) : place.branch;
  return { kept: true, path: place.path, branch, commitsAhead, changedFiles };
}

/** Deletes the branch only if it still points where it was inspected (compare-and-delete). */
async function deleteBranch(repo: Repository, place: MemberPlace, expected: string): Promise<void> {
  await repo.git.run([...at(repo), 'update-ref', '-d', place.ref, expected]);
}
