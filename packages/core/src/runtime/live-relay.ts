import type { Clock } from '../clock.js';
import { TeamError } from '../errors.js';
import {
  LIVE_AGENT_NAME_MAX,
  LIVE_BATCH_BYTES_MAX,
  LIVE_BATCH_EVENTS_MAX,
  LIVE_BATCHES_PER_SECOND,
  LIVE_COALESCE_MS,
  LIVE_EVENT_BYTES_MAX,
  LIVE_QUEUE_MAX,
  utf8Length,
} from '../limits.js';
import type { AgentEvent, EventSink, MemberStatus } from '../ports/events.js';
import type { LiveChannel } from '../ports/team-log.js';

/** The version of the live batch format this relay writes and reads. */
export const LIVE_FORMAT_VERSION = 1;

/** Why a live event (or a whole received batch) was dropped; see {@link LiveRelayStats}. */
export type LiveDropReason =
  /** An event of this process larger than `LIVE_EVENT_BYTES_MAX` (or not JSON). */
  | 'oversized'
  /** An event of this process found the send queue full (`LIVE_QUEUE_MAX`). */
  | 'queue-full'
  /** A received payload that is not a batch of this format, or larger than `LIVE_BATCH_BYTES_MAX`. */
  | 'malformed-batch'
  /** A received batch of another format version. */
  | 'unsupported-version'
  /** One event of a received batch that failed validation. */
  | 'malformed-event'
  /** An event of a batch the channel could not send (no connection, too many in flight). */
  | 'unsent';

/** What a relay did since it started; every drop is counted here. */
export interface LiveRelayStats {
  /** Events of this process the channel took (a merged delta counts once). */
  sentEvents: number;
  /** Batches the channel took. */
  sentBatches: number;
  /** Events of other processes published into the local sink. */
  receivedEvents: number;
  /** Drops, by reason. */
  dropped: Record<LiveDropReason, number>;
}

/** The statuses that are a valid `status` event. */
const STATUSES: ReadonlySet<string> = new Set<MemberStatus>([
  'provisioning',
  'running',
  'idle',
  'inactive',
  'failed',
  'retired',
]);

/**
 * Which event types are relayed, and what each must carry to be accepted from another process.
 * Every event but `record`: records reach every process through the team log.
 */
const FIELDS: Readonly<Record<Exclude<AgentEvent['type'], 'record'>, Record<string, string>>> = {
  'turn.start': { reason: 'string' },
  'model.text-delta': { text: 'string' },
  'model.reasoning-delta': { text: 'string' },
  'model.step': { step: 'number', usage: 'object' },
  'tool.call': { toolCall: 'object' },
  'tool.result': { toolCallId: 'string', toolName: 'string', isError: 'boolean', text: 'string' },
  'turn.end': { stopReason: 'string', steps: 'number', text: 'string' },
  'context.compacting': { reason: 'string', tokensBefore: 'number' },
  'context.compacted': { compactionId: 'string', reason: 'string' },
  status: { status: 'string' },
  error: { code: 'string', message: 'string' },
  workspace: { memberId: 'string', action: 'string' },
  custom: { name: 'string' },
};

/** True for an event type the relay carries between processes. */
export function isLiveEventType(type: string): boolean {
  return Object.hasOwn(FIELDS, type);
}

/** A validated event of a received batch, or undefined. */
function liveEvent(value: unknown): AgentEvent | undefined {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return undefined;
  const type = (value as { type?: unknown }).type;
  if (typeof type !== 'string' || !isLiveEventType(type)) return undefined;
  const fields = FIELDS[type as keyof typeof FIELDS];
  for (const [field, kind] of Object.entries(fields)) {
    const got = (value as Record<string, unknown>)[field];
    if (typeof got !== kind || got === null) return undefined;
  }
  if (type === 'status' && !STATUSES.has((value as { status: string }).status)) return undefined;
  return value as AgentEvent;
}

/** What a text cut to fit the event bound ends with. */
const CUT_MARK = '…';

/**
 * `event` with its long `text` cut so that `[agent, event]` fits `LIVE_EVENT_BYTES_MAX`, for the
 * events whose text only repeats what observers have (a turn's last text, streamed already) or
 * what the model reads (a tool's result): dropping them instead would leave a remote observer's
 * view of the turn or the tool unfinished. A cut text ends with `…`. Costs O(the bound), however
 * long the text. Other events are returned as they are.
 */
