import type { TeamLog } from '../ports/team-log.js';
import type { TeamRecord } from '../records.js';
import { type FeedWaiter, LIVE_RING_MIN_CAPACITY, type LiveFeed } from './feed.js';
import type {
  HubEvent,
  HubGap,
  HubItem,
  HubPresenceEvent,
  HubPresenceSnapshot,
  HubReset,
  HubSubscription,
} from './types.js';

/** What a subscription hands out before live items, as decided when it subscribed. */
export type PreludeEntry =
  | { kind: 'item'; item: HubEvent | HubPresenceSnapshot | HubReset }
  /** A `record` event the rings evicted; its payload is read back from the team log. */
  | { kind: 'log'; seq: number; at: number; agent: string; logSeq: number }
  /** An evicted event that cannot be replayed. */
  | { kind: 'lost' };

type LiveItem = HubEvent | HubPresenceEvent;

/** Which live items a subscriber or listener wants. */
export interface ItemFilter {
  agents: ReadonlySet<string> | undefined;
  events: boolean;
  presence: boolean;
  /** `events` with no agent filter: every event passes (the check publish makes most). */
  allEvents: boolean;
}

/** The filter of a subscriber or listener; `agents` undefined means every agent. */
export function itemFilter(
  agents: ReadonlySet<string> | undefined,
  events: boolean,
  presence: boolean,
): ItemFilter {
  return { agents, events, presence, allEvents: events && agents === undefined };
}

/** True when `item` (a live event or transition) passes `filter`. */
export function matches(filter: ItemFilter, item: LiveItem): boolean {
  if (item.type === 'event' && filter.allEvents) return true;
  if (item.type === 'event' ? !filter.events : !filter.presence) return false;
  return filter.agents === undefined || filter.agents.has(item.agent);
}

const DONE: IteratorResult<HubItem> = { done: true, value: undefined };
/** The largest live queue kept once drained; a larger one is released (a power of two). */
const QUEUE_KEPT_CAPACITY = 1024;

/**
 * One subscriber: a prelude (snapshot, history, log replay) followed by bounded live items. Those
 * come from the hub's shared {@link LiveFeed} when the subscriber wants every event and no
 * presence (it then keeps only a cursor, and the hub does nothing for it on publish), else from a
 * queue of its own that the hub fills through `push`, O(1) in the common case and never waiting
 * for the consumer. Pulls are serialized, so concurrent `next()` calls see items in order.
 */
export class Subscription implements HubSubscription, FeedWaiter {
  // The fields `push` reads come first, so they share the object's first cache lines.
  /** `filter.allEvents`, kept on the subscription so publish reads one object per subscriber. */
  readonly allEvents: boolean;
  private isClosed = false;
  /** Set by the hub's close: deliver what is buffered, then end. */
  private ending = false;
  private count = 0;
  private readonly bufferSize: number;
  private head = 0;
  private mask = LIVE_RING_MIN_CAPACITY - 1;
  /**
   * The live queue: a ring whose capacity is a power of two, grown by doubling as items arrive
   * (never past the first power of two that holds `bufferSize`) and let go of once drained while
   * large. Its slots are reused from one publish to the next, so a steady stream allocates nothing.
   */
  private slots: (LiveItem | undefined)[] = new Array<LiveItem | undefined>(LIVE_RING_MIN_CAPACITY);
  private wake: (() => void) | undefined;
  private pendingLost = 0;
  private totalLost = 0;
  readonly filter: ItemFilter;
  private readonly teamId: string;
  private readonly log: TeamLog | undefined;
  private readonly onError: (error: unknown) => void;
  private readonly detach: (subscription: Subscription) => void;
  private prelude: PreludeEntry[] | undefined;
  private resolved: HubItem[] | undefined;
  private preludeIndex = 0;
  private tail: Promise<unknown> = Promise.resolve();
  private readonly replayAbort = new AbortController();
  /** The shared feed this subscriber reads live events from, instead of its own queue. */
  private readonly feed: LiveFeed | undefined;
  /** With a feed: the position of the next live event to read. */
  private cursor: number;

