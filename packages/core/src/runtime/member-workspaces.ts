import { isAbsolute } from 'node:path';
import { TeamError } from '../errors.js';
import { checkCapability } from '../placement/eligibility.js';
import type { AgentEvent, EventSink } from '../ports/events.js';
import type { WorkspaceProvider, WorkspaceRelease } from '../ports/workspace.js';
import type { Member } from '../records.js';
import { MemberWorkspace } from '../records.js';
import type { AgentRegistry } from './agents.js';
import { requiredCapabilities } from './agents.js';

/** How many changed files a retirement notice names before it says how many more there are. */
const NOTICE_MAX_FILES = 20;
/** Longer file paths are shortened in a retirement notice. */
const NOTICE_MAX_PATH = 200;

/**
 * What an isolated member requires when the team's provider names no capability: a text outside
 * the capability form, so no process declares it (shown as is where a member waits for it).
 */
const UNKNOWN_WORKSPACE = 'a workspace provider with a capability';

/** Where a member works now. */
export interface MemberPlace {
  /** The directory its tools get as `ToolContext.cwd`. */
  cwd: string;
  /** Its own workspace, for an isolated member; the member record keeps it. */
  workspace: MemberWorkspace | undefined;
}

/** What the workspaces of a team are made of; `openTeam` passes its options through. */
export interface MemberWorkspacesOptions {
  teamId: string;
  /** The team's provider; without one an isolated member cannot start (fail-closed). */
  provider: WorkspaceProvider | undefined;
  /** The team's directory: the lead's and every non-isolated member's. */
  cwd: string;
  agents: AgentRegistry;
  events: EventSink;
  leadId(): string | undefined;
}

/**
 * The runtime's side of the workspace port: which members work in a directory of their own, and
 * the calls to the provider when they start (spawn, revival), retire, or failed to start. It never
 * falls back to the shared directory for an isolated member: no provider, or a provider that
 * refuses, is an error the member fails with. Every step is published as a `workspace` event
 * under the member's name.
 */
export class MemberWorkspaces {
  /** The provider's placement capability, checked once. */
  readonly capability: string | undefined;

  constructor(private readonly options: MemberWorkspacesOptions) {
    const capability = options.provider?.capability;
    if (capability !== undefined) checkCapability(capability, 'the workspace provider capability');
    this.capability = capability;
  }

  /**
   * The capabilities a process must have to run `member`: its agent type's `placement.requires`,
   * and, for a member with a workspace of its own, the provider's capability (where its
   * workspace lives). An unknown type requires nothing here (it fails when it runs).
   */
  requirements(member: Member): readonly string[] {
    const { agents } = this.options;
    const own = agents.has(member.agentType)
      ? requiredCapabilities(agents.get(member.agentType))
      : [];
    if (!this.isIsolated(member)) return own;
    // Without a capability this process cannot tell where the workspace lives: it requires one
    // no process can declare (outside the capability form), so this process never claims it.
    const where = this.capability ?? UNKNOWN_WORKSPACE;
    return own.includes(where) ? own : [...own, where];
  }

  /**
   * The capabilities this process declares because of its provider: the provider's capability
   * when the provider reaches its workspaces here (see `WorkspaceProvider.reachable`).
   */
  async declared(): Promise<string[]> {
    const { provider } = this.options;
    if (provider === undefined || this.capability === undefined) return [];
    const reachable =
      provider.reachable === undefined
        ? true
        : await provider.reachable().then(
            (value) => value === true,
            () => false,
          );
    return reachable ? [this.capability] : [];
  }

  /**
   * Whether `member` may run on another process of a team spread over processes: a member with
   * a workspace of its own only when the provider names the capability of where its workspaces
   * are, so the placement keeps it there.
   */
  placeable(member: Member): boolean {
    return !this.isIsolated(member) || this.capability !== undefined;
  }

  /** The team's directory. */
  get teamCwd(): string {
    return this.options.cwd;
  }

  /**
   * Whether the member works in a workspace of its own: one is recorded for it, or its agent type
   * asks for `isolation: 'worktree'`. Never the lead, which works in the team's directory.
   */
  isIsolated(member: Member): boolean {
    if (member.id === this.options.leadId()) return false;
    if (member.workspace !== undefined) return true;
    const { agents } = this.options;
    return (
      agents.has(member.agentType) &&
      agents.get(member.agentType).external !== true &&
      agents.model(member.agentType).isolation === 'worktree'
    );
  }

