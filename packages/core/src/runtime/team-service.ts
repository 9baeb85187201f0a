import type { ChatMessage } from '../chat.js';
import type { Clock, IdSource } from '../clock.js';
import { systemClock, ulidIdSource } from '../clock.js';
import type { ContentBlock } from '../content.js';
import { textContent } from '../content.js';
import { TeamError } from '../errors.js';
import {
  isWithinTextLimit,
  MEMBER_ERROR_MAX,
  TASK_PAGE_MAX,
  WAIT_TIMEOUT_MAX_MS,
  WAIT_TIMEOUT_MIN_MS,
} from '../limits.js';
import type { EventSink, MemberStatus } from '../ports/events.js';
import { noopEventSink } from '../ports/events.js';
import type { ProtocolHooks } from '../ports/protocol.js';
import type { TeamLog } from '../ports/team-log.js';
import type { TranscriptStore } from '../ports/transcript-store.js';
import type {
  Member,
  MemberContext,
  MessageDelivery,
  MessageQueuedRecord,
  QueuedMessage,
  TaskStatus,
  TeamRecord,
} from '../records.js';
import type { CreateTaskInput, TaskView, TeamLimits, UpdateTaskInput } from '../state/index.js';
import { isLivePhase, TeamState } from '../state/index.js';
import type { ToolSet, TurnOutcome } from './agent-loop.js';
import { createToolSet } from './agent-loop.js';
import type { AgentDefinition, AgentRef, AgentRegistry } from './agents.js';
import type { MemberTeamService } from './member-service.js';
import { bindMemberService } from './member-service.js';
import type { RunnerHost } from './runner.js';
import { AgentRunner } from './runner.js';
import { createLeadTools, createTeamTools } from './team-tools.js';
import { Waker } from './waker.js';

/** Options of {@link openTeam}. */
export interface OpenTeamOptions {
  /** The team id: the lead's session id. The lead's member id is the team id. */
  teamId: string;
  log: TeamLog;
  transcripts: TranscriptStore;
  protocol: ProtocolHooks;
  agents: AgentRegistry;
  /** The lead's agent type (and description, used when the team is created). */
  lead: { agentType: string; description?: string };
  /** Where agent events go; defaults to {@link noopEventSink}. */
  events?: EventSink;
  clock?: Clock;
  ids?: IdSource;
  limits?: Partial<TeamLimits>;
  /**
   * Whether parked teammates claim the lowest ready unowned task (default true). While parked they
   * look again whenever the board changes and every `intervalMs` (default 5000).
   */
  idleClaim?: boolean | { intervalMs?: number };
  /** Model calls per turn (default 50); an agent definition's `maxSteps` overrides it. */
  maxSteps?: number;
  /** How long `dispose` waits for in-flight work before it returns (default 10000 ms). */
  disposeTimeoutMs?: number;
}

/** A member as `listMembers` shows it: the roster record plus its derived runtime status. */
export interface MemberInfo extends Member {
  memberId: string;
  status: MemberStatus;
  isLead: boolean;
  /** Why the member's runner stopped, when its status is `failed`. */
  failure?: { code: string; message: string };
}

/** What `membership` answers: whose credential this is. */
export interface Membership {
  agent: AgentRef;
  member: Member;
  isLead: boolean;
  status: MemberStatus;
}

/** Input of {@link TeamService.spawnTeammate}. */
export interface SpawnTeammateInput {
  name: string;
  description: string;
  /** The teammate's first message, sent from the lead. */
  prompt: string;
  agentType: string;
  /** `fresh` (default): an empty conversation; `fork`: a copy of the lead's. */
  context?: MemberContext;
}

/** Result of {@link TeamService.spawnTeammate}. */
export interface SpawnTeammateResult {
  memberId: string;
  name: string;
  /** The id of the queued prompt message. */
  messageId: string;
}

/** Input of {@link TeamService.sendMessage}: `text` or `content`. */
export interface SendMessageInput {
  /** The target member's name. */
  to: string;
  text?: string;
  content?: ContentBlock[];
  /** `wakeup` (default) starts a turn of an idle target; `quiet` waits for its next step. */
  delivery?: MessageDelivery;
  summary?: string;
}

/**
 * Result of {@link TeamService.sendMessage}. Both statuses mean the message is durable: do not
 * resend. `accepted`: handed to a live runner; `queued`: its target is not running now.
 */
