import { isAbsolute } from 'node:path';
import type { Clock, IdSource } from '../clock.js';
import { systemClock, ulidIdSource } from '../clock.js';
import { TeamError } from '../errors.js';
import { HANDOVER_WAIT_MS } from '../limits.js';
import { defaultTeamPolicy } from '../policy/index.js';
import type { EventSink } from '../ports/events.js';
import { noopEventSink } from '../ports/events.js';
import type { MemberPlacement } from '../ports/placement.js';
import type { TeamLog } from '../ports/team-log.js';
import type { TeamPolicy } from '../ports/team-policy.js';
import type { TraceContextSource } from '../ports/trace-context.js';
import type { TranscriptStore } from '../ports/transcript-store.js';
import type { WireFormat } from '../ports/wire-format.js';
import type { WorkspaceProvider } from '../ports/workspace.js';
import type { TeamLimits } from '../state/index.js';
import { type AgentRegistry, providerOf } from './agents.js';
import { ChangeWaiters } from './change-waiters.js';
import { CommitPipeline } from './commit-pipeline.js';
import { type ContextBudget, resolveContextBudget } from './context-budget.js';
import { Credentials } from './credentials.js';
import type { ExternalPresenceOptions } from './external-members.js';
import { type LiveDropReason, LiveRelay, type RemoteMember } from './live-relay.js';
import { MemberWorkspaces } from './member-workspaces.js';
import { DEFAULT_MAX_REPEATED_FAILURES } from './repeated-failures.js';
import { RunnerPool } from './runner-pool.js';
import type { TeamGates, TeamService } from './service-types.js';
import { type LoadedState, loadTeamState, SnapshotScheduler } from './snapshots.js';
import { TeamServiceFacade } from './team-service.js';

