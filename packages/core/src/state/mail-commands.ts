import type { ContentBlock } from '../content.js';
import { TeamError } from '../errors.js';
import { contentJsonBytes } from '../limits.js';
import type { MessageDelivery, MessageKind, QueuedMessage } from '../records.js';
import { checkMessageSummary, isBoundedKind, type Mailbox } from './mailbox.js';
import { refuseIf } from './problem.js';
import { isLivePhase, type Roster } from './roster.js';
import type { TaskBoard } from './task-board.js';
import type { TeamLimits } from './team-limits.js';
import { checkMessageTarget } from './team-model.js';

/*
 * The mail commands decide: they validate a request against the roster, the board and the
 * mailboxes and return what the record carries, changing nothing. `TeamState` stamps it into a
 * record and applies it.
 */

/** Input of `TeamState.queueMessage`. */
export interface QueueMessageInput {
  /** The new message's id; must not be taken. */
  id: string;
  /** The sender's member id; must be a live member. */
  senderId: string;
  /** The recipient's member id; a live member other than the sender. */
  targetId: string;
  /** What the message is; set by the runtime, never read from the body. */
  kind: MessageKind;
  /** Whether the message wakes an idle target. */
  delivery: MessageDelivery;
  /** The body; at most `maxMessageBytes` as JSON. */
  content: ContentBlock[];
  /** A one-line preview. */
  summary?: string | undefined;
  /** For `task_assignment`: the task concerned; must exist. */
  taskId?: string | undefined;
  /** For `approval_request` and `approval_decision`: the approval concerned; must exist. */
  approvalId?: string | undefined;
}

/** What the mail commands read. */
export interface MailContext {
  readonly roster: Roster;
  readonly board: TaskBoard;
  readonly mailbox: Mailbox;
}

/** The message to queue, `senderName` filled in from the roster. */
export function decideQueueMessage(
  { roster, board, mailbox }: MailContext,
  limits: TeamLimits,
  input: QueueMessageInput,
): QueuedMessage {
  const sender = roster.get(input.senderId);
  if (sender === undefined || !isLivePhase(sender.phase)) {
    throw new TeamError(
      'NOT_A_MEMBER',
      `${String(input.senderId)} is not a live member of the team and cannot send`,
      { details: { senderId: input.senderId, phase: sender?.phase } },
    );
  }
  refuseIf(checkMessageTarget(roster, input.targetId));
  const target = roster.get(input.targetId)!;
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
  const bytes = contentJsonBytes(input.content);
  if (bytes > limits.maxMessageBytes) {
    throw new TeamError(
      'MESSAGE_TOO_LARGE',
      `the message is ${bytes} bytes, over the limit of ${limits.maxMessageBytes}; shorten it`,
      { details: { bytes, limit: limits.maxMessageBytes } },
    );
  }
  checkMessageSummary(input.summary);
  if (input.taskId !== undefined && board.get(input.taskId) === undefined) {
    throw new TeamError('TASK_NOT_FOUND', `no task with id ${String(input.taskId).slice(0, 40)}`, {
      details: { field: 'taskId' },
    });
  }
  if (isBoundedKind(input.kind) && mailbox.boundedCount(target.id) >= limits.maxPendingPerMember) {
    throw new TeamError(
      'MAILBOX_FULL',
      `${target.name} already has ${limits.maxPendingPerMember} undelivered messages; wait for it to catch up`,
      { details: { targetId: target.id, limit: limits.maxPendingPerMember } },
    );
  }
  refuseIf(mailbox.checkNew(input.id));
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
  if (input.approvalId !== undefined) message.approvalId = input.approvalId;
  return message;
}

/** The pending message `messageId`, to be marked delivered to its target. */
export function decideDelivered(mailbox: Mailbox, messageId: string): QueuedMessage {
  refuseIf(mailbox.checkDeliverable(messageId));
  return mailbox.get(messageId)!;
}