export interface SendMessageResult {
  messageId: string;
  status: 'accepted' | 'queued';
}

/** Input of {@link TeamService.listTasks}. */
export interface ListTasksInput {
  status?: TaskStatus | readonly TaskStatus[];
  /** A member id, or `null` for unowned tasks. */
  ownerId?: string | null;
  ready?: boolean;
  /** The `nextCursor` of the previous page. */
  cursor?: string;
  /** 1-100, default 50. */
  limit?: number;
}

/** One page of tasks. */
export interface ListTasksResult {
  tasks: TaskView[];
  nextCursor?: string;
}

/** Input of {@link TeamService.waitForChange}. */
export interface WaitForChangeInput {
  /** 10_000 - 3_600_000 ms. */
  timeoutMs: number;
  signal?: AbortSignal;
}

/** Result of {@link TeamService.waitForChange}: the records that arrived (empty on timeout). */
export interface WaitForChangeResult {
  changed: boolean;
  records: TeamRecord[];
}

/**
 * The API host code calls. Every method takes the calling agent's {@link AgentRef} as its
 * credential; the service checks it was issued here and that the member is live. Tools never get
 * this object: they get their own member's {@link MemberTeamService} (see {@link forMember}), which
 * cannot reach the lead's credential or act as anyone else.
 *
 * Mutations validate and apply to the in-memory state synchronously, then append the record to
 * the team log and answer once it is durable; concurrent calls therefore serialize on the event
 * loop and their appends pipeline in order. If an append fails, the in-memory state may be ahead
 * of the log, so the service turns itself off: every later call throws `STORE_CLOSED` (with the
 * cause) and the team must be reopened from its log.
 */
export interface TeamService {
  readonly teamId: string;
  /** The lead's credential (for the host that runs the lead). */
  readonly lead: AgentRef;
  readonly limits: TeamLimits;
  /**
   * The service bound to `agent`: the same operations without the credential argument, acting only
   * as that member (one object per member). `NOT_A_MEMBER` when the service did not issue `agent`;
   * liveness is checked on every call of the view.
   */
  forMember(agent: AgentRef): MemberTeamService;
  /** Whose credential this is; `NOT_A_MEMBER` when it is not a live member's. */
  membership(agent: AgentRef): Membership;
  /** Like {@link membership}, `undefined` instead of throwing. */
  tryMembership(agent: AgentRef): Membership | undefined;
  /** Every member, lead first, with derived status. */
  listMembers(agent: AgentRef): MemberInfo[];
  /** Lead only: records a teammate, queues its prompt and starts its runner. */
  spawnTeammate(agent: AgentRef, input: SpawnTeammateInput): Promise<SpawnTeammateResult>;
  /** Queues a message (durable before this answers) and dispatches or wakes its target. */
  sendMessage(agent: AgentRef, input: SendMessageInput): Promise<SendMessageResult>;
  createTask(agent: AgentRef, input: CreateTaskInput): Promise<TaskView>;
  getTask(agent: AgentRef, input: { taskId: string }): TaskView;
  listTasks(agent: AgentRef, input?: ListTasksInput): ListTasksResult;
  /** Applies a task action; a reassign also sends the new owner a task assignment. */
  updateTask(agent: AgentRef, input: UpdateTaskInput): Promise<TaskView>;
  /**
   * Edge-triggered: resolves with the records appended after the call (those of the same burst
   * together), or `{changed: false}` after `timeoutMs`. The signal rejects it with `ABORTED`.
   */
  waitForChange(agent: AgentRef, input: WaitForChangeInput): Promise<WaitForChangeResult>;
  /** Lead only: aborts the target's running turn; its inbox is kept. */
  interrupt(agent: AgentRef, input: { target: string }): Promise<{ interrupted: boolean }>;
  /** Lead only: queues a shutdown request, handled at the target's next boundary. */
  shutdown(agent: AgentRef, input: { target: string; reason?: string }): Promise<SendMessageResult>;
  /** Starts a lead turn with a host message (after the current one); resolves when it ends. */
  promptLead(input: string | ContentBlock[]): Promise<TurnOutcome>;
  /** Resolves once no runner is working and no wakeup mail waits for a live runner. */
  idle(): Promise<void>;
  /**
   * Stops every runner (running turns are aborted), waits for in-flight appends (bounded by
   * `disposeTimeoutMs`) and refuses further calls with `DISPOSED`. The ports are not closed: their
   * owner closes them.
   */
  dispose(): Promise<void>;
}