/** Options of {@link openTeam}. */
export interface OpenTeamOptions {
  /** The team id: the lead's session id. The lead's member id is the team id. */
  teamId: string;
  /**
   * The team's durable record log, read once on open: from its newest valid snapshot when it
   * offers `snapshots`, else whole.
   */
  log: TeamLog;
  /** Where every member's conversation is kept. */
  transcripts: TranscriptStore;
  /** How team mail is framed for the models (e.g. `xmlFormat` of `@teamwire/protocol`). */
  format: WireFormat;
  /**
   * Which pending message goes next and the texts the runtime writes; default
   * {@link defaultTeamPolicy}. Whatever the policy, a pending shutdown request ends a teammate
   * at its next boundary.
   */
  policy?: TeamPolicy | undefined;
  /** The agent types members can be spawned (and revived) as. */
  agents: AgentRegistry;
  /**
   * Quality gates: asked before a task completes and when a teammate goes idle; a refusal sends
   * the member back to work with feedback (see {@link TeamGates}).
   */
  gates?: TeamGates | undefined;
  /**
   * Which members run in this process. Default: the log's own (`log.shared.placement`, e.g. from
   * `@teamwire/postgres`); without one, every member runs here.
   */
  placement?: MemberPlacement | undefined;
  /**
   * Gives members of an agent type with `isolation: 'worktree'` a working directory of their own
   * (e.g. `@teamwire/git-workspaces`). Without it such a member fails to start with
   * `WORKSPACE_UNAVAILABLE`: it never works in the shared directory instead.
   */
  workspaces?: WorkspaceProvider | undefined;
  /**
   * The team's directory, absolute: the lead's and every non-isolated member's `ToolContext.cwd`.
   * Defaults to `process.cwd()` when the team is opened.
   */
  cwd?: string | undefined;
  /** The lead's agent type (and description, used when the team is created). */
  lead: {
    /** A registered agent type. */
    agentType: string;
    /** What the lead is for, stored in its member record. */
    description?: string;
  };
  /** Where agent events go; defaults to {@link noopEventSink}. */
  events?: EventSink;
  /**
   * In a team spread over processes whose log offers a live channel (`log.shared.live`), the live
   * events of the members this process runs (streamed output, turns, tools, status) are relayed
   * to the other processes, and with `live.sink` theirs are published into it with the presence
   * the team's placement shows (see {@link LiveRelay}). `false` turns the relay off. Default: on,
   * sending only.
   */
  live?:
    | false
    | {
        /**
         * Where other processes' live events are published: the event hub observers (a dashboard)
         * follow. Without it they are not received. Name it explicitly: a sink that accounts for
         * this process's own work (a console board, telemetry) must not take another process's
         * turns as its own, so it is never taken from `events` by default.
         */
        sink?: EventSink | undefined;
        /** Told about every drop (see {@link LiveDropReason}); for counters. Must not throw. */
        onDropped?: ((reason: LiveDropReason) => void) | undefined;
      }
    | undefined;
  /**
   * Stamps every message queued with its sender's trace context (`QueuedMessage.trace`), e.g. the
   * `traceContext` of `@teamwire/otel`; without it no trace context is asked for or stored.
   */
  traceContext?: TraceContextSource | undefined;
  /** Time for record stamps and timers; defaults to the system clock. Tests pass a manual clock. */
  clock?: Clock;
  /** Ids for members and messages; defaults to ulids. Tests pass a sequential source. */
  ids?: IdSource;
  /** Overrides of {@link DEFAULT_TEAM_LIMITS}. */
  limits?: Partial<TeamLimits> | undefined;
  /**
   * Whether parked teammates claim the lowest ready unowned task (default true). While parked they
   * look again whenever the board changes and every `intervalMs` (default 5000).
   */
  idleClaim?:
    | boolean
    | {
        /** How often a parked teammate looks at the board without a change (ms). */
        intervalMs?: number;
      }
    | undefined;
  /** Model calls per turn (default 50); an agent definition's `maxSteps` overrides it. */
  maxSteps?: number;
  /**
   * How many times in a row a member may make the same tool call failing the same way before its
   * turn ends (default 3, at least 1): the lead is told, and the member takes no new task until
   * mail reaches it. A guard against a model that loops on an error instead of reading it.
   */
  maxRepeatedFailures?: number;
  /**
   * The context budget of every model-run member (an agent definition's `context` overrides it):
   * past it, a member's older conversation is compacted into a summary. Without one, a member
   * sends its whole conversation every call; a provider's context-overflow refusal then fails it.
   */
  context?: ContextBudget;
  /** How long `dispose` waits for in-flight work before it returns (default 10000 ms). */
  disposeTimeoutMs?: number;
  /**
   * With a placement (a team spread over processes): how long `dispose` waits for the members this
   * process runs to reach a turn boundary before it hands them to other processes anyway (their
   * turns are then aborted and redone there). Default `HANDOVER_WAIT_MS` (30000); a non-negative
   * integer.
   */
  handoverTimeoutMs?: number;
  /**
   * Members of external agent types (run by a client, e.g. over MCP): their presence timeouts,
   * and whether this process serves them. Without a placement every member is served here; with
   * one (a shared log), only a process opened with `serve: true` claims them, so the process
   * their clients connect to is the one that writes for them.
   */
  externalMembers?:
    | {
        /** Silence after which a member shows as `idle` (default 60000 ms). */
        idleAfterMs?: number;
        /**
         * Silence after which it shows as gone (`inactive`) and its `in_progress` tasks go back
         * to the board, as a failed member's do (default 600000 ms). A wait is not silence.
         */
        goneAfterMs?: number;
        /**
         * In a team spread over processes: claim every external member (`true`), those named
         * (e.g. the one member a stdio server serves), or none (default `false`).
         */
        serve?: boolean | readonly string[];
      }
    | undefined;
}

