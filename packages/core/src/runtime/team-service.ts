import type { IdSource } from '../clock.js';
import type { ContentBlock } from '../content.js';
import { clipText, textContent } from '../content.js';
import { TeamError } from '../errors.js';
import { isWithinTextLimit, MEMBER_ERROR_MAX, TASK_PAGE_MAX, utf8Length } from '../limits.js';
import type { MemberPlacement } from '../ports/placement.js';
import type { TeamPolicy } from '../ports/team-policy.js';
import type {
  GateRefusedRecord,
  Member,
  MessageDelivery,
  MessageQueuedRecord,
  TaskRecord,
  TeamRecord,
} from '../records.js';
import { MessageDelivery as MessageDeliverySchema } from '../records.js';
import { taskNumber } from '../rules.js';
import type {
  ApprovalFilter,
  CreateTaskInput,
  TaskView,
  TeamLimits,
  TeamState,
  UpdateTaskInput,
} from '../state/index.js';
import { type AgentRegistry, providerOf } from './agents.js';
import {
  approvalRequestText,
  approvalView,
  approverOf,
  decisionRecords,
  GATE_REFUSALS_DEFAULT,
} from './approvals.js';
import type { ChangeWaiters } from './change-waiters.js';
import type { CommitPipeline } from './commit-pipeline.js';
import type { Credentials } from './credentials.js';
import type { LiveRelay } from './live-relay.js';
import { bindMemberService } from './member-service.js';
import type { RunnerPool } from './runner-pool.js';
import type {
  AckInboxResult,
  AgentRef,
  ApprovalView,
  DecideInput,
  InboxPage,
  ListTasksInput,
  ListTasksResult,
  MemberInfo,
  Membership,
  MemberTeamService,
  ReadInboxInput,
  SendMessageInput,
  SendMessageResult,
  SpawnTeammateInput,
  SpawnTeammateResult,
  TeamGates,
  TeamService,
  TurnOutcome,
  WaitForChangeInput,
  WaitForChangeResult,
} from './service-types.js';
import type { SnapshotScheduler } from './snapshots.js';
import type { TeamProgress } from './team-progress.js';

const MEMBER_COLORS = ['blue', 'green', 'yellow', 'purple', 'orange', 'pink', 'cyan', 'red'];
const DEFAULT_PAGE = 50;

/**
 * Why a member failed, shortened to fit a member record's `error`. A workspace failure leads with
 * its code (`WORKSPACE_TAKEN: ...`), so the lead can tell it from the roster alone.
 */
function failureReason(error: unknown): string {
  const message = error instanceof Error ? error.message : String(error);
  const why =
    TeamError.isInstance(error) && error.code.startsWith('WORKSPACE_')
      ? `${error.code}: ${message}`
      : message;
  return isWithinTextLimit(why, MEMBER_ERROR_MAX) ? why : clipText(why, MEMBER_ERROR_MAX);
}

/** The parts a service is made of; `openTeam` builds and wires them. */
export interface TeamServiceParts {
  teamId: string;
  /** The host's quality gates, if any. */
  gates?: TeamGates | undefined;
  state: TeamState;
  ids: IdSource;
  agents: AgentRegistry;
  policy: TeamPolicy;
  credentials: Credentials;
  pipeline: CommitPipeline;
  /**
   * Builds the runner pool, given how a member's tools reach the team (this facade, bound to the
   * member): the facade exists before any runner needs it, so nothing is bound late.
   */
  pool: (memberService: (agent: AgentRef) => MemberTeamService) => RunnerPool;
  waiters: ChangeWaiters;
  /** Released on dispose, so other processes take this one's members over at once. */
  placement?: MemberPlacement | undefined;
  /** Finishes its write in flight on dispose, before the caller closes the log. */
  snapshots: SnapshotScheduler;
  /** Relays live events between the team's processes; sends what it holds and stops on dispose. */
  live?: LiveRelay | undefined;
}

/**
 * The public service: checks each call's credential, applies the command to the state and commits
 * it through the pipeline, then hands mail to the runner pool. It holds nothing a tool could use
 * to bypass that: tools get a {@link MemberTeamService} bound to their member, whose methods close
 * over this facade's public methods only.
 */
