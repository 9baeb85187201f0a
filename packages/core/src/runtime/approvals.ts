import type { ToolCall, ToolResultMessage, TranscriptEntry } from '../chat.js';
import { TERMINATED_TOOL_RESULT } from '../chat.js';
import { clipText, contentText, textContent } from '../content.js';
import { TeamError } from '../errors.js';
import type { ApprovalDecision, Member, TeamRecord } from '../records.js';
import type { Approval, TeamState } from '../state/index.js';
import type { ToolSet } from './agent-loop.js';
import type { AgentDefinition } from './agents.js';
import type { ApprovalView } from './service-types.js';

export type { ApprovalView, DecideInput, GateVerdict, TeamGates } from './service-types.js';

/** The default of {@link TeamGates.maxRefusals}. */
export const GATE_REFUSALS_DEFAULT = 3;

/** The approval as a view with names. */
export function approvalView(state: TeamState, approval: Approval): ApprovalView {
  const name = (id: string | undefined) =>
    id === undefined ? undefined : (state.member(id)?.name ?? id);
  const approver = name(approval.approverId);
  const decider = name(approval.deciderId);
  return {
    ...approval,
    approvalId: approval.id,
    requester: name(approval.requesterId) as string,
    ...(approver === undefined ? {} : { approver }),
    ...(decider === undefined ? {} : { decider }),
  };
}

/** Whether a call of a member of `definition` needs approval before it runs. */
export function needsApproval(
  definition: AgentDefinition,
  tools: ToolSet,
  call: ToolCall,
): boolean {
  const tool = tools.byName.get(call.name);
  if (tool?.needsApproval !== undefined && tool.needsApproval !== false) {
    if (tool.needsApproval === true) return true;
    const parsed = tool.inputSchema.safeParse(call.input);
    // An input the tool refuses never runs: it fails validation, with nothing to approve.
    if (parsed.success && tool.needsApproval(parsed.data)) return true;
  }
  const listed = definition.approval?.tools;
  if (listed === undefined) return false;
  if (typeof listed === 'function') return listed({ name: call.name, input: call.input });
  return listed.includes(call.name);
}

/**
 * Who decides a member's requests: the policy's named member when it is live and another member,
 * none (the host) for `host`, else the lead (none when the lead asks: the host decides).
 */
export function approverOf(
  state: TeamState,
  requester: Member,
  definition: AgentDefinition,
): string | undefined {
  const wanted = definition.approval?.approver ?? 'lead';
  if (wanted === 'host') return undefined;
  const named = state.memberByName(wanted);
  if (named !== undefined && state.isLive(named.id) && named.id !== requester.id) return named.id;
  const lead = state.leadId;
  return lead === undefined || lead === requester.id ? undefined : lead;
}

/** The text of an `approval_request` mail: what is asked, and how to decide. */
export function approvalRequestText(approval: Approval, requesterName: string): string {
  const decide = `Decide with decide_approval({ approvalId: "${approval.id}", decision: "approved" | "rejected", reason }).`;
  if (approval.kind === 'plan') {
    return `${requesterName} submitted a plan for approval (approval ${approval.id}):\n\n${approval.plan ?? ''}\n\n${decide} A rejection's reason goes back to ${requesterName} as feedback.`;
  }
  const expires =
    approval.expiresAt === undefined
      ? ''
      : ` It expires (rejected) at ${new Date(approval.expiresAt).toISOString()}.`;
  return `${requesterName} asks to run ${approval.toolName ?? 'a tool'} (approval ${approval.id}) with input:\n${approval.input ?? 'null'}\n\n${decide}${expires}`;
}

/** The text of an `approval_decision` mail. */
export function decisionText(approval: Approval, deciderName: string): string {
  const reason = approval.reason === undefined ? '' : `: ${approval.reason}`;
  if (approval.kind === 'plan') {
    return approval.status === 'approved'
      ? `Your plan was approved by ${deciderName}${reason}. You now have all your tools: carry it out.`
      : `Your plan was ${approval.status} by ${deciderName}${reason}. Revise it and submit it again with submit_plan.`;
  }
  return `Your call to ${approval.toolName ?? 'a tool'} (approval ${approval.id}) was ${approval.status} by ${deciderName}${reason}.`;
}

