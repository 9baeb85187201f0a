import { z } from 'zod';
import type { Clock } from '../clock.js';
import { systemClock } from '../clock.js';
import type { ContentBlock } from '../content.js';
import { TeamError } from '../errors.js';
import { copyValidRecord } from '../record-copy.js';
import type {
  Member,
  MemberContext,
  MemberPhase,
  MemberRecord,
  MessageDeliveredRecord,
  MessageDelivery,
  MessageKind,
  MessageQueuedRecord,
  QueuedMessage,
  Task,
  TaskRecord,
  TaskStatus,
} from '../records.js';
import { checkSchemaVersion, LEAD_NAME, SCHEMA_VERSION, TeamRecord } from '../records.js';
import { checkMessageSummary, isBoundedKind, Mailbox } from './mailbox.js';
import {
  isLivePhase,
  isPhaseTransition,
  validateMemberError,
  validateMemberFields,
  validateMemberName,
} from './roster.js';
import type { TaskAction, TaskListFilter, TaskProblem, TaskView } from './task-board.js';
import {
  checkBlockedByList,
  checkTaskDescription,
  checkTaskSubject,
  TaskBoard,
} from './task-board.js';
import { checkWriteScopeLimits, normalizeWriteScopes } from './write-scopes.js';

/**
 * Configurable bounds that keep one team's state and mail finite. Together with the fixed input
 * limits of every text and list field (`MEMBER_DESCRIPTION_MAX`, `MESSAGE_SUMMARY_MAX`,
 * `TASK_WRITE_SCOPES_MAX`, ...) they are enforced by commands only, never by replay, so a log
 * written under other limits still folds.
 */
export interface TeamLimits {
  /** Teammates in phase `provisioning | active` (the lead is not counted; failed and retired members hold no slot). */
  maxMembers: number;
  /** Non-deleted tasks on the board. */
  maxTasks: number;
  /**
   * Undelivered `message` and `task_assignment` messages per target. Control kinds
   * (`shutdown_request`, `idle_notification`) are never refused by this bound.
   */
  maxPendingPerMember: number;
  /** UTF-8 bytes of `JSON.stringify(content)` of one message. */
  maxMessageBytes: number;
}

/** The limits a team gets when none are configured. */
export const DEFAULT_TEAM_LIMITS: TeamLimits = Object.freeze({
  maxMembers: 8,
  maxTasks: 256,
  maxPendingPerMember: 64,
  maxMessageBytes: 65536,
});

/** Options of {@link TeamState} and {@link TeamState.fromRecords}. */
export interface TeamStateOptions {
  teamId: string;
  /** Stamps the `at` of records built by commands; defaults to the system clock. */
  clock?: Clock;
  limits?: Partial<TeamLimits>;
}

/** Input of {@link TeamState.createLead}. */
export interface CreateLeadInput {
  /** The lead's member id; by convention the team id (the lead's session id). */
  id: string;
  description?: string;
  agentType: string;
  provider: string;
  color?: string;
}

/** Input of {@link TeamState.spawnMember}. */
export interface SpawnMemberInput {
  id: string;
  name: string;
  description: string;
  agentType: string;
  provider: string;
  context: MemberContext;
  color?: string;
}

/** Input of {@link TeamState.createTask}. */
export interface CreateTaskInput {
  subject: string;
  description: string;
  blockedBy?: string[];
  writeScopes?: string[];
}

/** Input of {@link TeamState.updateTask}. */
export interface UpdateTaskInput {
  taskId: string;
  /** Compare-and-set: when given, the change is refused unless the task is at this revision. */
  expectedRevision?: number;
  action: TaskAction;
}

/** Input of {@link TeamState.queueMessage}. */
export interface QueueMessageInput {
  id: string;
  senderId: string;
  targetId: string;
  kind: MessageKind;
  delivery: MessageDelivery;
  content: ContentBlock[];
  summary?: string;
  taskId?: string;
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
 * Records returned by commands are shared with the state: treat them as immutable.
 */
export class TeamState {
  readonly teamId: string;
  readonly limits: TeamLimits;
  private readonly clock: Clock;
  private seq = 0;
  private lead: string | undefined;
  private readonly roster = new Map<string, Member>();
  /** Every name ever used (names are never reused), to the member's id. */
  private readonly names = new Map<string, string>();
  private liveTeammates = 0;
  private readonly board = new TaskBoard();
  private readonly mailbox = new Mailbox();

