import { TeamError } from '../errors.js';
import { recordDigest } from '../record-digest.js';
import type { DeadLetter, GateName, Member, QueuedMessage, Task, TeamRecord } from '../records.js';
import { checkSchemaVersion, messageSchemaVersion, RECORD_SCHEMA_VERSIONS } from '../records.js';
import { type Approval, Approvals, gateSubject } from './approvals.js';
import { Mailbox } from './mailbox.js';
import { invariant, type Problem } from './problem.js';
import { Roster } from './roster.js';
import {
  snapshotInvalid,
  TEAM_STATE_SNAPSHOT_FORMAT,
  TEAM_STATE_SNAPSHOT_VERSION,
  type TeamStateSnapshot,
} from './snapshot.js';
import { TaskBoard } from './task-board.js';

/**
 * The evolving half of the team state: the roster, the task board and the mailboxes, and the
 * position in the log, changed only by {@link apply}. Each aggregate owns its own invariants; this
 * checks the ones that span them (a task's creator and owner, a message's sender and target, are
 * members). Commands read it to decide and never change it: the record they build comes back
 * through `apply` like any record read from the log, so replay and run time share one path.
 */
export class TeamModel {
  readonly roster = new Roster();
  readonly board = new TaskBoard();
  readonly mailbox = new Mailbox();
  /** Approvals asked for and decided, and the gates' refusal counts. */
  readonly approvals = new Approvals();
  /** Messages that ended without delivery, by id, in log order. */
  readonly deadLetters = new Map<string, DeadLetter>();
  private seq = 0;
  /** What it takes to undo each applied record after {@link settledSeq}, oldest first. */
  private readonly undo: Undo[] = [];
  private settled = 0;
  private journaling = false;
  /** The record at {@link lastSeq}, once one was applied here. */
  private last: TeamRecord | undefined;
  /** The record at {@link settledSeq}, while journaling. */
  private settledLast: TeamRecord | undefined;
  /** The digest of the record at {@link lastSeq} a restored snapshot carried. */
  private restoredDigest: string | undefined;

  constructor(readonly teamId: string) {}

  /**
   * The state as a snapshot at {@link lastSeq}. Only a settled state is a snapshot: records that
   * may still be reverted are refused (`INVALID_ARGUMENT`). The snapshot shares the stored
   * (immutable) members, tasks and messages: it costs O(state) references, no copies.
   */
  snapshot(): TeamStateSnapshot {
    if (this.settledSeq !== this.seq) {
      throw new TeamError(
        'INVALID_ARGUMENT',
        `cannot snapshot at seq ${this.seq}: records after ${this.settledSeq} are not settled`,
        { details: { seq: this.seq, settledSeq: this.settledSeq } },
      );
    }
    const delivered = this.mailbox.deliveredText();
    return {
      format: TEAM_STATE_SNAPSHOT_FORMAT,
      version: TEAM_STATE_SNAPSHOT_VERSION,
      teamId: this.teamId,
      seq: this.seq,
      members: this.roster.stored(),
      tasks: this.board.liveTasks(),
      nextTaskNumber: this.board.nextTaskNumber,
      tombstones: this.board.tombstoneText(),
      pending: this.mailbox.pendingAll(),
      delivered: delivered.text,
      ...(delivered.last === undefined ? {} : { deliveredLast: delivered.last }),
      ...(this.seq === 0 ? {} : { record: this.lastDigest() }),
      ...(this.deadLetters.size === 0 ? {} : { deadLetters: [...this.deadLetters.values()] }),
      ...this.approvalParts(),
    };
  }

  private approvalParts(): Pick<TeamStateSnapshot, 'approvals' | 'gateCounts'> {
    const approvals = this.approvals.stored();
    const gateCounts = this.approvals.storedCounts();
    return {
      ...(approvals.length === 0 ? {} : { approvals }),
      ...(gateCounts.length === 0 ? {} : { gateCounts }),
    };
  }

  /** The digest of the record at {@link lastSeq} (one a snapshot restored here carried). */
  private lastDigest(): string {
    if (this.last !== undefined) return recordDigest(this.last);
    if (this.restoredDigest !== undefined) return this.restoredDigest;
    throw new TeamError(
      'INVALID_ARGUMENT',
      `cannot snapshot at seq ${this.seq}: the record at it is not known (restored from a snapshot without its digest)`,
      { details: { seq: this.seq } },
    );
  }

