import type { ChatMessage } from '../chat.js';
import type { Clock, IdSource } from '../clock.js';
import type { ContentBlock } from '../content.js';
import { TeamError } from '../errors.js';
import type { EventSink, MemberStatus } from '../ports/events.js';
import type { TeamPolicy } from '../ports/team-policy.js';
import type { TranscriptStore } from '../ports/transcript-store.js';
import type { WireFormat } from '../ports/wire-format.js';
import type {
  Member,
  MemberContext,
  MemberWorkspace,
  QueuedMessage,
  TeamRecord,
} from '../records.js';
import { isLivePhase, type TeamState } from '../state/index.js';
import { createToolSet, type ToolSet } from './agent-loop.js';
import type { AgentDefinition, AgentRegistry } from './agents.js';
import type { CommitPipeline } from './commit-pipeline.js';
import { forkSeed } from './conversation.js';
import type { Credentials } from './credentials.js';
import type { MemberWorkspaces } from './member-workspaces.js';
import { AgentRunner } from './runner.js';
import type { RunnerHost } from './runner-host.js';
import type { AgentRef, MemberTeamService, TurnOutcome } from './service-types.js';
import { createLeadTools, createTeamTools } from './team-tools.js';
import { Waker } from './waker.js';

/** What the pool runs members with. */
export interface RunnerPoolOptions {
  teamId: string;
  state: TeamState;
  format: WireFormat;
  policy: TeamPolicy;
  events: EventSink;
  clock: Clock;
  ids: IdSource;
  transcripts: TranscriptStore;
  agents: AgentRegistry;
  leadAgentType: string;
  idleClaimIntervalMs: number | undefined;
  maxSteps: number;
  disposeTimeoutMs: number;
  pipeline: CommitPipeline;
  credentials: Credentials;
  workspaces: MemberWorkspaces;
  /** The view a member's tools get (the public service, bound to the member). */
  memberService(agent: AgentRef): MemberTeamService;
}

/**
 * The runners of a team: one per member that is running or parked, the lead's always. It creates
 * them (the runners' host), revives stopped teammates through the {@link Waker}, routes queued
 * mail to them, recovers a reopened team, answers `idle()` and stops everything on dispose.
 */
export class RunnerPool implements RunnerHost {
  readonly teamId: string;
  readonly state: TeamState;
  readonly format: WireFormat;
  readonly policy: TeamPolicy;
  readonly events: EventSink;
  readonly clock: Clock;
  readonly ids: IdSource;
  readonly transcripts: TranscriptStore;
  readonly idleClaimIntervalMs: number | undefined;
  readonly maxSteps: number;
  readonly workspaces: MemberWorkspaces;
  private readonly pipeline: CommitPipeline;
  private readonly runners = new Map<string, AgentRunner>();
  private readonly waker: Waker;
  private readonly teamTools;
  private readonly leadTools;
  private leadRunner: AgentRunner | undefined;
  private idleWaiters: { resolve(): void; reject(error: unknown): void }[] = [];