  constructor(options: TeamStateOptions) {
    if (typeof options?.teamId !== 'string' || options.teamId.length === 0) {
      throw new TeamError('INVALID_ARGUMENT', 'teamId must be a non-empty string');
    }
    this.teamId = options.teamId;
    this.clock = options.clock ?? systemClock;
    this.limits = resolveLimits(options.limits);
  }

  /**
   * Strict replay of a whole log through {@link apply}. Records of other teams (the inherited
   * prefix of a forked log) only advance {@link lastSeq}.
   */
  static fromRecords(records: Iterable<TeamRecord>, options: TeamStateOptions): TeamState {
    const state = new TeamState(options);
    for (const record of records) state.apply(record);
    return state;
  }

  /** The seq of the last applied record of any team; the next record must carry `lastSeq + 1`. */
  get lastSeq(): number {
    return this.seq;
  }

  /** The id of the member named `lead`, once it exists. */
  get leadId(): string | undefined {
    return this.lead;
  }

  // ---------------------------------------------------------------- replay

  /**
   * Applies one record. Strict: a record that breaks an invariant throws `LOG_INVARIANT` naming
   * its seq and leaves the state exactly as it was (every check runs before any change).
   */
  apply(record: TeamRecord): void {
    const seq = (record as { seq?: unknown } | null)?.seq;
    const expected = this.seq + 1;
    if (seq !== expected) {
      throw new TeamError(
        'LOG_INVARIANT',
        `record out of order: expected seq ${expected}, got ${String(seq)} at seq ${String(seq)}`,
        { details: { seq, expected } },
      );
    }
    if (record.schemaVersion !== SCHEMA_VERSION) checkSchemaVersion(record);
    if (record.teamId !== this.teamId) {
      this.seq = seq;
      return;
    }
    const fail = (why: string): never => {
      throw new TeamError('LOG_INVARIANT', `${why} at seq ${seq}`, {
        details: { seq, type: record.type },
      });
    };
    switch (record.type) {
      case 'member':
        this.applyMember(record.member, fail);
        break;
      case 'task':
        this.applyTask(record.task, fail);
        break;
      case 'message.queued':
        this.applyQueued(record.message, fail);
        break;
      case 'message.delivered':
        this.applyDelivered(record.messageId, record.targetId, fail);
        break;
      default:
        fail(`unknown record type ${JSON.stringify((record as { type?: unknown }).type)}`);
    }
    this.seq = seq;
  }

  private applyMember(member: Member, fail: (why: string) => never): void {
    const previous = this.roster.get(member.id);
    if (previous === undefined) {
      if (member.phase !== 'provisioning') {
        fail(`member ${member.id} first appears in phase ${member.phase}, not provisioning`);
      }
      if (this.names.has(member.name)) {
        fail(`member name "${member.name}" is already used in this team`);
      }
    } else {
      if (!isPhaseTransition(previous.phase, member.phase)) {
        fail(`member ${member.id} cannot move from phase ${previous.phase} to ${member.phase}`);
      }
      for (const key of ['name', 'agentType', 'provider', 'context'] as const) {
        if (previous[key] !== member[key]) fail(`member ${member.id} changed its ${key}`);
      }
    }
    const isLead = member.name === LEAD_NAME;
    if (!isLead) {
      if (previous !== undefined && isLivePhase(previous.phase)) this.liveTeammates--;
      if (isLivePhase(member.phase)) this.liveTeammates++;
    }
    this.roster.set(member.id, member);
    this.names.set(member.name, member.id);
    if (isLead) this.lead = member.id;
  }

