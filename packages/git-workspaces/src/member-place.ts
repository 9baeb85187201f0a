import { join } from 'node:path';
import { TeamError, type WorkspaceMember } from '@teamwire/core';

/** Member names as core allows them; nothing in them needs escaping in a ref or a path. */
const MEMBER_NAME = /^[a-z0-9]+(-[a-z0-9]+)*$/;
/**
 * Team ids become one ref component and one folder name, so they are held to the intersection
 * of `git check-ref-format` and a portable file name: ASCII letters, digits, `_`, `-` and inner
 * single dots, no `.lock` ending. Ulids and uuids qualify.
 */
const TEAM_ID = /^[A-Za-z0-9](?:[A-Za-z0-9_-]|\.(?=[A-Za-z0-9_-]))*$/;
const MAX_TEAM_ID = 128;
const MAX_NAME = 64;
const MAX_MEMBER_ID = 128;

/** Prefix of every branch this package makes. */
export const BRANCH_PREFIX = 'teamwire';

/** Throws `INVALID_ARGUMENT` unless `teamId` can name a branch component and a folder. */
export function checkTeamId(teamId: string): void {
  if (
    typeof teamId !== 'string' ||
    teamId.length > MAX_TEAM_ID ||
    !TEAM_ID.test(teamId) ||
    teamId.toLowerCase().endsWith('.lock')
  ) {
    throw new TeamError(
      'INVALID_ARGUMENT',
      `team id ${JSON.stringify(String(teamId).slice(0, 200))} cannot name a branch: use letters, digits, '_', '-' and inner dots (at most ${MAX_TEAM_ID})`,
      { details: { teamId: String(teamId).slice(0, 200) } },
    );
  }
}

/** Throws `INVALID_ARGUMENT` / `INVALID_NAME` unless the member can own a workspace. */
export function checkMember(member: WorkspaceMember): void {
  if (
    typeof member?.id !== 'string' ||
    member.id.length === 0 ||
    member.id.length > MAX_MEMBER_ID ||
    /[\u0000-\u001f\u007f]/.test(member.id)
  ) {
    throw new TeamError('INVALID_ARGUMENT', 'member id must be 1 to 128 printable characters');
  }
  if (
    typeof member.name !== 'string' ||
    member.name.length > MAX_NAME ||
    !MEMBER_NAME.test(member.name)
  ) {
    throw new TeamError(
      'INVALID_NAME',
      `member name ${JSON.stringify(String(member.name).slice(0, 100))} must match ^[a-z0-9]+(-[a-z0-9]+)*$ (at most ${MAX_NAME})`,
    );
  }
}

/** The branch of a member: deterministic, so a later attempt finds what an earlier one made. */
export function memberBranch(teamId: string, name: string): string {
  return `${BRANCH_PREFIX}/${teamId}/${name}`;
}

/** Where a member's worktree, its marker and its lock reason are. */
export interface MemberPlace {
  branch: string;
  /** `refs/heads/<branch>`. */
  ref: string;
  path: string;
  /** The ownership marker, written before anything else is made for the member. */
  markerPath: string;
  /** Lock reason of this member's `git worktree add` until it has finished. */
  initializingReason: string;
}

/** The deterministic place of a member under `root` (or at its recorded path). */
export function memberPlace(
  root: string,
  teamId: string,
  member: WorkspaceMember,
  recordedPath: string | undefined,
): MemberPlace {
  const branch = memberBranch(teamId, member.name);
  return {
    branch,
    ref: `refs/heads/${branch}`,
    path: recordedPath ?? join(root, teamId, member.name),
    // Member names hold no dot, so `<name>.member.json` never collides with a member's folder.
    markerPath: join(root, teamId, `${member.name}.member.json`),
    initializingReason: `teamwire initializing ${teamId}/${member.name}`,
  };
}
