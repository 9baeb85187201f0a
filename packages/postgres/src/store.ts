import { randomUUID } from 'node:crypto';
import type {
  LiveChannel,
  MemberPlacement,
  SnapshotPolicy,
  TeamLog,
  TeamSequencer,
  TranscriptStore,
} from '@teamwire/core';
import { backoffDelay, checkCapabilities, resolveSnapshotPolicy, TeamError } from '@teamwire/core';
import pg from 'pg';
import type { ReconnectOptions, RetryPolicy } from './connection.js';
import { ConnectError, describeServer, execute, isTransient, unavailable } from './connection.js';
import { DEFAULT_POLL_MS, Doorbell } from './doorbell.js';
import { storageError } from './errors.js';
import { checkId } from './limits.js';
import { doorbellLiveChannel, liveChannelOf, liveKeyOf } from './live.js';
import { PostgresTeamLog } from './log.js';
import type { PlacementRuns, ResolvedRuns } from './placement.js';
import { PostgresPlacement } from './placement.js';
import type { MigrationOutcome } from './schema.js';
import { checkSchemaName, DEFAULT_SCHEMA, migrate, tablesOf } from './schema.js';
import { PostgresSequencer, sequencerChannelsOf } from './sequencer.js';
import type { SnapshotReport } from './snapshots.js';
import { PostgresTranscriptStore } from './transcripts.js';

/** How to open a team in PostgreSQL. */
export interface OpenPostgresTeamStoreOptions {
  /** The team's id; every record of the log carries it. At most 256 characters. */
  teamId: string;
  /**
   * A pool you own: the store takes connections from it and never ends it. Give either `pool` or
   * `connectionString`.
   */
  pool?: pg.Pool | undefined;
  /**
   * Where PostgreSQL is, e.g. `postgres://user:password@host:5432/db`: the store creates its own
   * pool and ends it on close. Give either `pool` or `connectionString`.
   */
  connectionString?: string | undefined;
  /**
   * The SQL schema holding the store's tables, created on first open. Lower-case letters, digits
   * and `_`, starting with a letter or `_`, at most 63 characters. Default `teamwire`.
   */
  schema?: string | undefined;
  /**
   * What this process is willing to run: the lead, teammates of which agent types, and the
   * capabilities it has for members whose agent type requires some. Default
   * `{ lead: true, agentTypes: 'all', capabilities: [] }`.
   */
  runs?: PlacementRuns | undefined;
  /**
   * A process whose last heartbeat (by the database's clock) is older than this is dead and its
   * members are taken over. Heartbeats go every `leaseMs / 3`. Default 5000; at least 30.
   */
  leaseMs?: number | undefined;
  /** This participant's id, stored with its rows and heartbeat. Default: a random UUID. */
  processId?: string | undefined;
  /**
   * How often this process looks for records of other processes without being notified, in case
   * a notification was lost (its writer died right after committing). Default 1000 ms; at least 10.
   */
  pollMs?: number | undefined;
  /** Backoff between attempts while the database cannot be reached. Default 50 ms doubling to 2 s. */
  reconnect?: ReconnectOptions | undefined;
  /**
   * When snapshots of the team state are written (`log.snapshots`), so a process opening the team
   * reads the newest one and the records after it rather than the whole log; `false` turns them
   * off (nothing is read or written). Default `{ everyRecords: 4096, everyBytes: 4 MiB, keep: 2 }`.
   */
  snapshots?: Partial<SnapshotPolicy> | false | undefined;
  /**
   * Whether this process takes part in the team's sequencer (`log.shared.sequencer`, see the
   * README): while one process of the team sequences, the others propose their mail to it and it
   * commits many processes' records in one append, instead of each racing for the next seq.
   * Default `true`; `false` appends every record itself, as stores before schema version 6 did.
   */
  sequencer?: boolean | undefined;
}