  /**
   * Where the member works: the team's directory, or, for an isolated member, the workspace the
   * provider gives it (created on spawn, found again from the record on revival). Throws a
   * `TeamError` (`WORKSPACE_*`) when it cannot have its own.
   */
  async placeOf(member: Member): Promise<MemberPlace> {
    if (!this.isIsolated(member)) return { cwd: this.options.cwd, workspace: undefined };
    const workspace = await this.acquire(member);
    return { cwd: workspace.path, workspace };
  }

  /**
   * Best-effort clean-up of an isolated member that never got going (its spawn failed, or a crash
   * left it `provisioning`): the provider removes what a half-done `acquire` left. Never throws;
   * a failure is published as a `release-failed` event.
   */
  async cleanUp(member: Member): Promise<void> {
    if (this.options.provider === undefined || !this.isIsolated(member)) return;
    await this.release(member);
  }

  /**
   * Hands a retiring member's workspace back. Returns the notice the lead should read: what was
   * kept (branch, commits, changed files), or why the workspace could not be released; undefined
   * when there is nothing to say (no workspace, or one without work, removed). Never throws: a
   * retirement is recorded whatever the provider does.
   */
  async retire(member: Member): Promise<string | undefined> {
    if (!this.isIsolated(member)) return undefined;
    const outcome = await this.release(member);
    const recorded = member.workspace;
    if ('error' in outcome) {
      const where =
        recorded === undefined
          ? ''
          : `; it may still be at ${recorded.path}${recorded.branch === undefined ? '' : ` on branch ${recorded.branch}`}`;
      return `${member.name} retired, but its workspace could not be released (${outcome.error.code}: ${outcome.error.message})${where}.`;
    }
    if (!outcome.kept) return undefined;
    return keptNotice(member.name, outcome);
  }

  private async acquire(member: Member): Promise<MemberWorkspace> {
    const { provider, teamId } = this.options;
    const recorded = member.workspace;
    try {
      if (provider === undefined) {
        throw new TeamError(
          'WORKSPACE_UNAVAILABLE',
          `${member.name} (agent type ${member.agentType}) works in a workspace of its own, and the team has no workspace provider (the workspaces option of openTeam)`,
          { details: { memberId: member.id, agentType: member.agentType } },
        );
      }
      let value: unknown;
      try {
        value = await provider.acquire({
          teamId,
          member: { id: member.id, name: member.name },
          ...(recorded === undefined ? {} : { recorded }),
        });
      } catch (error) {
        throw asWorkspaceError(error, `${provider.name} could not give ${member.name} a workspace`);
      }
      const workspace = checkWorkspace(value, provider.name, member);
      this.publish(member, {
        action: 'acquired',
        path: workspace.path,
        ...(workspace.branch === undefined ? {} : { branch: workspace.branch }),
      });
      return workspace;
    } catch (error) {
      const failure = asWorkspaceError(error, `${member.name} has no workspace`);
      this.publish(member, {
        action: 'acquire-failed',
        ...placeOfRecord(member),
        error: { code: failure.code, message: failure.message },
      });
      throw failure;
    }
  }

