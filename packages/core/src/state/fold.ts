import { TeamError } from '../errors.js';
import type { DeadLetter, Member, QueuedMessage, Task, TeamRecord } from '../records.js';
import { TeamModel } from './team-model.js';

/** What a team log folds into. */
export interface FoldedTeam {
  /** Every member ever spawned, lead first, then in spawn order. */
  roster: Member[];
  /** Every task, tombstones included, in creation order. */
  tasks: Task[];
  /** Queued minus delivered, in log order: the recovery mailbox. */
  pendingMail: QueuedMessage[];
  /** Messages that ended without delivery, with why, in log order. */
  deadLetters: DeadLetter[];
  /** The seq of the last record read (of any team). */
  lastSeq: number;
}

/**
 * Replays a team log into roster, tasks and pending mail. Strict: the first record that breaks
 * an invariant throws `LOG_INVARIANT` naming its seq (see {@link TeamState.apply}). Records of
 * other teams, the inherited prefix of a forked log, are skipped. Limits are not enforced on
 * replay: a log written under higher limits still folds.
 */
export function foldTeam(records: Iterable<TeamRecord>, options: { teamId: string }): FoldedTeam {
  if (typeof options?.teamId !== 'string' || options.teamId.length === 0) {
    throw new TeamError('INVALID_ARGUMENT', 'teamId must be a non-empty string');
  }
  // The model lives only in this call, so its stored values are handed out without copies.
  const model = new TeamModel(options.teamId);
  for (const record of records) model.apply(record);
  return {
    roster: model.roster.list(),
    tasks: [...model.board.values()],
    pendingMail: model.mailbox.pendingAll(),
    deadLetters: [...model.deadLetters.values()],
    lastSeq: model.lastSeq,
  };
}