export class TeamServiceFacade implements TeamService {
  readonly teamId: string;
  private readonly pipeline: CommitPipeline;
  /** The runners of this process (internal: `openTeam` wires it to the pipeline's feed). */
  readonly pool: RunnerPool;
  private readonly state: TeamState;
  private readonly ids: IdSource;
  private readonly agents: AgentRegistry;
  private readonly policy: TeamPolicy;
  private readonly credentials: Credentials;
  private readonly waiters: ChangeWaiters;
  private readonly placement: MemberPlacement | undefined;
  private readonly snapshots: SnapshotScheduler;
  private readonly live: LiveRelay | undefined;
  private readonly views = new Map<string, MemberTeamService>();
  private readonly gates: TeamGates | undefined;
  private disposed: Promise<void> | undefined;

  constructor(parts: TeamServiceParts) {
    this.teamId = parts.teamId;
    this.state = parts.state;
    this.ids = parts.ids;
    this.agents = parts.agents;
    this.policy = parts.policy;
    this.credentials = parts.credentials;
    this.pipeline = parts.pipeline;
    this.pool = parts.pool((agent) => this.forMember(agent));
    this.waiters = parts.waiters;
    this.placement = parts.placement;
    this.snapshots = parts.snapshots;
    this.live = parts.live;
    this.gates = parts.gates;
  }

  get limits(): TeamLimits {
    return this.state.limits;
  }

  get lead(): AgentRef {
    return this.credentials.refFor(this.state.leadId as string);
  }

  // ------------------------------------------------------------ reads

