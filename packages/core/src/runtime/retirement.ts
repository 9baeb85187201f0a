import { TeamError } from '../errors.js';
import type { Member, QueuedMessage, TeamRecord } from '../records.js';
import { deliveredRecords, idleNoticeRecord, type MailHost } from './mail-delivery.js';
import type { RunnerHost } from './runner-host.js';

/** The part of the runner host a retirement needs. */
export type RetireHost = MailHost & Pick<RunnerHost, 'workspaces'>;

/**
 * Retires `member` after its shutdown request was recorded: its workspace goes back to the
 * provider (kept when it holds work), then one commit releases its tasks, queues the lead's notice
 * about kept work (or a workspace that could not be released) and records it `retired`. The
 * notice is an `idle_notification` from the member, the typed notice the lead already reads for
 * teammates; it is queued while the member is still live, always (a pending idle notice does not
 * hold it back: kept work must not go unmentioned). Whatever the provider does, the member
 * retires and the log stays foldable.
 *
 * The shutdown request itself is marked delivered in that same commit, not before: a process
 * killed while the workspace is released leaves the request pending, so recovery wakes the member
 * and it retires then, instead of staying `active` with nothing left to wake it.
 */
export async function retireMember(
  host: RetireHost,
  member: Member,
  request: readonly QueuedMessage[] = [],
): Promise<void> {
  host.guard();
  const notice = await host.workspaces.retire(member);
  host.guard();
  const { state } = host;
  await host.commit(member, () => {
    const decided: TeamRecord[] = [...deliveredRecords(host, request)];
    for (const record of state.releaseTasksOf(member.id)) decided.push(record);
    if (notice !== undefined) {
      try {
        const queued = idleNoticeRecord(host, member, notice, 'workspace');
        if (queued !== undefined) decided.push(queued);
      } catch (error) {
        // A notice that cannot be queued must not keep the member from retiring; the
        // `workspace` event already told observers.
        if (!TeamError.isInstance(error)) throw error;
      }
    }
    decided.push(...state.leave(member.id, 'retired'));
    return decided;
  });
}
