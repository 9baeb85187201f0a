import { TeamError } from '../errors.js';
import type { WorkspaceMember, WorkspaceProvider, WorkspaceRelease } from '../ports/workspace.js';
import type { MemberWorkspace } from '../records.js';

/** One call a {@link MemoryWorkspaces} received, in order. */
export interface MemoryWorkspaceCall {
  /** Which method was called. */
  method: 'acquire' | 'release';
  /** The team it was called for. */
  teamId: string;
  /** The member it was called for. */
  member: WorkspaceMember;
  /** The recorded workspace passed in, if any. */
  recorded?: MemberWorkspace | undefined;
}

/** Work a test pretends a member did in its workspace, so that `release` keeps it. */
export interface MemoryWorkspaceWork {
  /** Commits on the member's branch beyond its base. */
  commitsAhead?: number;
  /** Changed, uncommitted files (relative paths). */
  changedFiles?: string[];
}

/**
 * An in-memory {@link WorkspaceProvider}: no disk, no git. A workspace is a path under `root`
 * (`<root>/<teamId>/<member name>`, branch `teamwire/<member name>`), kept in a map that outlives
 * any number of `openTeam` calls, like a repository outlives a process. It follows the port's
 * contract: `acquire` is idempotent per member and finds a recorded workspace again (recreating it
 * at the recorded path when it is gone); `release` keeps a workspace that holds work (see
 * {@link MemoryWorkspaces.setWork}) and removes one that does not.
 */
export interface MemoryWorkspaces extends WorkspaceProvider {
  /** Every call, in order. */
  readonly calls: MemoryWorkspaceCall[];
  /** The workspace of the member named `name` (in any team) while it exists. */
  workspaceOf(name: string): MemberWorkspace | undefined;
  /** Pretends the member named `name` did work in its workspace, so `release` keeps it. */
  setWork(name: string, work: MemoryWorkspaceWork): void;
  /**
   * Makes every later `acquire` (of the member named `member`, or of anyone) throw `error`, until
   * called again with `undefined`. The failed call still counts in {@link calls}.
   */
  failAcquire(error: unknown, member?: string): void;
  /** Makes every later `release` (of `member`, or of anyone) throw `error`, until cleared. */
  failRelease(error: unknown, member?: string): void;
}

/** Options of {@link createMemoryWorkspaces}. */
export interface MemoryWorkspacesOptions {
  /** The directory workspaces are placed under (default `/memory-workspaces`). */
  root?: string;
  /** The provider's `name` (default `memory`). */
  name?: string;
  /** The provider's placement capability (default none), e.g. `repo:app`. */
  capability?: string;
  /** What `reachable` answers: false for a process without the repository. Default true. */
  reachable?: boolean;
}

interface Entry {
  teamId: string;
  name: string;
  workspace: MemberWorkspace;
  work: MemoryWorkspaceWork;
}

/** Creates a {@link MemoryWorkspaces}: an in-memory `WorkspaceProvider` for tests. */
export function createMemoryWorkspaces(options: MemoryWorkspacesOptions = {}): MemoryWorkspaces {
  const root = (options.root ?? '/memory-workspaces').replace(/\/+$/, '');
  const byMember = new Map<string, Entry>();
  const calls: MemoryWorkspaceCall[] = [];
  let acquireFailure: { error: unknown; member: string | undefined } | undefined;
  let releaseFailure: { error: unknown; member: string | undefined } | undefined;
  const key = (teamId: string, member: WorkspaceMember) => `${teamId}\u0000${member.id}`;
  const entryNamed = (name: string) => [...byMember.values()].find((e) => e.name === name);
  const failing = (
    failure: { error: unknown; member: string | undefined } | undefined,
    member: WorkspaceMember,
  ) => failure !== undefined && (failure.member === undefined || failure.member === member.name);

  return {
    specificationVersion: 'v1',
    name: options.name ?? 'memory',
    ...(options.capability === undefined ? {} : { capability: options.capability }),
    reachable: async () => options.reachable ?? true,
    calls,
    async acquire({ teamId, member, recorded }) {
      calls.push({
        method: 'acquire',
        teamId,
        member: { ...member },
        ...(recorded === undefined ? {} : { recorded: { ...recorded } }),
      });
      if (failing(acquireFailure, member)) throw acquireFailure?.error;
      const existing = byMember.get(key(teamId, member));
      if (existing !== undefined) return { ...existing.workspace };
      const workspace: MemberWorkspace = recorded ?? {
        path: `${root}/${teamId}/${member.name}`,
        branch: `teamwire/${member.name}`,
        base: '0000000',
      };
      if (
        [...byMember.values()].some(
          (e) => e.workspace.path === workspace.path || e.workspace.branch === workspace.branch,
        )
      ) {
        throw new TeamError(
          'WORKSPACE_TAKEN',
          `${workspace.path} belongs to another member's workspace`,
          { details: { path: workspace.path } },
        );
      }
      byMember.set(key(teamId, member), {
        teamId,
        name: member.name,
        workspace: { ...workspace },
        work: {},
      });
      return { ...workspace };
    },
    async release({ teamId, member, recorded }): Promise<WorkspaceRelease> {
      calls.push({
        method: 'release',
        teamId,
        member: { ...member },
        ...(recorded === undefined ? {} : { recorded: { ...recorded } }),
      });
      if (failing(releaseFailure, member)) throw releaseFailure?.error;
      const entry = byMember.get(key(teamId, member));
      if (entry === undefined) return { kept: false, commitsAhead: 0, changedFiles: [] };
      const commitsAhead = entry.work.commitsAhead ?? 0;
      const changedFiles = [...(entry.work.changedFiles ?? [])].slice(0, 100);
      if (commitsAhead > 0 || changedFiles.length > 0) {
        return {
          kept: true,
          path: entry.workspace.path,
          ...(entry.workspace.branch === undefined ? {} : { branch: entry.workspace.branch }),
          commitsAhead,
          changedFiles,
        };
      }
      byMember.delete(key(teamId, member));
      return { kept: false, commitsAhead: 0, changedFiles: [] };
    },
    workspaceOf(name) {
      const entry = entryNamed(name);
      return entry === undefined ? undefined : { ...entry.workspace };
    },
    setWork(name, work) {
      const entry = entryNamed(name);
      if (entry === undefined) throw new Error(`no workspace for a member named ${name}`);
      entry.work = { ...work };
    },
    failAcquire(error, member) {
      acquireFailure = error === undefined ? undefined : { error, member };
    },
    failRelease(error, member) {
      releaseFailure = error === undefined ? undefined : { error, member };
    },
  };
}