  private applyTask(task: Task, fail: (why: string) => never): void {
    const previous = this.board.get(task.id);
    if (previous === undefined) {
      if (task.id !== this.board.nextId) {
        fail(`new task ${task.id} does not carry the next task id ${this.board.nextId}`);
      }
      if (task.revision !== 1) fail(`new task ${task.id} has revision ${task.revision}, not 1`);
    } else {
      if (previous.status === 'deleted') fail(`task ${task.id} is deleted and cannot change`);
      if (task.revision !== previous.revision + 1) {
        fail(
          `task ${task.id} revision ${task.revision} does not follow revision ${previous.revision}`,
        );
      }
      if (task.creatorId !== previous.creatorId) fail(`task ${task.id} changed its creator`);
    }
    if (!this.roster.has(task.creatorId)) {
      fail(`task ${task.id} creator ${task.creatorId} is not a team member`);
    }
    if (task.ownerId !== undefined && !this.roster.has(task.ownerId)) {
      fail(`task ${task.id} owner ${task.ownerId} is not a team member`);
    }
    if (task.status === 'pending' && task.ownerId !== undefined) {
      fail(`pending task ${task.id} has an owner`);
    }
    if (task.status === 'in_progress' && task.ownerId === undefined) {
      fail(`in-progress task ${task.id} has no owner`);
    }
    let normalized: string[] | undefined;
    try {
      normalized = normalizeWriteScopes(task.writeScopes);
    } catch {
      normalized = undefined;
    }
    if (
      normalized === undefined ||
      normalized.length !== task.writeScopes.length ||
      normalized.some((scope, i) => scope !== task.writeScopes[i])
    ) {
      fail(`task ${task.id} write scopes are not normalized`);
    }
    const problem = this.board.checkBlockedBy(task.id, task.blockedBy, previous?.blockedBy);
    if (problem !== undefined) fail(problem.message);
    if (task.status === 'deleted') {
      const dependents = this.board.dependentsOf(task.id);
      if (dependents.length > 0) {
        fail(`task ${task.id} is deleted while ${dependents.join(', ')} still depend on it`);
      }
    }
    this.board.commit(task);
  }

  private applyQueued(message: QueuedMessage, fail: (why: string) => never): void {
    if (this.mailbox.wasQueued(message.id)) fail(`message ${message.id} is queued twice`);
    const sender = this.roster.get(message.senderId);
    if (sender === undefined) fail(`message sender ${message.senderId} is not a team member`);
    if (sender?.name !== message.senderName) {
      fail(`message ${message.id} senderName "${message.senderName}" is not its sender's name`);
    }
    if (!this.roster.has(message.targetId)) {
      fail(`message target ${message.targetId} is not a team member`);
    }
    this.mailbox.enqueue(message);
  }

  private applyDelivered(messageId: string, targetId: string, fail: (why: string) => never): void {
    const message = this.mailbox.get(messageId);
    if (message === undefined) {
      fail(
        this.mailbox.wasQueued(messageId)
          ? `message ${messageId} is delivered twice`
          : `message ${messageId} is delivered before it was queued`,
      );
    }
    if (message?.targetId !== targetId) {
      fail(`message ${messageId} is delivered to ${targetId}, not its target ${message?.targetId}`);
    }
    this.mailbox.deliver(messageId);
  }

  // ---------------------------------------------------------------- roster

  /** The member with that id (a copy), in any phase. */
  member(id: string): Member | undefined {
    const found = this.roster.get(id);
    return found === undefined ? undefined : { ...found };
  }

  /** The member that has (or had) this name; names are immutable and never reused. */
  memberByName(name: string): Member | undefined {
    const id = this.names.get(name);
    return id === undefined ? undefined : this.member(id);
  }

  /** Every member ever spawned, lead first, then in spawn order. */
  members(): Member[] {
    const out: Member[] = [];
    const lead = this.lead === undefined ? undefined : this.roster.get(this.lead);
    if (lead !== undefined) out.push({ ...lead });
    for (const member of this.roster.values()) {
      if (member !== lead) out.push({ ...member });
    }
    return out;
  }

  /** True when the member exists and is `provisioning` or `active`. */
  isLive(memberId: string): boolean {
    const member = this.roster.get(memberId);
    return member !== undefined && isLivePhase(member.phase);
  }

  /** Teammates holding a slot of `maxMembers` (live, lead excluded). */
  liveTeammateCount(): number {
    return this.liveTeammates;
  }

  /**
   * Registers the lead (name `lead`, context `fresh`) as two records, `provisioning` then
   * `active`. Refused with `NAME_TAKEN` when the team already has a lead.
   */
  createLead(input: CreateLeadInput): MemberRecord[] {
    if (this.names.has(LEAD_NAME)) {
      throw new TeamError('NAME_TAKEN', 'the team already has a lead', {
        details: { name: LEAD_NAME, leadId: this.lead },
      });
    }
    this.refuseKnownMemberId(input.id);
    validateMemberFields({ ...input, description: input.description ?? '' });
    const member: Member = {
      id: input.id,
      name: LEAD_NAME,
      description: input.description ?? '',
      agentType: input.agentType,
      provider: input.provider,
      context: 'fresh',
      phase: 'provisioning',
      ...(input.color === undefined ? {} : { color: input.color }),
    };
    const first = this.emit<MemberRecord>({ type: 'member', member });
    const second = this.emit<MemberRecord>({
      type: 'member',
      member: { ...member, phase: 'active' },
    });
    return [first, second];
  }