  private async release(
    member: Member,
  ): Promise<WorkspaceRelease | { error: { code: string; message: string } }> {
    const { provider, teamId } = this.options;
    const recorded = member.workspace;
    try {
      if (provider === undefined) {
        throw new TeamError(
          'WORKSPACE_UNAVAILABLE',
          'the team has no workspace provider (the workspaces option of openTeam)',
          { details: { memberId: member.id } },
        );
      }
      const outcome = await provider.release({
        teamId,
        member: { id: member.id, name: member.name },
        ...(recorded === undefined ? {} : { recorded }),
      });
      const kept = outcome?.kept === true;
      const commitsAhead = Number.isSafeInteger(outcome?.commitsAhead) ? outcome.commitsAhead : 0;
      const changedFiles = Array.isArray(outcome?.changedFiles)
        ? outcome.changedFiles.filter((f): f is string => typeof f === 'string')
        : [];
      const path = outcome?.path ?? recorded?.path;
      const branch = outcome?.branch ?? recorded?.branch;
      this.publish(member, {
        action: kept ? 'kept' : 'removed',
        ...(path === undefined ? {} : { path }),
        ...(branch === undefined ? {} : { branch }),
        commitsAhead,
        changedFiles,
      });
      return {
        kept,
        ...(path === undefined ? {} : { path }),
        ...(branch === undefined ? {} : { branch }),
        commitsAhead,
        changedFiles,
      };
    } catch (error) {
      const failure = asWorkspaceError(error, `${member.name}'s workspace could not be released`);
      const error_ = { code: failure.code, message: failure.message };
      this.publish(member, { action: 'release-failed', ...placeOfRecord(member), error: error_ });
      return { error: error_ };
    }
  }

  private publish(
    member: Member,
    event: Omit<Extract<AgentEvent, { type: 'workspace' }>, 'type' | 'memberId'>,
  ): void {
    this.options.events.publish(member.name, { type: 'workspace', memberId: member.id, ...event });
  }
}

/** The path and branch the member record holds, for events about a failure. */
function placeOfRecord(member: Member): { path?: string; branch?: string } {
  const recorded = member.workspace;
  if (recorded === undefined) return {};
  return {
    path: recorded.path,
    ...(recorded.branch === undefined ? {} : { branch: recorded.branch }),
  };
}

/** A provider's failure as a `TeamError`: its own, or `WORKSPACE_FAILED` wrapping anything else. */
function asWorkspaceError(error: unknown, what: string): TeamError {
  if (TeamError.isInstance(error)) return error;
  const why = error instanceof Error ? error.message : String(error);
  return new TeamError('WORKSPACE_FAILED', `${what}: ${why}`, { cause: error });
}

/**
 * Checks what `acquire` returned: a {@link MemberWorkspace} with an absolute path, and on revival
 * the very one the member record holds (a member's work is never silently moved).
 */
function checkWorkspace(value: unknown, providerName: string, member: Member): MemberWorkspace {
  const parsed = MemberWorkspace.safeParse(value);
  if (!parsed.success || !isAbsolute(parsed.data.path)) {
    throw new TeamError(
      'WORKSPACE_FAILED',
      `${providerName} returned an invalid workspace for ${member.name} (it needs an absolute path)`,
      { details: { memberId: member.id } },
    );
  }
  const recorded = member.workspace;
  if (
    recorded !== undefined &&
    (parsed.data.path !== recorded.path || parsed.data.branch !== recorded.branch)
  ) {
    throw new TeamError(
      'WORKSPACE_FAILED',
      `${providerName} returned ${parsed.data.path} for ${member.name}, whose record holds ${recorded.path}`,
      { details: { memberId: member.id, recorded: recorded.path, returned: parsed.data.path } },
    );
  }
  return parsed.data;
}

/** A file path as a notice lists it: a very long one keeps its start and end. */
function clipPath(path: string): string {
  return path.length <= NOTICE_MAX_PATH ? path : `${path.slice(0, 80)}…${path.slice(-80)}`;
}

/** The lead's notice for a retired member whose workspace held work and was kept. */
function keptNotice(name: string, outcome: WorkspaceRelease): string {
  const parts: string[] = [];
  if (outcome.branch !== undefined) parts.push(`branch ${outcome.branch}`);
  parts.push(`${outcome.commitsAhead} commit${outcome.commitsAhead === 1 ? '' : 's'} ahead`);
  const files = outcome.changedFiles;
  parts.push(`${files.length} changed file${files.length === 1 ? '' : 's'} not committed`);
  let text = `${name} retired and its workspace was kept: ${parts.join(', ')}`;
  if (outcome.path !== undefined) text += `, at ${outcome.path}`;
  text += '.';
  if (files.length > 0) {
    const listed = files.slice(0, NOTICE_MAX_FILES).map(clipPath).join(', ');
    const more = files.length - NOTICE_MAX_FILES;
    text += ` Changed: ${listed}${more > 0 ? ` and ${more} more` : ''}.`;
  }
  return `${text} Merge or remove it when you are done with it.`;
}
