import type { Clock } from '../clock.js';
import { systemClock } from '../clock.js';
import { clipText } from '../content.js';
import { TeamError } from '../errors.js';
import { utf8Length } from '../limits.js';
import type { TraceContextSource } from '../ports/trace-context.js';
import type {
  ApprovalDecidedRecord,
  ApprovalDecision,
  ApprovalKind,
  ApprovalRequest,
  ApprovalRequestedRecord,
  ApprovalStartedRecord,
  DeadLetter,
  DeadLetterReason,
  GateName,
  GateRefusedRecord,
  Member,
  MemberPhase,
  MemberRecord,
  MemberWorkspace,
  MessageDeadLetteredRecord,
  MessageDeliveredRecord,
  MessageQueuedRecord,
  QueuedMessage,
  Task,
  TaskRecord,
  TeamRecord,
} from '../records.js';
import {
  APPROVAL_INPUT_BYTES_MAX,
  APPROVAL_REASON_MAX,
  checkRecordInput,
  DEAD_LETTER_DETAIL_MAX,
  MessageTrace,
  messageSchemaVersion,
  RECORD_SCHEMA_VERSIONS,
} from '../records.js';
import type { Approval, ApprovalFilter } from './approvals.js';
import { decideDelivered, decideQueueMessage, type QueueMessageInput } from './mail-commands.js';
import { refuseIf } from './problem.js';
import {
  type CreateLeadInput,
  decideCreateLead,
  decideMemberPhase,
  decideSpawnMember,
  type SpawnMemberInput,
} from './roster-commands.js';
import { parseTeamStateSnapshot, type TeamStateSnapshot } from './snapshot.js';
import type { TaskListFilter, TaskView } from './task-board.js';
import {
  type CreateTaskInput,
  decideCreateTask,
  decideReleaseTasksOf,
  decideUpdateTask,
  type UpdateTaskInput,
} from './task-commands.js';
import { resolveLimits, type TeamLimits } from './team-limits.js';
import { TeamModel } from './team-model.js';

export type { Approval, ApprovalFilter, ApprovalStatus, GateCount } from './approvals.js';
export type { QueueMessageInput } from './mail-commands.js';

/** Input of {@link TeamState.requestApproval}. */
export interface RequestApprovalInput {
  /** The new approval's id (a ulid); must not be taken. */
  id: string;
  /** A tool call or a plan. */
  kind: ApprovalKind;
  /** The live member that asks. */
  requesterId: string;
  /** The live member that decides; absent: only the host decides. */
  approverId?: string | undefined;
  /** For `tool`: the call's id in the requester's transcript. */
  toolCallId?: string | undefined;
  /** For `tool`: the tool called. */
  toolName?: string | undefined;
  /** For `tool`: the call's input (kept as JSON, clipped past `APPROVAL_INPUT_BYTES_MAX`). */
  input?: unknown;
  /** For `plan`: the plan. */
  plan?: string | undefined;
  /** The task the requester works on, if any. */
  taskId?: string | undefined;
  /** When it expires undecided (the team clock's ms); absent: never. */
  expiresAt?: number | undefined;
}
export type { CreateLeadInput, SpawnMemberInput } from './roster-commands.js';
export type { CreateTaskInput, UpdateTaskInput } from './task-commands.js';
export type { TeamLimits } from './team-limits.js';
export { DEFAULT_TEAM_LIMITS } from './team-limits.js';

/** Options of {@link TeamState} and {@link TeamState.fromRecords}. */
export interface TeamStateOptions {
  /** The team id; every record built or applied must carry it. */
  teamId: string;
  /** Stamps the `at` of records built by commands; defaults to the system clock. */
  clock?: Clock;
  /** Overrides of {@link DEFAULT_TEAM_LIMITS}. */
  limits?: Partial<TeamLimits> | undefined;
  /** Stamps queued mail with its sender's trace context (see {@link TraceContextSource}). */
  traceContext?: TraceContextSource | undefined;
}

/** The fields every record carries, stamped by `emit`. */
type RecordHeader = Pick<TeamRecord, 'seq' | 'at' | 'teamId' | 'schemaVersion'>;

