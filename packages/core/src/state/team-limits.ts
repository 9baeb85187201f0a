import { TeamError } from '../errors.js';

/**
 * Configurable bounds that keep one team's state and mail finite. Together with the fixed input
 * limits of every text and list field (`MEMBER_DESCRIPTION_MAX`, `MESSAGE_SUMMARY_MAX`,
 * `TASK_WRITE_SCOPES_MAX`, ...) they are enforced by commands only, never by replay, so a log
 * written under other limits still folds.
 */
export interface TeamLimits {
  /** Teammates in phase `provisioning | active` (the lead is not counted; failed and retired members hold no slot). */
  maxMembers: number;
  /** Non-deleted tasks on the board. */
  maxTasks: number;
  /**
   * Undelivered `message` and `task_assignment` messages per target. Control kinds
   * (`shutdown_request`, `idle_notification`) are never refused by this bound.
   */
  maxPendingPerMember: number;
  /** UTF-8 bytes of `JSON.stringify(content)` of one message. */
  maxMessageBytes: number;
}

/** The limits a team gets when none are configured. */
export const DEFAULT_TEAM_LIMITS: TeamLimits = Object.freeze({
  maxMembers: 8,
  maxTasks: 256,
  maxPendingPerMember: 64,
  maxMessageBytes: 65536,
});

/** `limits` merged over {@link DEFAULT_TEAM_LIMITS}; each must be a non-negative integer. */
export function resolveLimits(limits: Partial<TeamLimits> | undefined): TeamLimits {
  const out: TeamLimits = { ...DEFAULT_TEAM_LIMITS };
  for (const key of Object.keys(DEFAULT_TEAM_LIMITS) as (keyof TeamLimits)[]) {
    const value = limits?.[key];
    if (value === undefined) continue;
    if (!Number.isInteger(value) || value < 0) {
      throw new TeamError('INVALID_ARGUMENT', `limit ${key} must be a non-negative integer`, {
        details: { [key]: value },
      });
    }
    out[key] = value;
  }
  return Object.freeze(out);
}
