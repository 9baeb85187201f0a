import { LIVE_SEND_QUEUE_MAX, SEQUENCER_QUEUE_MAX } from '@teamwire/core';
import pg from 'pg';
import type { RetryPolicy } from './connection.js';
import { quoteIdent, reconnectBackoff, sleep } from './connection.js';

/**
 * The NOTIFY channels of a team's sequencer as one process uses them: `team` (hellos, every
 * process LISTENs), `proposals` (proposers' wakes, LISTENed only while this process holds the
 * sequencer lock), `answers` (this process's answers) and `answersOf` (another process's).
 */
export interface SequencerChannels {
  readonly team: string;
  readonly proposals: string;
  readonly answers: string;
  answersOf(processId: string): string;
}

/** Sequencer payloads NOTIFYed in one statement at most. */
const SEQUENCER_STATEMENT_PAYLOADS = 64;

/** What a process announces on the channel after its appends committed. */
export interface AppendNotice {
  teamId: string;
  lastSeq: number;
  processId: string;
}

/** The NOTIFY payload of an append: short JSON, well under PostgreSQL's 8000-byte limit. */
export function noticePayload(notice: AppendNotice): string {
  return JSON.stringify([notice.teamId, notice.lastSeq, notice.processId]);
}

/** The second element of a report notice's payload, where an append notice has its last seq. */
const REPORT_MARK = 'report';

/**
 * The NOTIFY payload telling the others that `processId` wrote a new activity report for `teamId`
 * (`[teamId, 'report', processId]`).
 */
export function reportPayload(teamId: string, processId: string): string {
  return JSON.stringify([teamId, REPORT_MARK, processId]);
}

type Notice =
  | { kind: 'append'; notice: AppendNotice }
  | { kind: 'report'; teamId: string; processId: string };

function parseNotice(payload: string | undefined): Notice | undefined {
  try {
    const [teamId, second, processId] = JSON.parse(payload ?? '') as unknown[];
    if (typeof teamId !== 'string' || typeof processId !== 'string') return undefined;
    if (typeof second === 'number') {
      return { kind: 'append', notice: { teamId, lastSeq: second, processId } };
    }
    if (second === REPORT_MARK) return { kind: 'report', teamId, processId };
  } catch {
    // Not ours (someone else NOTIFYing on the channel): a doorbell may ring spuriously anyway.
  }
  return undefined;
}

/**
 * Why listeners are rung: a notice of appends from another process, a reconnect that may have
 * missed some, the periodic look that covers a notice never sent (its writer died right after
 * committing), or another process's new activity report (placement only: no record was appended).
 */
export type Ring =
  | { kind: 'notice'; notice: AppendNotice }
  | { kind: 'reconnected' }
  | { kind: 'poll' }
  | { kind: 'report'; processId: string };

/** How often listeners are rung without a notice, by default, in case one was lost (ms). */
export const DEFAULT_POLL_MS = 1000;

/**
 * LISTENs on the schema's channel over a dedicated connection (not one of the pool's, which come
 * and go) and rings its listeners for every append of this team by another process, and for
 * every activity report another process announces ({@link announceReport}). When the
 * connection is lost it reconnects with backoff, LISTENs again and rings once, since
 * notifications sent meanwhile are lost; it also rings every `pollMs`.
 *
 * It announces this process's appends too, over the same connection and after they committed
 * ({@link announce}): a NOTIFY inside the append's transaction would take PostgreSQL's
 * cluster-wide notification lock until the commit is flushed, so concurrent appends of every
 * team would commit one at a time. Announcements are coalesced: while one is being sent, later
 * appends only raise the seq the next one carries.
 *
 * The same connection LISTENs on the team's live channel and sends this process's live batches
 * there ({@link sendLive}), after any pending announcement: one statement at a time.
 */
export class Doorbell {
  readonly #config: pg.ClientConfig;
  readonly #channel: string;
  readonly #teamId: string;
  readonly #processId: string;
  readonly #policy: RetryPolicy;
  readonly #listeners = new Set<(ring: Ring) => void>();
  readonly #stop = new AbortController();
  #client: pg.Client | undefined;
  /** Clients whose connection ended, possibly before they were adopted as `#client`. */
  readonly #ended = new WeakSet<pg.Client>();
  #reconnecting: Promise<void> | undefined;
  readonly #pollMs: number;
  #poll: ReturnType<typeof setInterval> | undefined;
  /** The highest seq this process appended and has not announced yet (0: none). */
  #unannounced = 0;
  /** Whether this process wrote an activity report it has not announced yet. */
  #reportUnannounced = false;
  #announcing: Promise<void> | undefined;
  /** The team's channel for live events, LISTENed on the same connection; see {@link sendLive}. */
  readonly #liveChannel: string | undefined;
  readonly #liveListeners = new Set<(payload: string) => void>();
  /** Live payloads waiting for the connection, oldest first; sent by the announcing loop. */
  readonly #liveQueue: string[] = [];
  /** The team's sequencer channels (see {@link SequencerChannels}), if it takes part. */
  readonly #seq: SequencerChannels | undefined;
  readonly #seqListeners = new Set<(payload: string) => void>();
  /** Sequencer payloads and their channels waiting for the connection, oldest first. */
  readonly #seqQueue: { channel: string; payload: string }[] = [];
  /** The connection that holds the team's sequencer lock, if this process took it. */
  #lockedOn: pg.Client | undefined;

