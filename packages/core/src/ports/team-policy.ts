import type { QueuedMessage, Task } from '../records.js';

/** What {@link TeamPolicy.pickNext} chooses from. */
export interface PickNextOptions {
  /**
   * The member's deliverable pending mail, in queue order, never empty. It holds no
   * `shutdown_request` a policy could hold back: the runner handles those first (see
   * {@link TeamPolicy}).
   */
  pending: readonly QueuedMessage[];
  /** The lead's member id, to tell the lead's mail from peers'. */
  leadId: string;
}

/**
 * The team policy: which pending message a member handles next, and the texts the runtime writes
 * on its own (the lead's idle notice, the prompt of a claimed task, the task-assignment notice).
 * It is the same for every wire format, so a new policy is only these four members; core's
 * `defaultTeamPolicy` is used when a team is opened without one.
 *
 * One rule no policy can change: a pending `shutdown_request` ends a teammate at its next turn
 * or step boundary, before the policy is asked, so the lead can always stop a teammate.
 */
export interface TeamPolicy {
  /** The version of this port the policy implements; checked when a team opens. */
  readonly specificationVersion: 'v1';
  /**
   * Picks the message to handle next. At a turn boundary the pick starts the turn; at a step
   * boundary inside a turn every pending message is delivered, in the order of repeated picks.
   * `undefined`, or a message not in `pending`, falls back to the oldest one. Keep it cheap: it
   * runs at every boundary over the whole pending set.
   */
  pickNext(options: PickNextOptions): QueuedMessage | undefined;
  /**
   * The text the lead reads for a teammate's idle notification: its last text (`undefined` when
   * the turn ended without one), or a fallback line. The wire format then frames it.
   */
  formatIdleNotice(options: { from: string; text?: string | undefined }): string;
  /**
   * The text that starts a teammate's turn when it claims a ready task, or resumes one it owns.
   * `resumed` is true when its transcript already holds the task's prompt (after an interrupt or a
   * revival elsewhere): the text should tell it to go on from what it did, not start over.
   */
  formatTaskClaimPrompt(options: {
    task: Task;
    openTasks: readonly Task[];
    resumed?: boolean | undefined;
  }): string;
  /** The text of the `task_assignment` message sent to a task's new owner on a reassign. */
  formatAssignmentNotice(options: { task: Task; assignedBy: string }): string;
}
