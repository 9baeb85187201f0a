import { Backoff, type HubItem } from '@teamwire/core';
import {
  applyHubItem,
  type DashboardSnapshot,
  type DashboardState,
  fromSnapshot,
} from '../../src/view-model.js';
import { fetchSnapshot, toApiError } from './api.js';

/** What the header shows of the event stream. */
export type Connection = 'connecting' | 'live' | 'reconnecting';

/** Why the snapshot could not be loaded. */
export interface LoadError {
  code: string;
  message: string;
  /** True when retrying cannot help (the token is refused): the page stops. */
  fatal: boolean;
}

/** Hub items kept while a snapshot reloads; past this, the oldest go. */
const RELOAD_BUFFER_MAX = 100_000;

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** Waits between attempts to load a snapshot or reopen the stream: 1 s doubling to 15 s. */
const RETRY = { initialDelayMs: 1000, maxDelayMs: 15_000 } as const;

/**
 * The page's live view: loads the snapshot, then follows the hub's event stream. The view model
 * mutates its state in place; this store only counts changes (`tick`) and tells React about them
 * at most once per animation frame, so a fast stream of text deltas renders at the frame rate.
 */
export class DashboardStore {
  readonly token: string;
  /** The view, once the first snapshot is loaded (replaced on every reload). */
  state: DashboardState | undefined;
  connection: Connection = 'connecting';
  /** Snapshot reloads after the first load (the hub restarted or could not resume). */
  reloads = 0;
  /** The last failure to load a snapshot, until one loads. */
  loadError: LoadError | undefined;
  /** Grows once per rendered batch of changes. */
  tick = 0;

  private readonly listeners = new Set<() => void>();
  private scheduled = false;
  private source: EventSource | undefined;
  private lastEventId = '';
  private readonly reopenBackoff = new Backoff(RETRY);
  private reloading = false;
  private reloadAgain = false;
  private buffer: HubItem[] = [];
  private stopped = false;

  constructor(token: string) {
    this.token = token;
  }

  subscribe = (listener: () => void): (() => void) => {
    this.listeners.add(listener);
    return () => {
      this.listeners.delete(listener);
    };
  };

  getTick = (): number => this.tick;

  /** Loads the snapshot, builds the view, then opens the event stream. */
  async start(): Promise<void> {
    const snapshot = await this.loadSnapshot();
    if (snapshot === undefined) return;
    this.state = fromSnapshot(snapshot);
    this.changed();
    this.open();
  }

  /** Ends the stream (the page is going away). */
  stop(): void {
    this.stopped = true;
    this.source?.close();
    this.source = undefined;
  }

  private changed(): void {
    if (this.scheduled) return;
    this.scheduled = true;
    const flush = () => {
      this.scheduled = false;
      this.tick++;
      for (const listener of this.listeners) listener();
    };
    // Hidden tabs get no animation frames: render there on a slow timer instead.
    if (document.visibilityState === 'hidden') setTimeout(flush, 250);
    else requestAnimationFrame(flush);
  }

  private async loadSnapshot(): Promise<DashboardSnapshot | undefined> {
    const backoff = new Backoff(RETRY);
    while (!this.stopped) {
      try {
        const snapshot = await fetchSnapshot(this.token);
        if (this.loadError !== undefined) {
          this.loadError = undefined;
          this.changed();
        }
        return snapshot;
      } catch (error) {
        const failure = toApiError(error);
        const fatal = failure.status === 401 || failure.status === 403;
        this.loadError = { code: failure.code, message: failure.message, fatal };
        this.changed();
        if (fatal) return undefined;
        await sleep(backoff.next());
      }
    }
    return undefined;
  }

  private open(): void {
    if (this.stopped) return;
    let url = 'api/events?presence=1&token=' + encodeURIComponent(this.token);
    // Only a stream reopened by this page (the browser gave up on the old one) needs the cursor
    // in the URL; the browser's own reconnects send `Last-Event-ID` themselves.
    if (this.lastEventId !== '') url += '&lastEventId=' + encodeURIComponent(this.lastEventId);
    const source = new EventSource(url);
    this.source = source;
    source.onopen = () => {
      if (this.source !== source) return;
      this.reopenBackoff.reset();
      this.setConnection('live');
    };
    source.onerror = () => {
      if (this.source !== source) return;
      this.setConnection('reconnecting');
      if (source.readyState === EventSource.CLOSED) {
        // The browser will not retry this one (an HTTP error, a wrong content type): reopen it
        // later from the last cursor seen.
        source.close();
        this.source = undefined;
        setTimeout(() => this.open(), this.reopenBackoff.next());
      }
    };
    source.onmessage = (message: MessageEvent<string>) => {
      if (this.source !== source) return;
      if (message.lastEventId !== '') this.lastEventId = message.lastEventId;
      let item: HubItem;
      try {
        item = JSON.parse(message.data) as HubItem;
      } catch {
        return;
      }
      if (item === null || typeof item !== 'object') return;
      this.receive(item);
    };
  }

  private setConnection(connection: Connection): void {
    if (this.connection === connection) return;
    this.connection = connection;
    this.changed();
  }

  private receive(item: HubItem): void {
    if (this.reloading) {
      if (item.type === 'reset') {
        // Another restart while the snapshot loads: what came before it no longer counts.
        this.reloadAgain = true;
        this.buffer = [];
      } else {
        this.buffer.push(item);
        // drop the oldest in one go now and then, never one shift per item
        if (this.buffer.length > 2 * RELOAD_BUFFER_MAX) {
          this.buffer.splice(0, this.buffer.length - RELOAD_BUFFER_MAX);
        }
      }
      return;
    }
    const state = this.state;
    if (state === undefined) return;
    if (applyHubItem(state, item) === 'reload') void this.reload();
    else this.changed();
  }

  /**
   * Rebuilds the view from a fresh snapshot (the stream goes on: what it sends meanwhile is kept
   * and applied on top, the records the snapshot already holds being skipped by their seq).
   */
  private async reload(): Promise<void> {
    this.reloading = true;
    this.buffer = [];
    let snapshot: DashboardSnapshot | undefined;
    do {
      this.reloadAgain = false;
      snapshot = await this.loadSnapshot();
    } while (this.reloadAgain && snapshot !== undefined);
    const buffered = this.buffer;
    this.buffer = [];
    this.reloading = false;
    if (snapshot === undefined) return; // the token is refused now: keep the last view
    const state = fromSnapshot(snapshot);
    // No `reset` is ever buffered, so none of these asks for another reload.
    for (const item of buffered) applyHubItem(state, item);
    this.state = state;
    this.reloads++;
    this.changed();
  }
}