/**
 * The state of one team, kept incrementally from its team log: roster, task board and pending
 * mail. Replay feeds records to {@link apply}; commands validate a request, build the one record
 * that expresses it, apply it and return it for the caller to append to the `TeamLog`. Every
 * operation costs O(1) or at worst O(tasks), never a re-read of history, so a team behaves the
 * same on a log of ten records or ten million.
 *
 * It is a facade over two halves: the evolving state (`TeamModel`: the roster, task board and
 * mailboxes, changed only by applying records) and the commands (`*-commands.ts`: pure decisions
 * that read the state and return the snapshot a record carries). A command's record is applied
 * like any record read from the log, so the invariants it must keep are checked once, by the
 * aggregate that owns them.
 *
 * Records returned by commands are shared with the state: treat them as immutable.
 */
export class TeamState {
  /** The team id every record carries. */
  readonly teamId: string;
  /** The limits commands enforce (defaults with the overrides). */
  readonly limits: TeamLimits;
  private readonly clock: Clock;
  private readonly traceContext: TraceContextSource | undefined;
  private model: TeamModel;

  constructor(options: TeamStateOptions) {
    if (typeof options?.teamId !== 'string' || options.teamId.length === 0) {
      throw new TeamError('INVALID_ARGUMENT', 'teamId must be a non-empty string');
    }
    this.teamId = options.teamId;
    this.clock = options.clock ?? systemClock;
    this.limits = resolveLimits(options.limits);
    this.traceContext = options.traceContext;
    this.model = new TeamModel(this.teamId);
  }

  /**
   * Strict replay of a whole log through {@link apply}. Records of other teams (the inherited
   * prefix of a forked log) only advance {@link lastSeq}.
   */
  static fromRecords(records: Iterable<TeamRecord>, options: TeamStateOptions): TeamState {
    const state = new TeamState(options);
    const model = state.model;
    for (const record of records) model.apply(record);
    return state;
  }

  /**
   * The state a stored snapshot describes (see {@link TeamStateSnapshot}), validated: its shape
   * (`SNAPSHOT_INVALID`, or `UNSUPPORTED_SCHEMA_VERSION` for a newer version), its team, and the
   * invariants that span its parts (unique ids and names, task numbering, members behind every
   * task and message, blockers that exist and form no cycle). Apply the records after its `seq`
   * to bring it up to date: the result equals the strict fold of the whole log.
   */
  static fromSnapshot(snapshot: unknown, options: TeamStateOptions): TeamState {
    const checked = parseTeamStateSnapshot(snapshot);
    const state = new TeamState(options);
    state.model = TeamModel.restore(state.teamId, checked);
    return state;
  }

  /**
   * The state as a {@link TeamStateSnapshot} at {@link lastSeq}; `INVALID_ARGUMENT` while records
   * applied speculatively are not yet settled. Shares the stored (immutable) values.
   */
  snapshot(): TeamStateSnapshot {
    return this.model.snapshot();
  }

  /** The seq of the last record applied (0 for a new team); the next record takes the one after. */
  get lastSeq(): number {
    return this.model.lastSeq;
  }

  /** The lead's member id, once the lead record exists. */
  get leadId(): string | undefined {
    return this.model.roster.leadId;
  }

  /**
   * Applies one record. Strict: a record that breaks an invariant throws `LOG_INVARIANT` naming
   * its seq and leaves the state exactly as it was (every check runs before any change).
   */
  apply(record: TeamRecord): void {
    this.model.apply(record);
  }

  // ---------------------------------------------------------------- speculation

  /**
   * From now on, records applied (by commands or {@link apply}) can be reverted until they are
   * settled: a writer applies a command's records before its log made them durable, and takes
   * them back when the append loses a race to another process (or the command fails midway).
   */
  startJournal(): void {
    this.model.startJournal();
  }

  /** The seq up to which records are final (durable): nothing up to it can be reverted. */
  get settledSeq(): number {
    return this.model.settledSeq;
  }

  /** Records up to `seq` are durable; they are no longer kept for reverting. */
  settle(seq: number): void {
    this.model.settle(seq);
  }

  /**
   * Undoes every record after `seq`, newest first: the state is exactly what it was when `seq`
   * was the last record. `INVALID_ARGUMENT` for a seq before {@link settledSeq}.
   */
  revertTo(seq: number): void {
    this.model.revertTo(seq);
  }

  /**
   * The member (a copy) as the durable records have it, leaving out changes not yet settled: a
   * process tells others what it runs from this, never from a decision that may be reverted.
   */
  settledMember(id: string): Member | undefined {
    const found = this.model.settledMember(id);
    return found === undefined ? undefined : { ...found };
  }

  // ---------------------------------------------------------------- roster