  /**
   * Rebuilds the state a snapshot (already schema-checked) describes, checking what spans its
   * parts: `SNAPSHOT_INVALID` naming the first problem. Journaling is off, as after a fold.
   */
  static restore(teamId: string, snapshot: TeamStateSnapshot): TeamModel {
    if (snapshot.teamId !== teamId) {
      throw snapshotInvalid(`snapshot belongs to team ${snapshot.teamId}, not ${teamId}`, {
        teamId: snapshot.teamId,
      });
    }
    const model = new TeamModel(teamId);
    const problem =
      model.roster.restore(snapshot.members) ??
      (snapshot.version >= 4
        ? model.board.restoreLive(
            snapshot.tasks,
            snapshot.nextTaskNumber,
            snapshot.tombstones,
            (task) => model.checkTaskMembers(task),
          )
        : model.board.restore(snapshot.tasks, snapshot.nextTaskNumber)) ??
      model.mailbox.restore(snapshot.pending, snapshot.delivered, snapshot.deliveredLast) ??
      model.restoreDeadLetters(snapshot.deadLetters ?? []) ??
      model.approvals.restore(
        (snapshot.approvals ?? []) as Approval[],
        snapshot.gateCounts ?? [],
      ) ??
      model.checkRestored(snapshot);
    if (problem !== undefined) {
      throw snapshotInvalid(`invalid snapshot at seq ${snapshot.seq}: ${problem.message}`, {
        seq: snapshot.seq,
      });
    }
    model.seq = snapshot.seq;
    model.restoredDigest = snapshot.record;
    return model;
  }

  /** Dead letters were queued once each (so their ids are in the delivered history), not twice. */
  private restoreDeadLetters(deadLetters: readonly DeadLetter[]): Problem | undefined {
    for (const letter of deadLetters) {
      const { id } = letter.message;
      if (this.deadLetters.has(id) || !this.mailbox.wasQueued(id) || this.mailbox.get(id)) {
        return invariant(`dead letter ${id} is not a message that ended once`);
      }
      this.deadLetters.set(id, letter);
    }
    return undefined;
  }

  private checkRestored(snapshot: TeamStateSnapshot): Problem | undefined {
    for (const task of snapshot.tasks) {
      const problem = this.checkTaskMembers(task);
      if (problem !== undefined) return problem;
    }
    for (const message of snapshot.pending) {
      const sender = this.roster.get(message.senderId);
      if (sender === undefined || sender.name !== message.senderName) {
        return invariant(`message ${message.id} sender ${message.senderId} is not its member`);
      }
      const target = checkMessageTarget(this.roster, message.targetId);
      if (target !== undefined) return target;
    }
    for (const approval of snapshot.approvals ?? []) {
      const problem = this.checkApprovalMembers(approval);
      if (problem !== undefined) return problem;
    }
    if (snapshot.members.length > 0 && this.roster.leadId === undefined) {
      return invariant('the team has members but no lead');
    }
    return undefined;
  }

  /** The seq of the last applied record of any team. */
  get lastSeq(): number {
    return this.seq;
  }

  /**
   * Applies one record. Strict: a record that breaks an invariant throws `LOG_INVARIANT` naming
   * its seq and leaves the state exactly as it was (every check runs before any change). A record
   * of another team only advances the seq.
   */
  /**
   * The seq up to which records are final: once journaling, records after it can be reverted.
   */
  get settledSeq(): number {
    return this.journaling ? this.settled : this.seq;
  }

  /**
   * From now on, keeps what it takes to revert every record applied after the last settled one
   * (the records a writer applied before its log made them durable).
   */
  startJournal(): void {
    this.journaling = true;
    this.settled = this.seq;
    this.settledLast = this.last;
  }

  /** Records up to `seq` are durable: they can no longer be reverted. */
  settle(seq: number): void {
    if (!this.journaling || seq <= this.settled) return;
    const upTo = Math.min(seq, this.seq);
    const settledNow = this.undo.splice(0, upTo - this.settled);
    this.settledLast = settledNow.at(-1)?.record ?? this.settledLast;
    this.settled = upTo;
  }

  /**
   * Undoes every record after `seq`, newest first, leaving the state exactly as it was when
   * `seq` was the last applied record. `seq` must not be before {@link settledSeq}.
   */
  revertTo(seq: number): void {
    if (seq < this.settledSeq || seq > this.seq) {
      throw new TeamError(
        'INVALID_ARGUMENT',
        `cannot revert to seq ${seq}: records up to ${this.settledSeq} are settled, the last is ${this.seq}`,
        { details: { seq, settledSeq: this.settledSeq, lastSeq: this.seq } },
      );
    }
    while (this.seq > seq) {
      const entry = this.undo.pop() as Undo;
      this.revertOne(entry);
      this.seq--;
    }
    this.last = this.undo.at(-1)?.record ?? this.settledLast;
  }