/** An open team in PostgreSQL: its shared log, its transcripts and this process's placement. */
export interface PostgresTeamStore {
  /** The team id every record of `log` carries. */
  readonly teamId: string;
  /** This participant's id (`processId` of the options, or a random UUID). */
  readonly processId: string;
  /** The SQL schema the tables live in. */
  readonly schema: string;
  /** What opening found: the schema version before and after migrating. */
  readonly migrated: MigrationOutcome;
  /** The team log, shared with every process of the team (`log.shared` is set). */
  readonly log: TeamLog;
  /** The members' transcripts; appends are fenced once `placement` has started. */
  readonly transcripts: TranscriptStore;
  /** Which members this process runs: the same object as `log.shared.placement`. */
  readonly placement: MemberPlacement;
  /**
   * What the snapshots did in this process: those skipped (a bad checksum, size or version) or
   * rejected as invalid when the team opened, and those written. `undefined` with `snapshots: false`.
   */
  readonly snapshots: SnapshotReport | undefined;
  /**
   * Closes the log and transcripts (queued appends get their attempt), hands this process's
   * members back, stops listening and ends the pool if the store created it. Idempotent.
   */
  close(): Promise<void>;
}

const DEFAULT_LEASE_MS = 5000;
/** Attempts at opening when connections are lost on the way (not refused). */
const OPEN_ATTEMPTS = 4;

/** A refused or unresolvable connection: the server is not there, as opposed to a lost one. */
function isRefused(error: unknown): boolean {
  if (error instanceof ConnectError) return isRefused(error.cause);
  if (error instanceof AggregateError) return error.errors.some(isRefused);
  const code = (error as { code?: unknown } | null)?.code;
  return code === 'ECONNREFUSED' || code === 'ENOTFOUND' || code === 'EAI_AGAIN';
}
const DEFAULT_RECONNECT: RetryPolicy = { initialDelayMs: 50, maxDelayMs: 2000 };

/**
 * Opens a team kept in PostgreSQL, creating or migrating the schema first. Many processes may
 * open the same team: they append to one log in one order, each runs the members placed on it,
 * and writes for a member a process no longer runs are refused (`FENCED`).
 *
 * Rejects with `INVALID_ARGUMENT` for bad options, `STORE_UNAVAILABLE` when the server cannot be
 * reached (the message names host and port) and `UNSUPPORTED_SCHEMA_VERSION` when the schema was
 * created by a newer version of this package.
 */