  /** The member with that id (a copy), in any phase. */
  member(id: string): Member | undefined {
    const found = this.model.roster.get(id);
    return found === undefined ? undefined : { ...found };
  }

  /** The member that has (or had) this name; names are immutable and never reused. */
  memberByName(name: string): Member | undefined {
    const id = this.model.roster.idOf(name);
    return id === undefined ? undefined : this.member(id);
  }

  /** Every member ever spawned, lead first, then in spawn order. */
  members(): Member[] {
    return this.model.roster.list();
  }

  /** True when the member exists and is `provisioning` or `active`. */
  isLive(memberId: string): boolean {
    return this.model.roster.isLive(memberId);
  }

  /** Teammates holding a slot of `maxMembers` (live, lead excluded). */
  liveTeammateCount(): number {
    return this.model.roster.liveTeammateCount;
  }

  /**
   * Registers the lead (name `lead`, context `fresh`) as two records, `provisioning` then
   * `active`. Refused with `NAME_TAKEN` when the team already has a lead.
   */
  createLead(input: CreateLeadInput): MemberRecord[] {
    const member = decideCreateLead(this.model.roster, input);
    const first = this.emitMember(member);
    return [first, this.emitMember({ ...member, phase: 'active' })];
  }

  /**
   * Records a new teammate in phase `provisioning`. Only the live lead may spawn (`LEAD_ONLY`,
   * or `NOT_A_MEMBER` for a lead that is no longer live); the name must be valid and never used
   * before in this team, the other fields within their input limits (`INVALID_ARGUMENT`); live
   * teammates must stay within `maxMembers`.
   */
  spawnMember(actorId: string, input: SpawnMemberInput): MemberRecord {
    return this.emitMember(decideSpawnMember(this.model.roster, this.limits, actorId, input));
  }

  /**
   * Moves a member along its lifecycle: `provisioning -> active | failed`, `active -> retired`
   * (`INVALID_PHASE` otherwise). `error` says why a member failed, in at most `MEMBER_ERROR_MAX`
   * characters (`INVALID_ARGUMENT`; shorten a long diagnostic before recording it).
   */
  setMemberPhase(
    memberId: string,
    phase: Exclude<MemberPhase, 'provisioning'>,
    error?: string,
  ): MemberRecord {
    return this.emitMember(decideMemberPhase(this.model.roster, memberId, phase, error));
  }

  /**
   * A member leaves the team: its move to `failed` or `retired`, then a dead letter for each
   * message still pending for it (`TARGET_FAILED` or `TARGET_RETIRED`), which no one will ever
   * take. Commit the records together.
   */
  leave(memberId: string, phase: 'failed' | 'retired', error?: string): TeamRecord[] {
    const records: TeamRecord[] = [this.setMemberPhase(memberId, phase, error)];
    const reason = phase === 'failed' ? 'TARGET_FAILED' : 'TARGET_RETIRED';
    const name = this.model.roster.get(memberId)?.name ?? memberId;
    for (const message of [...this.pending(memberId)]) {
      records.push(
        this.deadLetter({
          messageId: message.id,
          reason,
          detail:
            phase === 'failed'
              ? `${name} failed${error === undefined ? '' : `: ${error}`}`
              : `${name} retired before it took this message`,
        }),
      );
    }
    return records;
  }

  /**
   * Dead letters for the mail pending for members that already left (a log written before
   * {@link leave} existed, or by a writer that stopped between the two): one sweep when a team
   * opens ends them.
   */
  deadLetterOrphans(): TeamRecord[] {
    const records: TeamRecord[] = [];
    for (const message of this.pendingMail()) {
      const target = this.model.roster.get(message.targetId);
      if (target?.phase !== 'failed' && target?.phase !== 'retired') continue;
      records.push(
        this.deadLetter({
          messageId: message.id,
          reason: target.phase === 'failed' ? 'TARGET_FAILED' : 'TARGET_RETIRED',
          detail: `${target.name} had ${target.phase === 'failed' ? 'failed' : 'retired'} when this message was still pending`,
        }),
      );
    }
    return records;
  }

  /**
   * Moves a `provisioning` member to `active` (`INVALID_PHASE` from any other phase), recording
   * `workspace`, where it works, when it has one of its own: the record keeps it for every later
   * record of the member, so a revived member finds the same directory. Without a workspace it is
   * `setMemberPhase(memberId, 'active')`. The workspace is schema-checked (`INVALID_ARGUMENT`).
   */
  activateMember(
    memberId: string,
    options: {
      /** Where the member works (see {@link MemberWorkspace}). */
      workspace?: MemberWorkspace | undefined;
    } = {},
  ): MemberRecord {
    return this.emitMember(
      decideMemberPhase(this.model.roster, memberId, 'active', undefined, options.workspace),
    );
  }

