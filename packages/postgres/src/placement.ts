import { hostname } from 'node:os';
import { performance } from 'node:perf_hooks';
import type {
  MemberActivity,
  MemberPlacement,
  PlacedMember,
  PlacementCandidate,
  PlacementHost,
  PlacementListener,
  PlacementView,
} from '@teamwire/core';
import {
  canHost,
  checkCapabilities,
  HANDOVER_WAIT_MS,
  REBALANCE_START,
  type RebalanceMember,
  type RebalanceMemory,
  rebalanceStep,
  TeamError,
  unmetRequirements,
} from '@teamwire/core';
import type pg from 'pg';
import type { RetryPolicy } from './connection.js';
import { describeError, execute, isTransient, reconnectBackoff, sleep } from './connection.js';
import type { Doorbell } from './doorbell.js';
import { MAX_ACTIVITY_BYTES, storableText } from './limits.js';
import type { Tables } from './schema.js';

/** What a process is willing to run. */
export interface PlacementRuns {
  /** Whether this process may run the team's lead. Default `true`. */
  lead?: boolean | undefined;
  /** The agent types of teammates this process may run, or `'all'` (the default). */
  agentTypes?: readonly string[] | 'all' | undefined;
  /**
   * What this process has that an agent type may require (`placement.requires` of its
   * definition): `repo:<name>`, `credential:<provider>`, `label:<name>`, ... Each of the form
   * core's `PLACEMENT_CAPABILITY_PATTERN` within `PLACEMENT_CAPABILITY_MAX_BYTES`, at most
   * `PLACEMENT_CAPABILITIES_MAX`. The team adds its workspace provider's capability when this
   * process reaches the provider's repository. Default none.
   */
  capabilities?: readonly string[] | undefined;
}

/** {@link PlacementRuns} with its defaults filled in. */
export interface ResolvedRuns {
  readonly lead: boolean;
  readonly agentTypes: readonly string[] | 'all';
  readonly capabilities: readonly string[];
}

/**
 * Whether, and with which token, a write for a member is fenced: `unfenced` while the placement
 * was never started (the team uses another placement, or none: fencing is then the caller's
 * business), `held` with the token of this process's placement, `lost` when this process does not
 * run the member.
 */
export type FenceCheck =
  | { readonly kind: 'unfenced' }
  | { readonly kind: 'held'; readonly token: string }
  | { readonly kind: 'lost' };

/**
 * A row of `placements` for a member of interest, with whether its process is alive and what that
 * process last reported the member doing.
 */
interface PlacementRow {
  member_id: string;
  process_id: string;
  token: string;
  owner_live: boolean;
  activity: string | null;
  /** `processes.reported_through` (bigint, as text), NULL when that process gave none. */
  reported_through: string | null;
}

/** A live process of the team, with how many members it runs. */
interface ProcessRow {
  process_id: string;
  runs_lead: boolean;
  agent_types: string[] | null;
  /** NULL for a row written before schema version 5, or by a process with none. */
  capabilities: string[] | null;
  members: number;
}

/** After this many leases unplaced, a teammate is claimed by any willing process, balanced or not. */
const UNPLACED_FALLBACK_LEASES = 3;

/**
 * What a row of `processes` says the process can host. Capabilities are validated on read: a row
 * whose list is not valid counts as none, so its process hosts nothing that requires one.
 */
function hostOf(row: ProcessRow): PlacementHost {
  let capabilities: string[] = [];
  if (row.capabilities !== null) {
    try {
      capabilities = checkCapabilities(row.capabilities, 'processes.capabilities');
    } catch {
      capabilities = [];
    }
  }
  return { lead: row.runs_lead, agentTypes: row.agent_types ?? 'all', capabilities };
}

/** Every {@link MemberActivity}: the compiler fails here when core adds one. */
const ACTIVITIES: Readonly<Record<MemberActivity, true>> = { running: true, idle: true };

function isActivity(value: unknown): value is MemberActivity {
  return typeof value === 'string' && Object.hasOwn(ACTIVITIES, value);
}

/** What the last look read: the rows of the members of interest, the live processes, the candidates. */
interface Observed {
  readonly rows: ReadonlyMap<string, PlacementRow>;
  readonly live: readonly ProcessRow[];
  readonly candidates: readonly PlacementCandidate[];
}

/** The part of a view that comes from a look rather than from this process's own report. */
interface ObservedPart {
  readonly elsewhere: ReadonlyMap<string, PlacedMember>;
  readonly awaiting: ReadonlySet<string>;
  readonly unhostable: ReadonlyMap<string, readonly string[]>;
}

/**
 * Whether two views say the same: the same members on the same processes with the same reports,
 * the same awaiting and unhostable candidates, as many live processes. Compared entry by entry:
 * no text is built, nothing is sorted.
 */
