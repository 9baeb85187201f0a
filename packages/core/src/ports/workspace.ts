import type { MemberWorkspace } from '../records.js';

export { MemberWorkspace } from '../records.js';

/** The member a workspace is for: ids never repeat and names are never reused in a team. */
export interface WorkspaceMember {
  /** The member's id (a ulid). */
  id: string;
  /** The member's name, e.g. for its branch and directory. */
  name: string;
}

/** What became of a member's workspace when it retired. */
export interface WorkspaceRelease {
  /** False when the workspace held no work and was removed (with its branch). */
  kept: boolean;
  /** Where it is, when kept. */
  path?: string | undefined;
  /** Its branch, when kept. */
  branch?: string | undefined;
  /** Commits on the branch beyond its base. */
  commitsAhead: number;
  /** Files changed and not committed (paths relative to the workspace), at most 100. */
  changedFiles: string[];
}

/**
 * Gives isolated members a working directory of their own. The runtime asks for one when a
 * member of an isolated agent type is spawned or revived, and hands it back when the member
 * retires; members without isolation work in the team's directory and never reach this port.
 *
 * An implementation is fail-closed: when it cannot give the member its own directory it throws a
 * `TeamError` (`WORKSPACE_*`), the spawn fails and the member is recorded `failed` — it never
 * falls back to the shared directory. It must be crash-safe: a process killed in the middle of
 * `acquire` leaves nothing that blocks the next `acquire` or `release` for the same member.
 */
export interface WorkspaceProvider {
  /** The version of this port the provider implements; checked when a team opens. */
  readonly specificationVersion: 'v1';
  /** Short name for events and errors, e.g. `git-worktree`. */
  readonly name: string;
  /**
   * The placement capability of the place its workspaces live in (e.g. `repo:<name>` for one
   * repository), the same in every process of the team that is configured alike. In a team
   * spread over processes a member with a workspace of its own requires it, so it runs only on
   * (and is taken over only by) a process that declares it: one whose provider is
   * {@link reachable}. Without it such a member cannot be placed (`WORKSPACE_UNAVAILABLE`).
   */
  readonly capability?: string | undefined;
  /**
   * Whether this process reaches the place the workspaces live in (the repository is on this
   * machine): asked once when the team opens, the runtime declares {@link capability} for the
   * process only when this resolves true. Default: true. A rejection counts as false.
   */
  reachable?(): Promise<boolean>;
  /**
   * The member's workspace: created on spawn (`recorded` absent), or found again on revival
   * (`recorded` is what the member record holds). Idempotent for one member: a second call, or a
   * call after a crash mid-way, returns the same workspace.
   */
  acquire(options: {
    teamId: string;
    member: WorkspaceMember;
    recorded?: MemberWorkspace | undefined;
    signal?: AbortSignal | undefined;
  }): Promise<MemberWorkspace>;
  /**
   * Called when the member retires, or when its spawn failed (then `recorded` may be absent and
   * the provider looks for what a half-done `acquire` left). A workspace with no work is removed;
   * one with changes or commits is kept and described.
   */
  release(options: {
    teamId: string;
    member: WorkspaceMember;
    recorded?: MemberWorkspace | undefined;
  }): Promise<WorkspaceRelease>;
}