  /**
   * System action (no authorization), e.g. when a teammate stops: every `in_progress` task owned
   * by `memberId` goes back to `pending`, unowned, one record per task.
   */
  releaseTasksOf(memberId: string): TaskRecord[] {
    return decideReleaseTasksOf(this.model.board, memberId).map((task) => this.emitTask(task));
  }

  // ---------------------------------------------------------------- tasks

  /** A task with its derived facts; tombstones are readable. */
  task(id: string): TaskView | undefined {
    const board = this.model.board;
    const found = board.get(id);
    return found === undefined ? undefined : board.view(found);
  }

  /** Like {@link task}, but `TASK_NOT_FOUND` when there is no such task. */
  getTask(id: string): TaskView {
    const found = this.task(id);
    if (found === undefined) {
      throw new TeamError('TASK_NOT_FOUND', `no task with id ${id}`, { details: { taskId: id } });
    }
    return found;
  }

  /**
   * Tasks in creation order. Deleted tasks are left out unless `filter.status` asks for
   * `deleted`; `ownerId: null` selects unowned tasks.
   */
  listTasks(filter: TaskListFilter = {}): TaskView[] {
    return this.model.board.list(filter);
  }

  /** Every task snapshot, tombstones included, in creation order (what a fold returns). */
  allTasks(): Task[] {
    return this.model.board.snapshots();
  }

  /** Non-deleted tasks on the board. */
  taskCount(): number {
    return this.model.board.activeCount;
  }

  /**
   * Any live member may create a task. It gets the next `task-<n>` id, revision 1, status
   * `pending`, no owner, validated blockers and normalized write scopes. Subject, description,
   * `blockedBy` and `writeScopes` must be within their input limits (`INVALID_ARGUMENT`).
   */
  createTask(actorId: string, input: CreateTaskInput): TaskRecord {
    return this.emitTask(decideCreateTask(this.model, this.limits, actorId, input));
  }

  /**
   * Applies one `TaskAction`. Checks run in this order, each with its own code:
   * `NOT_A_MEMBER`, `TASK_NOT_FOUND`, `TASK_DELETED`, `REVISION_MISMATCH`, then the action's
   * authorization, then its own rules.
   */
  updateTask(actorId: string, input: UpdateTaskInput): TaskRecord {
    return this.emitTask(decideUpdateTask(this.model, actorId, input));
  }

  // ---------------------------------------------------------------- mail

  /**
   * Queues a message for `targetId` (the record makes it durable once appended). Sender and
   * target must be live members and differ; the content must fit `maxMessageBytes`, the summary
   * `MESSAGE_SUMMARY_MAX` characters; a `taskId` names a task of the board; the target must have
   * room under `maxPendingPerMember` (control kinds always have room); an id is queued only once.
   */
  queueMessage(input: QueueMessageInput): MessageQueuedRecord {
    if (input.approvalId !== undefined) this.getApproval(input.approvalId);
    const message = decideQueueMessage(this.model, this.limits, input);
    if (this.traceContext !== undefined) {
      const trace = senderTrace(this.traceContext, message.senderName);
      if (trace !== undefined) message.trace = trace;
    }
    return this.emit<MessageQueuedRecord>({ type: 'message.queued', message });
  }

  /** Marks a pending message delivered (`MESSAGE_STATE` if it is not pending). */
  markDelivered(input: { messageId: string }): MessageDeliveredRecord {
    const message = decideDelivered(this.model.mailbox, input.messageId);
    return this.emit<MessageDeliveredRecord>({
      type: 'message.delivered',
      messageId: message.id,
      targetId: message.targetId,
    });
  }

  /**
   * Ends a pending message without delivery, with why (`MESSAGE_STATE` if it is not pending): it
   * can never be delivered afterwards, and {@link deadLetters} lists it.
   */
  deadLetter(input: {
    messageId: string;
    reason: DeadLetterReason;
    detail?: string | undefined;
  }): MessageDeadLetteredRecord {
    const message = decideDelivered(this.model.mailbox, input.messageId);
    return this.emit<MessageDeadLetteredRecord>({
      type: 'message.dead_lettered',
      messageId: message.id,
      targetId: message.targetId,
      reason: input.reason,
      ...(input.detail === undefined ? {} : { detail: truncateDetail(input.detail) }),
    });
  }