  /**
   * The member as the settled (durable) records have it: its value before the first of its
   * records that can still be reverted. O(records not yet settled).
   */
  settledMember(id: string): Member | undefined {
    for (const entry of this.undo) {
      if (entry.record.type === 'member' && entry.record.member.id === id) return entry.member;
    }
    return this.roster.get(id);
  }

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
    if (record.schemaVersion !== RECORD_SCHEMA_VERSIONS[record.type]) checkSchemaVersion(record);
    if (record.teamId === this.teamId) {
      const problem = this.check(record);
      if (problem !== undefined) {
        throw new TeamError('LOG_INVARIANT', `${problem.message} at seq ${seq}`, {
          details: { seq, type: record.type },
        });
      }
      const reset = this.resetCount(record);
      if (this.journaling) this.undo.push({ ...this.undoOf(record), reset });
      this.commit(record);
      if (reset !== undefined) this.approvals.setGateCount(reset.gate, reset.id, 0);
    } else if (this.journaling) {
      this.undo.push({ record });
    }
    this.seq = seq;
    this.last = record;
  }

  private undoOf(record: TeamRecord): Undo {
    switch (record.type) {
      case 'member':
        return { record, member: this.roster.get(record.member.id) };
      case 'task':
        return {
          record,
          task: this.board.get(record.task.id),
          nextTaskNumber: this.board.nextTaskNumber,
        };
      case 'message.delivered':
      case 'message.dead_lettered':
        return {
          record,
          message: this.mailbox.get(record.messageId),
          position: this.mailbox.positionOf(record.messageId),
        };
      case 'approval.requested':
        return { record };
      case 'approval.decided':
      case 'approval.started':
        return { record, approval: this.approvals.get(record.approvalId) };
      case 'gate.refused': {
        const id = gateSubject(record) as string;
        return { record, gateCount: this.approvals.gateCount(record.gate, id) };
      }
      default:
        return { record };
    }
  }

  /** The gate count a record resets (a task that ends, a teammate's idle that passed), if any. */
  private resetCount(record: TeamRecord): Undo['reset'] {
    if (
      record.type === 'task' &&
      (record.task.status === 'completed' || record.task.status === 'deleted')
    ) {
      const count = this.approvals.gateCount('task_completed', record.task.id);
      return count === 0 ? undefined : { gate: 'task_completed', id: record.task.id, count };
    }
    if (record.type === 'message.queued' && record.message.kind === 'idle_notification') {
      const id = record.message.senderId;
      const count = this.approvals.gateCount('teammate_idle', id);
      return count === 0 ? undefined : { gate: 'teammate_idle', id, count };
    }
    return undefined;
  }

  private revertOne(entry: Undo): void {
    const { record } = entry;
    if (record.teamId !== this.teamId) return;
    if (entry.reset !== undefined) {
      this.approvals.setGateCount(entry.reset.gate, entry.reset.id, entry.reset.count);
    }
    switch (record.type) {
      case 'member':
        this.roster.revert(record.member, entry.member);
        break;
      case 'task':
        this.board.revert(record.task, entry.task, entry.nextTaskNumber ?? 1);
        break;
      case 'message.queued':
        this.mailbox.unqueue(record.message);
        break;
      case 'message.delivered':
        this.mailbox.undeliver(entry.message as QueuedMessage, entry.position ?? 0);
        break;
      case 'message.dead_lettered':
        this.deadLetters.delete(record.messageId);
        this.mailbox.undeliver(entry.message as QueuedMessage, entry.position ?? 0);
        break;
      case 'approval.requested':
        this.approvals.revert(record.approval.id, undefined);
        break;
      case 'approval.decided':
      case 'approval.started':
        this.approvals.revert(record.approvalId, entry.approval);
        break;
      case 'gate.refused':
        this.approvals.setGateCount(record.gate, gateSubject(record) as string, entry.gateCount);
        break;
    }
  }

  private check(record: TeamRecord): Problem | undefined {
    switch (record.type) {
      case 'member':
        return this.roster.checkRecord(record.member);
      case 'task':
        return (
          this.board.checkRecord(record.task) ??
          this.checkTaskMembers(record.task, this.board.get(record.task.id))
        );
      case 'message.queued':
        return this.checkQueued(record.message, record.schemaVersion);
      case 'message.delivered':
      case 'message.dead_lettered':
        return this.mailbox.checkDeliverable(record.messageId, record.targetId);
      case 'approval.requested':
        return (
          this.approvals.checkRequested(record.approval) ??
          this.checkApprovalMembers(record.approval)
        );
      case 'approval.decided':
        if (record.deciderId !== undefined && !this.roster.has(record.deciderId)) {
          return invariant(`approval decider ${record.deciderId} is not a team member`);
        }
        return this.approvals.checkDecided(record);
      case 'approval.started':
        return this.approvals.checkStarted(record.approvalId);
      case 'gate.refused':
        if (!this.roster.has(record.memberId)) {
          return invariant(`gate refusal member ${record.memberId} is not a team member`);
        }
        return this.approvals.checkGate(record);
      default:
        return invariant(
          `unknown record type ${JSON.stringify((record as { type?: unknown }).type)}`,
        );
    }
  }

  private commit(record: TeamRecord): void {
    switch (record.type) {
      case 'member':
        this.roster.commit(record.member);
        break;
      case 'task':
        this.board.commit(record.task);
        break;
      case 'message.queued':
        this.mailbox.enqueue(record.message);
        break;
      case 'message.delivered':
        this.mailbox.deliver(record.messageId);
        break;
      case 'message.dead_lettered': {
        const message = this.mailbox.get(record.messageId) as QueuedMessage;
        this.mailbox.deliver(record.messageId);
        this.deadLetters.set(record.messageId, {
          message,
          reason: record.reason,
          ...(record.detail === undefined ? {} : { detail: record.detail }),
          at: record.at,
        });
        break;
      }
      case 'approval.requested':
        this.approvals.request(record.approval, record.at);
        break;
      case 'approval.decided':
        this.approvals.decide(record);
        break;
      case 'approval.started':
        this.approvals.start(record.approvalId);
        break;
      case 'gate.refused':
        this.approvals.setGateCount(record.gate, gateSubject(record) as string, record.attempt);
        break;
    }
  }

  private checkApprovalMembers(approval: {
    id: string;
    requesterId: string;
    approverId?: string | undefined;
  }): Problem | undefined {
    if (!this.roster.has(approval.requesterId)) {
      return invariant(
        `approval ${approval.id} requester ${approval.requesterId} is not a team member`,
      );
    }
    if (approval.approverId !== undefined && !this.roster.has(approval.approverId)) {
      return invariant(
        `approval ${approval.id} approver ${approval.approverId} is not a team member`,
      );
    }
    return undefined;
  }

  /**
   * A task's creator and owner are members. What the previous revision (checked already) named is
   * not looked up again: the creator never changes, and members are never forgotten.
   */
  private checkTaskMembers(task: Task, previous?: Task): Problem | undefined {
    if (previous === undefined && !this.roster.has(task.creatorId)) {
      return invariant(`task ${task.id} creator ${task.creatorId} is not a team member`);
    }
    if (
      task.ownerId !== undefined &&
      task.ownerId !== previous?.ownerId &&
      !this.roster.has(task.ownerId)
    ) {
      return invariant(`task ${task.id} owner ${task.ownerId} is not a team member`);
    }
    return undefined;
  }

  private checkQueued(message: QueuedMessage, schemaVersion: number): Problem | undefined {
    if (schemaVersion < messageSchemaVersion(message)) {
      return invariant(`message ${message.id} of kind ${message.kind} needs schema version 3`);
    }
    if (message.approvalId !== undefined && this.approvals.get(message.approvalId) === undefined) {
      return invariant(
        `message ${message.id} names approval ${message.approvalId}, which does not exist`,
      );
    }
    const again = this.mailbox.checkNew(message.id);
    if (again !== undefined) return again;
    const sender = this.roster.get(message.senderId);
    if (sender === undefined) {
      return invariant(`message sender ${message.senderId} is not a team member`);
    }
    if (sender.name !== message.senderName) {
      return invariant(
        `message ${message.id} senderName "${message.senderName}" is not its sender's name`,
      );
    }
    return checkMessageTarget(this.roster, message.targetId);
  }
}

/** What reverting one applied record needs: the values it replaced. */
interface Undo {
  readonly record: TeamRecord;
  /** The member record it replaced (`member` records). */
  readonly member?: Member | undefined;
  /** The task snapshot it replaced (`task` records). */
  readonly task?: Task | undefined;
  /** The board's next task number before it (`task` records). */
  readonly nextTaskNumber?: number | undefined;
  /** The message it delivered and its queue position (`message.delivered` records). */
  readonly message?: QueuedMessage | undefined;
  readonly position?: number | undefined;
  /** The approval it changed, as it was (`approval.decided`, `approval.started`). */
  readonly approval?: Approval | undefined;
  /** The gate's count before it (`gate.refused`). */
  readonly gateCount?: number | undefined;
  /** A gate count it cleared, to restore (a task that ended, an idle that passed). */
  readonly reset?: { gate: GateName; id: string; count: number } | undefined;
}

/** A message goes to a member of the team (`UNKNOWN_TARGET`); commands also require it live. */
export function checkMessageTarget(roster: Roster, targetId: string): Problem | undefined {
  if (roster.has(targetId)) return undefined;
  return {
    code: 'UNKNOWN_TARGET',
    message: `message target ${String(targetId)} is not a team member`,
    details: { targetId },
  };
}
