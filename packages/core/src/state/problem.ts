import { TeamError, type TeamErrorCode } from '../errors.js';

/**
 * Why a change breaks an invariant of the team state. Each invariant is checked by one function of
 * the aggregate that owns it (roster, task board, mailbox), which returns a `Problem` instead of
 * throwing, so that both paths can use it: a command refuses with the problem's `code`
 * ({@link refuse}); replay refuses the record with `LOG_INVARIANT` naming its seq. A check that
 * passes allocates nothing.
 */
export interface Problem {
  /** The code a refused command throws. */
  code: TeamErrorCode;
  message: string;
  details?: Record<string, unknown>;
}

/** Throws the problem as the `TeamError` a command refuses with. */
export function refuse(problem: Problem): never {
  throw new TeamError(problem.code, problem.message, { details: problem.details });
}

/** Refuses a command when a check found a problem. */
export function refuseIf(problem: Problem | undefined): void {
  if (problem !== undefined) refuse(problem);
}

/** A rule only replay checks (commands build records that keep it): `LOG_INVARIANT` either way. */
export function invariant(message: string): Problem {
  return { code: 'LOG_INVARIANT', message };
}