  // ---------------------------------------------------------------- approvals

  /**
   * Records a request for approval, pending until {@link decideApproval}. The requester must be
   * live (`NOT_A_MEMBER`), the approver too when named; a tool call has one approval in its whole
   * life and a member one plan waiting at a time (`APPROVAL_STATE`).
   */
  requestApproval(input: RequestApprovalInput): ApprovalRequestedRecord {
    const roster = this.model.roster;
    for (const id of [input.requesterId, input.approverId]) {
      if (id !== undefined && !roster.isLive(id)) {
        throw new TeamError('NOT_A_MEMBER', `${id} is not a live member of the team`, {
          details: { memberId: id },
        });
      }
    }
    if (input.approverId !== undefined && input.approverId === input.requesterId) {
      throw new TeamError('INVALID_ARGUMENT', 'a member cannot approve its own request');
    }
    const approval: ApprovalRequest = {
      id: input.id,
      kind: input.kind,
      requesterId: input.requesterId,
    };
    if (input.approverId !== undefined) approval.approverId = input.approverId;
    if (input.toolCallId !== undefined) approval.toolCallId = input.toolCallId;
    if (input.toolName !== undefined) approval.toolName = input.toolName;
    if (input.input !== undefined) approval.input = inputJson(input.input);
    if (input.plan !== undefined) approval.plan = input.plan;
    if (input.taskId !== undefined) approval.taskId = input.taskId;
    if (input.expiresAt !== undefined) approval.expiresAt = input.expiresAt;
    refuseIf(this.model.approvals.checkRequested(approval));
    return this.emit<ApprovalRequestedRecord>({ type: 'approval.requested', approval });
  }

  /**
   * Ends a pending approval with its one decision: `APPROVAL_NOT_FOUND`, or `APPROVAL_DECIDED`
   * when a decision (or an expiry) came first. Authorization (who may decide) is the service's.
   * `reason` is clipped to `APPROVAL_REASON_MAX` characters.
   */
  decideApproval(input: {
    approvalId: string;
    decision: ApprovalDecision;
    reason?: string | undefined;
    deciderId?: string | undefined;
  }): ApprovalDecidedRecord {
    refuseIf(this.model.approvals.checkDecided(input));
    return this.emit<ApprovalDecidedRecord>({
      type: 'approval.decided',
      approvalId: input.approvalId,
      decision: input.decision,
      ...(input.reason === undefined || input.reason === ''
        ? {}
        : { reason: clipText(input.reason, APPROVAL_REASON_MAX) }),
      ...(input.deciderId === undefined ? {} : { deciderId: input.deciderId }),
    });
  }

  /**
   * Marks an approved tool call as running, before it runs (`APPROVAL_STATE` when it is not an
   * approved tool call, or it started already): so it runs at most once.
   */
  startApprovedCall(approvalId: string): ApprovalStartedRecord {
    refuseIf(this.model.approvals.checkStarted(approvalId));
    return this.emit<ApprovalStartedRecord>({ type: 'approval.started', approvalId });
  }

  /** The approval with that id, if any. */
  approval(id: string): Approval | undefined {
    return this.model.approvals.get(id);
  }

  /** Like {@link approval}, but `APPROVAL_NOT_FOUND` when there is none. */
  getApproval(id: string): Approval {
    const found = this.model.approvals.get(id);
    if (found === undefined) {
      throw new TeamError('APPROVAL_NOT_FOUND', `no approval with id ${String(id).slice(0, 64)}`, {
        details: { approvalId: String(id).slice(0, 64) },
      });
    }
    return found;
  }

  /** The approval asked for a member's tool call, if any. */
  approvalForCall(requesterId: string, toolCallId: string): Approval | undefined {
    return this.model.approvals.forCall(requesterId, toolCallId);
  }

  /** Approvals in request order, filtered. */
  approvals(filter?: ApprovalFilter): Approval[] {
    return this.model.approvals.list(filter);
  }

  /** Whether the member has a plan approved (a plan-approval teammate then gets its full tools). */
  planApproved(memberId: string): boolean {
    return this.model.approvals.planApproved(memberId);
  }