export async function openPostgresTeamStore(
  options: OpenPostgresTeamStoreOptions,
): Promise<PostgresTeamStore> {
  const settings = resolveOptions(options);
  const { teamId, processId, schema } = settings;
  const tables = tablesOf(schema);
  const applicationName = `teamwire:${processId}`.slice(0, 63);
  const ownPool = options.pool === undefined;
  const pool =
    options.pool ??
    new pg.Pool({
      connectionString: options.connectionString,
      application_name: applicationName,
      max: 10,
      connectionTimeoutMillis: 5000,
      keepAlive: true,
      keepAliveInitialDelayMillis: 10_000,
    });
  const hooks = guardPool(pool);
  const server = describeServer(pool.options);

  let doorbell: Doorbell | undefined;
  try {
    let migrated: MigrationOutcome | undefined;
    let lastSeq = 0;
    let liveKey: Buffer | undefined;
    const liveChannel = liveChannelOf(schema, teamId);
    const sequencerChannels = settings.sequencer
      ? sequencerChannelsOf(schema, teamId, processId)
      : undefined;
    // A server that refuses connections is down: say so at once. A connection lost on the way (a
    // terminated backend, a reset) is not: try again, a few times, before calling it unavailable.
    for (let attempt = 1; migrated === undefined; attempt++) {
      try {
        const outcome = await migrate(pool, tables);
        const found = await execute<{ last: string | null }>(
          pool,
          `SELECT max(seq)::text AS last FROM ${tables.log} WHERE team_id = $1`,
          [teamId],
        );
        lastSeq = Number(found.rows[0]?.last ?? 0);
        liveKey = await liveKeyOf(pool, tables, teamId);
        doorbell = new Doorbell({
          config: { ...pool.options, application_name: applicationName },
          channel: tables.channel,
          liveChannel,
          sequencer: sequencerChannels,
          teamId,
          processId,
          policy: settings.reconnect,
          pollMs: settings.pollMs,
        });
        await doorbell.open();
        migrated = outcome;
      } catch (error) {
        await doorbell?.close().catch(() => undefined);
        doorbell = undefined;
        if (TeamError.isInstance(error)) throw error;
        if (isTransient(error) && !isRefused(error) && attempt < OPEN_ATTEMPTS) {
          // the reconnect steps (from the second), capped like every other wait of the store
          const delay = backoffDelay(settings.reconnect, attempt);
          await new Promise((resolve) => setTimeout(resolve, delay));
          continue;
        }
        if (error instanceof ConnectError || isTransient(error)) throw unavailable(server, error);
        throw storageError(`opening team ${teamId} in schema ${schema}`, error);
      }
    }

    const bell = doorbell as Doorbell;
    const placement = new PostgresPlacement({
      pool,
      tables,
      teamId,
      processId,
      runs: settings.runs,
      leaseMs: settings.leaseMs,
      policy: settings.reconnect,
      doorbell: bell,
    });
    const context = { pool, tables, teamId, processId, policy: settings.reconnect, placement };
    const log = new PostgresTeamLog({ ...context, doorbell: bell }, lastSeq, settings.snapshots);
    // The log's shared side gains the live channel here, beside the doorbell it shares.
    (log.shared as { live?: LiveChannel }).live = doorbellLiveChannel(
      bell,
      liveKey as Buffer,
      liveChannel,
    );
    const sequencer = sequencerChannels
      ? new PostgresSequencer({
          doorbell: bell,
          channels: sequencerChannels,
          pool,
          proposals: tables.proposals,
          placement,
          schema,
          teamId,
          processId,
          pollMs: settings.pollMs,
        })
      : undefined;
    (log.shared as { sequencer?: TeamSequencer | undefined }).sequencer = sequencer;
    const transcripts = new PostgresTranscriptStore(context);
    let closing: Promise<void> | undefined;
    return {
      teamId,
      processId,
      schema,
      migrated,
      log,
      transcripts,
      placement,
      get snapshots() {
        return log.snapshots?.report;
      },
      close() {
        closing ??= (async () => {
          sequencer?.close();
          const results = await Promise.allSettled([log.close(), transcripts.close()]);
          // the placement's last notice (its members are free) goes out before the doorbell closes
          results.push(
            ...(await Promise.allSettled([placement.close()])),
            ...(await Promise.allSettled([bell.close()])),
            ...(await Promise.allSettled([release(pool, ownPool, hooks)])),
          );
          for (const result of results) if (result.status === 'rejected') throw result.reason;
        })();
        return closing;
      },
    };
  } catch (error) {
    await doorbell?.close().catch(() => undefined);
    await release(pool, ownPool, hooks).catch(() => undefined);
    throw error;
  }
}

/** The listeners {@link guardPool} added, to remove from a pool the store does not own. */
interface PoolHooks {
  onError: () => void;
  onConnect: (client: pg.PoolClient) => void;
}

/**
 * Keeps a dying connection from crashing the process. An idle connection that dies (server
 * restart, terminated backend) makes the pool emit 'error', which throws without a listener; the
 * pool drops that connection and the next statement gets a fresh one. A new connection whose
 * backend is terminated right as it is handed out emits 'error' before anyone could listen: every
 * connection gets a listener of its own when it is made.
 */
function guardPool(pool: pg.Pool): PoolHooks {
  const ignore = () => {};
  const hooks: PoolHooks = {
    onError: ignore,
    onConnect: (client) => {
      client.on('error', ignore);
    },
  };
  pool.on('error', hooks.onError);
  pool.on('connect', hooks.onConnect);
  return hooks;
}

