import { type Clock, systemClock } from '../clock.js';
import { TeamError } from '../errors.js';
import type { AgentEvent, MemberStatus } from '../ports/events.js';
import type { TeamLog } from '../ports/team-log.js';
import { DisplayNames } from './display-names.js';
import { LiveFeed } from './feed.js';
import { Ring } from './ring.js';
import {
  type ItemFilter,
  itemFilter,
  matches,
  type PreludeEntry,
  Subscription,
} from './subscription.js';
import type {
  AgentPresence,
  DisplayNameLease,
  EventHub,
  EventHubOptions,
  HubEvent,
  HubItem,
  HubPresenceEvent,
  HubSubscription,
  ListenOptions,
  SubscribeOptions,
} from './types.js';

/** Default events kept per agent. */
export const DEFAULT_HISTORY_SIZE = 1000;
/** Default live items queued per subscription. */
export const DEFAULT_BUFFER_SIZE = 1024;

/** Statuses after which an agent is no longer running: they end its presence. */
const STOPPING_STATUSES: ReadonlySet<MemberStatus> = new Set(['inactive', 'retired', 'failed']);

/** What the hub remembers of an event its ring let go of: enough to resume a cursor past it. */
interface EvictedEvent {
  seq: number;
  at: number;
  /** The team-log seq when the event was a `record`, else 0. */
  logSeq: number;
}

interface AgentState {
  name: string;
  active: boolean;
  startedSeq: number;
  lastSeq: number;
  lastAt: number;
  events: number;
  ring: Ring<HubEvent>;
  evicted: Ring<EvictedEvent>;
  /** The highest seq of this agent the hub no longer remembers at all (0: none). */
  horizon: number;
  /** The skeleton `evicted` last let go of, reused for the next one. */
  spare: EvictedEvent | undefined;
}

interface Listener {
  fn: (item: HubItem) => void;
  filter: ItemFilter;
  removed: boolean;
}

/**
 * Creates the event hub of one team. Publishing is synchronous: the subscribers that want every
 * event share one bounded feed and cost the publisher nothing each, the filtered ones have their
 * own bounded queue (O(1) per publish each). A stalled observer never slows the publisher nor
 * grows memory, and it learns exactly how many items it lost.
 */
export function createEventHub(options: EventHubOptions): EventHub {
  if (typeof options?.teamId !== 'string' || options.teamId === '') {
    throw new TeamError('INVALID_ARGUMENT', 'teamId must be a non-empty string');
  }
  const historySize = sizeOption('historySize', options.historySize, DEFAULT_HISTORY_SIZE, 1);
  const bufferSize = sizeOption('bufferSize', options.bufferSize, DEFAULT_BUFFER_SIZE, 1);
  const resumeWindow = sizeOption('resumeWindow', options.resumeWindow, historySize * 4, 0);
  if (options.epoch !== undefined && !isEpoch(options.epoch)) {
    throw new TeamError('INVALID_ARGUMENT', 'epoch must be 1 to 64 of A-Z a-z 0-9 _ -', {
      details: { epoch: options.epoch },
    });
  }
  return new Hub(
    options.teamId,
    options.epoch ?? globalThis.crypto.randomUUID().replaceAll('-', '').slice(0, 16),
    historySize,
    bufferSize,
    resumeWindow,
    options.log,
    options.clock ?? systemClock,
    options.onError ?? (() => {}),
  );
}

function sizeOption(name: string, value: number | undefined, fallback: number, min: number) {
  if (value === undefined) return fallback;
  if (!Number.isSafeInteger(value) || value < min) {
    throw new TeamError('INVALID_ARGUMENT', `${name} must be an integer >= ${min}`, {
      details: { [name]: value },
    });
  }
  return value;
}

const EPOCH_PATTERN = /^[A-Za-z0-9_-]{1,64}$/;

/** True for a valid hub epoch (safe in an SSE `id:` line and a URL). */
export function isEpoch(value: unknown): value is string {
  return typeof value === 'string' && EPOCH_PATTERN.test(value);
}

function cursorOption(name: string, value: number | undefined): number | undefined {
  if (value === undefined) return undefined;
  if (!Number.isSafeInteger(value) || value < 0) {
    throw new TeamError('INVALID_ARGUMENT', `${name} must be an integer >= 0`, {
      details: { [name]: value },
    });
  }
  return value;
}