const MEMBER_COLORS = ['blue', 'green', 'yellow', 'purple', 'orange', 'pink', 'cyan', 'red'];
const DEFAULT_PAGE = 50;

interface ChangeWaiter {
  records: TeamRecord[];
  scheduled: boolean;
  finish(): void;
}

/**
 * Opens (or creates) a team over the given ports. Reads the whole log once and folds it strictly,
 * creates the lead when the log is empty, settles members left `provisioning` by a crash (a
 * transcript with entries -> `active`, else `failed`), then revives lazily: only teammates with
 * pending wakeup mail, teammates owning `in_progress` tasks (a turn resuming the task) and, with
 * idle-claim on, enough idle teammates to take the ready tasks. Everyone else stays inactive
 * until mail wakes them.
 */
export async function openTeam(options: OpenTeamOptions): Promise<TeamService> {
  const clock = options.clock ?? systemClock;
  const records: TeamRecord[] = [];
  for await (const record of options.log.read()) records.push(record);
  const state = TeamState.fromRecords(records, {
    teamId: options.teamId,
    clock,
    ...(options.limits === undefined ? {} : { limits: options.limits }),
  });
  const leadDefinition = options.agents.get(options.lead.agentType);
  const service = new TeamServiceImpl(options, state, clock);
  if (state.leadId === undefined) {
    await service.commit(
      'lead',
      state.createLead({
        id: options.teamId,
        agentType: options.lead.agentType,
        provider: providerOf(leadDefinition),
        ...(options.lead.description === undefined
          ? {}
          : { description: options.lead.description }),
      }),
    );
  }
  await service.recover();
  return service;
}

/** Why a member failed, shortened to fit a member record's `error`. */
function failureReason(error: unknown): string {
  const why = error instanceof Error ? error.message : String(error);
  if (isWithinTextLimit(why, MEMBER_ERROR_MAX)) return why;
  let cut = MEMBER_ERROR_MAX - 1;
  // never split a surrogate pair
  if ((why.charCodeAt(cut - 1) & 0xfc00) === 0xd800) cut--;
  return `${why.slice(0, cut)}…`;
}

function providerOf(definition: AgentDefinition): string {
  return `${definition.model.provider}:${definition.model.modelId}`;
}

class TeamServiceImpl implements TeamService, RunnerHost {
  readonly teamId: string;
  readonly protocol: ProtocolHooks;
  readonly events: EventSink;
  readonly ids: IdSource;
  readonly transcripts: TranscriptStore;
  readonly idleClaimIntervalMs: number | undefined;
  readonly maxSteps: number;
  private readonly log: TeamLog;
  private readonly agents: AgentRegistry;
  private readonly disposeTimeoutMs: number;
  private readonly runners = new Map<string, AgentRunner>();
  private readonly refs = new Map<string, AgentRef>();
  private readonly views = new Map<string, MemberTeamService>();
  private readonly issued = new WeakMap<object, string>();
  private readonly changeWaiters = new Set<ChangeWaiter>();
  private idleWaiters: { resolve(): void; reject(error: unknown): void }[] = [];
  private readonly inflight = new Set<Promise<void>>();
  /** Ids of messages whose `message.queued` append has not resolved yet. */
  private readonly unconfirmed = new Set<string>();
  private readonly waker: Waker;
  private readonly teamTools;
  private readonly leadTools;
  private leadRunner: AgentRunner | undefined;
  private disposed: Promise<void> | undefined;
  private disposing = false;
  private broken: TeamError | undefined;