/**
 * Opens (or creates) a team over the given ports. Restores the log's newest valid snapshot and
 * folds the records after it strictly (without snapshots, the whole log),
 * creates the lead when the log is empty, settles members left `provisioning` by a crash (a
 * transcript with entries -> `active`, else `failed`), then revives lazily: only teammates with
 * pending wakeup mail, teammates owning `in_progress` tasks (a turn resuming the task) and, with
 * idle-claim on, enough idle teammates to take the ready tasks. Everyone else stays inactive
 * until mail wakes them.
 *
 * Members of an agent type with `isolation: 'worktree'` work in a directory of their own from the
 * `workspaces` provider, acquired before their runner starts (spawn, revival) and released when
 * they retire; everyone else works in `cwd`. Tools see the directory as `ToolContext.cwd`.
 */
export async function openTeam(options: OpenTeamOptions): Promise<TeamService> {
  if (options.format === undefined && 'protocol' in options) {
    throw new TeamError(
      'INVALID_ARGUMENT',
      'openTeam takes `format` (a WireFormat) and an optional `policy` (a TeamPolicy) instead of `protocol`',
      { details: { option: 'protocol' } },
    );
  }
  checkPort(options.format, 'format', ['formatMessage', 'parseEnvelope', 'formatInitialPrompt']);
  if (options.policy !== undefined) {
    checkPort(options.policy, 'policy', [
      'pickNext',
      'formatIdleNotice',
      'formatTaskClaimPrompt',
      'formatAssignmentNotice',
    ]);
  }
  if (options.workspaces !== undefined) {
    checkPort(options.workspaces, 'workspaces', ['acquire', 'release']);
  }
  const placement = options.placement ?? options.log.shared?.placement;
  if (placement !== undefined) {
    checkPort(placement, 'placement', ['start', 'runsHere', 'candidatesChanged', 'close']);
  }
  checkLive(options.live);
  if (options.cwd !== undefined && (typeof options.cwd !== 'string' || !isAbsolute(options.cwd))) {
    throw new TeamError('INVALID_ARGUMENT', 'openTeam needs an absolute path as cwd', {
      details: { option: 'cwd' },
    });
  }
  const clock = options.clock ?? systemClock;
  const loaded = await loadTeamState(options.log, {
    teamId: options.teamId,
    clock,
    limits: options.limits,
    traceContext: options.traceContext,
  });
  const { state } = loaded;
  const leadDefinition = options.agents.get(options.lead.agentType);
  const { service, pipeline, pool, snapshots } = assemble(options, loaded, clock, placement);
  // records appended elsewhere between the read above and the doorbell's subscription
  pipeline.requestCatchUp();
  // Decided again if another process created the lead first: then it records nothing.
  await pipeline.commit('lead', () =>
    state.leadId !== undefined
      ? []
      : state.createLead({
          id: options.teamId,
          agentType: options.lead.agentType,
          provider: providerOf(leadDefinition),
          ...(options.lead.description === undefined
            ? {}
            : { description: options.lead.description }),
        }),
  );
  // A log opened without a recent snapshot (an older team, a store that just gained them)
  // gets one now rather than at the next commit.
  snapshots.afterApplied();
  try {
    await pool.recover();
  } catch (error) {
    await service.dispose();
    throw error;
  }
  return service;
}

/** Refuses a port that is missing or lacks a member, naming it (plain JS callers get no types). */
function checkPort(port: unknown, option: string, members: readonly string[]): void {
  const missing = members.filter(
    (name) =>
      typeof port !== 'object' ||
      port === null ||
      typeof (port as Record<string, unknown>)[name] !== 'function',
  );
  const version = (port as { specificationVersion?: unknown } | undefined)?.specificationVersion;
  if (missing.length > 0 || version !== 'v1') {
    throw new TeamError(
      'INVALID_ARGUMENT',
      `openTeam needs a v1 ${option}${missing.length > 0 ? ` (missing ${missing.join(', ')})` : ''}`,
      { details: { option, missing } },
    );
  }
}

/**
 * Builds the parts of a service and wires them: commits reach the change waiters and the runner
 * pool, a refused append stops the pool, and members' tools get the facade's bound views.
 */