function agentFilter(agent: SubscribeOptions['agent']): ReadonlySet<string> | undefined {
  if (agent === undefined) return undefined;
  const names = typeof agent === 'string' ? [agent] : agent;
  if (!Array.isArray(names) || names.some((name) => typeof name !== 'string' || name === '')) {
    throw new TeamError('INVALID_ARGUMENT', 'agent must be a non-empty string or a list of them');
  }
  return new Set(names);
}

class Hub implements EventHub {
  private seq = 0;
  private readonly agents = new Map<string, AgentState>();
  /** Every open subscription. */
  private subscribers: readonly Subscription[] = [];
  /**
   * The subscriptions with a queue of their own, which publish appends to. Copy-on-write, so a
   * subscriber closing mid-dispatch never disturbs the loop.
   */
  private queued: readonly Subscription[] = [];
  /** The live events of the subscriptions that want all of them; each keeps only a cursor. */
  private readonly feed: LiveFeed;
  /** Open subscriptions reading `feed`; it holds nothing while there are none. */
  private feedReaders = 0;
  private listeners: readonly Listener[] = [];
  private readonly memberNames = new Set<string>();
  private readonly displayNames: DisplayNames;
  private dispatching = false;
  /** Publishes and stops made by a listener while an item is dispatched; run right after it. */
  private deferred: (() => void)[] = [];
  private isClosed = false;

  constructor(
    readonly teamId: string,
    readonly epoch: string,
    private readonly historySize: number,
    private readonly bufferSize: number,
    private readonly resumeWindow: number,
    private readonly log: TeamLog | undefined,
    private readonly clock: Clock,
    private readonly onError: (error: unknown) => void,
  ) {
    this.feed = new LiveFeed(bufferSize);
    this.displayNames = new DisplayNames(
      (name) => this.memberNames.has(name) || this.isActive(name),
      (name) => this.agentStopped(name),
    );
  }

  publish(agentName: string, event: AgentEvent): void {
    if (this.isClosed) return;
    if (typeof agentName !== 'string' || agentName === '' || typeof event?.type !== 'string') {
      this.report(
        new TeamError('INVALID_ARGUMENT', 'publish needs an agent name and an event with a type'),
      );
      return;
    }
    if (this.dispatching) {
      this.deferred.push(() => this.doPublish(agentName, event));
      return;
    }
    // The common case of `serialize`, without a closure per event.
    this.dispatching = true;
    try {
      this.doPublish(agentName, event);
    } catch (error) {
      this.report(error);
    }
    this.runDeferred();
  }

  agentStopped(agentName: string): void {
    if (this.isClosed) return;
    this.serialize(() => {
      const state = this.agents.get(agentName);
      if (state?.active) this.transition(state, 'stopped');
    });
  }

  /**
   * Runs a state change now, or right after the dispatch in progress when a listener causes it,
   * so every observer receives items in seq order even under re-entrant publishing.
   */
  private serialize(change: () => void): void {
    if (this.dispatching) {
      this.deferred.push(change);
      return;
    }
    this.dispatching = true;
    this.guarded(change);
    this.runDeferred();
  }

  /** Runs what listeners deferred during a dispatch, then ends the dispatch. */
  private runDeferred(): void {
    try {
      for (let i = 0; i < this.deferred.length; i++) this.guarded(this.deferred[i]!);
    } finally {
      if (this.deferred.length > 0) this.deferred = [];
      this.dispatching = false;
    }
  }

  private guarded(change: () => void): void {
    try {
      change();
    } catch (error) {
      this.report(error);
    }
  }

  private doPublish(agentName: string, event: AgentEvent): void {
    if (this.isClosed) return;
    const state = this.agentState(agentName);
    const stopping = event.type === 'status' && STOPPING_STATUSES.has(event.status);
    if (!state.active && !stopping) this.transition(state, 'started');
    const item: HubEvent = {
      type: 'event',
      seq: ++this.seq,
      at: this.clock.now(),
      teamId: this.teamId,
      agent: agentName,
      event,
    };
    state.lastSeq = item.seq;
    state.lastAt = item.at;
    state.events++;
    const out = state.ring.push(item);
    if (out !== undefined) {
      // Once the evicted ring is full too, each push returns the skeleton it forgot; that object
      // holds the next one, so a long stream allocates no skeletons.
      const skeleton = state.spare ?? { seq: 0, at: 0, logSeq: 0 };
      skeleton.seq = out.seq;
      skeleton.at = out.at;
      skeleton.logSeq = out.event.type === 'record' ? out.event.record.seq : 0;
      const forgotten = state.evicted.push(skeleton);
      if (forgotten !== undefined) state.horizon = forgotten.seq;
      state.spare = forgotten;
    }
    if (event.type === 'record' && event.record.type === 'member') {
      this.memberNames.add(event.record.member.name);
    }
    this.dispatch(item);
    if (stopping && state.active) this.transition(state, 'stopped', event.status);
  }

