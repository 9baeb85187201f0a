export { createEventHub, DEFAULT_BUFFER_SIZE, DEFAULT_HISTORY_SIZE } from './event-hub.js';
export type {
  AgentPresence,
  DisplayNameLease,
  EventHub,
  EventHubOptions,
  HubEvent,
  HubGap,
  HubItem,
  HubPresenceEvent,
  HubPresenceSnapshot,
  HubReset,
  HubSubscription,
  ListenOptions,
  PresenceState,
  SubscribeOptions,
} from './types.js';