function fitted(agent: string, event: AgentEvent): AgentEvent {
  if (event.type !== 'tool.result' && event.type !== 'turn.end') return event;
  const head = event.text.slice(0, LIVE_EVENT_BYTES_MAX);
  const room = LIVE_EVENT_BYTES_MAX - utf8Length(JSON.stringify([agent, { ...event, text: '' }]));
  if (head === event.text && utf8Length(JSON.stringify(head)) - 2 <= room) return event;
  const markBytes = utf8Length(CUT_MARK);
  let keep = Math.max(0, room - markBytes);
  for (;;) {
    let text = head.slice(0, keep);
    // never split a surrogate pair
    if ((text.charCodeAt(text.length - 1) & 0xfc00) === 0xd800) text = text.slice(0, -1);
    if (keep === 0 || utf8Length(JSON.stringify(text)) - 2 + markBytes <= room) {
      return { ...event, text: `${text}${CUT_MARK}` };
    }
    keep = Math.floor(keep * 0.8);
  }
}

/** One event waiting to be sent, with its JSON once known. */
interface Queued {
  agent: string;
  event: AgentEvent;
  /** `[agent, event]` as JSON; undefined while a delta may still grow. */
  json: string | undefined;
  /** UTF-8 bytes of the item's JSON (for a delta: an upper bound kept as it grows). */
  bytes: number;
}

/** Options of {@link LiveRelay}. */
export interface LiveRelayOptions {
  /** The team; stamped on every batch and checked on every batch received. */
  teamId: string;
  /** The transport between the team's processes. */
  channel: LiveChannel;
  /**
   * The local sink (the event hub observers follow) other processes' events are published into.
   * Without one the relay only sends: it neither listens nor shows other processes' members.
   */
  sink?: EventSink | undefined;
  /** Drives the coalescing window and the rate bound. */
  clock: Clock;
  /** Names this relay in its batches, so it ignores its own; unique per process. */
  origin: string;
  /**
   * True when the agent's member runs in this process: another process's events for it are stale
   * (a process that lost it) and dropped, and presence for it is left to the local runner.
   */
  runsHere(agentName: string): boolean;
  /** Told about every drop. */
  onDropped?: ((reason: LiveDropReason) => void) | undefined;
}

/** Where a member runs elsewhere and how the team's records show it (see {@link LiveRelay.sync}). */
export interface RemoteMember {
  /** The process that runs it. */
  processId: string;
  /** Its status as the team's placement view and records show it. */
  status: MemberStatus;
}

/**
 * Relays the live events of the members this process runs to the team's other processes, and
 * publishes theirs into the local sink, so an observer attached to any process sees every member's
 * streamed output and presence. Durable `record` events are never relayed (they come from the
 * log), nor are a process's own batches published back to it.
 *
 * Sending never blocks the publisher: events wait in a queue of `LIVE_QUEUE_MAX` (one more is
 * dropped and counted) for `LIVE_COALESCE_MS`, during which consecutive text (or reasoning) deltas
 * of one member merge into one event; then they go in batches of at most `LIVE_BATCH_EVENTS_MAX`
 * events and `LIVE_BATCH_BYTES_MAX` bytes (or the channel's `maxPayloadBytes`, if fewer), at most `LIVE_BATCHES_PER_SECOND` batches in any
 * second. The long text of a `tool.result` or `turn.end` is cut to fit `LIVE_EVENT_BYTES_MAX`; any
 * other event over it is dropped and counted. A received payload is
 * validated: an oversized or malformed batch, or a malformed event in it, is dropped and counted,
 * never thrown.
 *
 * Wire format (version 1), UTF-8 JSON: `{"v":1,"t":teamId,"o":origin,"e":[[agent,event],…]}`.
 */
export class LiveRelay {
  private readonly queue: Queued[] = [];
  /** Per agent, its last queued item while it is an open delta (merge target). */
  private readonly openDelta = new Map<string, Queued>();
  /** When the last `LIVE_BATCHES_PER_SECOND` batches went, oldest first. */
  private readonly sentAt: number[] = [];
  private cancelTimer: (() => void) | undefined;
  private readonly unlisten: () => void;
  private readonly remote = new Map<string, RemoteMember>();
  /** The last status shown in the local sink for a member running elsewhere. */
  private readonly shownStatus = new Map<string, MemberStatus>();
  private closed = false;
  private readonly counts: LiveRelayStats = {
    sentEvents: 0,
    sentBatches: 0,
    receivedEvents: 0,
    dropped: {
      oversized: 0,
      'queue-full': 0,
      'malformed-batch': 0,
      'unsupported-version': 0,
      'malformed-event': 0,
      unsent: 0,
    },
  };
  private readonly envelopeHead: string;
  /** The most bytes of a batch this relay sends: the channel's bound, if smaller. */
  private readonly batchBytesMax: number;