function sameView(a: PlacementView, b: PlacementView): boolean {
  if (a.liveProcesses !== b.liveProcesses || a.placed.size !== b.placed.size) return false;
  for (const [memberId, member] of b.placed) {
    const before = a.placed.get(memberId);
    if (
      before === undefined ||
      before.processId !== member.processId ||
      before.activity !== member.activity ||
      before.reportedThrough !== member.reportedThrough
    ) {
      return false;
    }
  }
  if (a.awaiting.size !== b.awaiting.size) return false;
  for (const memberId of b.awaiting) if (!a.awaiting.has(memberId)) return false;
  const ua = a.unhostable ?? new Map<string, readonly string[]>();
  const ub = b.unhostable ?? new Map<string, readonly string[]>();
  if (ua.size !== ub.size) return false;
  for (const [memberId, unmet] of ub) {
    const before = ua.get(memberId);
    if (before === undefined || before.length !== unmet.length) return false;
    if (unmet.some((capability, i) => before[i] !== capability)) return false;
  }
  return true;
}

const EMPTY_VIEW: PlacementView = Object.freeze({
  placed: new Map<string, PlacedMember>(),
  awaiting: new Set<string>(),
  liveProcesses: 0,
});

/**
 * The JSON of an activity report, bounded: entries in member-id order while the text stays
 * within {@link MAX_ACTIVITY_BYTES}; the first that would not fit and every later one are left
 * out (their members read as not reported yet). A member id `jsonb` cannot hold (NUL, an
 * unpaired surrogate) is left out too: the heartbeat carrying the report must never fail for it.
 */
function reportText(activity: ReadonlyMap<string, MemberActivity>): {
  text: string;
  kept: Map<string, MemberActivity>;
} {
  const kept = new Map<string, MemberActivity>();
  const parts: string[] = [];
  let bytes = 2; // {}
  for (const memberId of [...activity.keys()].sort()) {
    if (!storableText(memberId)) continue;
    const value = activity.get(memberId) as MemberActivity;
    const part = `${JSON.stringify(memberId)}:${JSON.stringify(value)}`;
    const more = Buffer.byteLength(part, 'utf8') + (parts.length > 0 ? 1 : 0);
    if (bytes + more > MAX_ACTIVITY_BYTES) break;
    bytes += more;
    parts.push(part);
    kept.set(memberId, value);
  }
  return { text: `{${parts.join(',')}}`, kept };
}

/**
 * The {@link MemberPlacement} of a PostgreSQL store: processes register in `processes` and keep a
 * heartbeat there; each member's row in `placements` names the process running it and a token
 * that changes on every claim. A process claims a member that has no row, whose process is dead
 * (no heartbeat within `leaseMs`, by the database's clock) or that is its own; writes for a member
 * are fenced by that token in the same statement as the write.
 */
export class PostgresPlacement implements MemberPlacement {
  readonly specificationVersion = 'v1' as const;
  readonly #pool: pg.Pool;
  readonly #tables: Tables;
  readonly #teamId: string;
  readonly #processId: string;
  /** What this process can host: its `runs`, with the capabilities `start` added. */
  #runs: ResolvedRuns;
  readonly #leaseMs: number;
  readonly #policy: RetryPolicy;
  readonly #doorbell: Doorbell | undefined;
  readonly #stop = new AbortController();
  /** The members this process runs, with the token of its claim. */
  readonly #tokens = new Map<string, string>();
  /** When this process first saw a member it may run unplaced (for the fallback claim). */
  readonly #unplacedSince = new Map<string, number>();
  #candidates: (() => readonly PlacementCandidate[]) | undefined;
  #listener: PlacementListener | undefined;
  /** When (local monotonic clock) the last successful heartbeat was sent. */
  #beatAt: number | undefined;
  #tickTimer: NodeJS.Timeout | undefined;
  #leaseTimer: NodeJS.Timeout | undefined;
  /** The next heartbeat of its own (see `#beat`). */
  #beatTimer: NodeJS.Timeout | undefined;
  /** A heartbeat under way, which a look joins rather than sending a second. */
  #beating: Promise<void> | undefined;
  #ticking: Promise<void> | undefined;
  #again = false;
  #paused = false;
  readonly #failures: ReturnType<typeof reconnectBackoff>;
  #closing: Promise<void> | undefined;
  #unlisten: (() => void) | undefined;
  /** This process's latest report (members it runs only, bounded) and its JSON. */
  #activity: ReadonlyMap<string, MemberActivity> = new Map();
  #activityText = '{}';
  /** The seq of the last team record the runtime had applied at its latest report. */
  #through: number | null = null;
  /** The report the last completed write stored (heartbeat or report write), as a report key. */
  #writtenKey: string | undefined;
  /** The report the last notice told the others about, as a report key. */
  #announcedKey = '{}@';
  /** When (local monotonic clock) the last report write outside a heartbeat started. */
  #reportWrittenAt = Number.NEGATIVE_INFINITY;
  #reportTimer: NodeJS.Timeout | undefined;
  #reporting: Promise<void> | undefined;
  #observed: Observed | undefined;
  #view: PlacementView = EMPTY_VIEW;
  /** What the last look gave the view (see `#deriveObserved`), reused while only reports move. */
  #observedPart: ObservedPart | undefined;
  #changeQueued = false;
  /** A look is under way: the view waits for its end. */
  #looking = false;
  /** What the rebalancing rule remembers between looks (see core's `rebalanceStep`). */
  #rebalance: RebalanceMemory = REBALANCE_START;
  /** A handover to another process under way (one at a time). */
  #moving: Promise<void> | undefined;
  /** Set by `close`: members are being handed over, nothing more is claimed or moved. */
  #draining = false;

