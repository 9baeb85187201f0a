import { expect } from 'vitest';
import type { AgentEvent } from '../ports/events.js';
import type { TeamRecord } from '../records.js';
import type { HubEvent, HubItem, HubSubscription } from './types.js';

/** The team id every hub test uses. */
export const TEAM = 'team-1';

/** A text delta: the most common (and least durable) agent event. */
export function delta(text: string): AgentEvent {
  return { type: 'model.text-delta', text };
}

/** A whole task record, as the runtime would append it to the log. */
export function taskRecord(seq: number, subject = `task ${seq}`): TeamRecord {
  return {
    type: 'task',
    seq,
    at: 1_000 + seq,
    teamId: TEAM,
    schemaVersion: 1,
    task: {
      id: `task-${seq}`,
      revision: 1,
      subject,
      description: 'do the thing',
      status: 'pending',
      creatorId: 'lead-id',
      blockedBy: [],
      writeScopes: [],
    },
  };
}

/** A member record announcing `name`. */
export function memberRecord(seq: number, name: string): TeamRecord {
  return {
    type: 'member',
    seq,
    at: 1_000 + seq,
    teamId: TEAM,
    schemaVersion: 1,
    member: {
      id: `id-${name}`,
      name,
      description: `${name} teammate`,
      agentType: 'general-purpose',
      provider: 'scripted',
      context: 'fresh',
      phase: 'active',
    },
  };
}

/** Pulls exactly `count` items. */
export async function take(subscription: HubSubscription, count: number): Promise<HubItem[]> {
  const items: HubItem[] = [];
  for (let i = 0; i < count; i++) {
    const result = await subscription.next();
    if (result.done) break;
    items.push(result.value);
  }
  return items;
}

/** Lets every queued microtask and I/O callback run once (an event-loop turn, not a timer). */
export function turn(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

/**
 * Reads a subscription without ever blocking the test: a pull that finds nothing is kept and
 * awaited by the next read, so no item is lost between reads.
 */
export class Reader {
  readonly items: HubItem[] = [];
  private pending: Promise<IteratorResult<HubItem>> | undefined;

  constructor(readonly subscription: HubSubscription) {}

  /** Reads up to `max` items that are available now; returns false once the stream ended. */
  async read(max = Number.POSITIVE_INFINITY): Promise<boolean> {
    for (let i = 0; i < max; i++) {
      const next = this.pending ?? this.subscription.next();
      this.pending = next;
      const result = await Promise.race([next, turn().then(() => 'idle' as const)]);
      if (result === 'idle') return true;
      this.pending = undefined;
      if (result.done) return false;
      this.items.push(result.value);
    }
    return true;
  }

  /** Reads everything available, then closes the subscription. */
  async drain(): Promise<HubItem[]> {
    await this.read();
    this.subscription.close();
    const last = await this.pending;
    if (last !== undefined && !last.done) this.items.push(last.value);
    this.pending = undefined;
    return this.items;
  }
}

/** Pulls everything the subscription can hand out now, then closes it. */
export function drainAvailable(subscription: HubSubscription): Promise<HubItem[]> {
  return new Reader(subscription).drain();
}

/** Asserts that the subscription has nothing more to hand out right now. */
export async function expectIdle(subscription: HubSubscription): Promise<void> {
  const next = subscription.next();
  const outcome = await Promise.race([next.then(() => 'item' as const), turn().then(() => 'idle')]);
  expect(outcome).toBe('idle');
  subscription.close();
  expect((await next).done).toBe(true);
}

/** The agent events among `items`. */
export function events(items: readonly HubItem[]): HubEvent[] {
  return items.filter((item): item is HubEvent => item.type === 'event');
}

/** The cursor seqs of `items`, in order. */
export function seqs(items: readonly HubItem[]): number[] {
  return items.flatMap((item) => ('seq' in item ? [item.seq] : []));
}

/** The text of every text-delta event among `items`. */
export function texts(items: readonly HubItem[]): string[] {
  return events(items).flatMap((item) =>
    item.event.type === 'model.text-delta' ? [item.event.text] : [],
  );
}