async function release(pool: pg.Pool, owned: boolean, hooks: PoolHooks): Promise<void> {
  if (owned) {
    await pool.end();
    return;
  }
  pool.removeListener('error', hooks.onError);
  pool.removeListener('connect', hooks.onConnect);
}

interface Settings {
  teamId: string;
  processId: string;
  schema: string;
  runs: ResolvedRuns;
  leaseMs: number;
  pollMs: number;
  reconnect: RetryPolicy;
  snapshots: SnapshotPolicy | false;
  sequencer: boolean;
}

function invalid(message: string, details?: Record<string, unknown>): TeamError {
  return new TeamError('INVALID_ARGUMENT', message, { details });
}

function resolveOptions(options: OpenPostgresTeamStoreOptions): Settings {
  if (typeof options !== 'object' || options === null) {
    throw invalid('openPostgresTeamStore needs an options object');
  }
  checkId('teamId', options.teamId);
  const hasPool = options.pool !== undefined;
  const hasUrl = options.connectionString !== undefined;
  if (hasPool === hasUrl) {
    throw invalid('give exactly one of pool and connectionString');
  }
  // Duck-typed, so a pool from another copy of `pg` is accepted too.
  if (hasPool && typeof (options.pool as { connect?: unknown }).connect !== 'function') {
    throw invalid('pool must be a pg.Pool');
  }
  if (hasUrl && (typeof options.connectionString !== 'string' || !options.connectionString)) {
    throw invalid('connectionString must be a non-empty string');
  }
  const schema = options.schema ?? DEFAULT_SCHEMA;
  checkSchemaName(schema);
  const processId = options.processId ?? randomUUID();
  checkId('processId', processId);

  const leaseMs = options.leaseMs ?? DEFAULT_LEASE_MS;
  if (!Number.isSafeInteger(leaseMs) || leaseMs < 30) {
    throw invalid(`leaseMs must be an integer >= 30, got ${String(leaseMs)}`, { leaseMs });
  }

  const pollMs = options.pollMs ?? DEFAULT_POLL_MS;
  if (!Number.isSafeInteger(pollMs) || pollMs < 10) {
    throw invalid(`pollMs must be an integer >= 10, got ${String(pollMs)}`, { pollMs });
  }

  const runs = options.runs ?? {};
  const lead = runs.lead ?? true;
  const agentTypes = runs.agentTypes ?? 'all';
  if (typeof lead !== 'boolean') throw invalid('runs.lead must be a boolean');
  const capabilities = checkCapabilities(runs.capabilities ?? [], 'runs.capabilities');
  if (
    agentTypes !== 'all' &&
    !(
      Array.isArray(agentTypes) &&
      agentTypes.every((type) => typeof type === 'string' && type.length > 0)
    )
  ) {
    throw invalid(`runs.agentTypes must be 'all' or an array of agent type names`);
  }

  const sequencer = options.sequencer ?? true;
  if (typeof sequencer !== 'boolean') throw invalid('sequencer must be a boolean');

  const initialDelayMs = options.reconnect?.initialDelayMs ?? DEFAULT_RECONNECT.initialDelayMs;
  const maxDelayMs =
    options.reconnect?.maxDelayMs ?? Math.max(DEFAULT_RECONNECT.maxDelayMs, initialDelayMs);
  if (
    !Number.isFinite(initialDelayMs) ||
    initialDelayMs < 1 ||
    !Number.isFinite(maxDelayMs) ||
    maxDelayMs < initialDelayMs
  ) {
    throw invalid('reconnect needs 1 <= initialDelayMs <= maxDelayMs (finite, in ms)', {
      initialDelayMs,
      maxDelayMs,
    });
  }
  return {
    teamId: options.teamId,
    processId,
    schema,
    runs: { lead, agentTypes: agentTypes === 'all' ? 'all' : [...agentTypes], capabilities },
    leaseMs,
    pollMs,
    reconnect: { initialDelayMs, maxDelayMs },
    snapshots: resolveSnapshotPolicy(options.snapshots),
    sequencer,
  };
}