  constructor(options: {
    pool: pg.Pool;
    tables: Tables;
    teamId: string;
    processId: string;
    runs: ResolvedRuns;
    leaseMs: number;
    policy: RetryPolicy;
    /** Where report notices go and come from; without it the others see reports on their next look. */
    doorbell?: Doorbell | undefined;
  }) {
    this.#pool = options.pool;
    this.#tables = options.tables;
    this.#teamId = options.teamId;
    this.#processId = options.processId;
    this.#runs = options.runs;
    this.#leaseMs = options.leaseMs;
    this.#policy = options.policy;
    this.#doorbell = options.doorbell;
    this.#failures = reconnectBackoff(options.policy);
  }

  async start(options: {
    candidates(): readonly PlacementCandidate[];
    listener: PlacementListener;
    capabilities?: readonly string[] | undefined;
  }): Promise<void> {
    if (this.#closing) throw closedError();
    if (this.#candidates) {
      throw new TeamError('INVALID_ARGUMENT', 'this placement was started already');
    }
    if (options.capabilities !== undefined) {
      this.#runs = {
        ...this.#runs,
        capabilities: checkCapabilities(
          [...this.#runs.capabilities, ...options.capabilities],
          'runs.capabilities with those the team adds',
        ),
      };
    }
    this.#candidates = () => options.candidates();
    this.#listener = options.listener;
    // Another process reported new activity: look now rather than at the next heartbeat.
    this.#unlisten = this.#doorbell?.listen((ring) => {
      if (ring.kind === 'report') this.#requestTick();
    });
    // The first look is awaited (and retried while the database cannot be reached), so a process
    // willing to run the lead runs it when `start` resolves.
    const backoff = reconnectBackoff(this.#policy);
    for (;;) {
      const tick = this.#tick();
      this.#ticking = tick.then(
        () => undefined,
        () => undefined,
      );
      try {
        await tick;
        break;
      } catch (error) {
        if (!isTransient(error)) {
          throw new TeamError('STORAGE_IO', `placing members failed: ${describeError(error)}`, {
            cause: error,
          });
        }
      } finally {
        this.#ticking = undefined;
      }
      await sleep(backoff.next(), this.#stop.signal);
      if (this.#stop.signal.aborted) throw closedError();
    }
    if (this.#again) this.#requestTick();
    else this.#schedule(this.#interval());
    this.#scheduleBeat();
    await this.#forgetLongDead().catch(() => undefined);
  }

  runsHere(memberId: string): boolean {
    return this.#tokens.has(memberId);
  }

  candidatesChanged(): void {
    this.#requestTick();
  }

  /**
   * Publishes what the members this process runs are doing. Entries for members it does not run
   * (any more) are dropped, so a report names at most the members placed here; a report over
   * {@link MAX_ACTIVITY_BYTES} of JSON keeps a prefix in member-id order. The report goes out with
   * the next heartbeat, or at once (and with a notice to the other processes) when no report
   * was written during the last heartbeat interval: at most one write and one notice per
   * interval besides the heartbeats. Never waits for the database.
   *
   * `through` (the seq of the last team record the runtime had applied) is stored with it, as
   * `reportedThrough` in the others' views.
   *
   * Throws `INVALID_ARGUMENT` when `activity` is not a map of member ids to `'running' | 'idle'`,
   * or `through` is not a non-negative integer.
   */
  report(activity: ReadonlyMap<string, MemberActivity>, through?: number): void {
    if (through !== undefined && !(Number.isSafeInteger(through) && through >= 0)) {
      throw new TeamError(
        'INVALID_ARGUMENT',
        `a report's through is a non-negative integer seq, got ${JSON.stringify(through)?.slice(0, 40)}`,
      );
    }
    if (
      typeof activity !== 'object' ||
      activity === null ||
      typeof (activity as { forEach?: unknown }).forEach !== 'function'
    ) {
      throw new TeamError('INVALID_ARGUMENT', 'report takes a Map of member ids to activities');
    }
    const mine = new Map<string, MemberActivity>();
    activity.forEach((value, memberId) => {
      if (typeof memberId !== 'string' || !isActivity(value)) {
        throw new TeamError(
          'INVALID_ARGUMENT',
          `a report maps member ids to 'running' or 'idle', got ${JSON.stringify(String(memberId)).slice(0, 80)} → ${JSON.stringify(value)?.slice(0, 40)}`,
          { details: { memberId: String(memberId).slice(0, 80) } },
        );
      }
      if (this.#tokens.has(memberId)) mine.set(memberId, value);
    });
    if (this.#closing) return;
    this.#setActivity(mine, true, through ?? null);
  }

  view(): PlacementView {
    return this.#view;
  }

  close(): Promise<void> {
    this.#closing ??= (async () => {
      // Members stop at their next turn boundary first, heartbeats going on meanwhile, so the
      // processes that take them over redo nothing; the wait is bounded by core's HANDOVER_WAIT_MS.
      this.#draining = true;
      await this.#releaseAll();
      this.#stop.abort();
      this.#unlisten?.();
      clearTimeout(this.#tickTimer);
      clearTimeout(this.#leaseTimer);
      clearTimeout(this.#beatTimer);
      clearTimeout(this.#reportTimer);
      await this.#ticking;
      await this.#beating?.catch(() => undefined);
      await this.#reporting;
      this.#tokens.clear();
      if (!this.#candidates) return;
      // Hand the members back at once: others claim them on their next look, not after a lease.
      const t = this.#tables;
      await execute(
        this.#pool,
        `WITH released AS (
           DELETE FROM ${t.placements} WHERE team_id = $1 AND process_id = $2
         )
         DELETE FROM ${t.processes} WHERE team_id = $1 AND process_id = $2`,
        [this.#teamId, this.#processId],
      ).then(
        // the others look at once instead of at their next heartbeat
        () => this.#doorbell?.announceReport(),
        () => undefined, // unreachable: the others take over once the lease runs out
      );
    })();
    return this.#closing;
  }

  /**
   * Asks the runtime to stop every member this process runs at its next turn boundary, waiting at
   * most {@link HANDOVER_WAIT_MS}; a member still in its turn then is lost here anyway, and its
   * turn is redone by the process that takes it. (`team.dispose()` does this wait itself, before,
   * and reports a member it could not wait for.)
   */
  async #releaseAll(): Promise<void> {
    const release = this.#listener?.release;
    if (release === undefined || this.#paused) return;
    const members = [...this.#tokens.keys()];
    const pending = new Set(members);
    // a handover under way ends first (or within the same bound)
    const released = Promise.allSettled([
      this.#moving,
      ...members.map((memberId) =>
        release(memberId).then(() => {
          pending.delete(memberId);
        }),
      ),
    ]);
    const bound = new AbortController();
    await Promise.race([released, sleep(HANDOVER_WAIT_MS, bound.signal)]);
    bound.abort();
    for (const memberId of pending) this.#lose(memberId);
  }

  /** How a write for `memberId` must be fenced. */
  fence(memberId: string): FenceCheck {
    if (!this.#candidates) return { kind: 'unfenced' };
    const token = this.#tokens.get(memberId);
    return token === undefined ? { kind: 'lost' } : { kind: 'held', token };
  }

  /** A write found the member's placement moved: look now instead of at the next tick. */
  fencedOut(): void {
    this.#requestTick();
  }

  /**
   * Test seam: stops heartbeats and placement as if this process froze (a long pause, a network
   * partition), while it still believes it runs its members.
   * @internal
   */
  async pause(): Promise<void> {
    this.#paused = true;
    clearTimeout(this.#tickTimer);
    clearTimeout(this.#leaseTimer);
    clearTimeout(this.#beatTimer);
    clearTimeout(this.#reportTimer);
    this.#reportTimer = undefined;
    // A look already under way (its queries sent) finishes first, so nothing this process learns
    // after the pause returns can be newer than the pause.
    await this.#ticking;
    await this.#beating?.catch(() => undefined);
    await this.#reporting;
  }

  /**
   * Test seam: ends a {@link pause}; the next look notices what was taken over meanwhile.
   * @internal
   */
  resume(): void {
    this.#paused = false;
    this.#requestTick();
    this.#scheduleBeat();
    this.#scheduleReport();
  }

  #interval(): number {
    return Math.max(1, Math.floor(this.#leaseMs / 3));
  }

  #schedule(delay: number): void {
    clearTimeout(this.#tickTimer);
    if (this.#paused || this.#stop.signal.aborted) return;
    this.#tickTimer = setTimeout(() => this.#requestTick(), delay);
    this.#tickTimer.unref();
  }

  #requestTick(): void {
    if (!this.#candidates || this.#paused || this.#stop.signal.aborted) return;
    if (this.#ticking) {
      this.#again = true;
      return;
    }
    this.#ticking = (async () => {
      let delay = this.#interval();
      do {
        this.#again = false;
        try {
          await this.#tick();
          this.#failures.reset();
        } catch {
          // Retried below; a lease that runs out meanwhile hands the members back (#leaseExpired).
          delay = Math.min(this.#interval(), this.#failures.next());
        }
      } while (this.#again && !this.#paused && !this.#stop.signal.aborted);
      this.#ticking = undefined;
      this.#schedule(delay);
    })();
  }

  /** One look: heartbeat, notice lost members, drop retired ones, claim what this process should run. */
  async #tick(): Promise<void> {
    await this.#beat();
    if (this.#paused || this.#stop.signal.aborted) return;
    // The view is rebuilt once the look is over, not for every member it gains or loses.
    this.#looking = true;
    try {
      await this.#place();
    } finally {
      this.#looking = false;
      this.#refreshView(false);
    }
  }

  /**
   * Sends a heartbeat (or joins the one under way) and extends the lease from when it was sent.
   * Heartbeats also go on their own, every interval, so a look that takes long (many claims on a
   * loaded database) does not let the lease run out and hand back every member mid-turn.
   */
  #beat(): Promise<void> {
    this.#beating ??= (async () => {
      try {
        const sentAt = performance.now();
        await this.#heartbeat();
        this.#beatAt = sentAt;
        this.#armLease(sentAt);
      } finally {
        this.#beating = undefined;
        this.#scheduleBeat();
      }
    })();
    return this.#beating;
  }

  #scheduleBeat(): void {
    clearTimeout(this.#beatTimer);
    if (!this.#candidates || this.#paused || this.#stop.signal.aborted) return;
    this.#beatTimer = setTimeout(() => {
      this.#beat().catch(() => undefined); // the next look or beat retries; the lease bounds it
    }, this.#interval());
    this.#beatTimer.unref();
  }

  /**
   * Removes rows of processes of this team that have been dead for ten leases, and at least a
   * minute (housekeeping: a team whose workers are often restarted keeps its table small).
   */
  async #forgetLongDead(): Promise<void> {
    await execute(
      this.#pool,
      `DELETE FROM ${this.#tables.processes}
        WHERE team_id = $1 AND heartbeat_at < now() - $2 * interval '1 millisecond'`,
      [this.#teamId, Math.max(10 * this.#leaseMs, 60_000)],
    );
  }

  /** Writes the heartbeat, and this process's latest report with it (`reported_at` moves when it changed). */
  async #heartbeat(): Promise<void> {
    const t = this.#tables;
    const agentTypes = this.#runs.agentTypes === 'all' ? null : [...this.#runs.agentTypes];
    const capabilities = this.#runs.capabilities.length === 0 ? null : [...this.#runs.capabilities];
    const text = this.#activityText;
    const through = this.#through;
    const key = this.#reportKey();
    await execute(
      this.#pool,
      `INSERT INTO ${t.processes} AS p
              (team_id, process_id, runs_lead, agent_types, host, pid, activity, reported_at,
               reported_through, capabilities)
       VALUES ($1, $2, $3, $4, $5, $6, $7::jsonb, now(), $8, $9)
       ON CONFLICT (team_id, process_id) DO UPDATE
          SET heartbeat_at = now(),
              capabilities = EXCLUDED.capabilities,
              activity = CASE WHEN p.activity IS DISTINCT FROM EXCLUDED.activity
                              THEN EXCLUDED.activity ELSE p.activity END,
              reported_at = CASE WHEN p.activity IS DISTINCT FROM EXCLUDED.activity
                                 THEN now() ELSE p.reported_at END,
              reported_through = EXCLUDED.reported_through`,
      [
        this.#teamId,
        this.#processId,
        this.#runs.lead,
        agentTypes,
        hostname(),
        process.pid,
        text,
        through,
        capabilities,
      ],
    );
    this.#wrote(key);
  }

  /** The latest report (activity and through) as one comparable key. */
  #reportKey(): string {
    return `${this.#activityText}@${this.#through ?? ''}`;
  }

  /** Replaces this process's report; the view's own members change with it. */
  #setActivity(
    activity: ReadonlyMap<string, MemberActivity>,
    fromReport: boolean,
    through: number | null = this.#through,
  ): void {
    const { text, kept } = reportText(activity);
    if (text === this.#activityText && through === this.#through) return;
    this.#activity = kept;
    this.#activityText = text;
    this.#through = through;
    // A report comes from the runtime: it hears `changed` after it returned, not inside the call.
    this.#refreshView(fromReport, fromReport);
    this.#scheduleReport();
  }

  /** A write of the report `key` completed: another write follows if the report moved meanwhile. */
  #wrote(key: string): void {
    this.#writtenKey = key;
    const now = this.#reportKey();
    if (key !== now || key !== this.#announcedKey) this.#scheduleReport();
  }

  /**
   * Writes the latest report and tells the others, at once when no report write started within
   * the last heartbeat interval, else when the interval is over (the heartbeat may carry it
   * first; then only the notice is left).
   */
  #scheduleReport(): void {
    if (this.#reportTimer !== undefined || this.#reporting !== undefined) return;
    if (!this.#candidates || this.#paused || this.#closing) return;
    const key = this.#reportKey();
    if (key === this.#writtenKey && key === this.#announcedKey) return;
    const delay = Math.max(0, this.#reportWrittenAt + this.#interval() - performance.now());
    this.#reportTimer = setTimeout(() => {
      this.#reportTimer = undefined;
      this.#writeReport();
    }, delay);
    this.#reportTimer.unref();
  }

  #writeReport(): void {
    if (this.#paused || this.#closing) return;
    this.#reportWrittenAt = performance.now();
    const text = this.#activityText;
    const through = this.#through;
    const key = this.#reportKey();
    this.#reporting = (async () => {
      try {
        if (key !== this.#writtenKey) {
          await execute(
            this.#pool,
            `UPDATE ${this.#tables.processes}
                SET activity = $3::jsonb, reported_through = $4,
                    reported_at = CASE WHEN activity IS DISTINCT FROM $3::jsonb
                                       THEN now() ELSE reported_at END
              WHERE team_id = $1 AND process_id = $2
                AND (activity IS DISTINCT FROM $3::jsonb OR reported_through IS DISTINCT FROM $4)`,
            [this.#teamId, this.#processId, text, through],
          );
          this.#writtenKey = key;
        }
        if (this.#writtenKey === key && key !== this.#announcedKey) {
          this.#announcedKey = key;
          this.#doorbell?.announceReport();
        }
      } catch {
        // The next heartbeat carries the report; the next report write announces it.
      } finally {
        this.#reporting = undefined;
      }
      this.#scheduleReport();
    })();
  }

  /** Hands every member back if no heartbeat succeeded for a whole lease: others may take them. */
  #armLease(sentAt: number): void {
    clearTimeout(this.#leaseTimer);
    if (this.#paused) return;
    this.#leaseTimer = setTimeout(
      () => this.#leaseExpired(),
      Math.max(0, sentAt + this.#leaseMs - performance.now()),
    );
    this.#leaseTimer.unref();
  }

  #leaseExpired(): void {
    this.#beatAt = undefined;
    for (const memberId of [...this.#tokens.keys()]) this.#lose(memberId);
  }

  #leaseHeld(): boolean {
    return this.#beatAt !== undefined && performance.now() - this.#beatAt < this.#leaseMs;
  }

  async #place(): Promise<void> {
    const t = this.#tables;
    const me = this.#processId;
    const candidates = this.#candidates?.() ?? [];
    const wanted = new Map(candidates.map((c) => [c.memberId, c]));
    const lease = [this.#leaseMs];

    const placed = await execute<PlacementRow>(
      this.#pool,
      `SELECT pl.member_id, pl.process_id, pl.token,
              coalesce(p.heartbeat_at > now() - $4 * interval '1 millisecond', false) AS owner_live,
              p.activity ->> pl.member_id AS activity, p.reported_through::text AS reported_through
         FROM ${t.placements} pl
         LEFT JOIN ${t.processes} p ON p.team_id = pl.team_id AND p.process_id = pl.process_id
        WHERE pl.team_id = $1 AND (pl.member_id = ANY($2::text[]) OR pl.process_id = $3)`,
      [this.#teamId, [...wanted.keys()], me, ...lease],
    );
    const rows = new Map(placed.rows.map((row) => [row.member_id, row]));

    // Members whose token moved (taken over while this process looked dead) are lost.
    for (const [memberId, token] of this.#tokens) {
      const row = rows.get(memberId);
      if (row?.process_id !== me || row.token !== token) this.#lose(memberId);
    }

    // Retired or failed members are no longer candidates: release their rows, forget them.
    const retired = placed.rows
      .filter((row) => row.process_id === me && !wanted.has(row.member_id))
      .map((row) => row.member_id);
    if (retired.length > 0) {
      await execute(
        this.#pool,
        `DELETE FROM ${t.placements}
          WHERE team_id = $1 AND process_id = $2 AND member_id = ANY($3::text[])`,
        [this.#teamId, me, retired],
      );
      for (const memberId of retired) {
        this.#tokens.delete(memberId);
        rows.delete(memberId);
      }
      this.#forgetActivity();
    }

    const live = await execute<ProcessRow>(
      this.#pool,
      `SELECT p.process_id, p.runs_lead, p.agent_types, p.capabilities,
              (SELECT count(*) FROM ${t.placements} pl
                WHERE pl.team_id = p.team_id AND pl.process_id = p.process_id)::int AS members
         FROM ${t.processes} p
        WHERE p.team_id = $1 AND p.heartbeat_at > now() - $2 * interval '1 millisecond'`,
      [this.#teamId, ...lease],
    );
    let mine = live.rows.find((row) => row.process_id === me)?.members ?? this.#tokens.size;
    const now = performance.now();
    for (const memberId of this.#unplacedSince.keys()) {
      if (!wanted.has(memberId)) this.#unplacedSince.delete(memberId);
    }

    for (const candidate of candidates) {
      const { memberId } = candidate;
      if (this.#stop.signal.aborted || this.#paused || this.#draining) break;
      const pinned = candidate.pinned === true;
      if (!(pinned || canHost(this.#runs, candidate)) || this.#tokens.has(memberId)) continue;
      const row = rows.get(memberId);
      if (row && row.process_id !== me && row.owner_live) {
        this.#unplacedSince.delete(memberId);
        continue;
      }
      // a pinned member (an external member whose client connects here) is claimed at once
      let claim = row?.process_id === me || candidate.isLead || pinned;
      if (!claim) {
        // Spread teammates: the willing live process running the fewest members claims (ties go
        // to the smallest process id). One left unplaced for three leases (the chosen process
        // looks alive but does not claim) is claimed by any willing process.
        claim = live.rows.every(
          (other) =>
            other.process_id === me ||
            !canHost(hostOf(other), candidate) ||
            other.members > mine ||
            (other.members === mine && other.process_id > me),
        );
        const since = this.#unplacedSince.get(memberId) ?? now;
        this.#unplacedSince.set(memberId, since);
        if (now - since >= UNPLACED_FALLBACK_LEASES * this.#leaseMs) claim = true;
      }
      if (!claim) continue;
      const token = await this.#claim(memberId);
      if (token === undefined) continue;
      this.#unplacedSince.delete(memberId);
      if (row?.process_id !== me) mine++;
      if (!this.#leaseHeld() || this.#stop.signal.aborted) {
        // Claimed too late to trust: the row is this process's, so the next look claims it again.
        continue;
      }
      this.#tokens.set(memberId, token);
      this.#notify('acquired', memberId);
    }
    if (this.#stop.signal.aborted || this.#paused) return;
    this.#observed = { rows, live: live.rows, candidates };
    this.#considerRebalance(live.rows, mine, candidates);
  }

  /**
   * Applies core's rebalancing rule to this look (loads as counted, this process's own as it is
   * after its claims) and starts the handover it decides. The lead and pinned members stay.
   */
  #considerRebalance(
    live: readonly ProcessRow[],
    mine: number,
    candidates: readonly PlacementCandidate[],
  ): void {
    if (this.#listener?.release === undefined || this.#draining || this.#moving !== undefined) {
      return;
    }
    const me = this.#processId;
    const movable: RebalanceMember[] = [];
    for (const candidate of candidates) {
      if (candidate.isLead || candidate.pinned === true || !this.#tokens.has(candidate.memberId)) {
        continue;
      }
      movable.push({
        memberId: candidate.memberId,
        targets: live
          .filter((row) => row.process_id !== me && canHost(hostOf(row), candidate))
          .map((row) => row.process_id),
        busy: this.#activity.get(candidate.memberId) === 'running',
      });
    }
    const processes = live.map((row) => ({
      processId: row.process_id,
      members: row.process_id === me ? mine : row.members,
    }));
    if (!processes.some((row) => row.processId === me)) {
      processes.push({ processId: me, members: mine });
    }
    const step = rebalanceStep(this.#rebalance, { self: me, processes, movable });
    this.#rebalance = step.memory;
    if (step.move !== undefined) this.#handOver(step.move.memberId, step.move.to);
  }

  /**
   * Hands `memberId` to process `to`: once the runtime stopped it at a turn boundary, its row is
   * given to `to` (a new token) if this process still holds it and `to` is alive; `to` takes it on
   * its next look, which the notice makes at once. If the row could not be given, this process
   * keeps the member (the runtime hears `acquired` again).
   */
  #handOver(memberId: string, to: string): void {
    const release = this.#listener?.release;
    if (release === undefined) return;
    this.#moving = (async () => {
      let moved = false;
      try {
        await release(memberId);
        const token = this.#tokens.get(memberId);
        if (token === undefined || this.#stop.signal.aborted || this.#paused) return;
        const t = this.#tables;
        const given = await execute(
          this.#pool,
          `UPDATE ${t.placements} pl
              SET process_id = $4, token = nextval($5::regclass), placed_at = now()
            WHERE pl.team_id = $1 AND pl.member_id = $2 AND pl.process_id = $3 AND pl.token = $6
              AND EXISTS (
                    SELECT 1 FROM ${t.processes} p
                     WHERE p.team_id = $1 AND p.process_id = $4
                       AND p.heartbeat_at > now() - $7 * interval '1 millisecond')`,
          [this.#teamId, memberId, this.#processId, to, t.tokens, token, this.#leaseMs],
        );
        moved = (given.rowCount ?? 0) > 0;
      } catch {
        // kept: the row is still this process's
      } finally {
        this.#moving = undefined;
      }
      if (moved) {
        this.#lose(memberId);
        this.#doorbell?.announceReport();
      } else if (this.#tokens.has(memberId) && !this.#draining) {
        this.#notify('acquired', memberId);
      }
    })();
  }

  /** Takes `memberId` if it is free, its process dead, or this process's own; its new token. */
  async #claim(memberId: string): Promise<string | undefined> {
    const t = this.#tables;
    const claimed = await execute<{ token: string }>(
      this.#pool,
      `INSERT INTO ${t.placements} AS pl (team_id, member_id, process_id, token)
       VALUES ($1, $2, $3, nextval($4::regclass))
       ON CONFLICT (team_id, member_id) DO UPDATE
          SET process_id = EXCLUDED.process_id, token = EXCLUDED.token, placed_at = now()
        WHERE pl.process_id = EXCLUDED.process_id
           OR NOT EXISTS (
                SELECT 1 FROM ${t.processes} p
                 WHERE p.team_id = pl.team_id AND p.process_id = pl.process_id
                   AND p.heartbeat_at > now() - $5 * interval '1 millisecond')
       RETURNING token`,
      [this.#teamId, memberId, this.#processId, t.tokens, this.#leaseMs],
    );
    return claimed.rows[0]?.token;
  }

  #lose(memberId: string): void {
    if (!this.#tokens.delete(memberId)) return;
    this.#notify('lost', memberId);
    this.#forgetActivity();
    this.#refreshView(false);
  }

  /** Drops members this process no longer runs from its report. */
  #forgetActivity(): void {
    if (![...this.#activity.keys()].some((memberId) => !this.#tokens.has(memberId))) return;
    const kept = new Map([...this.#activity].filter(([memberId]) => this.#tokens.has(memberId)));
    this.#setActivity(kept, false);
  }

  /**
   * Builds the view from the last look, this process's tokens and its latest report, and tells
   * the listener when it differs from the previous one (`deferred`: in a microtask). `ownOnly`:
   * only this process's report moved since the last build, so what the look gave (the others'
   * members, those awaiting a process, the unhostable) is reused as it is rather than derived
   * again; a report is made on every change of a member's activity, and the look's part grows
   * with the team.
   */
  #refreshView(deferred: boolean, ownOnly = false): void {
    const observed = this.#observed;
    if (observed === undefined || this.#looking) return;
    const me = this.#processId;
    const through = this.#through ?? undefined;
    const placed = new Map<string, PlacedMember>();
    for (const memberId of this.#tokens.keys()) {
      placed.set(memberId, {
        memberId,
        processId: me,
        here: true,
        activity: this.#activity.get(memberId),
        reportedThrough: through,
      });
    }
    const previous = this.#view;
    let observedPart = ownOnly ? this.#observedPart : undefined;
    if (observedPart === undefined) {
      observedPart = this.#deriveObserved(observed, placed);
      this.#observedPart = observedPart;
    }
    for (const [memberId, member] of observedPart.elsewhere) placed.set(memberId, member);
    const view: PlacementView = {
      placed,
      awaiting: observedPart.awaiting,
      liveProcesses: observed.live.length,
      unhostable: observedPart.unhostable,
    };
    if (previous !== EMPTY_VIEW && sameView(previous, view)) return;
    this.#view = Object.freeze(view);
    if (!deferred) {
      this.#notifyChanged();
      return;
    }
    if (this.#changeQueued) return;
    this.#changeQueued = true;
    queueMicrotask(() => {
      this.#changeQueued = false;
      this.#notifyChanged();
    });
  }

  /**
   * The part of the view the last look gives: members other live processes run (those this
   * process holds a token for left out), candidates awaiting a process, and those none can host.
   */
  #deriveObserved(observed: Observed, mine: ReadonlyMap<string, PlacedMember>): ObservedPart {
    const me = this.#processId;
    const elsewhere = new Map<string, PlacedMember>();
    for (const row of observed.rows.values()) {
      if (row.process_id === me || !row.owner_live || mine.has(row.member_id)) continue;
      const activity = isActivity(row.activity) ? row.activity : undefined;
      const reported = row.reported_through === null ? Number.NaN : Number(row.reported_through);
      elsewhere.set(row.member_id, {
        memberId: row.member_id,
        processId: row.process_id,
        here: false,
        activity,
        reportedThrough: Number.isSafeInteger(reported) && reported >= 0 ? reported : undefined,
      });
    }
    const awaiting = new Set<string>();
    const unhostable = new Map<string, readonly string[]>();
    const hosts = observed.live.map((process) =>
      process.process_id === me ? this.#runs : hostOf(process),
    );
    for (const candidate of observed.candidates) {
      if (mine.has(candidate.memberId) || elsewhere.has(candidate.memberId)) continue;
      const someone = observed.live.some((process, i) =>
        process.process_id === me
          ? candidate.pinned === true || canHost(this.#runs, candidate)
          : canHost(hosts[i] as PlacementHost, candidate),
      );
      if (someone) awaiting.add(candidate.memberId);
      else if (candidate.pinned !== true) {
        const unmet = unmetRequirements(hosts, candidate);
        if (unmet.length > 0) unhostable.set(candidate.memberId, unmet);
      }
    }
    return { elsewhere, awaiting, unhostable };
  }

  #notifyChanged(): void {
    if (this.#stop.signal.aborted) return;
    try {
      this.#listener?.changed?.();
    } catch (error) {
      queueMicrotask(() => {
        throw error;
      });
    }
  }

  #notify(kind: 'acquired' | 'lost', memberId: string): void {
    try {
      this.#listener?.[kind](memberId);
    } catch (error) {
      // The listener's bug must not stop placement.
      queueMicrotask(() => {
        throw error;
      });
    }
  }
}

function closedError(): TeamError {
  return new TeamError('STORE_CLOSED', 'the placement is closed');
}