  constructor(private readonly options: LiveRelayOptions) {
    const bound = options.channel.maxPayloadBytes;
    if (
      bound !== undefined &&
      (!Number.isSafeInteger(bound) || bound < LIVE_EVENT_BYTES_MAX + 1024)
    ) {
      throw new TeamError(
        'INVALID_ARGUMENT',
        `a live channel's maxPayloadBytes must be an integer of at least ${LIVE_EVENT_BYTES_MAX + 1024}, got ${String(bound)}`,
        { details: { maxPayloadBytes: String(bound) } },
      );
    }
    this.batchBytesMax = Math.min(LIVE_BATCH_BYTES_MAX, bound ?? LIVE_BATCH_BYTES_MAX);
    this.envelopeHead = `{"v":${LIVE_FORMAT_VERSION},"t":${JSON.stringify(options.teamId)},"o":${JSON.stringify(options.origin)},"e":[`;
    this.unlisten =
      options.sink === undefined
        ? () => {}
        : options.channel.listen((payload) => this.receive(payload));
  }

  /** True when other processes' events are received (a sink was given). */
  get receiving(): boolean {
    return this.options.sink !== undefined;
  }

  /** What the relay did so far (a copy). */
  stats(): LiveRelayStats {
    return { ...this.counts, dropped: { ...this.counts.dropped } };
  }

  /**
   * Takes one event of this process for the others. Returns at once; never throws. Records and
   * events after `close` are ignored.
   */
  offer(agent: string, event: AgentEvent): void {
    if (this.closed || typeof event?.type !== 'string' || !isLiveEventType(event.type)) return;
    if (typeof agent !== 'string' || agent === '' || agent.length > LIVE_AGENT_NAME_MAX) return;
    if (event.type === 'model.text-delta' || event.type === 'model.reasoning-delta') {
      if (typeof event.text !== 'string') return;
      // JSON escapes character by character, so a merged text's JSON is at most the sum of its
      // pieces' (a surrogate pair split over two deltas takes less once merged).
      const extra = utf8Length(JSON.stringify(event.text)) - 2;
      const open = this.openDelta.get(agent);
      if (open !== undefined && open.event.type === event.type) {
        if (open.bytes + extra <= LIVE_EVENT_BYTES_MAX) {
          open.event = {
            type: event.type,
            text: (open.event as { text: string }).text + event.text,
          };
          open.bytes += extra;
          return;
        }
      }
      this.enqueue(agent, event, undefined, utf8Length(JSON.stringify([agent, event])));
      return;
    }
    let json: string;
    try {
      json = JSON.stringify([agent, fitted(agent, event)]);
    } catch {
      this.drop('oversized');
      return;
    }
    this.enqueue(agent, event, json, utf8Length(json));
  }

  private enqueue(agent: string, event: AgentEvent, json: string | undefined, bytes: number): void {
    this.openDelta.delete(agent);
    if (bytes > LIVE_EVENT_BYTES_MAX) {
      this.drop('oversized');
      return;
    }
    if (this.queue.length >= LIVE_QUEUE_MAX) {
      this.drop('queue-full');
      return;
    }
    const item: Queued = { agent, event, json, bytes };
    this.queue.push(item);
    if (json === undefined) this.openDelta.set(agent, item);
    this.schedule(LIVE_COALESCE_MS);
  }

  /** Computes the exact JSON of a delta item. */
  private settle(item: Queued): void {
    if (item.json === undefined) {
      item.json = JSON.stringify([item.agent, item.event]);
      item.bytes = utf8Length(item.json);
    }
  }

  private stopTimer(): void {
    this.cancelTimer?.();
    this.cancelTimer = undefined;
  }

  private schedule(ms: number): void {
    if (this.cancelTimer !== undefined || this.closed) return;
    this.cancelTimer = this.options.clock.setTimer(ms, () => {
      this.cancelTimer = undefined;
      this.flush();
    });
  }

  /** Sends what the rate bound allows now; schedules the rest. */
  private flush(): void {
    this.openDelta.clear(); // what is sent can no longer grow
    const headBytes = utf8Length(this.envelopeHead) + 2; // and the closing `]}`
    while (this.queue.length > 0 && !this.closed) {
      const now = this.options.clock.now();
      while (this.sentAt.length > 0 && (this.sentAt[0] as number) <= now - 1000)
        this.sentAt.shift();
      if (this.sentAt.length >= LIVE_BATCHES_PER_SECOND) {
        this.schedule((this.sentAt[0] as number) + 1000 - now);
        return;
      }
      const parts: string[] = [];
      let bytes = headBytes;
      while (this.queue.length > 0 && parts.length < LIVE_BATCH_EVENTS_MAX) {
        const item = this.queue[0] as Queued;
        this.settle(item);
        const add = item.bytes + (parts.length > 0 ? 1 : 0);
        if (bytes + add > this.batchBytesMax) break;
        parts.push(item.json as string);
        bytes += add;
        this.queue.shift();
      }
      if (parts.length === 0) {
        // cannot fit even alone (a team id that leaves no room): never sendable
        this.queue.shift();
        this.drop('oversized');
        continue;
      }
      this.sentAt.push(now);
      let sent = false;
      try {
        sent = this.options.channel.send(`${this.envelopeHead}${parts.join(',')}]}`) === true;
      } catch {
        // a channel must not throw; if it does, the batch is lost like any other
      }
      if (sent) {
        this.counts.sentBatches++;
        this.counts.sentEvents += parts.length;
      } else {
        for (let i = 0; i < parts.length; i++) this.drop('unsent');
      }
    }
  }