/** The result a call gets when its approval ended without running it. */
export function notRunText(approval: Approval): string {
  const who =
    approval.status === 'expired'
      ? 'its approval expired before anyone decided'
      : approval.status === 'canceled'
        ? 'its approval was canceled'
        : `it was rejected${approval.deciderId === undefined ? '' : ' by the approver'}`;
  const reason = approval.reason === undefined ? '' : `: ${approval.reason}`;
  return JSON.stringify({
    error: {
      code: 'APPROVAL_REJECTED',
      message: `Not run: ${who}${reason}`,
      details: { approvalId: approval.id, decision: approval.status },
    },
  });
}

/** The decision records and the requester's mail for one decision on a pending approval. */
export function decisionRecords(
  state: TeamState,
  input: {
    approvalId: string;
    decision: ApprovalDecision;
    reason?: string | undefined;
    deciderId?: string | undefined;
    /** The decision mail's id. */
    messageId: string;
  },
): TeamRecord[] {
  const decided = state.decideApproval(input);
  const records: TeamRecord[] = [decided];
  const approval = state.getApproval(input.approvalId);
  const requester = state.member(approval.requesterId);
  const senderId = input.deciderId ?? approval.approverId ?? state.leadId;
  if (
    requester === undefined ||
    !state.isLive(requester.id) ||
    senderId === undefined ||
    senderId === requester.id ||
    !state.isLive(senderId)
  ) {
    return records;
  }
  const deciderName =
    input.deciderId === undefined
      ? input.decision === 'approved' || input.decision === 'rejected'
        ? 'the host'
        : 'the team'
      : (state.member(input.deciderId)?.name ?? 'the approver');
  records.push(
    state.queueMessage({
      id: input.messageId,
      senderId,
      targetId: requester.id,
      kind: 'approval_decision',
      delivery: 'wakeup',
      content: textContent(decisionText(approval, deciderName)),
      summary: clipText(`${approval.kind} ${approval.status}`, 200),
      approvalId: approval.id,
    }),
  );
  return records;
}

/**
 * Of a loaded transcript, the entries the runtime reads: the synthetic "terminated" results a
 * store gives the calls a member left open while it waited for an approval (the call that asked,
 * and the calls after it in the same step, none of which ran) are dropped, so the member resolves
 * them once decided. A call whose approved run started keeps its "terminated" result: it ran (or
 * began to), its outcome is unknown, and it is never run again. A call left open without an
 * approval request (a crash before the request) keeps it too: the model sees it cut off.
 */
export function reopenParkedCalls(
  entries: readonly TranscriptEntry[],
  state: TeamState,
  memberId: string,
): TranscriptEntry[] {
  let lastAssistant = -1;
  for (let i = entries.length - 1; i >= 0; i--) {
    const role = entries[i]?.message.role;
    if (role === 'assistant') {
      lastAssistant = i;
      break;
    }
    if (role !== 'tool') return [...entries];
  }
  if (lastAssistant < 0) return [...entries];
  const tail = entries.slice(lastAssistant + 1);
  const firstSynthetic = tail.findIndex((entry) =>
    isTerminated(entry.message as ToolResultMessage),
  );
  if (firstSynthetic < 0) return [...entries];
  if (!tail.slice(firstSynthetic).every((e) => isTerminated(e.message as ToolResultMessage))) {
    return [...entries];
  }
  const first = tail[firstSynthetic]?.message as ToolResultMessage;
  const approval = state.approvalForCall(memberId, first.toolCallId);
  if (approval === undefined || approval.started === true) return [...entries];
  return entries.slice(0, lastAssistant + 1 + firstSynthetic);
}

function isTerminated(message: ToolResultMessage): boolean {
  return (
    message.role === 'tool' &&
    message.isError === true &&
    contentText(message.content) === TERMINATED_TOOL_RESULT
  );
}

/** The calls of the conversation's last step still without a result, in order. */
export function openCalls(messages: readonly { role: string }[]): ToolCall[] {
  for (let i = messages.length - 1; i >= 0; i--) {
    const message = messages[i] as { role: string; toolCalls?: ToolCall[]; toolCallId?: string };
    if (message.role === 'tool') continue;
    if (message.role !== 'assistant' || message.toolCalls === undefined) return [];
    const answered = new Set(
      messages.slice(i + 1).map((m) => (m as { toolCallId?: string }).toolCallId),
    );
    return message.toolCalls.filter((call) => !answered.has(call.id));
  }
  return [];
}

/** `APPROVAL_DECIDED` and `APPROVAL_NOT_FOUND` mean someone else ended it first. */
export function isLostDecision(error: unknown): boolean {
  return (
    TeamError.hasCode(error, 'APPROVAL_DECIDED') || TeamError.hasCode(error, 'APPROVAL_NOT_FOUND')
  );
}