  /**
   * Records a new teammate in phase `provisioning`. Only the live lead may spawn (`LEAD_ONLY`,
   * or `NOT_A_MEMBER` for a lead that is no longer live); the name must be valid and never used
   * before in this team, the other fields within their input limits (`INVALID_ARGUMENT`); live
   * teammates must stay within `maxMembers`.
   */
  spawnMember(actorId: string, input: SpawnMemberInput): MemberRecord {
    if (this.lead === undefined || actorId !== this.lead) {
      throw new TeamError('LEAD_ONLY', 'only the team lead may spawn teammates', {
        details: { actorId },
      });
    }
    this.requireLive(actorId);
    validateMemberName(input.name);
    validateMemberFields(input);
    if (this.names.has(input.name)) {
      throw new TeamError(
        'NAME_TAKEN',
        `the name "${input.name}" was already used in this team; names are never reused`,
        { details: { name: input.name } },
      );
    }
    if (this.liveTeammates >= this.limits.maxMembers) {
      throw new TeamError(
        'MEMBER_LIMIT',
        `the team already has ${this.liveTeammates} live teammates (limit ${this.limits.maxMembers}); retire one first`,
        { details: { limit: this.limits.maxMembers } },
      );
    }
    this.refuseKnownMemberId(input.id);
    return this.emit<MemberRecord>({
      type: 'member',
      member: {
        id: input.id,
        name: input.name,
        description: input.description,
        agentType: input.agentType,
        provider: input.provider,
        context: input.context,
        phase: 'provisioning',
        ...(input.color === undefined ? {} : { color: input.color }),
      },
    });
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
    const current = this.roster.get(memberId);
    if (current === undefined) {
      throw new TeamError('UNKNOWN_MEMBER', `no member with id ${memberId}`, {
        details: { memberId },
      });
    }
    if (!isPhaseTransition(current.phase, phase)) {
      throw new TeamError(
        'INVALID_PHASE',
        `member ${current.name} cannot move from phase ${current.phase} to ${String(phase)}`,
        { details: { memberId, from: current.phase, to: phase } },
      );
    }
    validateMemberError(error);
    const { error: _previousError, ...rest } = current;
    return this.emit<MemberRecord>({
      type: 'member',
      member: { ...rest, phase, ...(error === undefined ? {} : { error }) },
    });
  }

  /**
   * System action (no authorization), e.g. when a teammate stops: every `in_progress` task owned
   * by `memberId` goes back to `pending`, unowned, one record per task.
   */
  releaseTasksOf(memberId: string): TaskRecord[] {
    const owned: Task[] = [];
    for (const task of this.board.values()) {
      if (task.status === 'in_progress' && task.ownerId === memberId) owned.push(task);
    }
    return owned.map((task) =>
      this.emitTask(this.nextRevision(task, { status: 'pending', ownerId: undefined })),
    );
  }

  // ---------------------------------------------------------------- tasks

  /** A task with its derived facts; tombstones are readable. */
  task(id: string): TaskView | undefined {
    const found = this.board.get(id);
    return found === undefined ? undefined : this.board.view(found);
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
    const statuses: readonly TaskStatus[] | undefined =
      filter.status === undefined
        ? undefined
        : typeof filter.status === 'string'
          ? [filter.status]
          : filter.status;
    const out: TaskView[] = [];
    for (const task of this.board.values()) {
      if (statuses === undefined ? task.status === 'deleted' : !statuses.includes(task.status)) {
        continue;
      }
      if (filter.ownerId !== undefined && (task.ownerId ?? null) !== filter.ownerId) continue;
      if (filter.ready !== undefined && this.board.isReady(task) !== filter.ready) continue;
      out.push(this.board.view(task));
    }
    return out;
  }

  /** Every task snapshot, tombstones included, in creation order (what a fold returns). */
  allTasks(): Task[] {
    return [...this.board.values()].map((task) => ({
      ...task,
      blockedBy: [...task.blockedBy],
      writeScopes: [...task.writeScopes],
    }));
  }

