import type { ChatMessage } from '../chat.js';
import type { Clock, IdSource } from '../clock.js';
import type { ContentBlock } from '../content.js';
import { TeamError } from '../errors.js';
import type { EventSink, MemberStatus } from '../ports/events.js';
import type { MemberActivity, MemberPlacement } from '../ports/placement.js';
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
import type { AgentDefinition, AgentRegistry, AnyAgentDefinition } from './agents.js';
import type { TeamGates } from './approvals.js';
import type { CommitPipeline } from './commit-pipeline.js';
import type { ResolvedContextBudget } from './context-budget.js';
import { conversationMessages, forkSeed, loadTranscript } from './conversation.js';
import type { Credentials } from './credentials.js';
import { ExternalMembers, type ExternalPresenceOptions } from './external-members.js';
import { turnToFinish } from './idle-notice.js';
import { queueIdleNotice } from './mail-delivery.js';
import type { MemberWorkspaces } from './member-workspaces.js';
import { PlacementSide } from './placement-side.js';
import { AgentRunner } from './runner.js';
import type { RunnerHost } from './runner-host.js';
import type { AgentRef, MemberTeamService, TurnOutcome } from './service-types.js';
import { type TeamProgress, teamProgress } from './team-progress.js';
import {
  createLeadTools,
  createPlanTools,
  createTeamTools,
  PLAN_MODE_TEAM_TOOLS,
} from './team-tools.js';
import { Waker } from './waker.js';

/** What the pool runs members with. */
export interface RunnerPoolOptions {
  teamId: string;
  /** The host's quality gates, if any. */
  gates: TeamGates | undefined;
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
  maxRepeatedFailures: number;
  /** The team's context budget (an agent definition's `context` overrides it). */
  contextBudget: ResolvedContextBudget | undefined;
  disposeTimeoutMs: number;
  /** How long {@link RunnerPool.handOverAll} waits for turn boundaries (ms). */
  handoverTimeoutMs: number;
  pipeline: CommitPipeline;
  credentials: Credentials;
  workspaces: MemberWorkspaces;
  /** The view a member's tools get (the public service, bound to the member). */
  memberService(agent: AgentRef): MemberTeamService;
  /**
   * Which members run in this process (a shared log); undefined: every member runs here.
   */
  placement: MemberPlacement | undefined;
  /** Presence timeouts of external members. */
  externalPresence: ExternalPresenceOptions;
  /**
   * Which external members this process serves (with a placement: claims), by name. Without a
   * placement every member is served here anyway.
   */
  serveExternal: (name: string) => boolean;
  /** The placement's view changed: statuses and progress derived from it may differ now. */
  placementChanged?: (() => void) | undefined;
}

/**
 * The runners of a team: one per member that is running or parked, the lead's always. It creates
 * them (the runners' host), revives stopped teammates through the {@link Waker}, routes queued
 * mail to them, recovers a reopened team, answers `idle()` and stops everything on dispose.
 */
export class RunnerPool {
  /** What each message a caller waits on met when the feed routed it (see {@link routed}). */
  private readonly receptions = new Map<string, 'accepted' | 'queued'>();
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
  readonly maxRepeatedFailures: number;
  readonly contextBudget: ResolvedContextBudget | undefined;
  readonly workspaces: MemberWorkspaces;
  /** The members run by clients: their inboxes, presence and watchers. */
  readonly external: ExternalMembers;
  /** The narrow context each runner gets (see {@link RunnerHost}). */
  private readonly context: RunnerHost;
  /** Which members run here, where the others run, what this process reports. */
  private readonly placing: PlacementSide;
  /** Callers waiting for this process to serve an external member it claims (see `whenServed`). */
  private readonly servedWaiters = new Map<string, (() => void)[]>();
  private readonly pipeline: CommitPipeline;
  private readonly runners = new Map<string, AgentRunner>();
  private readonly waker: Waker;
  private readonly teamTools;
  private readonly leadTools;
  private readonly planTools = createPlanTools();
  private leadRunner: AgentRunner | undefined;
  private idleWaiters: { resolve(): void; reject(error: unknown): void }[] = [];
  /** Turn-end checks (see {@link settleTurn}) queued and not finished. */
  private settlingNotices = 0;
  private settling: Promise<void> = Promise.resolve();
  /** Revivals of members this process acquired, one after another. */
  private acquiring: Promise<void> = Promise.resolve();
  private acquireError: unknown;
  /** Acquisitions queued and not finished: `idle()` waits for them (one may revive a member). */
  private acquisitions = 0;
  /** Members the placement is handing over: not revived here until it answers (`lost`/`acquired`). */
  private readonly releasing = new Set<string>();
  /** Set by {@link handOverAll}: this process is closing, no member is revived any more. */
  private handingOver = false;

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
    this.maxRepeatedFailures = options.maxRepeatedFailures;
    this.contextBudget = options.contextBudget;
    this.pipeline = options.pipeline;
    this.workspaces = options.workspaces;

