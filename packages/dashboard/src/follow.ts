import { createEventHub, type EventHub, type TeamLog, type TeamRecord } from '@teamwire/core';

/** A team log followed from outside; see {@link followTeamLog}. */
export interface FollowedLog {
  /** A hub that publishes every record appended to the log, as `record` events of agent `log`. */
  readonly hub: EventHub;
  /** The log as the dashboard's snapshot reads it: the records followed so far. */
  readonly log: Pick<TeamLog, 'read' | 'lastSeq'>;
  /** Resolves once the records present when following started were read. */
  readonly ready: Promise<void>;
  /** Stops following and closes the hub. */
  close(): void;
}

/**
 * Follows a team log that another process writes, for a read-only dashboard: reads what it has,
 * then what is appended, on a doorbell (a shared log's `shared.onAppended`, e.g. PostgreSQL) or
 * every `pollMs` (a JSONL folder another process owns). Only records reach the page this way:
 * streamed output and runtime status stay in the process that runs the members.
 */
export function followTeamLog(options: {
  teamId: string;
  /** The records from `fromSeq` on, in order. */
  read(fromSeq: number): AsyncIterable<TeamRecord>;
  /** Rings when records were appended; without it the log is polled. */
  onAppended?: ((listener: () => void) => () => void) | undefined;
  /** How often to look without a doorbell (default 1000 ms). */
  pollMs?: number | undefined;
}): FollowedLog {
  const hub = createEventHub({ teamId: options.teamId });
  let last = 0;
  let closed = false;
  let reading: Promise<void> = Promise.resolve();
  let again = false;
  const pull = (): Promise<void> => {
    if (closed) return reading;
    again = true;
    reading = reading.then(async () => {
      while (again && !closed) {
        again = false;
        for await (const record of options.read(last + 1)) {
          if (closed) return;
          if (record.seq <= last) continue;
          last = record.seq;
          hub.publish('log', { type: 'record', record });
        }
      }
    });
    reading = reading.catch(() => {
      // a failed read is tried again at the next ring
    });
    return reading;
  };
  const unsubscribe = options.onAppended?.(() => void pull());
  const timer =
    options.onAppended === undefined
      ? setInterval(() => void pull(), options.pollMs ?? 1000)
      : undefined;
  timer?.unref();
  const ready = pull();
  return {
    hub,
    log: {
      async *read(readOptions) {
        const upTo = last;
        for await (const record of options.read(readOptions?.fromSeq ?? 1)) {
          if (record.seq > upTo) return;
          yield record;
        }
      },
      lastSeq: () => last,
    },
    ready,
    close() {
      closed = true;
      unsubscribe?.();
      if (timer !== undefined) clearInterval(timer);
      hub.close();
    },
  };
}