  constructor(
    options: OpenTeamOptions,
    readonly state: TeamState,
    readonly clock: Clock,
  ) {
    this.teamId = options.teamId;
    this.log = options.log;
    this.transcripts = options.transcripts;
    this.protocol = options.protocol;
    this.agents = options.agents;
    this.events = guardedSink(options.events ?? noopEventSink);
    this.ids = options.ids ?? ulidIdSource(clock);
    this.maxSteps = options.maxSteps ?? 50;
    this.disposeTimeoutMs = options.disposeTimeoutMs ?? 10_000;
    const idleClaim = options.idleClaim ?? true;
    this.idleClaimIntervalMs =
      idleClaim === false
        ? undefined
        : idleClaim === true
          ? 5_000
          : (idleClaim.intervalMs ?? 5_000);
    this.waker = new Waker({
      runners: this.runners,
      isRevivable: (memberId) => this.state.member(memberId)?.phase === 'active',
      createRunner: (memberId, resumeTasks) => this.createRunner(memberId, resumeTasks),
      reviveFailed: (memberId, error) => {
        const failure = TeamError.isInstance(error)
          ? error
          : new TeamError('INVALID_ARGUMENT', String(error), { cause: error });
        this.events.publish(this.state.member(memberId)?.name ?? memberId, {
          type: 'error',
          code: failure.code,
          message: `could not revive: ${failure.message}`,
        });
      },
    });
    const types = options.agents.types();
    const teammateTypes = [
      ...types.filter((t) => t !== options.lead.agentType),
      ...types.filter((t) => t === options.lead.agentType),
    ] as [string, ...string[]];
    this.teamTools = createTeamTools();
    this.leadTools = createLeadTools({ agentTypes: teammateTypes });
    // Fail at open, not mid-turn, when an agent type's own tools clash with the team tools.
    for (const type of types) {
      createToolSet([
        ...this.teamTools,
        ...this.leadTools,
        ...(options.agents.get(type).tools ?? []),
      ]);
    }
  }

  get service(): TeamService {
    return this;
  }

  get limits(): TeamLimits {
    return this.state.limits;
  }

  get lead(): AgentRef {
    return this.refFor(this.state.leadId as string);
  }

  get closed(): boolean {
    return this.disposing || this.broken !== undefined;
  }

  // ------------------------------------------------------------ plumbing

  guard(): void {
    if (this.broken !== undefined) throw this.broken;
    if (this.disposing) {
      throw new TeamError('DISPOSED', 'the team service was disposed; open the team again');
    }
  }

  async commit(actorName: string, records: readonly TeamRecord[]): Promise<void> {
    if (records.length === 0) return;
    const queued: string[] = [];
    for (const record of records) {
      if (record.type === 'message.queued') {
        queued.push(record.message.id);
        this.unconfirmed.add(record.message.id);
      }
    }
    const appending = this.log.append({ records });
    const tracked = appending.then(
      () => undefined,
      () => undefined,
    );
    this.inflight.add(tracked);
    try {
      await appending;
    } catch (error) {
      this.breakDown(error);
      throw this.broken;
    } finally {
      this.inflight.delete(tracked);
      for (const id of queued) this.unconfirmed.delete(id);
    }
    for (const record of records) this.events.publish(actorName, { type: 'record', record });
    this.afterRecords(records);
    this.runnerChanged();
  }

  /**
   * The mail of `memberId` a runner may act on: pending messages whose `message.queued` record is
   * durable. A message still being appended stays invisible, so no transcript can hold a message
   * that a crash then erases from the log.
   */
  deliverable(memberId: string): readonly QueuedMessage[] {
    const pending = this.state.pending(memberId);
    if (this.unconfirmed.size === 0) return pending;
    return pending.filter((message) => !this.unconfirmed.has(message.id));
  }

  private breakDown(cause: unknown): void {
    if (this.broken !== undefined) return;
    this.broken = new TeamError(
      'STORE_CLOSED',
      'the team log refused an append; the team must be reopened from its log',
      { cause },
    );
    for (const runner of this.runners.values()) void runner.stop();
    for (const waiter of this.idleWaiters.splice(0)) waiter.reject(this.broken);
  }

  private afterRecords(records: readonly TeamRecord[]): void {
    for (const waiter of this.changeWaiters) {
      for (const record of records) waiter.records.push(record);
      if (!waiter.scheduled) {
        waiter.scheduled = true;
        queueMicrotask(() => waiter.finish());
      }
    }
    if (this.idleClaimIntervalMs !== undefined && records.some((r) => r.type === 'task')) {
      for (const runner of this.runners.values()) if (!runner.isLead) runner.notify();
    }
  }

  dispatch(message: QueuedMessage): 'accepted' | 'queued' {
    const runner = this.runners.get(message.targetId);
    if (runner?.live) {
      if (message.delivery === 'wakeup') runner.notify();
      return 'accepted';
    }
    if (message.delivery === 'wakeup') this.waker.wake(message.targetId);
    return 'queued';
  }

