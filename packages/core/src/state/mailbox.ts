import { MESSAGE_SUMMARY_MAX } from '../limits.js';
import type { MessageKind, QueuedMessage } from '../records.js';
import { checkTextLimit } from './input-limits.js';
import { invariant, type Problem } from './problem.js';
import { type StoredText, snapshotInvalid } from './snapshot.js';

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
 * How far from its end the mailbox's sorted ids take an id queued out of order (see
 * `Mailbox.sorted`); an id older than that goes to a set.
 */
const SORTED_TAIL = 64;

/**
 * Pending mail, kept incrementally: queued minus delivered, per target and overall, in log order.
 * A target's pending list is cached as a frozen array and rebuilt only after it changed, so a
 * runner that polls `pending()` at every step boundary pays nothing for an unchanged inbox.
 */
export class Mailbox {
  /**
   * Ids queued since the state was restored (or ever, for a fold), delivered or not, in two parts.
   * `sorted` holds, in order, every id that was queued greater than all but at most
   * {@link SORTED_TAIL} of those before it: ids that grow with time (ulids), including those a
   * little older than the newest when several processes write. Queueing or finding one of them
   * costs a few comparisons at the array's end, not a hash into a set that grows with history.
   * `unordered` holds the rest.
   */
  private sorted: string[] = [];
  private readonly unordered = new Set<string>();
  /**
   * Ids delivered before the snapshot the state was restored from, sorted: a history-sized list
   * kept as an array (searched by halves) rather than hashed into a set, so a restore costs a
   * split of one string, not a hash per id. Merged with the delivered ids of `sorted` and
   * `unordered` by {@link deliveredText}.
   */
  private historic: readonly string[] = [];
  /**
   * The history as a store handed it back, not split yet (see {@link restore}): split into
   * `historic` only when an id at or below `historicLast` is looked up, or merged.
   */
  private unsplit: StoredText | string | undefined;
  /** The greatest id of the history (`undefined`: none), split or not. */
  private historicLast: string | undefined;
  /** Ids restored as pending that must not be in the unsplit history: checked when it is split. */
  private restoredPending: string[] = [];
  private readonly all = new Map<string, QueuedMessage>();
  private readonly inboxes = new Map<string, Inbox>();
  /** Queue position of every pending message, so an undone delivery goes back in its place. */
  private readonly positions = new Map<string, number>();
  private nextPosition = 0;

  /** True for an id queued since the state was restored (or ever, for a fold). */
  private isQueued(id: string): boolean {
    const sorted = this.sorted;
    const stop = Math.max(0, sorted.length - SORTED_TAIL);
    let i = sorted.length - 1;
    for (; i >= stop; i--) {
      const at = sorted[i] as string;
      if (at === id) return true;
      if (at < id) return this.unordered.size > 0 && this.unordered.has(id);
    }
    if (i >= 0 && sortedHas(sorted, id, i)) return true;
    return this.unordered.size > 0 && this.unordered.has(id);
  }

  /** Adds an id {@link isQueued} does not hold. */
  private addQueued(id: string): void {
    const sorted = this.sorted;
    // in place only where the id ends among the last SORTED_TAIL (where `unqueue` looks)
    const stop = Math.max(0, sorted.length + 1 - SORTED_TAIL);
    let at = sorted.length;
    while (at > stop && (sorted[at - 1] as string) > id) at--;
    if (at === sorted.length) sorted.push(id);
    else if (at === 0 || (sorted[at - 1] as string) < id) sorted.splice(at, 0, id);
    else this.unordered.add(id);
  }

  /** True for any id ever queued, delivered or not. */
  wasQueued(id: string): boolean {
    if (this.isQueued(id)) return true;
    const last = this.historicLast;
    if (last === undefined || id > last) return false;
    return sortedHas(this.history(), id);
  }

  /** The delivered history, split (and checked) on first need (`SNAPSHOT_INVALID` if bad). */
  private history(): readonly string[] {
    const unsplit = this.unsplit;
    if (unsplit === undefined) return this.historic;
    const text = typeof unsplit === 'string' ? unsplit : unsplit.text();
    const ids = text === '' ? [] : text.split('\n');
    const unsorted = sortedProblem(ids);
    if (unsorted !== undefined) throw snapshotInvalid(`delivered message ids are ${unsorted}`);
    if (ids[ids.length - 1] !== this.historicLast) {
      throw snapshotInvalid(`the last delivered message id is not ${this.historicLast}`);
    }
    const both = this.restoredPending.find((id) => sortedHas(ids, id));
    if (both !== undefined) throw snapshotInvalid(`message ${both} is both pending and delivered`);
    this.historic = ids;
    this.unsplit = undefined;
    this.restoredPending = [];
    return ids;
  }

  /** The pending message with that id, if it is still pending. */
  get(id: string): QueuedMessage | undefined {
    return this.all.get(id);
  }