  private agentState(name: string): AgentState {
    let state = this.agents.get(name);
    if (state === undefined) {
      state = {
        name,
        active: false,
        startedSeq: 0,
        lastSeq: 0,
        lastAt: 0,
        events: 0,
        ring: new Ring(this.historySize),
        evicted: new Ring(this.resumeWindow),
        horizon: 0,
        spare: undefined,
      };
      this.agents.set(name, state);
    }
    return state;
  }

  private transition(state: AgentState, to: 'started' | 'stopped', status?: MemberStatus): void {
    const item: HubPresenceEvent = {
      type: 'presence',
      seq: ++this.seq,
      at: this.clock.now(),
      teamId: this.teamId,
      agent: state.name,
      state: to,
      ...(status === undefined ? {} : { status }),
    };
    state.active = to === 'started';
    if (state.active) state.startedSeq = item.seq;
    state.lastSeq = item.seq;
    state.lastAt = item.at;
    this.dispatch(item);
  }

  private dispatch(item: HubEvent | HubPresenceEvent): void {
    const isEvent = item.type === 'event';
    if (isEvent && this.feedReaders > 0) this.feed.push(item);
    const subscribers = this.queued;
    for (let i = 0; i < subscribers.length; i++) {
      const subscriber = subscribers[i] as Subscription;
      if (!(isEvent && subscriber.allEvents) && !matches(subscriber.filter, item)) continue;
      try {
        subscriber.push(item);
      } catch (error) {
        this.report(error);
      }
    }
    if (this.listeners.length === 0) return;
    for (const listener of this.listeners) {
      if (listener.removed || !matches(listener.filter, item)) continue;
      try {
        listener.fn(item);
      } catch (error) {
        this.report(error);
      }
    }
  }

  private report(error: unknown): void {
    try {
      this.onError(error);
    } catch {
      // The error sink itself failed; the publisher must still not see it.
    }
  }

  subscribe(options: SubscribeOptions = {}): HubSubscription {
    if (this.isClosed) throw new TeamError('DISPOSED', 'the event hub is closed');
    const fromSeq = cursorOption('fromSeq', options.fromSeq);
    const afterSeq = cursorOption('afterSeq', options.afterSeq);
    if (fromSeq !== undefined && afterSeq !== undefined) {
      throw new TeamError('INVALID_ARGUMENT', 'pass fromSeq or afterSeq, not both');
    }
    const filter = itemFilter(
      agentFilter(options.agent),
      options.events ?? true,
      options.presence ?? false,
    );
    const selected =
      filter.agents === undefined
        ? [...this.agents.values()]
        : [...filter.agents].flatMap((name) => this.agents.get(name) ?? []);

    if (options.epoch !== undefined && typeof options.epoch !== 'string') {
      throw new TeamError('INVALID_ARGUMENT', 'epoch must be a string', {
        details: { epoch: options.epoch },
      });
    }
    let from = fromSeq ?? (afterSeq === undefined ? undefined : afterSeq + 1);
    const prelude: PreludeEntry[] = [];
    if (from !== undefined && options.epoch !== undefined && options.epoch !== this.epoch) {
      prelude.push({ kind: 'item', item: { type: 'reset', reason: 'hub-restarted' } });
      from = undefined;
    } else if (from !== undefined && from > this.seq + 1) {
      prelude.push({ kind: 'item', item: { type: 'reset', reason: 'unknown-cursor' } });
      from = undefined;
    } else if (
      from !== undefined &&
      filter.events &&
      selected.some((state) => from !== undefined && from <= state.horizon)
    ) {
      prelude.push({ kind: 'item', item: { type: 'reset', reason: 'cursor-expired' } });
      from = undefined;
    }
    if (filter.presence) {
      prelude.push({
        kind: 'item',
        item: {
          type: 'presence.snapshot',
          teamId: this.teamId,
          active: selected
            .filter((state) => state.active)
            .sort((a, b) => a.startedSeq - b.startedSeq)
            .map(presenceOf),
        },
      });
    }
    // Appended one by one: history can hold hundreds of thousands of events, far more than one
    // call's argument list (a spread into push throws RangeError past ~120k).
    if (filter.events) for (const entry of this.historyEntries(selected, from)) prelude.push(entry);

    const bufferSize = sizeOption('bufferSize', options.bufferSize, this.bufferSize, 1);
    // Every event and nothing else, within the feed's bound: the shared feed serves it.
    const fed = filter.allEvents && !filter.presence && bufferSize <= this.feed.bound;
    const subscription = new Subscription({
      filter,
      bufferSize,
      teamId: this.teamId,
      prelude,
      log: this.log,
      onError: (error) => this.report(error),
      detach: (closed) => {
        this.subscribers = this.subscribers.filter((s) => s !== closed);
        if (fed) {
          this.feedReaders--;
          if (this.feedReaders === 0) this.feed.release();
        } else {
          this.queued = this.queued.filter((s) => s !== closed);
        }
        options.signal?.removeEventListener('abort', onAbort);
      },
      feed: fed ? this.feed : undefined,
    });
    const onAbort = () => subscription.close();
    this.subscribers = [...this.subscribers, subscription];
    if (fed) this.feedReaders++;
    else this.queued = [...this.queued, subscription];
    if (options.signal?.aborted) {
      subscription.close();
      return subscription;
    }
    options.signal?.addEventListener('abort', onAbort, { once: true });
    return subscription;
  }