  /** Non-deleted tasks on the board. */
  taskCount(): number {
    return this.board.activeCount;
  }

  /**
   * Any live member may create a task. It gets the next `task-<n>` id, revision 1, status
   * `pending`, no owner, validated blockers and normalized write scopes. Subject, description,
   * `blockedBy` and `writeScopes` must be within their input limits (`INVALID_ARGUMENT`).
   */
  createTask(actorId: string, input: CreateTaskInput): TaskRecord {
    this.requireLive(actorId);
    checkTaskSubject(input.subject);
    checkTaskDescription(input.description);
    const blockedBy = checkBlockedByList(input.blockedBy ?? []);
    checkWriteScopeLimits(input.writeScopes ?? []);
    const writeScopes = normalizeWriteScopes(input.writeScopes ?? []);
    if (this.board.activeCount >= this.limits.maxTasks) {
      throw new TeamError(
        'TASK_LIMIT',
        `the board already holds ${this.board.activeCount} tasks (limit ${this.limits.maxTasks}); complete or delete some first`,
        { details: { limit: this.limits.maxTasks } },
      );
    }
    const id = this.board.nextId;
    throwProblem(this.board.checkBlockedBy(id, blockedBy));
    return this.emitTask({
      id,
      revision: 1,
      subject: input.subject,
      description: input.description,
      status: 'pending',
      creatorId: actorId,
      blockedBy,
      writeScopes,
    });
  }

  /**
   * Applies one {@link TaskAction}. Checks run in this order, each with its own code:
   * `NOT_A_MEMBER`, `TASK_NOT_FOUND`, `TASK_DELETED`, `REVISION_MISMATCH`, then the action's
   * authorization, then its own rules.
   */
  updateTask(actorId: string, input: UpdateTaskInput): TaskRecord {
    this.requireLive(actorId);
    const task = this.board.get(input.taskId);
    if (task === undefined) {
      throw new TeamError('TASK_NOT_FOUND', `no task with id ${input.taskId}`, {
        details: { taskId: input.taskId },
      });
    }
    if (task.status === 'deleted') {
      throw new TeamError('TASK_DELETED', `${task.id} is deleted and cannot change`, {
        details: { taskId: task.id },
      });
    }
    if (input.expectedRevision !== undefined && input.expectedRevision !== task.revision) {
      throw new TeamError(
        'REVISION_MISMATCH',
        `${task.id} is at revision ${task.revision}, not ${input.expectedRevision}; read it again`,
        { details: { taskId: task.id, expected: input.expectedRevision, actual: task.revision } },
      );
    }
    const action = input.action;
    switch (action?.type) {
      case 'claim':
        return this.claim(actorId, task);
      case 'release':
        this.requireStatusRight(actorId, task, 'release');
        requireStatus(task, ['in_progress'], 'release');
        return this.emitTask(this.nextRevision(task, { status: 'pending', ownerId: undefined }));
      case 'complete':
        this.requireStatusRight(actorId, task, 'complete');
        requireStatus(task, ['pending', 'in_progress'], 'complete');
        return this.emitTask(this.nextRevision(task, { status: 'completed' }));
      case 'reopen': {
        this.requireStatusRight(actorId, task, 'reopen');
        requireStatus(task, ['completed'], 'reopen');
        const keepOwner = task.ownerId !== undefined && this.isLive(task.ownerId);
        return this.emitTask(
          this.nextRevision(
            task,
            keepOwner ? { status: 'in_progress' } : { status: 'pending', ownerId: undefined },
          ),
        );
      }
      case 'edit':
        return this.edit(actorId, task, action);
      case 'set_dependencies': {
        this.requireEditRight(actorId, task, 'change the dependencies of');
        const blockedBy = checkBlockedByList(action.blockedBy);
        throwProblem(this.board.checkBlockedBy(task.id, blockedBy, task.blockedBy));
        return this.emitTask(this.nextRevision(task, { blockedBy }));
      }
      case 'reassign':
        return this.reassign(actorId, task, action.ownerId);
      case 'delete': {
        this.requireEditRight(actorId, task, 'delete');
        const dependents = this.board.dependentsOf(task.id);
        if (dependents.length > 0) {
          throw new TeamError(
            'TASK_HAS_DEPENDENTS',
            `${task.id} cannot be deleted: ${dependents.join(', ')} ${dependents.length === 1 ? 'is' : 'are'} blocked by it; change their dependencies first`,
            { details: { taskId: task.id, dependents } },
          );
        }
        return this.emitTask(this.nextRevision(task, { status: 'deleted' }));
      }
      default:
        throw new TeamError(
          'INVALID_ARGUMENT',
          `unknown task action ${JSON.stringify((action as { type?: unknown } | undefined)?.type)}`,
          { details: { taskId: task.id } },
        );
    }
  }

