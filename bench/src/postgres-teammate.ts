import { performance } from 'node:perf_hooks';
import { type EventSink, openTeam, type TeamService } from '@teamwire/core';
import { createScriptedModel } from '@teamwire/core/testing';
import { openPostgresTeamStore, type PostgresTeamStore } from '@teamwire/postgres';
import { xmlFormat } from '@teamwire/protocol';
import { benchAgents } from './team-fixture.js';
import { LEAD_TYPE } from './team-log.js';

/**
 * Set (to `1`) in the environment of the child process the `postgres` benchmark forks: `run.js`
 * then runs {@link runPostgresTeammate} instead of the benchmarks.
 */
export const POSTGRES_TEAMMATE_ENV = 'TEAMWIRE_BENCH_POSTGRES_TEAMMATE';

/** Wall-clock milliseconds with sub-millisecond resolution, comparable across processes. */
export function wallNow(): number {
  return performance.timeOrigin + performance.now();
}

/** What the parent tells the child. */
export type ToTeammate =
  | {
      type: 'open';
      connectionString: string;
      schema: string;
      teamId: string;
      /** The teammates this process may be given (each answers every model call at once). */
      teammates: string[];
    }
  | { type: 'ping'; id: number }
  | { type: 'close' };

/** What the child tells the parent. */
export type FromTeammate =
  | { type: 'ready'; processId: string }
  | {
      type: 'turn.start';
      agent: string;
      messageId: string | undefined;
      /** {@link wallNow} when the runtime published the event. */
      at: number;
    }
  | { type: 'turn.end'; agent: string; at: number }
  /** The log's doorbell rang here (`shared.onAppended`): another process appended. */
  | { type: 'ring'; at: number }
  /** A `message.queued` record reached this process's service (read after a ring). */
  | { type: 'queued'; messageId: string; at: number }
  | { type: 'pong'; id: number; at: number }
  | { type: 'error'; message: string }
  | { type: 'closed' };

function tell(message: FromTeammate): void {
  process.send?.(message);
}

const later: FromTeammate[] = [];

/**
 * Sends `message` once the current macrotask is done: a stamp taken on the measured path costs it
 * a clock read and a push, not an IPC write.
 */
function tellLater(message: FromTeammate): void {
  if (later.length === 0) {
    setImmediate(() => {
      for (const queued of later.splice(0)) tell(queued);
    });
  }
  later.push(message);
}

/**
 * The other process of the cross-process delivery benchmark: opens the team in the same schema
 * with `runs: { lead: false }`, so the teammates the parent spawns are placed here, and reports
 * every `turn.start` (stamped with {@link wallNow} as the event is published) over IPC. Models
 * answer at once, so a turn is the runtime's and the store's work only.
 */
export async function runPostgresTeammate(): Promise<number> {
  let store: PostgresTeamStore | undefined;
  let team: TeamService | undefined;
  let closing: Promise<void> | undefined;
  const close = () => {
    closing ??= (async () => {
      await team?.dispose().catch(() => undefined);
      await store?.close().catch(() => undefined);
    })();
    return closing;
  };
  const done = new Promise<number>((resolve) => {
    process.on('disconnect', () => {
      // the parent went away: leave no connections (and no placement rows) behind
      void close().then(() => resolve(1));
    });
    process.on('message', (raw) => {
      const message = raw as ToTeammate;
      if (message.type === 'ping') {
        tell({ type: 'pong', id: message.id, at: wallNow() });
      } else if (message.type === 'close') {
        void close().then(() => {
          tell({ type: 'closed' });
          resolve(0);
        });
      } else if (message.type === 'open') {
        open(message).catch((error: unknown) => {
          tell({ type: 'error', message: error instanceof Error ? error.message : String(error) });
          void close().then(() => resolve(1));
        });
      }
    });
  });

  async function open(options: Extract<ToTeammate, { type: 'open' }>): Promise<void> {
    store = await openPostgresTeamStore({
      teamId: options.teamId,
      connectionString: options.connectionString,
      schema: options.schema,
      runs: { lead: false },
    });
    const events: EventSink = {
      publish(agent, event) {
        if (event.type === 'record') {
          if (event.record.type === 'message.queued') {
            tellLater({ type: 'queued', messageId: event.record.message.id, at: wallNow() });
          }
        } else if (event.type === 'turn.start') {
          const at = wallNow();
          tellLater({ type: 'turn.start', agent, messageId: event.messageId, at });
        } else if (event.type === 'turn.end') {
          tellLater({ type: 'turn.end', agent, at: wallNow() });
        } else if (event.type === 'error') {
          tell({ type: 'error', message: `${agent}: ${event.code}: ${event.message}` });
        }
      },
    };
    const reply = () => ({ text: 'Done.' });
    const model = createScriptedModel({
      scripts: Object.fromEntries(options.teammates.map((name) => [name, reply])),
    });
    team = await openTeam({
      teamId: options.teamId,
      log: store.log,
      transcripts: store.transcripts,
      format: xmlFormat,
      agents: benchAgents(model),
      lead: { agentType: LEAD_TYPE },
      events,
      idleClaim: false,
    });
    // Registered after the service's own listener (which starts the catch-up read), so a ring is
    // stamped as the service hears it, without delaying it.
    store.log.shared?.onAppended(() => tellLater({ type: 'ring', at: wallNow() }));
    tell({ type: 'ready', processId: store.processId });
  }

  return done;
}