  refFor(memberId: string): AgentRef {
    let ref = this.refs.get(memberId);
    if (ref === undefined) {
      const member = this.state.member(memberId);
      if (member === undefined) {
        throw new TeamError('UNKNOWN_MEMBER', `no member with id ${memberId}`, {
          details: { memberId },
        });
      }
      ref = Object.freeze({ memberId, name: member.name });
      this.refs.set(memberId, ref);
      this.issued.set(ref, memberId);
    }
    return ref;
  }

  toolsFor(member: Member, definition: AgentDefinition): ToolSet {
    const isLead = member.id === this.state.leadId;
    return createToolSet([
      ...this.teamTools,
      ...(isLead ? this.leadTools : []),
      ...(definition.tools ?? []),
    ]);
  }

  runnerChanged(): void {
    if (this.idleWaiters.length === 0 || !this.isQuiet()) return;
    for (const waiter of this.idleWaiters.splice(0)) waiter.resolve();
  }

  private isQuiet(): boolean {
    if (this.inflight.size > 0) return false;
    for (const runner of this.runners.values()) {
      if (!runner.live) continue;
      if (runner.busy) return false;
      const pending = this.state.pending(runner.member.id);
      if (pending.some((m) => m.delivery === 'wakeup')) return false;
    }
    return true;
  }

  /** Resolves a credential to its live member, or throws `NOT_A_MEMBER`. */
  private resolve(agent: AgentRef): Member {
    this.guard();
    const memberId =
      typeof agent === 'object' && agent !== null ? this.issued.get(agent) : undefined;
    if (memberId === undefined) {
      throw new TeamError(
        'NOT_A_MEMBER',
        'this agent credential was not issued by this team service',
      );
    }
    const member = this.state.member(memberId);
    if (member === undefined || !isLivePhase(member.phase)) {
      throw new TeamError(
        'NOT_A_MEMBER',
        `${agent.name} is no longer a live member of the team (${member?.phase ?? 'unknown'})`,
        { details: { memberId, phase: member?.phase } },
      );
    }
    return member;
  }

  private requireLead(member: Member, verb: string): void {
    if (member.id !== this.state.leadId) {
      throw new TeamError('LEAD_ONLY', `only the team lead may ${verb}`, {
        details: { memberId: member.id },
      });
    }
  }

  private memberNamed(name: string, code: 'UNKNOWN_MEMBER' | 'UNKNOWN_TARGET'): Member {
    const member = typeof name === 'string' ? this.state.memberByName(name) : undefined;
    if (member === undefined) {
      throw new TeamError(code, `no member named ${JSON.stringify(name)} in this team`, {
        details: { name },
      });
    }
    return member;
  }

  private statusOf(member: Member): MemberStatus {
    switch (member.phase) {
      case 'provisioning':
        return 'provisioning';
      case 'failed':
        return 'failed';
      case 'retired':
        return 'retired';
      default:
        return this.runners.get(member.id)?.status ?? 'inactive';
    }
  }

  // ------------------------------------------------------------ runners

  private createRunner(memberId: string, resumeTasks: readonly string[] = []): AgentRunner {
    const member = this.state.member(memberId) as Member;
    const definition = this.agents.get(member.agentType);
    const isLead = memberId === this.state.leadId;
    const teammates = this.state
      .members()
      .filter((m) => m.id !== memberId && m.id !== this.state.leadId && isLivePhase(m.phase))
      .map((m) => m.name);
    const runner = new AgentRunner(this, member, definition, { isLead, resumeTasks, teammates });
    this.runners.set(memberId, runner);
    return runner;
  }

  /** Settles what a crash left behind and revives the members that have work. */
  async recover(): Promise<void> {
    const { state } = this;
    for (const member of state.members()) {
      if (member.phase !== 'provisioning') continue;
      const entries = await this.transcripts.load({ memberId: member.id });
      const record =
        entries.length > 0
          ? state.setMemberPhase(member.id, 'active')
          : state.setMemberPhase(member.id, 'failed', 'interrupted while provisioning');
      await this.commit(member.name, [record]);
    }
    this.leadRunner = this.createRunner(state.leadId as string);
    // A lead whose conversation cannot be loaded fails the open, not a later prompt.
    await this.leadRunner.prepare();
    void this.leadRunner.start();

    for (const message of state.pendingMail()) {
      if (message.targetId === state.leadId || message.delivery !== 'wakeup') continue;
      this.waker.wake(message.targetId);
    }
    const resume = new Map<string, string[]>();
    for (const task of state.listTasks({ status: 'in_progress' })) {
      if (task.ownerId === undefined || task.ownerId === state.leadId) continue;
      resume.set(task.ownerId, [...(resume.get(task.ownerId) ?? []), task.id]);
    }
    for (const [memberId, taskIds] of resume) this.waker.wake(memberId, taskIds);
    if (this.idleClaimIntervalMs !== undefined) {
      // Teammates revived above have their own work first; wake idle ones for the ready tasks.
      let ready = state.listTasks({ ready: true }).length;
      for (const member of state.members()) {
        if (ready <= 0) break;
        if (member.id === state.leadId || member.phase !== 'active') continue;
        if (this.runners.get(member.id)?.live) continue;
        this.waker.wake(member.id);
        ready--;
      }
    }
  }

