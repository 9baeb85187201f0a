import type { HubEvent } from './types.js';

/** Slots a live ring (the shared feed, a subscription's queue) starts with (a power of two). */
export const LIVE_RING_MIN_CAPACITY = 16;

/** A reader of the feed that is waiting for the next event. */
export interface FeedWaiter {
  /** Called once by the publish that ends the wait. */
  feedWake(): void;
}

/**
 * The live events every unfiltered subscriber wants, stored once for all of them: a ring of the
 * latest `bound` events addressed by absolute position, where each such subscriber only keeps a
 * cursor. Publishing an event costs one slot store however many of them there are, and a reader
 * that fell more than its bound behind learns, when it next reads, exactly how many positions it
 * skipped. The ring grows by doubling up to the first power of two that holds `bound`, then reuses
 * its slots, so memory stays bounded whoever stalls.
 */
export class LiveFeed {
  /** Position the next event takes: events appended since the feed began. */
  end = 0;
  /** Events still held, the latest ones: `end - size` is the oldest position readable. */
  private size = 0;
  private slots: (HubEvent | undefined)[] = new Array<HubEvent | undefined>(LIVE_RING_MIN_CAPACITY);
  private mask = LIVE_RING_MIN_CAPACITY - 1;
  private readonly maxCapacity: number;
  private waiters: FeedWaiter[] = [];

  /** @param bound the most events any reader may be behind before it loses the oldest. */
  constructor(readonly bound: number) {
    let capacity = LIVE_RING_MIN_CAPACITY;
    while (capacity < bound) capacity *= 2;
    this.maxCapacity = capacity;
  }

  /** Appends an event (dropping the oldest past the bound) and wakes the waiting readers. */
  push(item: HubEvent): void {
    if (this.size === this.slots.length) {
      if (this.slots.length < this.maxCapacity) this.grow();
      else this.size--;
    }
    this.slots[this.end & this.mask] = item;
    this.end++;
    this.size++;
    if (this.waiters.length > 0) {
      const waiters = this.waiters;
      this.waiters = [];
      for (let i = 0; i < waiters.length; i++) (waiters[i] as FeedWaiter).feedWake();
    }
  }

  /** The event at `position`; callers keep `end - bound <= position < end`. */
  at(position: number): HubEvent {
    return this.slots[position & this.mask] as HubEvent;
  }

  /** Registers `waiter` for the next push. */
  wait(waiter: FeedWaiter): void {
    this.waiters.push(waiter);
  }

  /** Forgets `waiter` (closed before the next push). */
  unwait(waiter: FeedWaiter): void {
    if (this.waiters.includes(waiter)) this.waiters = this.waiters.filter((w) => w !== waiter);
  }

  /** Lets go of every held event, once no reader is left; positions keep counting. */
  release(): void {
    this.slots = new Array<HubEvent | undefined>(LIVE_RING_MIN_CAPACITY);
    this.mask = LIVE_RING_MIN_CAPACITY - 1;
    this.size = 0;
    this.waiters = [];
  }

  /** Doubles the ring, keeping each held event at its position. */
  private grow(): void {
    const slots = new Array<HubEvent | undefined>(this.slots.length * 2);
    const mask = slots.length - 1;
    for (let position = this.end - this.size; position < this.end; position++) {
      slots[position & mask] = this.slots[position & this.mask];
    }
    this.slots = slots;
    this.mask = mask;
  }
}