  forMember(agent: AgentRef): MemberTeamService {
    const memberId = this.credentials.memberIdOf(agent);
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
      agent: this.credentials.refFor(member.id),
      member,
      isLead: member.id === this.state.leadId,
      status: this.pool.statusOf(member),
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

  progress(agent: AgentRef): TeamProgress {
    return this.pool.progress(this.resolve(agent).id);
  }

  listMembers(agent: AgentRef): MemberInfo[] {
    this.resolve(agent);
    return this.state.members().map((member) => {
      const failure = this.pool.failureOf(member.id);
      const process = this.pool.processOf(member.id);
      return {
        ...member,
        memberId: member.id,
        status: this.pool.statusOf(member),
        isLead: member.id === this.state.leadId,
        ...(process === undefined ? {} : { process }),
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
        { details: { limit } },
      );
    }
    let after = 0;
    if (input.cursor !== undefined) {
      const cursor = typeof input.cursor === 'string' ? taskNumber(input.cursor) : undefined;
      if (cursor === undefined) {
        throw new TeamError('INVALID_ARGUMENT', `invalid cursor ${JSON.stringify(input.cursor)}`);
      }
      after = cursor;
    }
    const all = this.state.listTasks({
      status: input.status,
      ownerId: input.ownerId,
      ready: input.ready,
    });
    const rest = after === 0 ? all : all.filter((t) => (taskNumber(t.id) ?? 0) > after);
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
    const bytes = utf8Length(JSON.stringify(content));
    if (bytes > this.limits.maxMessageBytes) {
      throw new TeamError(
        'MESSAGE_TOO_LARGE',
        `the prompt is ${bytes} bytes, over the limit of ${this.limits.maxMessageBytes}`,
        { details: { bytes, limit: this.limits.maxMessageBytes } },
      );
    }
    const context = input.context ?? 'fresh';
    const { state, pipeline } = this;
    const memberId = this.ids.next();
    // One decision: a prompt that cannot be queued leaves no member behind (the name stays free).
    const [, queued] = await pipeline.commit(
      caller.name,
      () => [
        state.spawnMember(caller.id, {
          id: memberId,
          name: input.name,
          description: input.description,
          agentType: input.agentType,
          provider: providerOf(definition),
          context,
          color: MEMBER_COLORS[(state.members().length - 1) % MEMBER_COLORS.length] as string,
        }),
        state.queueMessage({
          id: this.ids.next(),
          senderId: caller.id,
          targetId: memberId,
          kind: 'message',
          delivery: 'wakeup',
          content,
        }),
      ],
      { actorId: caller.id },
    );

    let prepared: Awaited<ReturnType<RunnerPool['prepareTeammate']>>;
    try {
      prepared = await this.pool.prepareTeammate(memberId, context);
    } catch (error) {
      if (!pipeline.closed) {
        const why = failureReason(error);
        await pipeline.commit(caller.name, () => state.leave(memberId, 'failed', why), {
          actorId: caller.id,
        });
      }
      throw error;
    }
    await pipeline.commit(
      caller.name,
      () => [state.activateMember(memberId, { workspace: prepared.workspace })],
      { actorId: caller.id },
    );
    prepared.start();
    // An external member this process's client runs is usable once the placement hands it here.
    await this.pool.whenServed(memberId, 10_000);
    return { memberId, name: input.name, messageId: queued.message.id };
  }

  async sendMessage(agent: AgentRef, input: SendMessageInput): Promise<SendMessageResult> {
    const sender = this.resolve(agent);
    const target = this.memberNamed(input.to, 'UNKNOWN_TARGET');
    let content: ContentBlock[];
    if (input.content !== undefined) content = input.content;
    else if (typeof input.text === 'string') content = textContent(input.text);
    else throw new TeamError('INVALID_ARGUMENT', 'a message needs text or content');
    const delivery: MessageDelivery = input.delivery ?? 'wakeup';
    if (!MessageDeliverySchema.safeParse(delivery).success) {
      throw new TeamError(
        'INVALID_ARGUMENT',
        `delivery must be one of ${MessageDeliverySchema.options.map((d) => `"${d}"`).join(', ')}`,
      );
    }
    const id = this.ids.next();
    const { result: records, status } = await this.pool.routed(id, () =>
      this.pipeline.commit(
        sender.name,
        () => [
          this.state.queueMessage({
            id,
            senderId: sender.id,
            targetId: target.id,
            kind: 'message',
            delivery,
            content,
            summary: input.summary,
          }),
        ],
        { actorId: sender.id },
      ),
    );
    return { messageId: (records[0] as MessageQueuedRecord).message.id, status };
  }

  async createTask(agent: AgentRef, input: CreateTaskInput): Promise<TaskView> {
    const caller = this.resolve(agent);
    const [record] = await this.pipeline.commit(
      caller.name,
      () => [this.state.createTask(caller.id, input)],
      { actorId: caller.id },
    );
    return this.state.getTask(record.task.id);
  }

  async updateTask(agent: AgentRef, input: UpdateTaskInput): Promise<TaskView> {
    const caller = this.resolve(agent);
    const { state } = this;
    if (input?.action?.type === 'complete' && this.gates?.taskCompleted !== undefined) {
      await this.completionGate(caller, input);
    }
    const records = await this.pipeline.commit(
      caller.name,
      () => {
        const record = state.updateTask(caller.id, input);
        const decided: TeamRecord[] = [record];
        const newOwner = record.task.ownerId;
        if (input.action.type === 'reassign' && newOwner !== undefined && newOwner !== caller.id) {
          try {
            decided.push(
              state.queueMessage({
                id: this.ids.next(),
                senderId: caller.id,
                targetId: newOwner,
                kind: 'task_assignment',
                delivery: 'wakeup',
                content: textContent(
                  this.policy.formatAssignmentNotice({
                    task: record.task,
                    assignedBy: caller.name,
                  }),
                ),
                taskId: record.task.id,
              }),
            );
          } catch (error) {
            // The task is reassigned even when the notice does not fit (e.g. a full mailbox).
            if (!TeamError.isInstance(error)) throw error;
          }
        }
        return decided;
      },
      { actorId: caller.id },
    );
    const record = records[0] as TaskRecord;
    return state.getTask(record.task.id);
  }

  waitForChange(agent: AgentRef, input: WaitForChangeInput): Promise<WaitForChangeResult> {
    const caller = this.resolve(agent);
    const { external } = this.pool;
    const stalled = () => {
      const progress = this.pool.progress(caller.id);
      return progress.progressing ? undefined : progress.summary;
    };
    if (!external.isExternal(caller)) return this.waiters.wait(input, stalled);
    // an external member waiting shows as idle, and is not silent while it waits
    return external.waiting(caller, () => this.waiters.wait(input, stalled));
  }

  // ------------------------------------------------------------ external members

  externalMember(name: string): AgentRef {
    this.pipeline.guard();
    const member = this.memberNamed(name, 'UNKNOWN_MEMBER');
    const ref = this.credentials.refFor(member.id);
    this.credentials.resolve(ref);
    this.pool.external.requireServed(member);
    return ref;
  }

  readInbox(agent: AgentRef, input?: ReadInboxInput): Promise<InboxPage> {
    try {
      return this.pool.external.read(this.resolve(agent), input);
    } catch (error) {
      return Promise.reject(error);
    }
  }

  ackInbox(agent: AgentRef, input: { cursor: string }): Promise<AckInboxResult> {
    try {
      return this.pool.external.ack(this.resolve(agent), input?.cursor);
    } catch (error) {
      return Promise.reject(error);
    }
  }

  watchInbox(agent: AgentRef, listener: () => void): () => void {
    const member = this.resolve(agent);
    this.pool.external.requireServed(member);
    if (typeof listener !== 'function') {
      throw new TeamError('INVALID_ARGUMENT', 'watchInbox needs a listener function');
    }
    return this.pool.external.watch(member.id, listener);
  }

  // ------------------------------------------------------------ approvals and gates

  async decide(input: DecideInput, agent?: AgentRef): Promise<ApprovalView> {
    const caller = agent === undefined ? undefined : this.resolve(agent);
    if (agent === undefined) this.pipeline.guard();
    const { state } = this;
    if (input?.decision !== 'approved' && input?.decision !== 'rejected') {
      throw new TeamError('INVALID_ARGUMENT', 'decision must be "approved" or "rejected"');
    }
    if (input.reason !== undefined && typeof input.reason !== 'string') {
      throw new TeamError('INVALID_ARGUMENT', 'reason must be a string');
    }
    const approval = state.getApproval(String(input.approvalId));
    if (caller !== undefined && approval.approverId !== caller.id) {
      throw new TeamError(
        'NOT_THE_APPROVER',
        `${caller.name} is not the approver of approval ${approval.id}`,
        { details: { approvalId: approval.id } },
      );
    }
    const messageId = this.ids.next();
    await this.pool.routed(messageId, () =>
      this.pipeline.commit(
        caller?.name ?? 'host',
        () =>
          decisionRecords(state, {
            approvalId: approval.id,
            decision: input.decision,
            reason: input.reason,
            deciderId: caller?.id,
            messageId,
          }),
        caller === undefined ? {} : { actorId: caller.id },
      ),
    );
    return approvalView(state, state.getApproval(approval.id));
  }

  approvals(filter?: ApprovalFilter): ApprovalView[] {
    this.pipeline.guard();
    return this.state.approvals(filter).map((approval) => approvalView(this.state, approval));
  }

  async submitPlan(agent: AgentRef, input: { plan: string }): Promise<ApprovalView> {
    const caller = this.resolve(agent);
    const { state } = this;
    const definition = this.agents.get(caller.agentType);
    if (definition.external === true || definition.planApproval !== true) {
      throw new TeamError(
        'APPROVAL_STATE',
        `${caller.name} works without plan approval: it has nothing to submit`,
      );
    }
    if (state.planApproved(caller.id)) {
      throw new TeamError('APPROVAL_STATE', `${caller.name}'s plan is already approved`);
    }
    const id = this.ids.next();
    const messageId = this.ids.next();
    await this.pool.routed(messageId, () =>
      this.pipeline.commit(
        caller.name,
        () => {
          const approverId = approverOf(state, caller, definition);
          const task = state
            .listTasks({ status: 'in_progress' })
            .find((candidate) => candidate.ownerId === caller.id);
          const requested = state.requestApproval({
            id,
            kind: 'plan',
            requesterId: caller.id,
            approverId,
            plan: typeof input?.plan === 'string' ? input.plan : '',
            taskId: task?.id,
          });
          if (approverId === undefined) return [requested];
          return [
            requested,
            state.queueMessage({
              id: messageId,
              senderId: caller.id,
              targetId: approverId,
              kind: 'approval_request',
              delivery: 'wakeup',
              content: textContent(approvalRequestText(state.getApproval(id), caller.name)),
              summary: `${caller.name}'s plan`,
              approvalId: id,
            }),
          ];
        },
        { actorId: caller.id },
      ),
    );
    return approvalView(state, state.getApproval(id));
  }

  /**
   * The host's completion gate: a refusal is recorded (counted in a row for the task), the
   * owner told by mail when someone else completed its task, the lead told at the bound, and the
   * call refused with `GATE_REFUSED` carrying the feedback. The task is left as it was.
   */
  private async completionGate(caller: Member, input: UpdateTaskInput): Promise<void> {
    const { state } = this;
    const gate = this.gates?.taskCompleted;
    if (gate === undefined) return;
    const task = state.getTask(input.taskId);
    if (task.status !== 'in_progress') return; // the state refuses it with its own code
    const owner = state.member(task.ownerId ?? caller.id) ?? caller;
    let verdict: Awaited<ReturnType<typeof gate>>;
    try {
      verdict = await gate({ task, member: owner });
    } catch (error) {
      verdict = {
        allow: false,
        feedback: `the completion gate failed: ${error instanceof Error ? error.message : String(error)}`,
      };
    }
    if (verdict.allow) return;
    const max = this.gates?.maxRefusals ?? GATE_REFUSALS_DEFAULT;
    const ownerMailId = this.ids.next();
    const leadMailId = this.ids.next();
    const [refused] = await this.pipeline.commit(
      caller.name,
      () => {
        const record = state.refuseByGate({
          gate: 'task_completed',
          memberId: owner.id,
          taskId: task.id,
          feedback: verdict.feedback,
        });
        const records: TeamRecord[] = [record];
        if (owner.id !== caller.id && state.isLive(owner.id)) {
          records.push(
            state.queueMessage({
              id: ownerMailId,
              senderId: caller.id,
              targetId: owner.id,
              kind: 'gate_feedback',
              delivery: 'wakeup',
              content: textContent(
                `${task.id} was not completed (the completion gate): ${record.feedback}`,
              ),
              summary: `${task.id}: completion refused`,
              taskId: task.id,
            }),
          );
        }
        const leadId = state.leadId;
        if (
          record.attempt === max &&
          leadId !== undefined &&
          leadId !== caller.id &&
          state.isLive(leadId)
        ) {
          records.push(
            state.queueMessage({
              id: leadMailId,
              senderId: caller.id,
              targetId: leadId,
              kind: 'gate_feedback',
              delivery: 'wakeup',
              content: textContent(
                `The completion gate refused ${task.id} (${owner.name}) ${record.attempt} times in a row; its last feedback: ${record.feedback}. The task stays in progress: decide what to do with it.`,
              ),
              summary: `${task.id}: completion refused ${record.attempt} times`,
              taskId: task.id,
            }),
          );
        }
        return records;
      },
      { actorId: caller.id },
    );
    const feedback = (refused as GateRefusedRecord).feedback;
    throw new TeamError('GATE_REFUSED', `${task.id} stays in progress: ${feedback}`, {
      details: { taskId: task.id, attempt: (refused as GateRefusedRecord).attempt },
    });
  }

  async interrupt(agent: AgentRef, input: { target: string }): Promise<{ interrupted: boolean }> {
    const caller = this.resolve(agent);
    this.requireLead(caller, 'interrupt members');
    const target = this.memberNamed(input.target, 'UNKNOWN_MEMBER');
    return { interrupted: this.pool.interrupt(target.id) };
  }

  async shutdown(
    agent: AgentRef,
    input: { target: string; reason?: string | undefined },
  ): Promise<SendMessageResult> {
    const caller = this.resolve(agent);
    this.requireLead(caller, 'shut down teammates');
    const target = this.memberNamed(input.target, 'UNKNOWN_TARGET');
    const id = this.ids.next();
    const { result: records, status } = await this.pool.routed(id, () =>
      this.pipeline.commit(
        caller.name,
        () => [
          this.state.queueMessage({
            id,
            senderId: caller.id,
            targetId: target.id,
            kind: 'shutdown_request',
            delivery: 'wakeup',
            content:
              input.reason === undefined || input.reason === '' ? [] : textContent(input.reason),
          }),
        ],
        { actorId: caller.id },
      ),
    );
    return { messageId: (records[0] as MessageQueuedRecord).message.id, status };
  }

  promptLead(input: string | ContentBlock[]): Promise<TurnOutcome> {
    try {
      this.pipeline.guard();
    } catch (error) {
      return Promise.reject(error);
    }
    return this.pool.promptLead(typeof input === 'string' ? textContent(input) : input);
  }

  idle(): Promise<void> {
    return this.pool.idle();
  }

  dispose(): Promise<void> {
    if (this.disposed === undefined) {
      // With a placement, members stop at a turn boundary first (the pipeline still open for
      // their last writes), so the processes that take them over redo nothing. Without one, calls
      // are refused from now on.
      if (this.placement === undefined) this.pipeline.close();
      this.disposed = this.pool
        .handOverAll()
        .then(() => {
          this.pipeline.close();
          return this.pool.stopAll();
        })
        .then(async () => {
          this.waiters.finishAll();
          this.pool.releaseIdleWaiters();
          // the runners' last events go out before the members are handed back
          this.live?.close();
          await this.placement?.close();
          await this.snapshots.close();
        });
    }
    return this.disposed;
  }

  // ------------------------------------------------------------ checks

  /** Resolves a credential to its live member, or throws `NOT_A_MEMBER` (or the write gate's). */
  private resolve(agent: AgentRef): Member {
    this.pipeline.guard();
    return this.credentials.resolve(agent);
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
}