  // ------------------------------------------------------------ reads

  forMember(agent: AgentRef): MemberTeamService {
    const memberId =
      typeof agent === 'object' && agent !== null ? this.issued.get(agent) : undefined;
    if (memberId === undefined) {
      throw new TeamError(
        'NOT_A_MEMBER',
        'this agent credential was not issued by this team service',
      );
    }
    let view = this.views.get(memberId);
    if (view === undefined) {
      view = bindMemberService(this, agent);
      this.views.set(memberId, view);
    }
    return view;
  }

  membership(agent: AgentRef): Membership {
    const member = this.resolve(agent);
    return {
      agent: this.refFor(member.id),
      member,
      isLead: member.id === this.state.leadId,
      status: this.statusOf(member),
    };
  }

  tryMembership(agent: AgentRef): Membership | undefined {
    try {
      return this.membership(agent);
    } catch (error) {
      if (TeamError.hasCode(error, 'NOT_A_MEMBER')) return undefined;
      throw error;
    }
  }

  listMembers(agent: AgentRef): MemberInfo[] {
    this.resolve(agent);
    return this.state.members().map((member) => {
      const failure = this.runners.get(member.id)?.failure;
      return {
        ...member,
        memberId: member.id,
        status: this.statusOf(member),
        isLead: member.id === this.state.leadId,
        ...(failure !== undefined && member.phase === 'active'
          ? { failure: { code: failure.code, message: failure.message } }
          : {}),
      };
    });
  }

  getTask(agent: AgentRef, input: { taskId: string }): TaskView {
    this.resolve(agent);
    return this.state.getTask(input.taskId);
  }

  listTasks(agent: AgentRef, input: ListTasksInput = {}): ListTasksResult {
    this.resolve(agent);
    const limit = input.limit ?? DEFAULT_PAGE;
    if (!Number.isInteger(limit) || limit < 1 || limit > TASK_PAGE_MAX) {
      throw new TeamError(
        'INVALID_ARGUMENT',
        `limit must be an integer from 1 to ${TASK_PAGE_MAX}`,
        {
          details: { limit },
        },
      );
    }
    let after = 0;
    if (input.cursor !== undefined) {
      const match = /^task-([1-9][0-9]*)$/.exec(input.cursor);
      if (match === null) {
        throw new TeamError('INVALID_ARGUMENT', `invalid cursor ${JSON.stringify(input.cursor)}`);
      }
      after = Number(match[1]);
    }
    const all = this.state.listTasks({
      ...(input.status === undefined ? {} : { status: input.status }),
      ...(input.ownerId === undefined ? {} : { ownerId: input.ownerId }),
      ...(input.ready === undefined ? {} : { ready: input.ready }),
    });
    const rest = after === 0 ? all : all.filter((t) => Number(t.id.slice(5)) > after);
    const tasks = rest.slice(0, limit);
    const last = tasks.at(-1);
    return rest.length > limit && last !== undefined ? { tasks, nextCursor: last.id } : { tasks };
  }

  // ------------------------------------------------------------ mutations

