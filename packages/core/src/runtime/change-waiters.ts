import type { Clock } from '../clock.js';
import { TeamError } from '../errors.js';
import { WAIT_TIMEOUT_MAX_MS, WAIT_TIMEOUT_MIN_MS } from '../limits.js';
import type { TeamRecord } from '../records.js';
import type { WaitForChangeInput, WaitForChangeResult } from './service-types.js';

interface ChangeWaiter {
  records: TeamRecord[];
  scheduled: boolean;
  /** For `untilNoProgress`: why the team makes no progress now, or undefined while it does. */
  stalled: (() => string | undefined) | undefined;
  finish(noProgress?: string): void;
}

/**
 * The waiters of `waitForChange`: edge-triggered, each collects the records committed after it
 * began and resolves in a microtask after the first commit, so the records of one burst arrive
 * together. A timeout on the injected clock resolves it unchanged; its signal rejects it.
 */
export class ChangeWaiters {
  private readonly waiters = new Set<ChangeWaiter>();

  constructor(
    private readonly clock: Clock,
    /** True once the service is disposed: a waiter finishing empty then rejects with `DISPOSED`. */
    private readonly isDisposed: () => boolean,
  ) {}

  /** Validates the input and waits; see `TeamService.waitForChange`. */
  wait(
    input: WaitForChangeInput,
    stalled?: () => string | undefined,
  ): Promise<WaitForChangeResult> {
    const { timeoutMs, signal } = input;
    if (
      !Number.isInteger(timeoutMs) ||
      timeoutMs < WAIT_TIMEOUT_MIN_MS ||
      timeoutMs > WAIT_TIMEOUT_MAX_MS
    ) {
      return Promise.reject(
        new TeamError(
          'INVALID_ARGUMENT',
          `timeoutMs must be an integer from ${WAIT_TIMEOUT_MIN_MS} to ${WAIT_TIMEOUT_MAX_MS}`,
          { details: { timeoutMs } },
        ),
      );
    }
    if (signal?.aborted) {
      return Promise.reject(
        new TeamError('ABORTED', 'the wait was aborted', { cause: signal.reason }),
      );
    }
    return new Promise<WaitForChangeResult>((resolve, reject) => {
      let cancelTimer = () => {};
      const onAbort = () => {
        cleanup();
        reject(new TeamError('ABORTED', 'the wait was aborted', { cause: signal?.reason }));
      };
      const cleanup = () => {
        this.waiters.delete(waiter);
        cancelTimer();
        signal?.removeEventListener('abort', onAbort);
      };
      const waiter: ChangeWaiter = {
        records: [],
        scheduled: false,
        stalled: input.untilNoProgress === true ? stalled : undefined,
        finish: (noProgress) => {
          cleanup();
          if (this.isDisposed() && waiter.records.length === 0) {
            reject(new TeamError('DISPOSED', 'the team service was disposed'));
            return;
          }
          // Copies: the state keeps the committed records, and a caller must not change them.
          resolve({
            changed: waiter.records.length > 0,
            records: waiter.records.map((record) => structuredClone(record)),
            ...(noProgress === undefined || waiter.records.length > 0 ? {} : { noProgress }),
          });
        },
      };
      this.waiters.add(waiter);
      cancelTimer = this.clock.setTimer(timeoutMs, () => waiter.finish());
      signal?.addEventListener('abort', onAbort, { once: true });
    });
  }

  /** Hands committed records to every waiter. */
  push(records: readonly TeamRecord[]): void {
    for (const waiter of this.waiters) {
      for (const record of records) waiter.records.push(record);
      if (!waiter.scheduled) {
        waiter.scheduled = true;
        queueMicrotask(() => waiter.finish());
      }
    }
  }

  /**
   * Something that progress depends on changed without a record (a placement report): a waiter
   * that asked `untilNoProgress` ends now if the team makes none.
   */
  recheck(): void {
    for (const waiter of [...this.waiters]) {
      if (waiter.stalled === undefined || waiter.scheduled) continue;
      const why = waiter.stalled();
      if (why !== undefined) waiter.finish(why);
    }
  }

  /** Finishes every waiter now (on dispose). */
  finishAll(): void {
    for (const waiter of [...this.waiters]) waiter.finish();
  }
}
