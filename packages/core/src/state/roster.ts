import { TeamError } from '../errors.js';
import {
  AGENT_TYPE_MAX,
  MEMBER_COLOR_MAX,
  MEMBER_DESCRIPTION_MAX,
  MEMBER_ERROR_MAX,
  MEMBER_PROVIDER_MAX,
} from '../limits.js';
import type { MemberPhase } from '../records.js';
import { LEAD_NAME, MEMBER_NAME_MAX, MEMBER_NAME_PATTERN } from '../records.js';
import { checkTextLimit } from './input-limits.js';

/**
 * Checks a teammate name before spawning: `lead` in any case is `NAME_RESERVED` (checked first, so
 * `Lead` is reported as reserved rather than malformed); anything not matching
 * `^[a-z0-9]+(-[a-z0-9]+)*$` or longer than 64 characters is `INVALID_NAME`.
 */
export function validateMemberName(name: string): void {
  if (typeof name === 'string' && name.toLowerCase() === LEAD_NAME) {
    throw new TeamError('NAME_RESERVED', `the name "${name}" is reserved for the team lead`, {
      details: { name },
    });
  }
  if (
    typeof name !== 'string' ||
    name.length > MEMBER_NAME_MAX ||
    !MEMBER_NAME_PATTERN.test(name)
  ) {
    throw new TeamError(
      'INVALID_NAME',
      `invalid member name ${JSON.stringify(name)}: use lowercase letters and digits joined by single hyphens, at most ${MEMBER_NAME_MAX} characters`,
      { details: { name } },
    );
  }
}

/** The free-text fields of a new member, as `createLead` and `spawnMember` take them. */
export interface MemberFields {
  description: string;
  agentType: string;
  provider: string;
  color?: string | undefined;
}

/**
 * Checks the fields of a new member against their input limits (`INVALID_ARGUMENT`, details name
 * the field): `description` up to {@link MEMBER_DESCRIPTION_MAX} characters, `agentType` 1 to
 * {@link AGENT_TYPE_MAX}, `provider` up to {@link MEMBER_PROVIDER_MAX}, `color` up to
 * {@link MEMBER_COLOR_MAX}. Commands run it; replay does not, so a log written before a limit
 * existed still folds.
 */
export function validateMemberFields(fields: MemberFields): void {
  checkTextLimit('description', fields.description, MEMBER_DESCRIPTION_MAX);
  checkTextLimit('agentType', fields.agentType, AGENT_TYPE_MAX, 1);
  checkTextLimit('provider', fields.provider, MEMBER_PROVIDER_MAX);
  if (fields.color !== undefined) checkTextLimit('color', fields.color, MEMBER_COLOR_MAX);
}

/** Checks why a member failed (`error` of `setMemberPhase`): up to {@link MEMBER_ERROR_MAX} characters. */
export function validateMemberError(error: string | undefined): void {
  if (error !== undefined) checkTextLimit('error', error, MEMBER_ERROR_MAX);
}

/**
 * A member is live while it is `provisioning` or `active`: only live members may act, receive
 * mail or own tasks, and only live teammates hold a slot of the member limit.
 */
export function isLivePhase(phase: MemberPhase): boolean {
  return phase === 'provisioning' || phase === 'active';
}

const TRANSITIONS: Readonly<Record<MemberPhase, readonly MemberPhase[]>> = {
  provisioning: ['active', 'failed'],
  active: ['retired'],
  failed: [],
  retired: [],
};

/**
 * The member lifecycle: `provisioning -> active | failed`, `active -> retired`; `failed` and
 * `retired` are terminal. Restating the current phase is not a transition.
 */
export function isPhaseTransition(from: MemberPhase, to: MemberPhase): boolean {
  return TRANSITIONS[from].includes(to);
}