  async spawnTeammate(agent: AgentRef, input: SpawnTeammateInput): Promise<SpawnTeammateResult> {
    const caller = this.resolve(agent);
    this.requireLead(caller, 'spawn teammates');
    const definition = this.agents.get(input.agentType);
    if (typeof input.prompt !== 'string' || input.prompt === '') {
      throw new TeamError('INVALID_ARGUMENT', 'a teammate needs a non-empty prompt');
    }
    if (typeof input.description !== 'string') {
      throw new TeamError('INVALID_ARGUMENT', 'a teammate needs a description');
    }
    const content = textContent(input.prompt);
    const bytes = Buffer.byteLength(JSON.stringify(content));
    if (bytes > this.limits.maxMessageBytes) {
      throw new TeamError(
        'MESSAGE_TOO_LARGE',
        `the prompt is ${bytes} bytes, over the limit of ${this.limits.maxMessageBytes}`,
        { details: { bytes, limit: this.limits.maxMessageBytes } },
      );
    }
    const context = input.context ?? 'fresh';
    const { state } = this;
    const memberId = this.ids.next();
    const spawned = state.spawnMember(caller.id, {
      id: memberId,
      name: input.name,
      description: input.description,
      agentType: input.agentType,
      provider: providerOf(definition),
      context,
      color: MEMBER_COLORS[(state.members().length - 1) % MEMBER_COLORS.length] as string,
    });
    let queued: MessageQueuedRecord;
    try {
      queued = state.queueMessage({
        id: this.ids.next(),
        senderId: caller.id,
        targetId: memberId,
        kind: 'message',
        delivery: 'wakeup',
        content,
      });
    } catch (error) {
      // The member record is applied already: record it, and that it never started.
      const why = failureReason(error);
      await this.commit(caller.name, [spawned, state.setMemberPhase(memberId, 'failed', why)]);
      throw error;
    }
    await this.commit(caller.name, [spawned, queued]);

    let runner: AgentRunner;
    try {
      this.guard();
      runner = this.createRunner(memberId);
      const seed = context === 'fork' ? forkSeed(this.leadRunner?.messages ?? []) : undefined;
      await runner.prepare(seed);
      this.guard();
    } catch (error) {
      this.runners.delete(memberId);
      if (!this.closed) {
        const why = failureReason(error);
        await this.commit(caller.name, [state.setMemberPhase(memberId, 'failed', why)]);
      }
      throw error;
    }
    await this.commit(caller.name, [state.setMemberPhase(memberId, 'active')]);
    void runner.start();
    return { memberId, name: input.name, messageId: queued.message.id };
  }

  async sendMessage(agent: AgentRef, input: SendMessageInput): Promise<SendMessageResult> {
    const sender = this.resolve(agent);
    const target = this.memberNamed(input.to, 'UNKNOWN_TARGET');
    let content: ContentBlock[];
    if (input.content !== undefined) content = input.content;
    else if (typeof input.text === 'string') content = textContent(input.text);
    else throw new TeamError('INVALID_ARGUMENT', 'a message needs text or content');
    const delivery = input.delivery ?? 'wakeup';
    if (delivery !== 'wakeup' && delivery !== 'quiet') {
      throw new TeamError('INVALID_ARGUMENT', `delivery must be "wakeup" or "quiet"`);
    }
    const record = this.state.queueMessage({
      id: this.ids.next(),
      senderId: sender.id,
      targetId: target.id,
      kind: 'message',
      delivery,
      content,
      ...(input.summary === undefined ? {} : { summary: input.summary }),
    });
    await this.commit(sender.name, [record]);
    return { messageId: record.message.id, status: this.dispatch(record.message) };
  }

  async createTask(agent: AgentRef, input: CreateTaskInput): Promise<TaskView> {
    const caller = this.resolve(agent);
    const record = this.state.createTask(caller.id, input);
    await this.commit(caller.name, [record]);
    return this.state.getTask(record.task.id);
  }

  async updateTask(agent: AgentRef, input: UpdateTaskInput): Promise<TaskView> {
    const caller = this.resolve(agent);
    const { state } = this;
    const record = state.updateTask(caller.id, input);
    const records: TeamRecord[] = [record];
    let notice: QueuedMessage | undefined;
    const newOwner = record.task.ownerId;
    if (input.action.type === 'reassign' && newOwner !== undefined && newOwner !== caller.id) {
      try {
        const queued = state.queueMessage({
          id: this.ids.next(),
          senderId: caller.id,
          targetId: newOwner,
          kind: 'task_assignment',
          delivery: 'wakeup',
          content: textContent(
            this.protocol.formatAssignmentNotice({ task: record.task, assignedBy: caller.name }),
          ),
          taskId: record.task.id,
        });
        records.push(queued);
        notice = queued.message;
      } catch (error) {
        // The task is reassigned even when the notice does not fit (e.g. a full mailbox).
        if (!TeamError.isInstance(error)) throw error;
      }
    }
    await this.commit(caller.name, records);
    if (notice !== undefined) this.dispatch(notice);
    return state.getTask(record.task.id);
  }