    // What runners (and the external members) get: the parts they use, not the pool.
    this.context = Object.freeze<RunnerHost>({
      teamId: options.teamId,
      state: options.state,
      format: options.format,
      policy: options.policy,
      events: options.events,
      clock: options.clock,
      ids: options.ids,
      transcripts: options.transcripts,
      idleClaimIntervalMs: options.idleClaimIntervalMs,
      maxSteps: options.maxSteps,
      maxRepeatedFailures: options.maxRepeatedFailures,
      contextBudget: options.contextBudget,
      workspaces: options.workspaces,
      gates: options.gates,
      guard: () => options.pipeline.guard(),
      get closed() {
        return options.pipeline.closed;
      },
      commit: (actor, decide) => options.pipeline.commit(actor.name, decide, { actorId: actor.id }),
      deliverable: (memberId) => options.pipeline.deliverable(memberId),
      refFor: (memberId) => options.credentials.refFor(memberId),
      memberService: (agent) => options.memberService(agent),
      toolsFor: (member, definition, mode) => this.toolsFor(member, definition, mode),
      runnerChanged: () => this.runnerChanged(),
      fenced: (memberId) => this.fenced(memberId),
    });
    this.placing = new PlacementSide({
      placement: options.placement,
      state: options.state,
      isExternal: (member) => this.external.isExternal(member),
      serveExternal: options.serveExternal,
      requires: (member) => options.workspaces.requirements(member),
      capabilities: () => options.workspaces.declared(),
      acquired: (memberId) => {
        // the placement keeps a member it was handing over (or gives one back)
        this.releasing.delete(memberId);
        this.acquired(memberId);
      },
      lost: (memberId) => this.lose(memberId),
      release: (memberId) => this.release(memberId),
      changed: options.placementChanged,
    });
    this.external = new ExternalMembers(
      { ...this.context, runsHere: (memberId) => this.runsHere(memberId) },
      options.agents,
      options.externalPresence,
    );
    this.waker = new Waker({
      runners: this.runners,
      isRevivable: (memberId) => {
        const member = this.state.member(memberId);
        return (
          member?.phase === 'active' &&
          !this.external.isExternal(member) &&
          this.runsHere(memberId) &&
          !this.handingOver &&
          !this.releasing.has(memberId)
        );
      },
      createRunner: (memberId, resumeTasks) => this.createRunner(memberId, resumeTasks),
      reviveFailed: (memberId, error) => this.reportReviveFailure(memberId, error),
    });
    const types = options.agents.types();
    const teammateTypes = [
      ...types.filter((t) => t !== options.leadAgentType),
      ...types.filter((t) => t === options.leadAgentType),
    ] as [string, ...string[]];
    this.teamTools = createTeamTools();
    // The lead decides approvals only in a team whose agent types ask for them.
    const approvals = types.some((type) => asksApproval(options.agents.get(type)));
    this.leadTools = createLeadTools({ agentTypes: teammateTypes }).filter(
      (tool) => approvals || tool.name !== 'decide_approval',
    );
    // Fail at open, not mid-turn, when an agent type's own tools clash with the team tools.
    for (const type of types) {
      const definition = options.agents.get(type);
      if (definition.external === true) continue;
      createToolSet([...this.teamTools, ...this.leadTools, ...(definition.tools ?? [])]);
      if (definition.planApproval === true) {
        createToolSet([...this.teamTools, ...this.planTools, ...(definition.tools ?? [])]);
      }
    }
  }

  // ------------------------------------------------------------ routing

  /**
   * Runs `send` (which commits the message `messageId`) and answers what the message met when the
   * feed routed it: `accepted` when a live runner (or a present external member) of this process
   * took it, `queued` when its target had to be woken or runs elsewhere. Both mean durable.
   */
  async routed<R>(
    messageId: string,
    send: () => Promise<R>,
  ): Promise<{ result: R; status: 'accepted' | 'queued' }> {
    this.receptions.set(messageId, 'queued');
    try {
      const result = await send();
      return { result, status: this.receptions.get(messageId) ?? 'queued' };
    } finally {
      this.receptions.delete(messageId);
    }
  }

  /** Hands a durable message to its target here: notify its runner, or wake it. */
  private route(message: QueuedMessage): void {
    const reception = this.deliverHere(message);
    if (this.receptions.has(message.id)) this.receptions.set(message.id, reception);
  }

  private deliverHere(message: QueuedMessage): 'accepted' | 'queued' {
    if (!this.runsHere(message.targetId)) return 'queued';
    const target = this.state.member(message.targetId);
    if (target !== undefined && this.external.isExternal(target)) {
      this.external.notify(target.id);
      return this.external.isPresent(target.id) ? 'accepted' : 'queued';
    }
    const runner = this.runners.get(message.targetId);
    if (runner?.live) {
      if (message.delivery === 'wakeup') runner.notify();
      return 'accepted';
    }
    if (message.delivery === 'wakeup') this.waker.wake(message.targetId);
    return 'queued';
  }

  toolsFor(member: Member, definition: AgentDefinition, mode?: 'plan'): ToolSet {
    if (mode === 'plan') {
      const keep = new Set<string>(PLAN_MODE_TEAM_TOOLS);
      return createToolSet([
        ...this.teamTools.filter((tool) => keep.has(tool.name)),
        ...this.planTools,
        ...(definition.tools ?? []).filter((tool) => tool.readOnly === true),
      ]);
    }
    const isLead = member.id === this.state.leadId;
    return createToolSet([
      ...this.teamTools,
      ...(isLead ? this.leadTools : []),
      ...(definition.tools ?? []),
    ]);
  }

  runnerChanged(): void {
    this.reportActivity();
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
      default: {
        if (this.external.isExternal(member)) return this.external.statusOf(member.id);
        const runner = this.runners.get(member.id);
        if (runner !== undefined && (runner.live || runner.failure !== undefined)) {
          return runner.status;
        }
        // A member another live process runs is as that process reports it; one it reports
        // nothing of has no runner there (nothing to do): inactive.
        return this.placing.elsewhereStatus(member.id) ?? runner?.status ?? 'inactive';
      }
    }
  }

  /** Where a member runs, when the team's placement knows (a team spread over processes). */
  processOf(memberId: string): { processId: string; here: boolean } | undefined {
    return this.placing.processOf(memberId);
  }

  /** {@link teamProgress} as `selfId` sees the team now. */
  progress(selfId: string): TeamProgress {
    return teamProgress({
      members: this.state.members(),
      selfId,
      statusOf: (member) => this.statusOf(member),
      pending: (memberId) => this.state.pending(memberId),
      isClient: (member) => this.external.isExternal(member),
      ownsTask: (memberId) =>
        this.state.listTasks({ status: 'in_progress' }).some((task) => task.ownerId === memberId),
      view: this.placing.view(),
      parkedOn: (memberId) =>
        this.state
          .approvals({ status: 'pending', requesterId: memberId })
          .find((approval) => approval.kind === 'tool'),
    });
  }

  /**
   * Tells the placement what the members this process runs are doing, when that changed, so
   * every other process shows them as they are.
   */
  private reportActivity(): void {
    if (!this.placing.placed) return;
    const activity = new Map<string, MemberActivity>();
    for (const [memberId, runner] of this.runners) {
      if (runner.live) activity.set(memberId, runner.status === 'running' ? 'running' : 'idle');
    }
    this.placing.report(activity);
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
    const leadMember = this.state.member(this.state.leadId as string);
    if (leadMember !== undefined && this.external.isExternal(leadMember)) {
      return Promise.reject(
        new TeamError('EXTERNAL_MEMBER', 'the lead is external: its client takes its turns', {
          details: { memberId: leadMember.id },
        }),
      );
    }
    const lead = this.leadRunner;
    if (lead === undefined || !this.runsHere(lead.member.id)) {
      return Promise.reject(
        new TeamError('NOT_PLACED_HERE', 'the lead runs in another process of this team', {
          details: { memberId: this.state.leadId },
        }),
      );
    }
    return lead.prompt(content);
  }

  /**
   * Resolves once this process serves the external member `memberId` it claims (in a team spread
   * over processes the placement hands it over on its next look), or after `timeoutMs`: a spawn
   * by this process's client can then be used at once. Resolves at once without a placement, for
   * a member this process does not claim, or one already served here.
   */
  whenServed(memberId: string, timeoutMs: number): Promise<void> {
    const member = this.state.member(memberId);
    if (
      !this.placing.placed ||
      member === undefined ||
      !this.external.isExternal(member) ||
      !this.options.serveExternal(member.name) ||
      this.runsHere(memberId)
    ) {
      return Promise.resolve();
    }
    return new Promise<void>((resolve) => {
      const cancel = this.options.clock.setTimer(timeoutMs, () => resolve());
      const list = this.servedWaiters.get(memberId) ?? [];
      list.push(() => {
        cancel();
        resolve();
      });
      this.servedWaiters.set(memberId, list);
    });
  }

  /** True when `memberId` runs in this process (always, without a placement). */
  runsHere(memberId: string): boolean {
    return this.placing.runsHere(memberId);
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
    if (this.external.isExternal(member)) {
      // nothing runs here: its client calls in (in whichever process serves it)
      this.pipeline.guard();
      return {
        start: () => {
          if (!this.placing.placed) this.external.serve(member);
          else this.placing.candidatesChanged();
        },
        workspace: undefined,
      };
    }
    if (this.placing.placed) return this.placeTeammate(member);
    try {
      this.pipeline.guard();
      const runner = this.createRunner(memberId);
      const seed: ChatMessage[] | undefined =
        context === 'fork' ? forkSeed(this.leadRunner?.messages ?? []) : undefined;
      await runner.prepare(seed);
      this.pipeline.guard();
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

  /**
   * With a placement, a new teammate is started by the process the placement gives it: a member
   * with a workspace of its own gets it there (the placement puts it only on a process with its
   * provider's capability, see `MemberWorkspaces.requirements`), and a forked
   * one is seeded from the lead's stored conversation when it first starts.
   */
  private async placeTeammate(
    member: Member,
  ): Promise<{ start(): void; workspace: MemberWorkspace | undefined }> {
    this.pipeline.guard();
    if (!this.workspaces.placeable(member)) {
      throw new TeamError(
        'WORKSPACE_UNAVAILABLE',
        `${member.name} needs a workspace of its own (isolation: 'worktree'), which a team spread over processes gives only when the workspace provider names its capability (where its workspaces live)`,
        { details: { memberId: member.id } },
      );
    }
    return { start: () => this.placing.candidatesChanged(), workspace: undefined };
  }

  /** After every commit: parked teammates look at the board again when a task changed. */
  /**
   * Every durable record, this process's and others', once, in seq order (the pipeline's feed):
   * queued mail reaches its target (a live runner is notified, a stopped one woken), a task change
   * wakes parked teammates to look at the board, a member change re-places members.
   */
  afterDurable(records: readonly TeamRecord[]): void {
    this.placing.noteDurable(records);
    for (const record of records) {
      if (record.type === 'message.queued' && this.state.isPending(record.message.id)) {
        this.route(record.message);
      } else if (record.type === 'approval.decided') {
        // A member parked on it resumes, with or without a decision message (the lead's own
        // call, decided by the host, gets none).
        const requester = this.state.approval(record.approvalId)?.requesterId;
        if (requester !== undefined) this.runners.get(requester)?.notify();
      }
    }
    if (this.idleClaimIntervalMs !== undefined && records.some((r) => r.type === 'task')) {
      for (const runner of this.runners.values()) if (!runner.isLead) runner.notify();
    }
    if (this.placing.placed && records.some((r) => r.type === 'member')) {
      this.placing.candidatesChanged();
      // a member placed here before this process had read its move to `active`
      for (const record of records) {
        if (record.type === 'member' && record.member.phase === 'active') {
          this.acquired(record.member.id);
        }
      }
    }
    this.runnerChanged();
  }

  /** The log or a transcript store refused a write for `memberId`: another process runs it now. */
  fenced(memberId: string): void {
    this.lose(memberId);
    this.placing.candidatesChanged();
  }

  /**
   * Starts placing members (a shared log): this process runs what its placement gives it, and
   * stops what it loses. Resolves once the first claims settled and the members acquired then
   * were revived (a lead that cannot load its conversation fails here, like a single-process
   * open).
   */
  async startPlacement(): Promise<void> {
    await this.placing.start();
    await this.acquiring;
    const error = this.acquireError;
    this.acquireError = undefined;
    if (error !== undefined) throw error;
  }

  /** Revives `memberId` (in turn with other acquisitions) if it runs here and has work. */
  private acquired(memberId: string): void {
    if (this.handingOver || !this.runsHere(memberId) || this.runners.get(memberId)?.live) return;
    this.acquisitions++;
    this.acquiring = this.acquiring.then(async () => {
      try {
        await this.acquire(memberId);
      } catch (error) {
        this.acquireError ??= error;
        this.reportReviveFailure(memberId, error);
      } finally {
        this.acquisitions--;
        this.runnerChanged();
      }
    });
  }

  /** This process now runs `memberId`: the lead starts; a teammate is revived if it has work. */
  private async acquire(memberId: string): Promise<void> {
    if (this.pipeline.closed || !this.runsHere(memberId)) return;
    const external = this.state.member(memberId);
    if (external !== undefined && this.external.isExternal(external)) {
      if (external.phase !== 'active') return;
      this.external.serve(external);
      for (const resolve of this.servedWaiters.get(memberId) ?? []) resolve();
      this.servedWaiters.delete(memberId);
      // mail that arrived while another process (or none) served it: its watchers here read it now
      if (this.state.pending(memberId).length > 0) this.external.notify(memberId);
      return;
    }
    if (memberId === this.state.leadId) {
      if (this.leadRunner === undefined) await this.startLead();
      return;
    }
    if (this.runners.get(memberId)?.live) return;
    const member = this.state.member(memberId);
    if (member?.phase !== 'active') return;
    const taskIds = this.state
      .listTasks({ status: 'in_progress' })
      .filter((task) => task.ownerId === memberId)
      .map((task) => task.id);
    const hasMail = this.state.pending(memberId).some((m) => m.delivery === 'wakeup');
    const canClaim =
      this.idleClaimIntervalMs !== undefined && this.state.listTasks({ ready: true }).length > 0;
    if (!hasMail && taskIds.length === 0 && !canClaim) {
      this.settleTurn(member);
      return;
    }
    this.waker.wake(memberId, taskIds);
  }

  /**
   * A teammate with nothing to do (no mail, no task) whose transcript says otherwise: it ends with
   * a reply the lead may never have been told of, or within a turn that never ended (mail, a task
   * prompt or a tool result durable, no reply, no idle notice). Its process stopped there (a crash,
   * a lost lease, a placement that moved it) and nothing else will ever wake it, so the team would
   * wait forever on it. A reply's notice is written now under the id the reply names
   * (`idleNoticeId`), which the old process used too, so it reaches the lead once whichever
   * process writes it; an unfinished turn is finished by reviving the member (see
   * `turnToFinish`). Checks run one at a time, off the open path; `idle()` waits for them.
   */
  private settleTurn(member: Member): void {
    if (member.id === this.state.leadId || this.external.isExternal(member)) return;
    this.settlingNotices++;
    this.settling = this.settling
      .then(async () => {
        if (this.pipeline.closed || this.handingOver || !this.runsHere(member.id)) return;
        if (this.runners.get(member.id)?.live) return; // a live runner tells the lead itself
        const entries = await loadTranscript(this.transcripts, member.id);
        if (this.runners.get(member.id)?.live || !this.runsHere(member.id)) return;
        const end = turnToFinish(member.id, entries, (id) => this.state.wasQueued(id));
        if (end === undefined) return;
        if (end.kind === 'unfinished') {
          this.waker.wake(member.id);
          return;
        }
        const current = this.state.member(member.id) ?? member;
        await queueIdleNotice(this.context, current, end.reply.text, 'transcript', end.noticeId);
      })
      .catch((error: unknown) => {
        // stopped on purpose, or the member moved on: nothing of this process's to tell
        if (this.pipeline.closed || !this.runsHere(member.id)) return;
        this.reportReviveFailure(member.id, error);
      })
      .finally(() => {
        this.settlingNotices--;
        this.runnerChanged();
      });
  }

  /** This process no longer runs `memberId`: its runner stops, writing nothing more. */
  private lose(memberId: string): void {
    this.releasing.delete(memberId);
    this.external.lost(memberId);
    const runner = this.runners.get(memberId);
    if (runner === undefined) return;
    this.runners.delete(memberId);
    if (runner === this.leadRunner) this.leadRunner = undefined;
    void runner.stop(
      new TeamError('NOT_PLACED_HERE', `${runner.name} now runs in another process of this team`, {
        details: { memberId },
      }),
    );
    this.runnerChanged();
  }

  /**
   * The placement hands `memberId` to another process: its runner ends at its next turn boundary
   * (at once when it is parked) and is not revived here until the placement answers. Resolves
   * when nothing more is written for it here.
   */
  private async release(memberId: string): Promise<void> {
    // after dispose nothing is written for any member: there is nothing to wait for
    if (!this.runsHere(memberId) || this.pipeline.closed) return;
    this.releasing.add(memberId);
    const member = this.state.member(memberId);
    if (member !== undefined && this.external.isExternal(member)) return;
    const runner = this.runners.get(memberId);
    if (runner === undefined) return;
    await runner.handOver(
      new TeamError('NOT_PLACED_HERE', `${runner.name} moves to another process of this team`, {
        details: { memberId },
      }),
    );
    if (this.runners.get(memberId) === runner) {
      this.runners.delete(memberId);
      if (runner === this.leadRunner) this.leadRunner = undefined;
    }
    this.runnerChanged();
  }

  /**
   * This process is closing: every member it runs stops at its next turn boundary, waiting at most
   * `timeoutMs`; then (or at once) the members can be handed to other processes, and none is
   * revived here any more. A member whose turn did not end in time is named in an `error` event
   * (`TIMEOUT`): its turn is aborted by `stopAll` and redone by the process that takes it over.
   */
  async handOverAll(timeoutMs = this.options.handoverTimeoutMs): Promise<void> {
    if (!this.placing.placed || this.pipeline.closed) return;
    this.handingOver = true;
    const members = [...this.runners.keys()];
    const released = Promise.allSettled(members.map((memberId) => this.release(memberId)));
    let cancel = () => {};
    const bound = new Promise<'late'>((resolve) => {
      cancel = this.clock.setTimer(timeoutMs, () => resolve('late'));
    });
    const outcome = await Promise.race([released, bound]);
    cancel();
    if (outcome !== 'late') return;
    for (const runner of this.runners.values()) {
      if (!runner.live) continue;
      this.events.publish(runner.name, {
        type: 'error',
        code: 'TIMEOUT',
        message: `${runner.name} did not reach a turn boundary within ${timeoutMs} ms of closing: it is handed over anyway, and its turn is redone by the process that takes it`,
      });
    }
  }

  private reportReviveFailure(memberId: string, error: unknown): void {
    const failure = TeamError.isInstance(error)
      ? error
      : new TeamError('INVALID_ARGUMENT', String(error), { cause: error });
    this.events.publish(this.state.member(memberId)?.name ?? memberId, {
      type: 'error',
      code: failure.code,
      message: `could not revive: ${failure.message}`,
    });
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
    this.external.close();
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
    if (this.placing.placed) {
      await this.startPlacement();
      return;
    }
    const { state } = this;
    await this.startLead();
    for (const member of state.members()) {
      if (member.phase === 'active' && this.external.isExternal(member))
        this.external.serve(member);
    }

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
    // The others have nothing to do: the lead hears of a reply it may have missed.
    for (const member of state.members()) {
      if (member.phase === 'active' && !this.runners.get(member.id)?.live) {
        this.settleTurn(member);
      }
    }
  }

  /**
   * Settles the members a crash left `provisioning` (recorded by the lead), dead-letters the mail
   * of members that left, then loads and starts the lead's runner. A member with transcript entries becomes `active`, else `failed`; an
   * isolated one always fails (its workspace was never recorded) and its workspace is handed back
   * to the provider, so no orphan is left.
   */
  private async startLead(): Promise<void> {
    const { state } = this;
    const leadId = state.leadId as string;
    for (const member of state.members()) {
      if (member.phase !== 'provisioning') continue;
      // An external member needs nothing prepared: its spawn had only its activation left.
      const external = this.external.isExternal(member);
      const isolated = !external && this.workspaces.isIsolated(member);
      const entries = isolated || external ? [] : await loadTranscript(this.transcripts, member.id);
      await this.pipeline.commit(
        member.name,
        () => {
          if (state.member(member.id)?.phase !== 'provisioning') return [];
          return external || entries.length > 0
            ? [state.setMemberPhase(member.id, 'active')]
            : state.leave(member.id, 'failed', 'interrupted while provisioning');
        },
        { actorId: leadId },
      );
      if (isolated) await this.workspaces.cleanUp(member);
    }
    // Mail still pending for members that left can never be taken: it ends as dead letters.
    await this.pipeline.commit('lead', () => state.deadLetterOrphans(), { actorId: leadId });
    const leadMember = state.member(leadId) as Member;
    if (this.external.isExternal(leadMember)) {
      // an external lead takes its turns in its client; teammates' notices wait in its inbox
      this.external.serve(leadMember);
      return;
    }
    const lead = this.createRunner(leadId);
    this.leadRunner = lead;
    // A lead whose conversation cannot be loaded fails the open, not a later prompt.
    await lead.prepare();
    void lead.start();
  }

  /** A fork's seed from the lead's stored conversation (its messages up to a settled step). */
  private async leadSeed(): Promise<ChatMessage[]> {
    const leadId = this.state.leadId as string;
    const entries = await loadTranscript(this.transcripts, leadId);
    return forkSeed(conversationMessages(entries));
  }

  private isQuiet(): boolean {
    if (this.pipeline.busy || this.settlingNotices > 0 || this.acquisitions > 0) return false;
    for (const runner of this.runners.values()) {
      if (!runner.live) continue;
      if (runner.busy) return false;
      // A member parked on an approval takes no mail before the decision, which wakes it.
      if (runner.awaitingApproval) continue;
      if (runner.owesTurn) return false;
      const pending = this.state.pending(runner.member.id);
      if (pending.some((m) => m.delivery === 'wakeup')) return false;
    }
    return true;
  }

  private createRunner(memberId: string, resumeTasks: readonly string[] = []): AgentRunner {
    const member = this.state.member(memberId) as Member;
    const definition = this.options.agents.model(member.agentType);
    const isLead = memberId === this.state.leadId;
    const teammates = this.state
      .members()
      .filter((m) => m.id !== memberId && m.id !== this.state.leadId && isLivePhase(m.phase))
      .map((m) => m.name);
    const runner = new AgentRunner(this.context, member, definition, {
      isLead,
      resumeTasks,
      teammates,
    });
    this.runners.set(memberId, runner);
    if (this.placing.placed && !isLead && member.context === 'fork') {
      // Spawned by a lead in another process: the copy of its conversation comes from the store.
      runner.prepare(() => this.leadSeed()).catch(() => undefined);
    }
    return runner;
  }
}

/** Whether members of a type can ask for approval: a policy, plan approval, or a tool that needs it. */
function asksApproval(definition: AnyAgentDefinition): boolean {
  if (definition.external === true) return false;
  return (
    definition.approval !== undefined ||
    definition.planApproval === true ||
    (definition.tools ?? []).some(
      (tool) => tool.needsApproval !== undefined && tool.needsApproval !== false,
    )
  );
}