function assemble(
  options: OpenTeamOptions,
  loaded: LoadedState,
  clock: Clock,
  placement: MemberPlacement | undefined,
) {
  const { state } = loaded;
  const local = guardedSink(options.events ?? noopEventSink);
  const channel = options.live === false ? undefined : options.log.shared?.live;
  const live =
    channel === undefined
      ? undefined
      : new LiveRelay({
          teamId: options.teamId,
          channel,
          sink: options.live === false ? undefined : options.live?.sink,
          clock,
          origin: globalThis.crypto.randomUUID(),
          runsHere: (name) => {
            const member = state.memberByName(name);
            return member !== undefined && (placement?.runsHere(member.id) ?? true);
          },
          onDropped: options.live === false ? undefined : options.live?.onDropped,
        });
  // the runtime's events reach the local observers, and the other processes through the relay
  const events: EventSink =
    live === undefined
      ? local
      : {
          publish(agentName, event) {
            local.publish(agentName, event);
            live.offer(agentName, event);
          },
        };
  const ids = options.ids ?? ulidIdSource(clock);
  const policy = options.policy ?? defaultTeamPolicy;
  const credentials = new Credentials(state);
  const snapshots = new SnapshotScheduler(
    options.log,
    state,
    events,
    () => state.member(state.leadId ?? '')?.name ?? 'lead',
    loaded,
  );
  const pipeline = new CommitPipeline({ log: options.log, state, events });
  const waiters = new ChangeWaiters(clock, () => pipeline.disposed);
  const idleClaim = options.idleClaim ?? true;
  const workspaces = new MemberWorkspaces({
    teamId: options.teamId,
    provider: options.workspaces,
    cwd: options.cwd ?? process.cwd(),
    agents: options.agents,
    events,
    leadId: () => state.leadId,
  });
  const poolOptions = {
    teamId: options.teamId,
    state,
    format: options.format,
    policy,
    events,
    clock,
    ids,
    transcripts: options.transcripts,
    agents: options.agents,
    leadAgentType: options.lead.agentType,
    idleClaimIntervalMs:
      idleClaim === false
        ? undefined
        : idleClaim === true
          ? 5_000
          : (idleClaim.intervalMs ?? 5_000),
    maxSteps: options.maxSteps ?? 50,
    maxRepeatedFailures: repeatedFailureBound(options.maxRepeatedFailures),
    contextBudget:
      options.context === undefined ? undefined : resolveContextBudget(options.context, 'openTeam'),
    disposeTimeoutMs: options.disposeTimeoutMs ?? 10_000,
    handoverTimeoutMs: handoverBound(options.handoverTimeoutMs),
    pipeline,
    credentials,
    workspaces,
    placement,
    externalPresence: externalPresence(options),
    serveExternal: externalServed(options),
    placementChanged: () => {
      waiters.recheck();
      syncLive();
    },
    gates: options.gates,
  };
  const service = new TeamServiceFacade({
    teamId: options.teamId,
    gates: options.gates,
    state,
    ids,
    agents: options.agents,
    policy,
    credentials,
    pipeline,
    pool: (memberService) => new RunnerPool({ ...poolOptions, memberService }),
    waiters,
    placement,
    snapshots,
    live,
  });
  const { pool } = service;
  /** Shows the members other processes run, as the team's placement and records show them. */
  function syncLive(): void {
    if (live === undefined || !live.receiving) return;
    const remote = new Map<string, RemoteMember>();
    for (const member of state.members()) {
      const where = pool.processOf(member.id);
      if (where === undefined || where.here) continue;
      remote.set(member.name, { processId: where.processId, status: pool.statusOf(member) });
    }
    live.sync(remote);
  }
  // The one feed, in this order: waiters, then the runners, then snapshots.
  pipeline.follow({ durable: (records) => waiters.push(records) });
  pipeline.follow({
    durable: (records) => pool.afterDurable(records),
    fenced: (memberId) => pool.fenced(memberId),
    broken: (error) => pool.breakDown(error),
  });
  pipeline.follow({ durable: () => snapshots.afterApplied() });
  if (live !== undefined) pipeline.follow({ durable: () => syncLive() });
  return { service: service as TeamService, pipeline, pool, snapshots };
}