  waitForChange(agent: AgentRef, input: WaitForChangeInput): Promise<WaitForChangeResult> {
    this.resolve(agent);
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
        this.changeWaiters.delete(waiter);
        cancelTimer();
        signal?.removeEventListener('abort', onAbort);
      };
      const waiter: ChangeWaiter = {
        records: [],
        scheduled: false,
        finish: () => {
          cleanup();
          if (this.disposing && waiter.records.length === 0) {
            reject(new TeamError('DISPOSED', 'the team service was disposed'));
            return;
          }
          // Copies: the state keeps the committed records, and a caller must not change them.
          resolve({
            changed: waiter.records.length > 0,
            records: waiter.records.map((record) => structuredClone(record)),
          });
        },
      };
      this.changeWaiters.add(waiter);
      cancelTimer = this.clock.setTimer(timeoutMs, () => waiter.finish());
      signal?.addEventListener('abort', onAbort, { once: true });
    });
  }

  async interrupt(agent: AgentRef, input: { target: string }): Promise<{ interrupted: boolean }> {
    const caller = this.resolve(agent);
    this.requireLead(caller, 'interrupt members');
    const target = this.memberNamed(input.target, 'UNKNOWN_MEMBER');
    return { interrupted: this.runners.get(target.id)?.interrupt() ?? false };
  }

  async shutdown(
    agent: AgentRef,
    input: { target: string; reason?: string },
  ): Promise<SendMessageResult> {
    const caller = this.resolve(agent);
    this.requireLead(caller, 'shut down teammates');
    const target = this.memberNamed(input.target, 'UNKNOWN_TARGET');
    const record = this.state.queueMessage({
      id: this.ids.next(),
      senderId: caller.id,
      targetId: target.id,
      kind: 'shutdown_request',
      delivery: 'wakeup',
      content: input.reason === undefined || input.reason === '' ? [] : textContent(input.reason),
    });
    await this.commit(caller.name, [record]);
    return { messageId: record.message.id, status: this.dispatch(record.message) };
  }

  promptLead(input: string | ContentBlock[]): Promise<TurnOutcome> {
    try {
      this.guard();
    } catch (error) {
      return Promise.reject(error);
    }
    const content = typeof input === 'string' ? textContent(input) : input;
    return (this.leadRunner as AgentRunner).prompt(content);
  }

  idle(): Promise<void> {
    if (this.broken !== undefined) return Promise.reject(this.broken);
    if (this.disposing) return Promise.resolve();
    return new Promise<void>((resolve, reject) => {
      this.idleWaiters.push({ resolve, reject });
      this.runnerChanged();
    });
  }

  dispose(): Promise<void> {
    if (this.disposed === undefined) {
      this.disposing = true;
      this.disposed = this.shutDownRunners();
    }
    return this.disposed;
  }

  private async shutDownRunners(): Promise<void> {
    const stopping = [...this.runners.values()].map((runner) => runner.stop());
    const settled = Promise.allSettled([...stopping, ...this.inflight]).then(() => undefined);
    let cancel = () => {};
    const bound = new Promise<void>((resolve) => {
      cancel = this.clock.setTimer(this.disposeTimeoutMs, resolve);
    });
    await Promise.race([settled, bound]);
    cancel();
    for (const waiter of [...this.changeWaiters]) waiter.finish();
    for (const waiter of this.idleWaiters.splice(0)) waiter.resolve();
  }
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

/**
 * The lead's conversation as a forked teammate starts from: its consistent prefix (a trailing
 * assistant message whose tool calls are not all answered, such as the `spawn_teammate` call
 * running now, is cut with its results) without team-message sources, which name the lead's mail.
 */
function forkSeed(messages: readonly ChatMessage[]): ChatMessage[] {
  let end = messages.length;
  for (let i = messages.length - 1; i >= 0; i--) {
    const message = messages[i] as ChatMessage;
    if (message.role !== 'assistant') continue;
    const answered = new Set(
      messages
        .slice(i + 1)
        .filter((m) => m.role === 'tool')
        .map((m) => (m.role === 'tool' ? m.toolCallId : '')),
    );
    if (!message.toolCalls.every((call) => answered.has(call.id))) end = i;
    break;
  }
  return messages.slice(0, end).map((message) => {
    if (message.source?.kind !== 'team-message') return message;
    const { source: _source, ...rest } = message;
    return rest as ChatMessage;
  });
}
