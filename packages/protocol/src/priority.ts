import type { QueuedMessage } from '@teamwire/core';

/** A pick policy: the shape of `ProtocolHooks.pickNext`, so a custom one plugs into any format. */
export type PickPolicy = (options: {
  pending: readonly QueuedMessage[];
  leadId: string;
}) => QueuedMessage | undefined;

/** Priority tiers of the default policy; lower is handled first. */
export const PriorityTier = { shutdown: 0, lead: 1, peer: 2 } as const;
/** One of the {@link PriorityTier} values. */
export type PriorityTier = (typeof PriorityTier)[keyof typeof PriorityTier];

/** The tier of one message: a shutdown request (from anyone), else the lead's mail, else a peer's. */
export function priorityTier(message: QueuedMessage, leadId: string): PriorityTier {
  if (message.kind === 'shutdown_request') return PriorityTier.shutdown;
  return message.senderId === leadId ? PriorityTier.lead : PriorityTier.peer;
}

/**
 * The default pick policy: shutdown requests first, then the lead's messages, then peers', FIFO
 * (queue order) within a tier. It scans the whole pending set in one pass, so a shutdown behind
 * any number of peer messages is still picked next; `pending` is not modified.
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