  /**
   * The events a new subscription starts with, in seq order. Without a cursor: the rings. With
   * one: every event of `selected` with `seq >= from` — from the rings, else (records) from the
   * log, else counted as lost.
   */
  private historyEntries(selected: readonly AgentState[], from: number | undefined) {
    const entries: { seq: number; entry: PreludeEntry }[] = [];
    for (const state of selected) {
      if (from !== undefined) {
        for (const evicted of state.evicted.since(from, (e) => e.seq)) {
          const entry: PreludeEntry =
            evicted.logSeq > 0 && this.log !== undefined
              ? {
                  kind: 'log',
                  seq: evicted.seq,
                  at: evicted.at,
                  agent: state.name,
                  logSeq: evicted.logSeq,
                }
              : { kind: 'lost' };
          entries.push({ seq: evicted.seq, entry });
        }
      }
      const events = from === undefined ? state.ring.toArray() : state.ring.since(from, seqOf);
      for (const item of events) entries.push({ seq: item.seq, entry: { kind: 'item', item } });
    }
    // One agent's entries are in seq order already; only several agents need sorting together.
    if (selected.length > 1) entries.sort((a, b) => a.seq - b.seq);
    return entries.map((e) => e.entry);
  }

  listen(listener: (item: HubItem) => void, options: ListenOptions = {}): () => void {
    if (typeof listener !== 'function') {
      throw new TeamError('INVALID_ARGUMENT', 'listener must be a function');
    }
    if (this.isClosed) throw new TeamError('DISPOSED', 'the event hub is closed');
    const entry: Listener = {
      fn: listener,
      filter: itemFilter(
        agentFilter(options.agent),
        options.events ?? true,
        options.presence ?? false,
      ),
      removed: false,
    };
    this.listeners = [...this.listeners, entry];
    return () => {
      if (entry.removed) return;
      entry.removed = true;
      this.listeners = this.listeners.filter((l) => l !== entry);
    };
  }

  activeAgents(): string[] {
    return [...this.agents.values()]
      .filter((state) => state.active)
      .sort((a, b) => a.startedSeq - b.startedSeq)
      .map((state) => state.name);
  }

  knownAgents(): AgentPresence[] {
    return [...this.agents.values()].map(presenceOf);
  }

  isActive(agentName: string): boolean {
    return this.agents.get(agentName)?.active ?? false;
  }

  history(agentName: string): HubEvent[] {
    return this.agents.get(agentName)?.ring.toArray() ?? [];
  }

  lastSeq(): number {
    return this.seq;
  }

  subscriberCount(): number {
    return this.subscribers.length;
  }

  acquireDisplayName(agentType: string): DisplayNameLease {
    return this.displayNames.acquire(agentType);
  }

  close(): void {
    if (this.isClosed) return;
    this.isClosed = true;
    const subscribers = this.subscribers;
    this.subscribers = [];
    this.queued = [];
    for (const listener of this.listeners) listener.removed = true;
    this.listeners = [];
    for (const subscriber of subscribers) subscriber.end();
  }
}

function seqOf(item: HubEvent): number {
  return item.seq;
}

function presenceOf(state: AgentState): AgentPresence {
  return {
    name: state.name,
    active: state.active,
    startedSeq: state.startedSeq,
    lastSeq: state.lastSeq,
    lastAt: state.lastAt,
    events: state.events,
  };
}