  private claim(actorId: string, task: Task): TaskRecord {
    if (task.status === 'in_progress' && task.ownerId !== actorId) {
      throw new TeamError('TASK_OWNED', `${task.id} is already owned by ${task.ownerId}`, {
        details: { taskId: task.id, ownerId: task.ownerId },
      });
    }
    requireStatus(task, ['pending'], 'claim');
    if (!this.board.blockersDone(task)) {
      const open = task.blockedBy.filter((id) => this.board.get(id)?.status !== 'completed');
      throw new TeamError(
        'TASK_BLOCKED',
        `${task.id} is blocked by ${open.join(', ')}, not completed yet`,
        { details: { taskId: task.id, blockedBy: open } },
      );
    }
    return this.emitTask(this.nextRevision(task, { status: 'in_progress', ownerId: actorId }));
  }

  private edit(
    actorId: string,
    task: Task,
    action: Extract<TaskAction, { type: 'edit' }>,
  ): TaskRecord {
    this.requireEditRight(actorId, task, 'edit');
    if (
      action.subject === undefined &&
      action.description === undefined &&
      action.writeScopes === undefined
    ) {
      throw new TeamError(
        'INVALID_ARGUMENT',
        'an edit must change the subject, the description or the write scopes',
        { details: { taskId: task.id } },
      );
    }
    const changes: Partial<Task> = {};
    if (action.subject !== undefined) {
      checkTaskSubject(action.subject);
      changes.subject = action.subject;
    }
    if (action.description !== undefined) {
      checkTaskDescription(action.description);
      changes.description = action.description;
    }
    if (action.writeScopes !== undefined) {
      checkWriteScopeLimits(action.writeScopes);
      changes.writeScopes = normalizeWriteScopes(action.writeScopes);
    }
    return this.emitTask(this.nextRevision(task, changes));
  }

  private reassign(actorId: string, task: Task, ownerId: string): TaskRecord {
    if (actorId !== this.lead) {
      throw new TeamError('NOT_ALLOWED_TO_REASSIGN', 'only the team lead may reassign tasks', {
        details: { taskId: task.id, actorId },
      });
    }
    requireStatus(task, ['pending', 'in_progress'], 'reassign');
    const target = this.roster.get(ownerId);
    if (target === undefined) {
      throw new TeamError('UNKNOWN_MEMBER', `no member with id ${String(ownerId)}`, {
        details: { memberId: ownerId },
      });
    }
    if (!isLivePhase(target.phase)) {
      throw new TeamError(
        'INVALID_PHASE',
        `${target.name} is ${target.phase} and cannot own tasks`,
        { details: { memberId: ownerId, phase: target.phase } },
      );
    }
    return this.emitTask(this.nextRevision(task, { status: 'in_progress', ownerId }));
  }

  /** Owner, lead, or the creator while the task is unowned. */
  private requireEditRight(actorId: string, task: Task, verb: string): void {
    const allowed =
      actorId === task.ownerId ||
      actorId === this.lead ||
      (task.ownerId === undefined && actorId === task.creatorId);
    if (!allowed) {
      throw new TeamError(
        'NOT_ALLOWED_TO_EDIT',
        `only the owner, the lead, or the creator of an unowned task may ${verb} ${task.id}`,
        { details: { taskId: task.id, actorId, ownerId: task.ownerId } },
      );
    }
  }

  /** Owner or lead. */
  private requireStatusRight(actorId: string, task: Task, verb: string): void {
    if (actorId !== task.ownerId && actorId !== this.lead) {
      throw new TeamError(
        'NOT_ALLOWED_TO_CHANGE_STATUS',
        `only the owner or the lead may ${verb} ${task.id}`,
        { details: { taskId: task.id, actorId, ownerId: task.ownerId } },
      );
    }
  }

  // ---------------------------------------------------------------- mail

