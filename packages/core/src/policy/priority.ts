import type { TeamPolicy } from '../ports/team-policy.js';
import type { QueuedMessage } from '../records.js';

/** A pick function: the shape of `TeamPolicy.pickNext`, to compose into a custom policy. */
export type PickPolicy = TeamPolicy['pickNext'];

/** Priority tiers of the default policy; lower is handled first. */
/** The order {@link defaultTeamPolicy} serves pending mail in: a shutdown request first, then the lead's mail, then peers'. Lower is sooner. */
export const PriorityTier = {
  /** A pending shutdown request. */
  shutdown: 0,
  /** Mail from the lead. */
  lead: 1,
  /** Mail from a peer. */
  peer: 2,
} as const;
/** One of the {@link PriorityTier} values. */
export type PriorityTier = (typeof PriorityTier)[keyof typeof PriorityTier];

/** The tier of one message: a shutdown request (from anyone), else the lead's mail, else a peer's. */
export function priorityTier(message: QueuedMessage, leadId: string): PriorityTier {
  if (message.kind === 'shutdown_request') return PriorityTier.shutdown;
  return message.senderId === leadId ? PriorityTier.lead : PriorityTier.peer;
}

/**
 * The default pick: shutdown requests first, then the lead's messages, then peers', FIFO (queue
 * order) within a tier. It scans the whole pending set in one pass, so a message behind any
 * number of peer messages is still picked next; `pending` is not modified. (In a team the runner
 * handles shutdown requests before any policy is asked; the tier keeps this function right on
 * any set it is given.)
 */
export const pickPriority: PickPolicy = ({ pending, leadId }) => {
  let best: QueuedMessage | undefined;
  let bestTier: number = Number.POSITIVE_INFINITY;
  for (const message of pending) {
    const tier = priorityTier(message, leadId);
    if (tier < bestTier) {
      best = message;
      bestTier = tier;
      if (tier === PriorityTier.shutdown) break;
    }
  }
  return best;
};
