import type { TeamLog } from '../ports/team-log.js';
import type { TeamRecord } from '../records.js';
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
}

/** True when `item` (a live event or transition) passes `filter`. */
export function matches(filter: ItemFilter, item: LiveItem): boolean {
  if (item.type === 'event' ? !filter.events : !filter.presence) return false;
  return filter.agents === undefined || filter.agents.has(item.agent);
}

const DONE: IteratorResult<HubItem> = { done: true, value: undefined };

/**
 * One subscriber: a prelude (snapshot, history, log replay) followed by a bounded live queue.
 * `push` is what the hub calls on publish; it is O(1) in the common case and never waits for the
 * consumer. Pulls are serialized, so concurrent `next()` calls see items in order.
 */
export class Subscription implements HubSubscription {
  readonly filter: ItemFilter;
  private readonly bufferSize: number;
  private readonly teamId: string;
  private readonly log: TeamLog | undefined;
  private readonly onError: (error: unknown) => void;
  private readonly detach: (subscription: Subscription) => void;
  private prelude: PreludeEntry[] | undefined;
  private resolved: HubItem[] | undefined;
  private preludeIndex = 0;
  private queue: (LiveItem | undefined)[] = [];
  private queueHead = 0;
  private pendingLost = 0;
  private totalLost = 0;
  private isClosed = false;
  /** Set by the hub's close: deliver what is buffered, then end. */
  private ending = false;
  private wake: (() => void) | undefined;
  private tail: Promise<unknown> = Promise.resolve();
  private readonly replayAbort = new AbortController();

  constructor(options: {
    filter: ItemFilter;
    bufferSize: number;
    teamId: string;
    prelude: PreludeEntry[];
    log: TeamLog | undefined;
    onError: (error: unknown) => void;
    detach: (subscription: Subscription) => void;
  }) {
    this.filter = options.filter;
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
    return this.totalLost;
  }

  get buffered(): number {
    return this.queue.length - this.queueHead;
  }

  /**
   * Queues a live item, dropping the oldest when full. Presence transitions are kept over agent
   * events when something must go: they are few, and losing one leaves a board wrong until the
   * agent's next transition, whereas a lost delta is just a hole in a transcript.
   */
  push(item: LiveItem): void {
    if (this.isClosed || this.ending) return;
    if (this.buffered >= this.bufferSize) this.dropOne();
    this.queue.push(item);
    const wake = this.wake;
    this.wake = undefined;
    wake?.();
  }

  private dropOne(): void {
    let index = this.queueHead;
    while (index < this.queue.length && this.queue[index]?.type === 'presence') index++;
    if (index >= this.queue.length) index = this.queueHead;
    if (index === this.queueHead) this.shift();
    else this.queue.splice(index, 1);
    this.pendingLost++;
    this.totalLost++;
  }

  /** Takes the head of the live queue, compacting the array once its dead prefix dominates. */
  private shift(): LiveItem {
    const item = this.queue[this.queueHead] as LiveItem;
    this.queue[this.queueHead] = undefined;
    this.queueHead++;
    if (this.queueHead === this.queue.length) {
      this.queue = [];
      this.queueHead = 0;
    } else if (this.queueHead >= 1024 && this.queueHead * 2 >= this.queue.length) {
      this.queue = this.queue.slice(this.queueHead);
      this.queueHead = 0;
    }
    return item;
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
    this.isClosed = true;
    this.queue = [];
    this.queueHead = 0;
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
    for (;;) {
      if (this.isClosed) return DONE;
      if (this.pendingLost > 0) {
        const gap: HubGap = { type: 'gap', reason: 'overflow', lost: this.pendingLost };
        this.pendingLost = 0;
        return { done: false, value: gap };
      }
      if (this.queueHead < this.queue.length) {
        return { done: false, value: this.shift() };
      }
      if (this.ending) {
        this.close();
        return DONE;
      }
      await new Promise<void>((resolve) => {
        this.wake = resolve;
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
