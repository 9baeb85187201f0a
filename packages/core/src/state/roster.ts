import { TeamError } from '../errors.js';
import type { MemberPhase } from '../records.js';
import { LEAD_NAME, MEMBER_NAME_MAX, MEMBER_NAME_PATTERN } from '../records.js';

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
