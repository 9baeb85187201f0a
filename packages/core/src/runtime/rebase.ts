import { canonicalJson } from '../canonical-json.js';
import { TeamError } from '../errors.js';
import type { MessageQueuedRecord, QueuedMessage, TeamRecord } from '../records.js';
import type { TeamState } from '../state/index.js';

/*
 * The rule of a team's sequencer (see `TeamSequencer`): a process proposes records it decided
 * against its state at seq N; the sequencer, whose state is at M >= N, commits them at M+1.. only
 * if deciding the same command against its state gives exactly those records. That holds for a
 * record kind whose decision depends on the state only through checks that can be run again:
 * `message.queued` (its id is chosen by the caller, never derived from the state). A task gets
 * the next `task-<n>` id and a revision to compare and set, so its records are not rebasable: they
 * keep the optimistic path (append, and on a lost race decide again).
 */

/** True when every record of `records` is of a kind a sequencer may commit at a later seq. */
export function isRebasable(records: readonly TeamRecord[]): boolean {
  if (records.length === 0) return false;
  for (const record of records) if (record.type !== 'message.queued') return false;
  return true;
}

/**
 * Decides `records` (rebasable, proposed by another process) again against `state` and applies
 * them at the next seqs: for each, the command itself (`queueMessage`, the one function every
 * sender runs, limits included) runs against the state, and the message it gives must be the one
 * proposed; the proposed record is then folded at its new seq. Returns the records as they are
 * to be written. Throws the command's own error when it is refused now, or `SEQ_CONFLICT` when it
 * decides something else; either way the state is left as it was.
 */
export function rebaseRecords(state: TeamState, records: readonly TeamRecord[]): TeamRecord[] {
  const mark = state.lastSeq;
  const out: TeamRecord[] = [];
  try {
    for (const record of records) {
      if (record.type !== 'message.queued') {
        throw new TeamError('INVALID_ARGUMENT', `a ${record.type} record cannot be rebased`, {
          details: { type: record.type },
        });
      }
      const before = state.lastSeq;
      const decided = state.queueMessage(inputOf(record.message));
      state.revertTo(before);
      if (decisionOf(decided.message) !== decisionOf(record.message)) {
        throw new TeamError(
          'SEQ_CONFLICT',
          `message ${record.message.id} decides differently at seq ${before + 1} than where it was proposed`,
          { details: { messageId: record.message.id, seq: before + 1 } },
        );
      }
      const rebased: MessageQueuedRecord = { ...record, seq: before + 1 };
      state.apply(rebased);
      out.push(rebased);
    }
  } catch (error) {
    state.revertTo(mark);
    throw error;
  }
  return out;
}

/** The command input a queued message was decided from. */
function inputOf(message: QueuedMessage) {
  return {
    id: message.id,
    senderId: message.senderId,
    targetId: message.targetId,
    kind: message.kind,
    delivery: message.delivery,
    content: message.content,
    summary: message.summary,
    taskId: message.taskId,
    approvalId: message.approvalId,
  };
}

/**
 * What a decision of `queueMessage` determines of a message, as comparable text: everything but
 * its trace (which the sender's own process stamps, and is carried over as proposed).
 */
function decisionOf(message: QueuedMessage): string {
  const { trace: _trace, ...decided } = message;
  return canonicalJson(decided);
}
