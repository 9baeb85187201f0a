import type { Clock } from '../clock.js';
import type { AgentEvent, EventSink, MemberStatus } from '../ports/events.js';
import type { TeamLog } from '../ports/team-log.js';

/**
 * One published agent event, as observers see it. `seq` is the hub's per-team sequence: it grows
 * by at least one per item and is the cursor a reconnecting observer hands back. A `record` event
 * also carries its team-log position in `event.record.seq`, which lets the hub replay it from the
 * log once its history ring has let go of it.
 */
export interface HubEvent {
  /** Discriminates {@link HubItem}. */
  type: 'event';
  /** The hub's cursor for this item; hand it back (with the epoch) to resume after it. */
  seq: number;
  /** When the hub received the event (the hub's clock), ms since the Unix epoch. */
  at: number;
  /** The team the hub serves. */
  teamId: string;
  /** The agent (member name or one-shot display name) that published the event. */
  agent: string;
  /** The event as the agent published it. */
  event: AgentEvent;
}

/** The two presence transitions of an agent. */
export type PresenceState = 'started' | 'stopped';

/**
 * A live presence transition. `started` precedes an agent's first event (and its first event
 * after a stop); `stopped` follows the runner's end or a terminal `status` event. Transitions take
 * a `seq` of their own so they sort with the events around them.
 */
export interface HubPresenceEvent {
  /** Discriminates {@link HubItem}. */
  type: 'presence';
  /** The hub's cursor for this item, in the same sequence as events. */
  seq: number;
  /** When the transition happened (the hub's clock), ms since the Unix epoch. */
  at: number;
  /** The team the hub serves. */
  teamId: string;
  /** The agent that started or stopped. */
  agent: string;
  /** Which transition this is. */
  state: PresenceState;
  /** On `stopped` caused by a `status` event: that status, so a board can tell failed from done. */
  status?: MemberStatus;
}

/** What the hub knows of one agent; the rows of `knownAgents()` and a presence snapshot. */
export interface AgentPresence {
  /** The agent's name (member name or one-shot display name). */
  name: string;
  /** Whether the agent is running now. */
  active: boolean;
  /** The seq of the agent's latest `started` transition. */
  startedSeq: number;
  /** The seq of the agent's latest event or transition. */
  lastSeq: number;
  /** When the agent's latest event or transition arrived, ms since the Unix epoch. */
  lastAt: number;
  /** How many events the agent has published through this hub. */
  events: number;
}

/**
 * The first item of a presence subscription: the agents active when it subscribed. It has no
 * `seq` and is not part of the cursor: it restates current state, so a reconnect receives a fresh
 * one rather than the transitions it missed.
 */
export interface HubPresenceSnapshot {
  /** Discriminates {@link HubItem}. */
  type: 'presence.snapshot';
  /** The team the hub serves. */
  teamId: string;
  /** The agents active at subscribe time, in the order they started. */
  active: AgentPresence[];
}

/**
 * Items this subscription will never see, at this point of its stream. `overflow`: the
 * subscriber fell `bufferSize` items behind and the oldest were dropped. `evicted`: a cursor
 * resume reached events the history rings had let go of and the team log could not replay (only
 * `record` events are durable). `lost` is exact.
 */
export interface HubGap {
  /** Discriminates {@link HubItem}. */
  type: 'gap';
  /** Why the items are missing; see above. */
  reason: 'overflow' | 'evicted';
  /** How many items are missing at this point. */
  lost: number;
}

/**
 * The cursor could not be honoured: it came from another run of seqs (`hub-restarted`: its epoch
 * is not this hub's), it is newer than anything this hub published (`unknown-cursor`), or it is
 * older than what the hub still remembers (`cursor-expired`). What follows is what a fresh
 * subscriber gets (the history rings, then live); an observer should rebuild its view from it.
 */
export interface HubReset {
  /** Discriminates {@link HubItem}. */
  type: 'reset';
  /** Why the cursor was not honoured; see above. */
  reason: 'hub-restarted' | 'unknown-cursor' | 'cursor-expired';
}

/** Everything a subscription yields. Only `event` and `presence` items carry a cursor `seq`. */
export type HubItem = HubEvent | HubPresenceEvent | HubPresenceSnapshot | HubGap | HubReset;

/** Options of {@link createEventHub}. */
export interface EventHubOptions {
  /** The team whose agents publish here; stamped on every item. */
  teamId: string;
  /**
   * Names this hub's run of seqs, which start again at 1 in every hub: a cursor saved with another
   * epoch (before a restart) gets a `reset` instead of being misread. 1 to 64 of `A-Z a-z 0-9 _ -`.
   * Default: a fresh random id per hub.
   */
  epoch?: string;
  /** Events kept per agent for late subscribers; the ring outlives the agent. Default 1000. */
  historySize?: number;
  /** Live items queued per subscription before the oldest are dropped. Default 1024. */
  bufferSize?: number;
  /**
   * Per agent, how many events older than its history ring the hub still remembers by position
   * (a few numbers each, no payload), so a cursor pointing before the ring resumes exactly: records
   * from the team log, the rest reported as a counted gap. Older cursors get a `reset`.
   * Default 4 × historySize.
   */
  resumeWindow?: number;
  /** Where `record` events are replayed from when a cursor reaches before the rings. */
  log?: TeamLog;
  /** Stamps `at`. Default: the system clock. */
  clock?: Clock;
  /**
   * Told about failures the hub absorbs so that publishers never see them: a throwing listener,
   * a failed log replay. Default: ignore.
   */
  onError?: (error: unknown) => void;
}