  /**
   * Queues a message for `targetId` (the record makes it durable once appended). Sender and
   * target must be live members and differ; the content must fit `maxMessageBytes`, the summary
   * `MESSAGE_SUMMARY_MAX` characters; a `taskId` names a task of the board; the target must have
   * room under `maxPendingPerMember` (control kinds always have room); an id is queued only once.
   */
  queueMessage(input: QueueMessageInput): MessageQueuedRecord {
    const sender = this.roster.get(input.senderId);
    if (sender === undefined || !isLivePhase(sender.phase)) {
      throw new TeamError(
        'NOT_A_MEMBER',
        `${String(input.senderId)} is not a live member of the team and cannot send`,
        { details: { senderId: input.senderId, phase: sender?.phase } },
      );
    }
    const target = this.roster.get(input.targetId);
    if (target === undefined) {
      throw new TeamError('UNKNOWN_TARGET', `no member with id ${String(input.targetId)}`, {
        details: { targetId: input.targetId },
      });
    }
    if (target.id === sender.id) {
      throw new TeamError('SELF_MESSAGE', `${sender.name} cannot message itself`, {
        details: { senderId: sender.id },
      });
    }
    if (!isLivePhase(target.phase)) {
      throw new TeamError(
        'INVALID_PHASE',
        `${target.name} is ${target.phase} and cannot receive messages`,
        { details: { targetId: target.id, phase: target.phase } },
      );
    }
    const bytes = utf8Length(JSON.stringify(input.content) ?? '');
    if (bytes > this.limits.maxMessageBytes) {
      throw new TeamError(
        'MESSAGE_TOO_LARGE',
        `the message is ${bytes} bytes, over the limit of ${this.limits.maxMessageBytes}; shorten it`,
        { details: { bytes, limit: this.limits.maxMessageBytes } },
      );
    }
    checkMessageSummary(input.summary);
    if (input.taskId !== undefined && this.board.get(input.taskId) === undefined) {
      throw new TeamError(
        'TASK_NOT_FOUND',
        `no task with id ${String(input.taskId).slice(0, 40)}`,
        {
          details: { field: 'taskId' },
        },
      );
    }
    if (
      isBoundedKind(input.kind) &&
      this.mailbox.boundedCount(target.id) >= this.limits.maxPendingPerMember
    ) {
      throw new TeamError(
        'MAILBOX_FULL',
        `${target.name} already has ${this.limits.maxPendingPerMember} undelivered messages; wait for it to catch up`,
        { details: { targetId: target.id, limit: this.limits.maxPendingPerMember } },
      );
    }
    if (this.mailbox.wasQueued(input.id)) {
      throw new TeamError('MESSAGE_STATE', `message ${input.id} was already queued`, {
        details: { messageId: input.id },
      });
    }
    const message: QueuedMessage = {
      id: input.id,
      senderId: sender.id,
      senderName: sender.name,
      targetId: target.id,
      kind: input.kind,
      delivery: input.delivery,
      content: input.content,
    };
    if (input.summary !== undefined) message.summary = input.summary;
    if (input.taskId !== undefined) message.taskId = input.taskId;
    return this.emit<MessageQueuedRecord>({ type: 'message.queued', message });
  }

  /** Marks a pending message delivered (`MESSAGE_STATE` if it is not pending). */
  markDelivered(input: { messageId: string }): MessageDeliveredRecord {
    const message = this.mailbox.get(input.messageId);
    if (message === undefined) {
      throw new TeamError(
        'MESSAGE_STATE',
        this.mailbox.wasQueued(input.messageId)
          ? `message ${input.messageId} was already delivered`
          : `message ${input.messageId} was never queued`,
        { details: { messageId: input.messageId } },
      );
    }
    return this.emit<MessageDeliveredRecord>({
      type: 'message.delivered',
      messageId: message.id,
      targetId: message.targetId,
    });
  }

  /** Undelivered messages of `targetId` in queue order; a cached frozen array, O(1) to fetch. */
  pending(targetId: string): readonly QueuedMessage[] {
    return this.mailbox.pending(targetId);
  }

  /** Undelivered messages of `targetId`, control kinds included. */
  pendingCount(targetId: string): number {
    return this.mailbox.pendingCount(targetId);
  }

  /** Every undelivered message in log order: the recovery mailbox. */
  pendingMail(): QueuedMessage[] {
    return this.mailbox.pendingAll();
  }