  constructor(options: {
    filter: ItemFilter;
    bufferSize: number;
    teamId: string;
    prelude: PreludeEntry[];
    log: TeamLog | undefined;
    onError: (error: unknown) => void;
    detach: (subscription: Subscription) => void;
    /** Read live events from this feed (every event, no presence, `bufferSize <= feed.bound`). */
    feed?: LiveFeed | undefined;
  }) {
    this.feed = options.feed;
    this.cursor = options.feed?.end ?? 0;
    this.filter = options.filter;
    this.allEvents = options.filter.allEvents;
    this.bufferSize = options.bufferSize;
    this.teamId = options.teamId;
    this.log = options.log;
    this.onError = options.onError;
    this.detach = options.detach;
    if (options.prelude.some((entry) => entry.kind === 'log')) this.prelude = options.prelude;
    else this.resolved = coalesce(options.prelude, new Map(), options.teamId);
  }

  get closed(): boolean {
    return this.isClosed;
  }

  get lost(): number {
    return this.totalLost + (this.isClosed ? 0 : this.feedOverflow());
  }

  get buffered(): number {
    if (this.feed === undefined || this.isClosed) return this.count;
    return Math.min(this.feed.end - this.cursor, this.bufferSize);
  }

  /** With a feed: the live events this subscriber fell too far behind to still read. */
  private feedOverflow(): number {
    if (this.feed === undefined) return 0;
    const over = this.feed.end - this.cursor - this.bufferSize;
    return Math.max(over, 0);
  }

  /** With a feed: skips what fell out of this subscriber's bound, counting it as lost. */
  private settleFeed(): void {
    const over = this.feedOverflow();
    if (over === 0) return;
    this.cursor += over;
    this.pendingLost += over;
    this.totalLost += over;
  }

  /** The feed's next push ends this subscriber's wait. */
  feedWake(): void {
    const wake = this.wake;
    this.wake = undefined;
    wake?.();
  }

  /**
   * Queues a live item, dropping the oldest when full. Presence transitions are kept over agent
   * events when something must go: they are few, and losing one leaves a board wrong until the
   * agent's next transition, whereas a lost delta is just a hole in a transcript.
   */
  push(item: LiveItem): void {
    if (this.isClosed || this.ending) return;
    if (this.count >= this.bufferSize) {
      const oldest = this.head;
      if (this.slots[oldest]?.type === 'presence') this.dropOne();
      else {
        // The common overflow: the oldest item is an event, and it goes.
        this.slots[oldest] = undefined;
        this.head = (oldest + 1) & this.mask;
        this.count--;
        this.pendingLost++;
        this.totalLost++;
      }
    } else if (this.count === this.slots.length) this.grow();
    this.slots[(this.head + this.count) & this.mask] = item;
    this.count++;
    const wake = this.wake;
    if (wake !== undefined) {
      this.wake = undefined;
      wake();
    }
  }

  /** Doubles the ring, laying its items out from slot 0. */
  private grow(): void {
    const slots = new Array<LiveItem | undefined>(this.slots.length * 2);
    for (let i = 0; i < this.count; i++) slots[i] = this.slots[(this.head + i) & this.mask];
    this.slots = slots;
    this.mask = slots.length - 1;
    this.head = 0;
  }

  /** Drops the oldest agent event (the oldest item when only presence is queued). */
  private dropOne(): void {
    let offset = 0;
    while (
      offset < this.count &&
      this.slots[(this.head + offset) & this.mask]?.type === 'presence'
    ) {
      offset++;
    }
    if (offset >= this.count) offset = 0;
    // Moves the items before the dropped one up by a slot, keeping their order.
    for (let i = offset; i > 0; i--) {
      this.slots[(this.head + i) & this.mask] = this.slots[(this.head + i - 1) & this.mask];
    }
    this.shift();
    this.pendingLost++;
    this.totalLost++;
  }

  /** Takes the head of the live queue; a large ring is let go of once drained. */
  private shift(): LiveItem {
    const item = this.slots[this.head] as LiveItem;
    this.slots[this.head] = undefined;
    this.head = (this.head + 1) & this.mask;
    this.count--;
    if (this.count === 0 && this.slots.length > QUEUE_KEPT_CAPACITY) this.resetQueue();
    return item;
  }

  private resetQueue(): void {
    this.slots = new Array<LiveItem | undefined>(LIVE_RING_MIN_CAPACITY);
    this.mask = LIVE_RING_MIN_CAPACITY - 1;
    this.head = 0;
    this.count = 0;
  }

