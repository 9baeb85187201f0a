import type { Member, Task, TeamLog, TeamRecord } from '@teamwire/core';
import { OPERATOR_AGENT } from '@teamwire/dashboard';
import { CODING_AGENT_TYPE } from './mcp-serve.js';
import { SUMMARY_SUBJECT } from './policy-lead.js';

/**
 * How far a review team is, from durable records only: the team log as read when the view starts,
 * then the `record` events of the hub (published once durable, whichever process wrote them).
 *
 * The team service's own reads (`listMembers`, `listTasks`) are no good for this in a team spread
 * over processes: a command is applied to the state before its append is durable, and it may
 * still be refused (another process took the seq, or the store fenced the member) and be
 * reverted. A worker that took a retirement still in flight for done would leave too early.
 */
export class ReviewProgress {
  private readonly members = new Map<string, Member & { seq: number }>();
  private readonly tasks = new Map<string, Task & { seq: number }>();

  /**
   * `summarySubject`: the subject of the lead's summary task, completed once the report is
   * written (the review's by default; the fix's lead has its own).
   */
  constructor(
    private readonly leadId: string,
    private readonly summarySubject: string = SUMMARY_SUBJECT,
  ) {}

  /** Applies a durable record (again is harmless: an older record never replaces a newer one). */
  apply(record: TeamRecord): void {
    if (record.type === 'member') {
      const known = this.members.get(record.member.id);
      if (!known || known.seq < record.seq)
        this.members.set(record.member.id, { ...record.member, seq: record.seq });
    } else if (record.type === 'task') {
      const known = this.tasks.get(record.task.id);
      if (!known || known.seq < record.seq)
        this.tasks.set(record.task.id, { ...record.task, seq: record.seq });
    }
  }

  /** Applies every record of the log up to now. */
  async read(log: TeamLog): Promise<void> {
    for await (const record of log.read()) this.apply(record);
  }

  /**
   * The members whose retirement ends the run: every one but the lead, the person at the
   * dashboard and a member run by an MCP client (`--mcp`'s coder), which retires when its client
   * next reads its inbox, maybe long after the run (its shutdown request waits there for it).
   */
  reviewers(): Member[] {
    return [...this.members.values()].filter(
      (m) =>
        m.id !== this.leadId &&
        m.agentType !== OPERATOR_AGENT.type &&
        m.agentType !== CODING_AGENT_TYPE,
    );
  }

  /** The lead completed its summary task: the report is written. */
  get reportDone(): boolean {
    return [...this.tasks.values()].some(
      (t) => t.subject === this.summarySubject && t.status === 'completed',
    );
  }

  /** The report is written and every reviewer has retired (or failed): nothing is left to run. */
  get finished(): boolean {
    const reviewers = this.reviewers();
    return (
      this.reportDone &&
      reviewers.length > 0 &&
      reviewers.every((m) => m.phase === 'retired' || m.phase === 'failed')
    );
  }
}

export const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));