  constructor(private readonly options: RunnerPoolOptions) {
    this.teamId = options.teamId;
    this.state = options.state;
    this.format = options.format;
    this.policy = options.policy;
    this.events = options.events;
    this.clock = options.clock;
    this.ids = options.ids;
    this.transcripts = options.transcripts;
    this.idleClaimIntervalMs = options.idleClaimIntervalMs;
    this.maxSteps = options.maxSteps;
    this.pipeline = options.pipeline;
    this.workspaces = options.workspaces;
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
      ...types.filter((t) => t !== options.leadAgentType),
      ...types.filter((t) => t === options.leadAgentType),
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

  // ------------------------------------------------------------ the runners' host

  get closed(): boolean {
    return this.pipeline.closed;
  }

  guard(): void {
    this.pipeline.guard();
  }

  commit(actorName: string, records: readonly TeamRecord[]): Promise<void> {
    return this.pipeline.commit(actorName, records);
  }

  deliverable(memberId: string): readonly QueuedMessage[] {
    return this.pipeline.deliverable(memberId);
  }

  refFor(memberId: string): AgentRef {
    return this.options.credentials.refFor(memberId);
  }

  memberService(agent: AgentRef): MemberTeamService {
    return this.options.memberService(agent);
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

  // ------------------------------------------------------------ for the service

  /** The derived status of a member: its phase, or for an active one its runner's status. */
  statusOf(member: Member): MemberStatus {
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

  /** Why the member's runner stopped, if it failed. */
  failureOf(memberId: string): TeamError | undefined {
    return this.runners.get(memberId)?.failure;
  }

  /** Aborts the member's running turn; false when none runs. */
  interrupt(memberId: string): boolean {
    return this.runners.get(memberId)?.interrupt() ?? false;
  }

  /** Queues a host prompt for the lead; resolves with the outcome of its turn. */
  promptLead(content: ContentBlock[]): Promise<TurnOutcome> {
    return (this.leadRunner as AgentRunner).prompt(content);
  }

  /**
   * Creates a new teammate's runner, acquires its workspace when its type is isolated, and loads
   * (or, for a fork, seeds) its transcript. Resolves with the function that starts it and the
   * workspace to record with its move to `active`. On failure the runner is dropped again and
   * what a half-done acquire left is handed back to the provider (best-effort).
   */
  async prepareTeammate(
    memberId: string,
    context: MemberContext,
  ): Promise<{ start(): void; workspace: MemberWorkspace | undefined }> {
    const member = this.state.member(memberId) as Member;
    try {
      this.guard();
      const runner = this.createRunner(memberId);
      const seed: ChatMessage[] | undefined =
        context === 'fork' ? forkSeed(this.leadRunner?.messages ?? []) : undefined;
      await runner.prepare(seed);
      this.guard();
      return { start: () => void runner.start(), workspace: runner.workspace };
    } catch (error) {
      this.runners.delete(memberId);
      if (this.workspaces.isIsolated(member)) {
        await this.workspaces.cleanUp(member);
        // the member fails before its runner ever ran: end its presence for observers
        this.events.publish(member.name, { type: 'status', status: 'failed' });
      }
      throw error;
    }
  }

  /** After every commit: parked teammates look at the board again when a task changed. */
  afterCommit(records: readonly TeamRecord[]): void {
    if (this.idleClaimIntervalMs !== undefined && records.some((r) => r.type === 'task')) {
      for (const runner of this.runners.values()) if (!runner.isLead) runner.notify();
    }
    this.runnerChanged();
  }

  /** The log refused an append: every runner stops and `idle()` callers get the error. */
  breakDown(error: TeamError): void {
    for (const runner of this.runners.values()) void runner.stop();
    for (const waiter of this.idleWaiters.splice(0)) waiter.reject(error);
  }

  idle(): Promise<void> {
    const { broken } = this.pipeline;
    if (broken !== undefined) return Promise.reject(broken);
    if (this.pipeline.disposed) return Promise.resolve();
    return new Promise<void>((resolve, reject) => {
      this.idleWaiters.push({ resolve, reject });
      this.runnerChanged();
    });
  }

  /**
   * Stops every runner (running turns are aborted) and waits for them and the appends in flight,
   * at most `disposeTimeoutMs`.
   */
  async stopAll(): Promise<void> {
    const stopping = [...this.runners.values()].map((runner) => runner.stop());
    const settled = Promise.allSettled([...stopping, this.pipeline.settled()]);
    let cancel = () => {};
    const bound = new Promise<void>((resolve) => {
      cancel = this.clock.setTimer(this.options.disposeTimeoutMs, resolve);
    });
    await Promise.race([settled, bound]);
    cancel();
  }

  /** Resolves every `idle()` caller (after dispose). */
  releaseIdleWaiters(): void {
    for (const waiter of this.idleWaiters.splice(0)) waiter.resolve();
  }

  /**
   * Settles what a crash left behind and revives the members that have work. A member left
   * `provisioning` becomes `active` when its transcript has entries, else `failed`; an isolated
   * one always fails (its workspace was never recorded) and its workspace is handed back to the
   * provider, so no orphan is left.
   */
  async recover(): Promise<void> {
    const { state } = this;
    for (const member of state.members()) {
      if (member.phase !== 'provisioning') continue;
      const isolated = this.workspaces.isIsolated(member);
      const entries = isolated ? [] : await this.transcripts.load({ memberId: member.id });
      const record =
        entries.length > 0
          ? state.setMemberPhase(member.id, 'active')
          : state.setMemberPhase(member.id, 'failed', 'interrupted while provisioning');
      await this.commit(member.name, [record]);
      if (isolated) await this.workspaces.cleanUp(member);
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

  private isQuiet(): boolean {
    if (this.pipeline.busy) return false;
    for (const runner of this.runners.values()) {
      if (!runner.live) continue;
      if (runner.busy) return false;
      const pending = this.state.pending(runner.member.id);
      if (pending.some((m) => m.delivery === 'wakeup')) return false;
    }
    return true;
  }

  private createRunner(memberId: string, resumeTasks: readonly string[] = []): AgentRunner {
    const member = this.state.member(memberId) as Member;
    const definition = this.options.agents.get(member.agentType);
    const isLead = memberId === this.state.leadId;
    const teammates = this.state
      .members()
      .filter((m) => m.id !== memberId && m.id !== this.state.leadId && isLivePhase(m.phase))
      .map((m) => m.name);
    const runner = new AgentRunner(this, member, definition, { isLead, resumeTasks, teammates });
    this.runners.set(memberId, runner);
    return runner;
  }
}
