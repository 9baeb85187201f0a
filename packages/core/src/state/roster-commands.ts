import { TeamError } from '../errors.js';
import type { Member, MemberContext, MemberPhase, MemberWorkspace } from '../records.js';
import { LEAD_NAME } from '../records.js';
import { refuse, refuseIf } from './problem.js';
import {
  checkPhaseTransition,
  type Roster,
  validateMemberError,
  validateMemberFields,
  validateMemberName,
} from './roster.js';
import type { TeamLimits } from './team-limits.js';

/*
 * The roster commands decide: they validate a request against the roster and return the member
 * snapshot that expresses it, changing nothing. `TeamState` stamps it into a record and applies it.
 */

/** Input of `TeamState.createLead`. */
export interface CreateLeadInput {
  /** The lead's member id; by convention the team id (the lead's session id). */
  id: string;
  /** What the lead is for ('' when absent). */
  description?: string;
  /** The lead's agent type. */
  agentType: string;
  /** The model provider/spec, for display and audit. */
  provider: string;
  /** A display color. */
  color?: string;
}

/** Input of `TeamState.spawnMember`. */
export interface SpawnMemberInput {
  /** The new member's id; must not be taken. */
  id: string;
  /** A new name, unique in the team for its whole life. */
  name: string;
  /** What the member is for. */
  description: string;
  /** The member's agent type. */
  agentType: string;
  /** The model provider/spec, for display and audit. */
  provider: string;
  /** How the member's conversation starts. */
  context: MemberContext;
  /** A display color. */
  color?: string;
}

/** The lead in phase `provisioning`; the caller records it, then records it `active`. */
export function decideCreateLead(roster: Roster, input: CreateLeadInput): Member {
  refuseIf(roster.checkNameFree(LEAD_NAME));
  refuseIf(roster.checkIdFree(input.id));
  validateMemberFields({ ...input, description: input.description ?? '' });
  return {
    id: input.id,
    name: LEAD_NAME,
    description: input.description ?? '',
    agentType: input.agentType,
    provider: input.provider,
    context: 'fresh',
    phase: 'provisioning',
    ...(input.color === undefined ? {} : { color: input.color }),
  };
}

/** A new teammate in phase `provisioning`, spawned by the live lead within `maxMembers`. */
export function decideSpawnMember(
  roster: Roster,
  limits: TeamLimits,
  actorId: string,
  input: SpawnMemberInput,
): Member {
  if (roster.leadId === undefined || actorId !== roster.leadId) {
    throw new TeamError('LEAD_ONLY', 'only the team lead may spawn teammates', {
      details: { actorId },
    });
  }
  refuseIf(roster.checkActor(actorId));
  validateMemberName(input.name);
  validateMemberFields(input);
  refuseIf(roster.checkNameFree(input.name));
  const live = roster.liveTeammateCount;
  if (live >= limits.maxMembers) {
    throw new TeamError(
      'MEMBER_LIMIT',
      `the team already has ${live} live teammates (limit ${limits.maxMembers}); retire one first`,
      { details: { limit: limits.maxMembers } },
    );
  }
  refuseIf(roster.checkIdFree(input.id));
  return {
    id: input.id,
    name: input.name,
    description: input.description,
    agentType: input.agentType,
    provider: input.provider,
    context: input.context,
    phase: 'provisioning',
    ...(input.color === undefined ? {} : { color: input.color }),
  };
}

/**
 * The member moved to `phase`, with `error` saying why it failed (any previous error dropped) and,
 * on the move to `active`, the `workspace` it works in.
 */
export function decideMemberPhase(
  roster: Roster,
  memberId: string,
  phase: Exclude<MemberPhase, 'provisioning'>,
  error: string | undefined,
  workspace?: MemberWorkspace,
): Member {
  const current = roster.get(memberId);
  if (current === undefined) {
    refuse({
      code: 'UNKNOWN_MEMBER',
      message: `no member with id ${memberId}`,
      details: { memberId },
    });
  }
  refuseIf(checkPhaseTransition(current, phase));
  validateMemberError(error);
  const { error: _previousError, ...rest } = current;
  return {
    ...rest,
    phase,
    ...(error === undefined ? {} : { error }),
    ...(workspace === undefined ? {} : { workspace }),
  };
}