/** Options of {@link EventHub.subscribe}. */
export interface SubscribeOptions {
  /** Only these agents' events (and presence). Default: every agent. */
  agent?: string | readonly string[] | undefined;
  /**
   * Resume from this seq, inclusive (like `TeamLog.read`): deliver every retained item with
   * `seq >= fromSeq`. Without a cursor the subscription starts with the history rings as they are.
   */
  fromSeq?: number | undefined;
  /** Resume strictly after this seq: the last seq you received (an SSE `Last-Event-ID`). */
  afterSeq?: number | undefined;
  /**
   * The hub `epoch` the cursor was saved under. When it is not this hub's, the hub restarted since
   * and the cursor means nothing here: the subscription starts with a `hub-restarted` reset.
   * Without it the cursor is taken to be this hub's.
   */
  epoch?: string | undefined;
  /**
   * Include presence: first a `presence.snapshot` of the active agents, then live transitions.
   * Default false.
   */
  presence?: boolean;
  /** Include agent events (history and live). Default true; false makes a presence-only feed. */
  events?: boolean;
  /** This subscription's live queue bound, when it should differ from the hub's `bufferSize`. */
  bufferSize?: number;
  /** Closes the subscription when aborted. */
  signal?: AbortSignal;
}

/** Options of {@link EventHub.listen}. */
export interface ListenOptions {
  /** Only these agents' items. Default: every agent. */
  agent?: string | readonly string[];
  /** Include presence transitions. Default false. */
  presence?: boolean;
  /** Include agent events. Default true. */
  events?: boolean;
}

/**
 * A live view of the hub: history first, then live items, in `seq` order. Iterate it with
 * `for await`; leaving the loop, `close()` or the `signal` ends it. It never throws.
 */
export interface HubSubscription extends AsyncIterableIterator<HubItem> {
  /** Ends the subscription now; a pending `next()` resolves `done`. Idempotent. */
  close(): void;
  /** True once the subscription has ended, by any of the three ways. */
  readonly closed: boolean;
  /** Live items dropped so far because this subscriber fell behind. */
  readonly lost: number;
  /** Live items queued and not yet read. Never more than `bufferSize`. */
  readonly buffered: number;
}

/** A one-shot subagent's display name, held until `release()` (idempotent) when its run ends. */
export interface DisplayNameLease {
  /** The leased name, unique among the hub's active agents. */
  readonly name: string;
  /** Frees the name for reuse and marks the agent stopped if it is still active. */
  release(): void;
}

/**
 * The event hub of one team: where every agent publishes (it is the runtime's `EventSink`) and
 * every observer subscribes, without an observer ever being able to slow an agent down.
 */
export interface EventHub extends EventSink {
  /** The team whose agents publish here. */
  readonly teamId: string;
  /** This hub's run of seqs; save it with a cursor and pass it back to `subscribe`. */
  readonly epoch: string;
  /** Never blocks, never throws; a no-op once the hub is closed. */
  publish(agentName: string, event: AgentEvent): void;
  /** The runner of `agentName` ended: emits `stopped` if it was active. */
  agentStopped(agentName: string): void;
  /** Opens a subscription: retained history (or a resume from a cursor), then live items. Refuses a malformed option with `INVALID_ARGUMENT`, and any call once the hub is closed with `DISPOSED`. */
  subscribe(options?: SubscribeOptions): HubSubscription;
  /**
   * Calls `listener` synchronously for every live item, inside `publish`. For quick sinks
   * (counters, log lines); anything that may be slow belongs in `subscribe`. A throwing listener
   * is reported to `onError` and keeps its place. Returns an unsubscribe.
   */
  listen(listener: (item: HubItem) => void, options?: ListenOptions): () => void;
  /** Names of the active agents, in the order they started. */
  activeAgents(): string[];
  /** Every agent that has published through this hub, active or not, in order of first event. */
  knownAgents(): AgentPresence[];
  /** Whether `agentName` has started and not stopped since. */
  isActive(agentName: string): boolean;
  /** The retained history of one agent, oldest first. */
  history(agentName: string): HubEvent[];
  /** The seq of the latest item (0 before the first). */
  lastSeq(): number;
  /** Open subscriptions; for diagnostics. */
  subscriberCount(): number;
  /**
   * A display name for a one-shot subagent of `agentType`: the bare type when it is free, else
   * `type #2`, `type #3`, …. A name is taken while leased, while an agent under it is active, or
   * when a team member bears it (learned from `member` records).
   */
  acquireDisplayName(agentType: string): DisplayNameLease;
  /**
   * Ends every subscription (each first drains what it has buffered) and drops listeners.
   * Publishing becomes a no-op and subscribing refuses with `DISPOSED`.
   */
  close(): void;
}
