import { MESSAGE_SUMMARY_MAX } from '../limits.js';
import type { MessageKind, QueuedMessage } from '../records.js';
import { checkTextLimit } from './input-limits.js';
import type { Problem } from './problem.js';

/** Checks a message's optional summary: up to {@link MESSAGE_SUMMARY_MAX} characters (`INVALID_ARGUMENT`). */
export function checkMessageSummary(summary: unknown): void {
  if (summary !== undefined) checkTextLimit('summary', summary, MESSAGE_SUMMARY_MAX);
}

/**
 * Kinds counted against `maxPendingPerMember`. Control kinds (`shutdown_request`,
 * `idle_notification`) are never refused for a full mailbox: a teammate must always be stoppable
 * and the lead must always learn that a teammate went idle.
 */
export function isBoundedKind(kind: MessageKind): boolean {
  return kind === 'message' || kind === 'task_assignment';
}

interface Inbox {
  readonly messages: Map<string, QueuedMessage>;
  bounded: number;
  snapshot: readonly QueuedMessage[] | undefined;
}

const EMPTY: readonly QueuedMessage[] = Object.freeze([]);

/**
 * Pending mail, kept incrementally: queued minus delivered, per target and overall, in log order.
 * A target's pending list is cached as a frozen array and rebuilt only after it changed, so a
 * runner that polls `pending()` at every step boundary pays nothing for an unchanged inbox.
 */
export class Mailbox {
  private readonly queued = new Set<string>();
  private readonly all = new Map<string, QueuedMessage>();
  private readonly inboxes = new Map<string, Inbox>();
  /** Queue position of every pending message, so an undone delivery goes back in its place. */
  private readonly positions = new Map<string, number>();
  private nextPosition = 0;

  /** True for any id ever queued, delivered or not. */
  wasQueued(id: string): boolean {
    return this.queued.has(id);
  }

  /** The pending message with that id, if it is still pending. */
  get(id: string): QueuedMessage | undefined {
    return this.all.get(id);
  }

  /** A message id is queued once (`MESSAGE_STATE`). */
  checkNew(id: string): Problem | undefined {
    if (!this.queued.has(id)) return undefined;
    return {
      code: 'MESSAGE_STATE',
      message: `message ${id} cannot be queued twice: it was already queued`,
      details: { messageId: id },
    };
  }

  /**
   * A message is delivered once, after it was queued, and (when `targetId` is given, as a
   * `message.delivered` record states it) to its own target (`MESSAGE_STATE`).
   */
  checkDeliverable(id: string, targetId?: string): Problem | undefined {
    const message = this.all.get(id);
    if (message === undefined) {
      return {
        code: 'MESSAGE_STATE',
        message: this.queued.has(id)
          ? `message ${id} cannot be delivered twice: it was already delivered`
          : `message ${id} cannot be delivered before it was queued`,
        details: { messageId: id },
      };
    }
    if (targetId === undefined || targetId === message.targetId) return undefined;
    return {
      code: 'MESSAGE_STATE',
      message: `message ${id} is delivered to ${targetId}, not its target ${message.targetId}`,
      details: { messageId: id, targetId },
    };
  }

  /** The target's pending messages in queue order, as a cached frozen array. */
  pending(targetId: string): readonly QueuedMessage[] {
    const inbox = this.inboxes.get(targetId);
    if (inbox === undefined) return EMPTY;
    if (inbox.snapshot === undefined) inbox.snapshot = Object.freeze([...inbox.messages.values()]);
    return inbox.snapshot;
  }

  /** All pending messages of `targetId`, control kinds included. */
  pendingCount(targetId: string): number {
    return this.inboxes.get(targetId)?.messages.size ?? 0;
  }

  /** Pending messages of `targetId` that count against the mailbox bound. */
  boundedCount(targetId: string): number {
    return this.inboxes.get(targetId)?.bounded ?? 0;
  }

  /** Every pending message in log order. */
  pendingAll(): QueuedMessage[] {
    return [...this.all.values()];
  }

  /** Ids of the messages queued and since delivered, in no particular order. */
  deliveredIds(): string[] {
    const out: string[] = [];
    for (const id of this.queued) if (!this.all.has(id)) out.push(id);
    return out;
  }

  /**
   * Fills an empty mailbox from a snapshot: `pending` in queue order, `delivered` the ids of the
   * messages delivered before it. Every id is queued once.
   */
  restore(pending: readonly QueuedMessage[], delivered: readonly string[]): Problem | undefined {
    for (const id of delivered) {
      if (this.queued.has(id))
        return { code: 'LOG_INVARIANT', message: `message ${id} appears twice` };
      this.queued.add(id);
    }
    for (const message of pending) {
      const again = this.checkNew(message.id);
      if (again !== undefined) return again;
      this.enqueue(message);
    }
    return undefined;
  }

  /** Records a queued message; the caller has run {@link checkNew}. */
  enqueue(message: QueuedMessage): void {
    this.queued.add(message.id);
    this.all.set(message.id, message);
    this.positions.set(message.id, this.nextPosition++);
    let inbox = this.inboxes.get(message.targetId);
    if (inbox === undefined) {
      inbox = { messages: new Map(), bounded: 0, snapshot: undefined };
      this.inboxes.set(message.targetId, inbox);
    }
    inbox.messages.set(message.id, message);
    if (isBoundedKind(message.kind)) inbox.bounded++;
    inbox.snapshot = undefined;
  }

  /** Removes a pending message; the caller has run {@link checkDeliverable}. */
  deliver(id: string): void {
    const message = this.all.get(id);
    if (message === undefined) return;
    this.all.delete(id);
    this.positions.delete(id);
    const inbox = this.inboxes.get(message.targetId);
    if (inbox === undefined) return;
    inbox.messages.delete(id);
    if (isBoundedKind(message.kind)) inbox.bounded--;
    inbox.snapshot = undefined;
  }

  /** The queue position of a pending message (what {@link undeliver} puts back). */
  positionOf(id: string): number | undefined {
    return this.positions.get(id);
  }

  /** Undoes {@link enqueue} of a still-pending message, the latest one queued. */
  unqueue(message: QueuedMessage): void {
    this.deliver(message.id);
    this.queued.delete(message.id);
  }

  /**
   * Undoes {@link deliver}: `message` is pending again at queue position `position`. Costs
   * O(pending) when it goes back before later messages (the maps keep queue order).
   */
  undeliver(message: QueuedMessage, position: number): void {
    this.all.set(message.id, message);
    this.positions.set(message.id, position);
    let inbox = this.inboxes.get(message.targetId);
    if (inbox === undefined) {
      inbox = { messages: new Map(), bounded: 0, snapshot: undefined };
      this.inboxes.set(message.targetId, inbox);
    }
    inbox.messages.set(message.id, message);
    if (isBoundedKind(message.kind)) inbox.bounded++;
    inbox.snapshot = undefined;
    this.reorder(this.all);
    this.reorder(inbox.messages);
  }

  /** Restores queue order of `map` after an insert at its end, when it belongs earlier. */
  private reorder(map: Map<string, QueuedMessage>): void {
    let last = -1;
    let sorted = true;
    for (const id of map.keys()) {
      const position = this.positions.get(id) ?? 0;
      if (position < last) {
        sorted = false;
        break;
      }
      last = position;
    }
    if (sorted) return;
    const entries = [...map].sort(
      ([a], [b]) => (this.positions.get(a) ?? 0) - (this.positions.get(b) ?? 0),
    );
    map.clear();
    for (const [id, message] of entries) map.set(id, message);
  }
}