  /** True while the message is queued and not yet delivered. */
  isPending(messageId: string): boolean {
    return this.mailbox.get(messageId) !== undefined;
  }

  /** True for any message ever queued in this team, delivered or not. */
  wasQueued(messageId: string): boolean {
    return this.mailbox.wasQueued(messageId);
  }

  // ---------------------------------------------------------------- helpers

  /** Schema-checks a built record (`INVALID_ARGUMENT` on bad input) and returns the parsed copy. */
  private checkRecord<R extends TeamRecord>(record: R): R {
    const exact = copyValidRecord(record);
    if (exact) return exact as R;
    const parsed = TeamRecord.safeParse(record);
    if (!parsed.success) {
      throw new TeamError('INVALID_ARGUMENT', `invalid input: ${z.prettifyError(parsed.error)}`, {
        cause: parsed.error,
      });
    }
    return parsed.data as R;
  }

  /**
   * Stamps `body` as the next record of the team (seq, time, team, schema version), validates it,
   * applies it and returns it; the validated copy detaches it from caller objects.
   */
  private emit<R extends TeamRecord>(body: Omit<R, keyof RecordHeader>): R {
    // Object.assign, not `{ ...header, ...body }`: V8 takes a slow path when a spread is
    // followed by new keys, and every record of a team goes through here
    const header: RecordHeader = {
      seq: this.seq + 1,
      at: this.clock.now(),
      teamId: this.teamId,
      schemaVersion: SCHEMA_VERSION,
    };
    const checked = this.checkRecord(Object.assign(header, body) as R);
    this.apply(checked);
    return checked;
  }

  private emitTask(task: Task): TaskRecord {
    return this.emit<TaskRecord>({ type: 'task', task });
  }

  /** The next snapshot of `task`; an `ownerId: undefined` change removes the owner key. */
  private nextRevision(task: Task, changes: Partial<Task>): Task {
    const next: Task = { ...task, ...changes, revision: task.revision + 1 };
    if ('ownerId' in changes && changes.ownerId === undefined) delete next.ownerId;
    return next;
  }

  private requireLive(actorId: string): void {
    const actor = this.roster.get(actorId);
    if (actor === undefined || !isLivePhase(actor.phase)) {
      throw new TeamError('NOT_A_MEMBER', `${String(actorId)} is not a live member of the team`, {
        details: { actorId, phase: actor?.phase },
      });
    }
  }

  private refuseKnownMemberId(id: string): void {
    if (this.roster.has(id)) {
      throw new TeamError('INVALID_ARGUMENT', `a member with id ${id} already exists`, {
        details: { memberId: id },
      });
    }
  }
}

function resolveLimits(limits: Partial<TeamLimits> | undefined): TeamLimits {
  const out: TeamLimits = { ...DEFAULT_TEAM_LIMITS };
  for (const key of Object.keys(DEFAULT_TEAM_LIMITS) as (keyof TeamLimits)[]) {
    const value = limits?.[key];
    if (value === undefined) continue;
    if (!Number.isInteger(value) || value < 0) {
      throw new TeamError('INVALID_ARGUMENT', `limit ${key} must be a non-negative integer`, {
        details: { [key]: value },
      });
    }
    out[key] = value;
  }
  return Object.freeze(out);
}

function requireStatus(task: Task, allowed: readonly TaskStatus[], verb: string): void {
  if (!allowed.includes(task.status)) {
    throw new TeamError(
      'INVALID_TASK_STATUS',
      `cannot ${verb} ${task.id}: it is ${task.status} (needs ${allowed.join(' or ')})`,
      { details: { taskId: task.id, status: task.status, allowed } },
    );
  }
}

function throwProblem(problem: TaskProblem | undefined): void {
  if (problem !== undefined) {
    throw new TeamError(problem.code, problem.message, { details: problem.details });
  }
}

/** UTF-8 byte length without allocating an encoded copy. */
function utf8Length(text: string): number {
  let bytes = 0;
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i);
    if (code < 0x80) bytes += 1;
    else if (code < 0x800) bytes += 2;
    else if (code >= 0xd800 && code <= 0xdbff && i + 1 < text.length) {
      const next = text.charCodeAt(i + 1);
      if (next >= 0xdc00 && next <= 0xdfff) {
        bytes += 4;
        i++;
      } else bytes += 3;
    } else bytes += 3;
  }
  return bytes;
}