/** Refuses a `live` option that is neither `false` nor `{ sink?, onDropped? }` of the right kinds. */
function checkLive(live: OpenTeamOptions['live']): void {
  if (live === undefined || live === false) return;
  const sink = (live as { sink?: unknown } | null)?.sink;
  const onDropped = (live as { onDropped?: unknown } | null)?.onDropped;
  if (
    typeof live !== 'object' ||
    live === null ||
    (sink !== undefined && typeof (sink as { publish?: unknown } | null)?.publish !== 'function') ||
    (onDropped !== undefined && typeof onDropped !== 'function')
  ) {
    throw new TeamError(
      'INVALID_ARGUMENT',
      'live must be false or { sink?: an EventSink, onDropped?: a function }',
      { details: { option: 'live' } },
    );
  }
}

/** Which external members this process claims, as a predicate over names. */
function externalServed(options: OpenTeamOptions): (name: string) => boolean {
  const serve = options.externalMembers?.serve ?? false;
  if (typeof serve === 'boolean') return () => serve;
  if (!Array.isArray(serve) || !serve.every((name) => typeof name === 'string')) {
    throw new TeamError(
      'INVALID_ARGUMENT',
      'externalMembers.serve must be a boolean or an array of member names',
      { details: { option: 'externalMembers.serve' } },
    );
  }
  const names = new Set(serve);
  return (name) => names.has(name);
}

/** The presence timeouts of `options.externalMembers`, checked. */
function externalPresence(options: OpenTeamOptions): ExternalPresenceOptions {
  const given = options.externalMembers ?? {};
  const idleAfterMs = given.idleAfterMs ?? 60_000;
  const goneAfterMs = given.goneAfterMs ?? 600_000;
  for (const [name, value] of [
    ['idleAfterMs', idleAfterMs],
    ['goneAfterMs', goneAfterMs],
  ] as const) {
    if (!Number.isInteger(value) || value < 1 || value > 86_400_000) {
      throw new TeamError(
        'INVALID_ARGUMENT',
        `externalMembers.${name} must be an integer from 1 to 86400000 ms`,
        { details: { option: `externalMembers.${name}`, value } },
      );
    }
  }
  if (goneAfterMs < idleAfterMs) {
    throw new TeamError(
      'INVALID_ARGUMENT',
      'externalMembers.goneAfterMs must not be shorter than idleAfterMs',
      { details: { option: 'externalMembers.goneAfterMs' } },
    );
  }
  return { idleAfterMs, goneAfterMs };
}

/**
 * A sink that can never throw into the runtime: an observer's bug must not break a turn or make a
 * durable change look failed.
 */
function guardedSink(sink: EventSink): EventSink {
  return {
    publish(agentName, event) {
      try {
        sink.publish(agentName, event);
      } catch {
        // Observers are best-effort by contract.
      }
    },
  };
}

function handoverBound(value: number | undefined): number {
  if (value === undefined) return HANDOVER_WAIT_MS;
  if (!Number.isSafeInteger(value) || value < 0) {
    throw new TeamError(
      'INVALID_ARGUMENT',
      `openTeam: handoverTimeoutMs is a non-negative integer of ms, got ${String(value).slice(0, 40)}`,
      { details: { handoverTimeoutMs: String(value).slice(0, 40) } },
    );
  }
  return value;
}

function repeatedFailureBound(value: number | undefined): number {
  if (value === undefined) return DEFAULT_MAX_REPEATED_FAILURES;
  if (!Number.isSafeInteger(value) || value < 1) {
    throw new TeamError(
      'INVALID_ARGUMENT',
      `maxRepeatedFailures must be an integer of at least 1 (got ${String(value)})`,
      { details: { maxRepeatedFailures: value } },
    );
  }
  return value;
}