  /** A message id is queued once (`MESSAGE_STATE`). */
  checkNew(id: string): Problem | undefined {
    if (!this.wasQueued(id)) return undefined;
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
        message: this.wasQueued(id)
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

  /**
   * Ids of the messages queued and since delivered, sorted (code unit order) and joined by `\n`,
   * with the greatest of them. Folds them into the sorted history as it goes, so the next call
   * sorts only what was delivered after this one. A history not split yet stays so when every id
   * delivered since is greater than its last (as ids that grow with time are).
   */
  deliveredText(): { text: string; last: string | undefined } {
    const recent: string[] = [];
    const pending: string[] = [];
    for (const id of this.sorted) (this.all.has(id) ? pending : recent).push(id);
    for (const id of this.unordered) if (!this.all.has(id)) recent.push(id);
    recent.sort(compareIds);
    // once the history holds `recent` (splitting it may throw first)
    const moved = () => {
      this.sorted = pending;
      for (const id of recent) this.unordered.delete(id);
    };
    const unsplit = this.unsplit;
    const last = this.historicLast;
    if (
      unsplit !== undefined &&
      (recent.length === 0 || last === undefined || (recent[0] as string) > last)
    ) {
      let text = typeof unsplit === 'string' ? unsplit : unsplit.text();
      if (recent.length > 0) {
        text = text === '' ? recent.join('\n') : `${text}\n${recent.join('\n')}`;
        this.historicLast = recent[recent.length - 1];
        moved();
      }
      this.unsplit = text;
      return { text, last: this.historicLast };
    }
    if (recent.length > 0) {
      this.historic = mergeSorted(this.history(), recent);
      this.historicLast = this.historic[this.historic.length - 1];
      moved();
    }
    return { text: this.history().join('\n'), last: this.historicLast };
  }

  /**
   * Fills an empty mailbox from a snapshot: `pending` in queue order, `delivered` the ids of the
   * messages delivered before it, sorted without repeats and joined by `\n`. Every id is queued
   * once. Delivered ids a store kept apart ({@link StoredText}, with `last` their greatest) are
   * split and checked only when first needed; ids given as a string are checked here.
   */
  restore(
    pending: readonly QueuedMessage[],
    delivered: string | StoredText,
    last: string | undefined,
  ): Problem | undefined {
    if (typeof delivered === 'string') {
      const ids = delivered === '' ? [] : delivered.split('\n');
      const unsorted = sortedProblem(ids);
      if (unsorted !== undefined) return invariant(`delivered message ids are ${unsorted}`);
      if (last !== undefined && ids[ids.length - 1] !== last) {
        return invariant(`the last delivered message id is not ${last}`);
      }
      this.historic = ids;
      this.historicLast = ids[ids.length - 1];
    } else if (delivered.bytes > 0) {
      if (last === undefined) return invariant('delivered message ids without the last of them');
      this.unsplit = delivered;
      this.historicLast = last;
    } else if (last !== undefined) {
      return invariant(`the last delivered message id is ${last}, but there are none`);
    }
    for (const message of pending) {
      const { id } = message;
      if (this.isQueued(id)) return this.checkNew(id);
      if (this.unsplit !== undefined && id <= (last as string)) this.restoredPending.push(id);
      else if (sortedHas(this.historic, id)) return this.checkNew(id);
      this.enqueue(message);
    }
    return undefined;
  }

  /** Records a queued message; the caller has run {@link checkNew}. */
  enqueue(message: QueuedMessage): void {
    this.addQueued(message.id);
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
    // the latest id queued: in the last SORTED_TAIL of `sorted`, or in `unordered`
    const sorted = this.sorted;
    for (let at = sorted.length - 1; at >= Math.max(0, sorted.length - SORTED_TAIL); at--) {
      if (sorted[at] === message.id) {
        sorted.splice(at, 1);
        return;
      }
    }
    this.unordered.delete(message.id);
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

/** Code unit order, as `Array.prototype.sort` without a comparator uses. */
function compareIds(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/** Where `ids` are not sorted without repeats (`undefined`: they are). */
function sortedProblem(ids: readonly string[]): string | undefined {
  for (let i = 1; i < ids.length; i++) {
    if (compareIds(ids[i - 1] as string, ids[i] as string) >= 0) {
      return `not sorted without repeats at ${ids[i]}`;
    }
  }
  return undefined;
}

/** Whether the sorted `ids` hold `id` at or before index `high` (binary search). */
function sortedHas(ids: readonly string[], id: string, high = ids.length - 1): boolean {
  let low = 0;
  while (low <= high) {
    const mid = (low + high) >> 1;
    const at = ids[mid] as string;
    if (at === id) return true;
    if (at < id) low = mid + 1;
    else high = mid - 1;
  }
  return false;
}

/** The merge of two sorted lists without common elements. */
function mergeSorted(a: readonly string[], b: readonly string[]): string[] {
  const out: string[] = new Array(a.length + b.length);
  let i = 0;
  let j = 0;
  let k = 0;
  while (i < a.length && j < b.length) {
    out[k++] = (a[i] as string) < (b[j] as string) ? (a[i++] as string) : (b[j++] as string);
  }
  while (i < a.length) out[k++] = a[i++] as string;
  while (j < b.length) out[k++] = b[j++] as string;
  return out;
}