  constructor(options: {
    config: pg.ClientConfig;
    channel: string;
    liveChannel?: string | undefined;
    sequencer?: SequencerChannels | undefined;
    teamId: string;
    processId: string;
    policy: RetryPolicy;
    pollMs: number;
  }) {
    this.#pollMs = options.pollMs;
    this.#config = options.config;
    this.#channel = options.channel;
    this.#liveChannel = options.liveChannel;
    this.#seq = options.sequencer;
    this.#teamId = options.teamId;
    this.#processId = options.processId;
    this.#policy = options.policy;
  }

  /** Connects and LISTENs; rejects when the server cannot be reached. */
  async open(): Promise<void> {
    this.#adopt(await this.#connect());
    this.#poll = setInterval(() => this.#ring({ kind: 'poll' }), this.#pollMs);
    this.#poll.unref();
  }

  /**
   * Tells the other processes that this one appended up to `lastSeq`. Best-effort and never
   * awaited by the append: a notice lost with the connection (or the process) is covered by the
   * others' reconnect ring and periodic look.
   */
  announce(lastSeq: number): void {
    if (this.#stop.signal.aborted) return;
    this.#unannounced = Math.max(this.#unannounced, lastSeq);
    this.#startAnnouncing();
  }

  /**
   * Tells the other processes that this one wrote a new activity report, so they look at the
   * placement again before their next heartbeat. Best-effort like {@link announce} and coalesced
   * with it (one notice however many reports were written while one was in flight); the caller
   * bounds how often it reports.
   */
  announceReport(): void {
    if (this.#stop.signal.aborted) return;
    this.#reportUnannounced = true;
    this.#startAnnouncing();
  }

  #startAnnouncing(): void {
    this.#announcing ??= this.#sendAnnouncements().finally(() => {
      this.#announcing = undefined;
    });
  }

  async #sendAnnouncements(): Promise<void> {
    while (
      (this.#unannounced > 0 ||
        this.#reportUnannounced ||
        this.#seqQueue.length > 0 ||
        this.#liveQueue.length > 0) &&
      !this.#stop.signal.aborted
    ) {
      const client = this.#client;
      // Without a connection, the reconnect will ring everyone anyway; live payloads are lost.
      if (client === undefined) {
        this.#liveQueue.length = 0;
        this.#seqQueue.length = 0;
        return;
      }
      let payload: string;
      let channel = this.#channel;
      if (this.#unannounced === 0 && !this.#reportUnannounced && this.#seqQueue.length > 0) {
        // every sequencer payload waiting goes in one statement (answers to many processes)
        const batch = this.#seqQueue.splice(0, SEQUENCER_STATEMENT_PAYLOADS);
        try {
          const [first] = batch;
          // one payload (a hello) needs no arrays to be built and escaped
          if (batch.length === 1 && first !== undefined) {
            await client.query('SELECT pg_notify($1, $2)', [first.channel, first.payload]);
          } else {
            await client.query(
              'SELECT pg_notify(c, p) FROM unnest($1::text[], $2::text[]) AS t(c, p)',
              [batch.map((b) => b.channel), batch.map((b) => b.payload)],
            );
          }
        } catch {
          this.#liveQueue.length = 0;
          this.#seqQueue.length = 0;
          return;
        }
        continue;
      }
      if (this.#unannounced > 0) {
        const lastSeq = this.#unannounced;
        this.#unannounced = 0;
        payload = noticePayload({ teamId: this.#teamId, lastSeq, processId: this.#processId });
      } else if (this.#reportUnannounced) {
        this.#reportUnannounced = false;
        payload = reportPayload(this.#teamId, this.#processId);
      } else {
        payload = this.#liveQueue.shift() as string;
        channel = this.#liveChannel as string;
      }
      try {
        await client.query('SELECT pg_notify($1, $2)', [channel, payload]);
      } catch {
        // The connection is going: its loss is handled by the 'error'/'end' listeners.
        this.#liveQueue.length = 0;
        this.#seqQueue.length = 0;
        return;
      }
    }
  }

  /**
   * NOTIFYs the team's live channel with `payload` (a batch core's relay encoded and bounded) over
   * the LISTEN connection, never a connection of the appends, one statement at a time with the
   * append notices (which go first). Returns false, sending nothing, when there is no connection
   * or `LIVE_SEND_QUEUE_MAX` payloads already wait: live events are best-effort and a slow
   * connection must not make them pile up.
   */
  sendLive(payload: string): boolean {
    if (this.#liveChannel === undefined || this.#client === undefined) return false;
    if (this.#stop.signal.aborted || this.#liveQueue.length >= LIVE_SEND_QUEUE_MAX) return false;
    this.#liveQueue.push(payload);
    this.#startAnnouncing();
    return true;
  }

  /**
   * NOTIFYs one of the team's sequencer channels with `payload` (a hello or answers the
   * sequencer encoded and bounded), after any pending append notice: `to` is `'team'` (every
   * process) or a process id (its answers). Payloads waiting together go in one statement.
   * Returns false, sending nothing, when there is no connection or `SEQUENCER_QUEUE_MAX`
   * payloads already wait. (Proposals are rows, not payloads: see the sequencer.)
   */
  sendSequencer(payload: string, to: 'team' | { processId: string }): boolean {
    const seq = this.#seq;
    if (seq === undefined || this.#client === undefined) return false;
    if (this.#stop.signal.aborted || this.#seqQueue.length >= SEQUENCER_QUEUE_MAX) return false;
    const channel = to === 'team' ? seq.team : seq.answersOf(to.processId);
    this.#seqQueue.push({ channel, payload });
    this.#startAnnouncing();
    return true;
  }

  /**
   * Calls `listener` with every payload another connection NOTIFYs on a sequencer channel this
   * connection LISTENs on: the team's, this process's answers, and the proposals while it holds
   * the sequencer lock.
   */
  listenSequencer(listener: (payload: string) => void): () => void {
    const entry = (payload: string) => listener(payload);
    this.#seqListeners.add(entry);
    return () => {
      this.#seqListeners.delete(entry);
    };
  }

  /**
   * Tries to take the session advisory lock `key` on the LISTEN connection: true when this
   * connection holds it now, and LISTENs on the sequencer's proposals (if this doorbell has
   * sequencer channels) before saying so. Both go with the connection (a crash, a lost network),
   * so another process can take the lock at once; {@link unlock} gives both back.
   */
  async tryLock(key: string): Promise<boolean> {
    const client = this.#client;
    if (client === undefined || this.#stop.signal.aborted) return false;
    if (this.#lockedOn === client) return true;
    try {
      const result = await client.query<{ ok: boolean }>(
        'SELECT pg_try_advisory_lock(hashtextextended($1, 0)) AS ok',
        [key],
      );
      if (result.rows[0]?.ok !== true) return false;
    } catch {
      return false;
    }
    if (this.#client !== client) return false;
    const proposals = this.#seq?.proposals;
    if (proposals !== undefined) {
      // the sequencer alone hears proposals: the others are spared a payload per record
      try {
        await client.query(`LISTEN ${quoteIdent(proposals)}`);
      } catch {
        // a connection that cannot LISTEN must not keep the lock it took
        await client
          .query('SELECT pg_advisory_unlock(hashtextextended($1, 0))', [key])
          .catch(() => undefined);
        return false;
      }
      if (this.#client !== client) return false;
    }
    this.#lockedOn = client;
    return true;
  }

  /** True while the LISTEN connection that took the lock of {@link tryLock} is still this one. */
  holdsLock(): boolean {
    return this.#lockedOn !== undefined && this.#lockedOn === this.#client;
  }

  /** Gives the lock of {@link tryLock} back, if held. */
  async unlock(key: string): Promise<void> {
    const client = this.#lockedOn;
    this.#lockedOn = undefined;
    if (client === undefined || client !== this.#client) return;
    const proposals = this.#seq?.proposals;
    if (proposals !== undefined) {
      await client.query(`UNLISTEN ${quoteIdent(proposals)}`).catch(() => undefined);
    }
    await client
      .query('SELECT pg_advisory_unlock(hashtextextended($1, 0))', [key])
      .catch(() => undefined);
  }

  /** Calls `listener` with every payload another connection NOTIFYs on the live channel. */
  listenLive(listener: (payload: string) => void): () => void {
    const entry = (payload: string) => listener(payload);
    this.#liveListeners.add(entry);
    return () => {
      this.#liveListeners.delete(entry);
    };
  }

  /** Calls `listener` on every ring until the returned function is called. */
  listen(listener: (ring: Ring) => void): () => void {
    const entry = (ring: Ring) => listener(ring);
    this.#listeners.add(entry);
    return () => {
      this.#listeners.delete(entry);
    };
  }

  /** The backend pid of the LISTEN connection (tests terminate it to simulate a lost connection). */
  get backendPid(): number | undefined {
    return (this.#client as { processID?: number } | undefined)?.processID;
  }

  /** Stops listening and closes the connection. Idempotent. */
  async close(): Promise<void> {
    // the last appends' notice goes out before the connection closes
    await this.#announcing;
    this.#stop.abort();
    clearInterval(this.#poll);
    this.#listeners.clear();
    this.#liveListeners.clear();
    this.#seqListeners.clear();
    const client = this.#client;
    this.#client = undefined;
    await this.#reconnecting;
    await client?.end().catch(() => undefined);
  }

  async #connect(): Promise<pg.Client> {
    const client = new pg.Client(this.#config);
    const ended = () => {
      this.#ended.add(client);
      this.#lost(client);
    };
    client.on('error', ended);
    client.on('end', ended);
    client.on('notification', (message) => {
      if (message.channel === this.#liveChannel && this.#liveChannel !== undefined) {
        // this connection's own NOTIFY comes back to it: the others are who it was for
        if (message.processId !== (client as { processID?: number }).processID) {
          this.#live(message.payload ?? '');
        }
        return;
      }
      const seq = this.#seq;
      if (
        seq !== undefined &&
        (message.channel === seq.team ||
          message.channel === seq.answers ||
          message.channel === seq.proposals)
      ) {
        if (message.processId !== (client as { processID?: number }).processID) {
          this.#deliver(this.#seqListeners, message.payload ?? '');
        }
        return;
      }
      if (message.channel !== this.#channel) return;
      const parsed = parseNotice(message.payload);
      if (parsed === undefined) return;
      if (parsed.kind === 'report') {
        if (parsed.teamId !== this.#teamId || parsed.processId === this.#processId) return;
        this.#ring({ kind: 'report', processId: parsed.processId });
        return;
      }
      const { notice } = parsed;
      if (notice.teamId !== this.#teamId || notice.processId === this.#processId) return;
      this.#ring({ kind: 'notice', notice });
    });
    try {
      await client.connect();
      // This connection writes no data: its transactions only NOTIFY (best-effort by design) and
      // take the sequencer's lock. A NOTIFY takes a transaction id, so with synchronous commit
      // every notice would wait for a WAL flush of its own; none needs to survive a crash.
      await client.query('SET synchronous_commit = off');
      await client.query(`LISTEN ${quoteIdent(this.#channel)}`);
      if (this.#liveChannel !== undefined) {
        await client.query(`LISTEN ${quoteIdent(this.#liveChannel)}`);
      }
      if (this.#seq !== undefined) {
        await client.query(`LISTEN ${quoteIdent(this.#seq.team)}`);
        await client.query(`LISTEN ${quoteIdent(this.#seq.answers)}`);
      }
    } catch (error) {
      await client.end().catch(() => undefined);
      throw error;
    }
    return client;
  }

  /** Makes `client` the LISTEN connection, or starts reconnecting if it already died. */
  #adopt(client: pg.Client): void {
    this.#client = client;
    if (this.#ended.has(client)) this.#lost(client);
  }

  #lost(client: pg.Client): void {
    if (client !== this.#client || this.#stop.signal.aborted) return;
    this.#client = undefined;
    client.end().catch(() => undefined);
    this.#reconnecting ??= this.#reconnect().finally(() => {
      this.#reconnecting = undefined;
    });
  }

  async #reconnect(): Promise<void> {
    const backoff = reconnectBackoff(this.#policy);
    const { signal } = this.#stop;
    while (!signal.aborted) {
      await sleep(backoff.next(), signal);
      if (signal.aborted) return;
      let client: pg.Client;
      try {
        client = await this.#connect();
      } catch {
        continue;
      }
      if (signal.aborted) {
        await client.end().catch(() => undefined);
        return;
      }
      if (this.#ended.has(client)) continue;
      this.#client = client;
      this.#ring({ kind: 'reconnected' });
      return;
    }
  }

  #live(payload: string): void {
    this.#deliver(this.#liveListeners, payload);
  }

  #deliver(listeners: ReadonlySet<(payload: string) => void>, payload: string): void {
    for (const listener of listeners) {
      try {
        listener(payload);
      } catch (error) {
        queueMicrotask(() => {
          throw error;
        });
      }
    }
  }

  #ring(ring: Ring): void {
    for (const listener of this.#listeners) {
      try {
        listener(ring);
      } catch (error) {
        // A listener's bug must not silence the doorbell for the others.
        queueMicrotask(() => {
          throw error;
        });
      }
    }
  }
}