  /** Takes a payload another process sent; publishes its events into the local sink. */
  receive(payload: string): void {
    if (this.closed || this.options.sink === undefined) return;
    if (typeof payload !== 'string' || utf8Length(payload) > LIVE_BATCH_BYTES_MAX) {
      this.drop('malformed-batch');
      return;
    }
    let batch: unknown;
    try {
      batch = JSON.parse(payload);
    } catch {
      this.drop('malformed-batch');
      return;
    }
    if (typeof batch !== 'object' || batch === null || Array.isArray(batch)) {
      this.drop('malformed-batch');
      return;
    }
    const { v, t, o, e } = batch as Record<string, unknown>;
    if (v !== LIVE_FORMAT_VERSION) {
      this.drop(typeof v === 'number' ? 'unsupported-version' : 'malformed-batch');
      return;
    }
    if (typeof o !== 'string' || typeof t !== 'string' || !Array.isArray(e)) {
      this.drop('malformed-batch');
      return;
    }
    // another team sharing the transport, or this process's own batch: not for this sink
    if (t !== this.options.teamId || o === this.options.origin) return;
    if (e.length > LIVE_BATCH_EVENTS_MAX) {
      this.drop('malformed-batch');
      return;
    }
    for (const item of e) {
      const agent = Array.isArray(item) && item.length === 2 ? item[0] : undefined;
      const event = Array.isArray(item) && item.length === 2 ? liveEvent(item[1]) : undefined;
      if (
        typeof agent !== 'string' ||
        agent === '' ||
        agent.length > LIVE_AGENT_NAME_MAX ||
        event === undefined
      ) {
        this.drop('malformed-event');
        continue;
      }
      if (this.options.runsHere(agent)) continue; // a stale sender: this process runs it now
      if (event.type === 'status') this.shownStatus.set(agent, event.status);
      this.counts.receivedEvents++;
      this.publish(agent, event);
    }
  }

  /**
   * The members other live processes run now, by name, with the team's status of each (from the
   * placement view and the records). A member that left this map, or moved to another process,
   * shows as stopped (its run there ended); one that appeared, or whose status differs from what
   * the local sink last showed, gets a `status` event. Members this process runs are left to
   * their runners.
   */
  sync(members: ReadonlyMap<string, RemoteMember>): void {
    if (this.closed || this.options.sink === undefined) return;
    for (const [name, was] of this.remote) {
      const now = members.get(name);
      if (now === undefined || now.processId !== was.processId) {
        this.remote.delete(name);
        this.shownStatus.delete(name);
        if (!this.options.runsHere(name)) this.stopped(name);
      }
    }
    for (const [name, member] of members) {
      if (this.options.runsHere(name)) continue;
      this.remote.set(name, member);
      if (this.shownStatus.get(name) === member.status) continue;
      this.shownStatus.set(name, member.status);
      this.publish(name, { type: 'status', status: member.status });
    }
  }

  private stopped(name: string): void {
    const sink = this.options.sink as
      | (EventSink & { agentStopped?: (name: string) => void })
      | undefined;
    try {
      if (typeof sink?.agentStopped === 'function') sink.agentStopped(name);
    } catch {
      // observers are best-effort
    }
  }

  private publish(agent: string, event: AgentEvent): void {
    try {
      this.options.sink?.publish(agent, event);
    } catch {
      // observers are best-effort
    }
  }

  private drop(reason: LiveDropReason): void {
    this.counts.dropped[reason]++;
    try {
      this.options.onDropped?.(reason);
    } catch {
      // a counter's bug must not reach the publisher
    }
  }

  /**
   * Sends what it holds (as far as the rate bound allows; the rest is dropped) and stops sending
   * and receiving. Idempotent.
   */
  close(): void {
    if (this.closed) return;
    this.stopTimer();
    this.flush();
    this.closed = true;
    this.stopTimer(); // set by a flush the rate bound cut short
    this.queue.length = 0;
    this.openDelta.clear();
    this.unlisten();
  }
}
