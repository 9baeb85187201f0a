import {
  DecideApprovalToolInput,
  type ExternalAgentDefinition,
  INBOX_PAGE_MAX,
  MEMBER_NAME_MAX,
  MessageKind,
  TASK_BLOCKED_BY_MAX,
  TASK_ID_PATTERN,
  type TeamService,
} from '@teamwire/core';
import { z } from 'zod';
import { failure, parse, refusal } from './http.js';

/** The agent type of the person at the dashboard: register it in the team's agents to steer. */
export const OPERATOR_AGENT: ExternalAgentDefinition = {
  type: 'dashboard-operator',
  description: 'A person steering the team from the web dashboard (not an agent: never spawn one).',
  external: true,
};

const MessageAction = z.strictObject({
  to: z.string().min(1).max(MEMBER_NAME_MAX),
  text: z.string().min(1),
});
const TaskAction = z.strictObject({
  subject: z.string().min(1),
  description: z.string().min(1),
  blockedBy: z.array(z.string().regex(TASK_ID_PATTERN)).max(TASK_BLOCKED_BY_MAX).optional(),
});
const TargetAction = z.strictObject({ target: z.string().min(1).max(MEMBER_NAME_MAX) });
const ShutdownAction = z.strictObject({
  target: z.string().min(1).max(MEMBER_NAME_MAX),
  // bounded by the team's message size, as any shutdown request is
  reason: z.string().optional(),
});

// core's own bounds for a decision (the id, the reason), and nothing else in the body
const DecideAction = z.strictObject(DecideApprovalToolInput.shape);

/** An answer to write: a status and a JSON body. */
export interface Answer {
  status: number;
  body: unknown;
}

/**
 * Runs one steering action (`POST api/actions/<action>`) of the person at the page on its parsed
 * JSON body: messages and tasks come from the operator member; interrupt and shutdown use the
 * lead's authority, as the host does. A decision on an approval is the operator member's when it
 * is the approver, else the host's (the person at the page holds the host's token). The answer is
 * the action's result (200) or `{error: {code, message}}` with the status of its `TeamError` code.
 */
export async function runAction(
  action: string,
  body: unknown,
  team: TeamService,
  as: Operator,
): Promise<Answer> {
  try {
    await as.ready();
    switch (action) {
      case 'message': {
        const input = parse(MessageAction, body);
        return ok(await as.service().sendMessage({ to: input.to, text: input.text }));
      }
      case 'task': {
        const input = parse(TaskAction, body);
        const task = await as.service().createTask({
          subject: input.subject,
          description: input.description,
          ...(input.blockedBy === undefined ? {} : { blockedBy: input.blockedBy }),
        });
        return ok({ id: task.id, revision: task.revision });
      }
      case 'interrupt': {
        const input = parse(TargetAction, body);
        return ok(await team.interrupt(as.lead(), input));
      }
      case 'shutdown': {
        const input = parse(ShutdownAction, body);
        return ok(await team.shutdown(as.lead(), input));
      }
      case 'decide': {
        const input = parse(DecideAction, body);
        const decision = {
          approvalId: input.approvalId,
          decision: input.decision,
          // an empty reason is no reason
          ...(input.reason === undefined || input.reason.trim() === ''
            ? {}
            : { reason: input.reason }),
        };
        // one that is not pending is refused by either path (APPROVAL_DECIDED, APPROVAL_NOT_FOUND)
        const approval = team
          .approvals({ status: 'pending' })
          .find((a) => a.id === input.approvalId);
        const decided =
          approval?.approver === as.name
            ? await as.service().decide(decision)
            : await team.decide(decision);
        return ok({
          approvalId: decided.id,
          status: decided.status,
          ...(decided.decider === undefined ? {} : { decider: decided.decider }),
        });
      }
      default:
        return refusal(404, 'NOT_FOUND', `no action ${JSON.stringify(action)}`);
    }
  } catch (error) {
    return failure(error);
  }
}

const ok = (body: unknown): Answer => ({ status: 200, body });

/** The person at the page, as a member of the team. */
export interface Operator {
  /** Its member name. */
  readonly name: string;
  /** Spawns the operator member when the team has none yet, and starts acknowledging its mail. */
  ready(): Promise<void>;
  /** The operator's own view of the team (after {@link Operator.ready}). */
  service(): ReturnType<TeamService['forMember']>;
  /** The lead's credential, for lead-only actions. */
  lead(): ReturnType<TeamService['externalMember']>;
  /** Stops acknowledging the operator's mail. */
  close(): void;
}

/**
 * The person at the page: an external member, spawned by the host when first needed. Its mail
 * (replies to the person) is shown from the log's records and acknowledged as it arrives, so its
 * inbox never fills up; a shutdown request is left unread, so the person stays on the team.
 */
export function createOperator(team: TeamService, name: string): Operator {
  let spawning: Promise<void> | undefined;
  let unwatch: (() => void) | undefined;
  let draining = false;
  let again = false;
  const drain = async () => {
    // mail that rings while a drain runs is read by that drain's next round
    again = true;
    if (draining) return;
    draining = true;
    try {
      while (again) {
        again = false;
        const ref = team.externalMember(name);
        // A person is not shut down by the lead: its shutdown requests stay unread, so the page
        // keeps working after the lead ends the run.
        const kinds = MessageKind.options.filter((kind) => kind !== 'shutdown_request');
        let page = await team.readInbox(ref, { limit: INBOX_PAGE_MAX, kinds });
        while (page.cursor !== undefined) {
          page = await team.readInbox(ref, { after: page.cursor, limit: INBOX_PAGE_MAX, kinds });
        }
      }
    } catch {
      // retired, or the team is closing: nothing to acknowledge
    } finally {
      draining = false;
    }
  };
  const ready = async () => {
    if (!team.listMembers(team.lead).some((m) => m.name === name)) {
      spawning ??= team
        .spawnTeammate(team.lead, {
          name,
          description: 'The person at the dashboard',
          prompt: 'You steer the team from the dashboard.',
          agentType: OPERATOR_AGENT.type,
        })
        .then(() => undefined)
        .finally(() => {
          spawning = undefined;
        });
      await spawning;
    }
    if (unwatch === undefined) {
      unwatch = team.watchInbox(team.externalMember(name), () => void drain());
      void drain();
    }
  };
  return {
    name,
    service: () => team.forMember(team.externalMember(name)),
    lead: () => team.lead,
    close: () => unwatch?.(),
    ready,
  };
}
