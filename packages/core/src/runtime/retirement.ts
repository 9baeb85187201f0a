import { TeamError } from '../errors.js';
import type { Member, MessageQueuedRecord, TeamRecord } from '../records.js';
import { idleNoticeRecord, type MailHost } from './mail-delivery.js';
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
 */
export async function retireMember(host: RetireHost, member: Member): Promise<void> {
  host.guard();
  const notice = await host.workspaces.retire(member);
  host.guard();
  const { state } = host;
  const records: TeamRecord[] = [...state.releaseTasksOf(member.id)];
  let queued: MessageQueuedRecord | undefined;
  if (notice !== undefined) {
    try {
      queued = idleNoticeRecord(host, member, notice, 'workspace');
    } catch (error) {
      // A notice that cannot be queued must not keep the member from retiring; the
      // `workspace` event already told observers.
      if (!TeamError.isInstance(error)) throw error;
    }
    if (queued !== undefined) records.push(queued);
  }
  records.push(state.setMemberPhase(member.id, 'retired'));
  await host.commit(member.name, records);
  if (queued !== undefined) host.dispatch(queued.message);
}