  /**
   * Records a quality gate's refusal, counted in a row: for `task_completed` against the task
   * (cleared when it completes or is deleted), for `teammate_idle` against the member (cleared
   * by its next idle notification). `feedback` is clipped to `APPROVAL_REASON_MAX` characters.
   */
  refuseByGate(input: {
    gate: GateName;
    memberId: string;
    taskId?: string | undefined;
    feedback: string;
  }): GateRefusedRecord {
    const subject = input.gate === 'task_completed' ? input.taskId : input.memberId;
    if (subject === undefined) {
      throw new TeamError('INVALID_ARGUMENT', 'a task_completed refusal names its task');
    }
    return this.emit<GateRefusedRecord>({
      type: 'gate.refused',
      gate: input.gate,
      memberId: input.memberId,
      ...(input.taskId === undefined ? {} : { taskId: input.taskId }),
      feedback: clipText(input.feedback === '' ? 'refused' : input.feedback, APPROVAL_REASON_MAX),
      attempt: this.model.approvals.gateCount(input.gate, subject) + 1,
    });
  }

  /** A gate's refusals in a row for a task (`task_completed`) or a member (`teammate_idle`). */
  gateCount(gate: GateName, id: string): number {
    return this.model.approvals.gateCount(gate, id);
  }

  /** The messages that ended without delivery, in log order. */
  deadLetters(): DeadLetter[] {
    return [...this.model.deadLetters.values()];
  }

  /** Undelivered messages of `targetId` in queue order; a cached frozen array, O(1) to fetch. */
  pending(targetId: string): readonly QueuedMessage[] {
    return this.model.mailbox.pending(targetId);
  }

  /** Undelivered messages of `targetId`, control kinds included. */
  pendingCount(targetId: string): number {
    return this.model.mailbox.pendingCount(targetId);
  }

  /** Every undelivered message in log order: the recovery mailbox. */
  pendingMail(): QueuedMessage[] {
    return this.model.mailbox.pendingAll();
  }

  /** True while the message is queued and not yet delivered. */
  isPending(messageId: string): boolean {
    return this.model.mailbox.get(messageId) !== undefined;
  }

  /** True for any message ever queued in this team, delivered or not. */
  wasQueued(messageId: string): boolean {
    return this.model.mailbox.wasQueued(messageId);
  }

  // ---------------------------------------------------------------- records

  /**
   * Stamps `body` as the next record of the team (seq, time, team, schema version), validates it
   * against the record schema (`INVALID_ARGUMENT` on bad input), applies it and returns it; the
   * validated copy detaches it from caller objects.
   */
  private emit<R extends TeamRecord>(body: Omit<R, keyof RecordHeader>): R {
    // Object.assign, not `{ ...header, ...body }`: V8 takes a slow path when a spread is
    // followed by new keys, and every record of a team goes through here
    const header: RecordHeader = {
      seq: this.model.lastSeq + 1,
      at: this.clock.now(),
      teamId: this.teamId,
      schemaVersion:
        body.type === 'message.queued'
          ? messageSchemaVersion((body as unknown as MessageQueuedRecord).message)
          : RECORD_SCHEMA_VERSIONS[body.type as TeamRecord['type']],
    } as RecordHeader;
    const checked = checkRecordInput(Object.assign(header, body) as R);
    this.model.apply(checked);
    return checked;
  }

  private emitMember(member: Member): MemberRecord {
    return this.emit<MemberRecord>({ type: 'member', member });
  }

  private emitTask(task: Task): TaskRecord {
    return this.emit<TaskRecord>({ type: 'task', task });
  }
}

/** A tool call's input as JSON, clipped so it stays within `APPROVAL_INPUT_BYTES_MAX` bytes. */
function inputJson(input: unknown): string {
  const json = JSON.stringify(input) ?? 'null';
  if (utf8Length(json) <= APPROVAL_INPUT_BYTES_MAX) return json;
  return clipText(json, Math.floor(APPROVAL_INPUT_BYTES_MAX / 4));
}

/** A detail within `DEAD_LETTER_DETAIL_MAX` characters, cut with an ellipsis past it. */
function truncateDetail(detail: string): string {
  return clipText(detail, DEAD_LETTER_DETAIL_MAX);
}

/** The sender's trace context from `source`, when it is a valid one; never throws. */
function senderTrace(source: TraceContextSource, senderName: string): MessageTrace | undefined {
  let value: MessageTrace | undefined;
  try {
    value = source.current(senderName);
  } catch {
    return undefined;
  }
  if (value === undefined) return undefined;
  const parsed = MessageTrace.safeParse(value);
  return parsed.success ? parsed.data : undefined;
}