  /** Called by the hub's close: the consumer still gets what is queued, then `done`. */
  end(): void {
    this.ending = true;
    const wake = this.wake;
    this.wake = undefined;
    wake?.();
  }

  close(): void {
    if (this.isClosed) return;
    this.settleFeed();
    this.feed?.unwait(this);
    this.isClosed = true;
    this.resetQueue();
    this.prelude = undefined;
    this.resolved = undefined;
    this.replayAbort.abort();
    this.detach(this);
    const wake = this.wake;
    this.wake = undefined;
    wake?.();
  }

  next(): Promise<IteratorResult<HubItem>> {
    const result = this.tail.then(() => this.pull());
    this.tail = result.catch(() => undefined);
    return result;
  }

  async return(): Promise<IteratorResult<HubItem>> {
    this.close();
    return DONE;
  }

  [Symbol.asyncIterator](): this {
    return this;
  }

  private async pull(): Promise<IteratorResult<HubItem>> {
    if (this.isClosed) return DONE;
    if (this.resolved === undefined && this.prelude !== undefined) {
      this.resolved = await this.resolvePrelude(this.prelude);
      this.prelude = undefined;
      if (this.isClosed) return DONE;
    }
    if (this.resolved !== undefined) {
      const item = this.resolved[this.preludeIndex++];
      if (item !== undefined) return { done: false, value: item };
      this.resolved = undefined;
    }
    const feed = this.feed;
    for (;;) {
      if (this.isClosed) return DONE;
      if (feed !== undefined) this.settleFeed();
      if (this.pendingLost > 0) {
        const gap: HubGap = { type: 'gap', reason: 'overflow', lost: this.pendingLost };
        this.pendingLost = 0;
        return { done: false, value: gap };
      }
      if (feed !== undefined) {
        if (this.cursor < feed.end) return { done: false, value: feed.at(this.cursor++) };
      } else if (this.count > 0) {
        return { done: false, value: this.shift() };
      }
      if (this.ending) {
        this.close();
        return DONE;
      }
      await new Promise<void>((resolve) => {
        this.wake = resolve;
        feed?.wait(this);
      });
    }
  }

  /** Reads the evicted records back from the log, in one pass, and lays the prelude out. */
  private async resolvePrelude(prelude: PreludeEntry[]): Promise<HubItem[]> {
    const wanted = new Set<number>();
    // A loop, not Math.min(...wanted): a resume can want more records than a call takes arguments.
    let first = Number.POSITIVE_INFINITY;
    let last = 0;
    for (const entry of prelude) {
      if (entry.kind !== 'log') continue;
      wanted.add(entry.logSeq);
      if (entry.logSeq < first) first = entry.logSeq;
      if (entry.logSeq > last) last = entry.logSeq;
    }
    const found = new Map<number, TeamRecord>();
    if (this.log !== undefined && wanted.size > 0) {
      try {
        for await (const record of this.log.read({
          fromSeq: first,
          signal: this.replayAbort.signal,
        })) {
          if (wanted.has(record.seq)) found.set(record.seq, record);
          if (record.seq >= last) break;
        }
      } catch (error) {
        if (!this.isClosed) this.onError(error);
      }
    }
    return coalesce(prelude, found, this.teamId);
  }
}

/**
 * Turns prelude entries into items: log entries become events when the log returned their record,
 * and each run of entries that cannot be delivered becomes one counted `evicted` gap in place.
 */
function coalesce(
  prelude: readonly PreludeEntry[],
  records: ReadonlyMap<number, TeamRecord>,
  teamId: string,
): HubItem[] {
  const out: HubItem[] = [];
  let lost = 0;
  const flush = () => {
    if (lost > 0) out.push({ type: 'gap', reason: 'evicted', lost });
    lost = 0;
  };
  for (const entry of prelude) {
    if (entry.kind === 'lost') {
      lost++;
      continue;
    }
    if (entry.kind === 'log') {
      const record = records.get(entry.logSeq);
      if (record === undefined) {
        lost++;
        continue;
      }
      flush();
      out.push({
        type: 'event',
        seq: entry.seq,
        at: entry.at,
        teamId,
        agent: entry.agent,
        event: { type: 'record', record },
      });
      continue;
    }
    flush();
    out.push(entry.item);
  }
  flush();
  return out;
}
