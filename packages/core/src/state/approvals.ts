import type {
  ApprovalDecidedRecord,
  ApprovalDecision,
  ApprovalRequest,
  GateName,
  GateRefusedRecord,
} from '../records.js';
import { invariant, type Problem } from './problem.js';

/** Where an approval stands: `pending` until its one decision. */
export type ApprovalStatus = 'pending' | ApprovalDecision;

/** An approval as the team state keeps it: the request, and its decision once there is one. */
export interface Approval extends ApprovalRequest {
  /** `pending`, or how it was decided. */
  status: ApprovalStatus;
  /** When it was requested (the record's `at`). */
  requestedAt: number;
  /** When it was decided. */
  decidedAt?: number;
  /** Why it was decided so, as the decider said. */
  reason?: string;
  /** The member that decided; absent for the host, an expiry or a cancel. */
  deciderId?: string;
  /** For an approved `tool` call: true once it began running (it never runs again). */
  started?: boolean;
}

/** Which approvals `TeamState.approvals` and `TeamService.approvals` return. */
export interface ApprovalFilter {
  /** One status or several. */
  status?: ApprovalStatus | readonly ApprovalStatus[] | undefined;
  /** Only those this member asked for. */
  requesterId?: string | undefined;
  /** Only those this member decides. */
  approverId?: string | undefined;
}

/** A gate's count of refusals in a row, for a task or a member, as a snapshot keeps it. */
export interface GateCount {
  /** Which gate refused. */
  gate: GateName;
  /** The task (`task_completed`) or the member (`teammate_idle`). */
  id: string;
  /** Refusals since the last completion or idle that passed. */
  count: number;
}

/**
 * The approvals of a team and its gates' refusal counts, changed only by applying records: a
 * request is pending until exactly one decision ends it, an approved tool call is started at most
 * once, and a gate's refusals are counted in a row (`attempt` 1, 2, ...).
 */
export class Approvals {
  private readonly byId = new Map<string, Approval>();
  /** `requesterId \n toolCallId` -> approval id: one approval per tool call. */
  private readonly byCall = new Map<string, string>();
  private readonly counts = new Map<string, number>();

  /** The approval with that id. */
  get(id: string): Approval | undefined {
    return this.byId.get(id);
  }

  /** The latest approval asked for `toolCallId` of `requesterId`, if any. */
  forCall(requesterId: string, toolCallId: string): Approval | undefined {
    const id = this.byCall.get(callKey(requesterId, toolCallId));
    return id === undefined ? undefined : this.byId.get(id);
  }

  /** Approvals in request order, filtered. */
  list(filter: ApprovalFilter = {}): Approval[] {
    const statuses =
      filter.status === undefined
        ? undefined
        : new Set<ApprovalStatus>(
            typeof filter.status === 'string' ? [filter.status] : filter.status,
          );
    const out: Approval[] = [];
    for (const approval of this.byId.values()) {
      if (statuses !== undefined && !statuses.has(approval.status)) continue;
      if (filter.requesterId !== undefined && approval.requesterId !== filter.requesterId) continue;
      if (filter.approverId !== undefined && approval.approverId !== filter.approverId) continue;
      out.push(approval);
    }
    return out;
  }

  /** Whether `memberId` has a plan approved. */
  planApproved(memberId: string): boolean {
    for (const approval of this.byId.values()) {
      if (approval.kind === 'plan' && approval.requesterId === memberId) {
        if (approval.status === 'approved') return true;
      }
    }
    return false;
  }

  /** The refusals in a row of `gate` for a task or member. */
  gateCount(gate: GateName, id: string): number {
    // Asked for every completed task and idle notification; most teams never had a refusal.
    if (this.counts.size === 0) return 0;
    return this.counts.get(countKey(gate, id)) ?? 0;
  }

  // ------------------------------------------------------------ checks

  checkRequested(request: ApprovalRequest): Problem | undefined {
    if (this.byId.has(request.id)) return invariant(`approval ${request.id} was already requested`);
    if (request.kind === 'tool') {
      if (request.toolCallId === undefined || request.toolName === undefined) {
        return invariant(`tool approval ${request.id} names no tool call`);
      }
      // A call id a model used again (after the first call's approval ended) asks anew.
      const earlier = this.forCall(request.requesterId, request.toolCallId);
      if (earlier?.status === 'pending') {
        return {
          code: 'APPROVAL_STATE',
          message: `tool call ${request.toolCallId} already waits for approval ${earlier.id}`,
          details: { toolCallId: request.toolCallId, approvalId: earlier.id },
        };
      }
    } else {
      if (request.plan === undefined) return invariant(`plan approval ${request.id} has no plan`);
      if (this.list({ status: 'pending', requesterId: request.requesterId }).some(isPlan)) {
        return {
          code: 'APPROVAL_STATE',
          message: 'a plan of this member already waits for a decision',
          details: { requesterId: request.requesterId },
        };
      }
    }
    return undefined;
  }

  checkDecided(record: Pick<ApprovalDecidedRecord, 'approvalId'>): Problem | undefined {
    const approval = this.byId.get(record.approvalId);
    if (approval === undefined) {
      return {
        code: 'APPROVAL_NOT_FOUND',
        message: `no approval with id ${record.approvalId}`,
        details: { approvalId: record.approvalId },
      };
    }
    if (approval.status !== 'pending') {
      return {
        code: 'APPROVAL_DECIDED',
        message: `approval ${approval.id} was already ${approval.status}`,
        details: { approvalId: approval.id, status: approval.status },
      };
    }
    return undefined;
  }

  checkStarted(approvalId: string): Problem | undefined {
    const approval = this.byId.get(approvalId);
    if (approval?.kind !== 'tool' || approval.status !== 'approved' || approval.started === true) {
      return {
        code: 'APPROVAL_STATE',
        message: `approval ${approvalId} is not an approved tool call that has not started`,
        details: { approvalId },
      };
    }
    return undefined;
  }

  checkGate(record: Pick<GateRefusedRecord, 'gate' | 'memberId' | 'taskId' | 'attempt'>) {
    const id = gateSubject(record);
    if (id === undefined) return invariant('a task_completed refusal names no task');
    const expected = this.gateCount(record.gate, id) + 1;
    if (record.attempt !== expected) {
      return invariant(`gate refusal attempt ${record.attempt}, expected ${expected}`);
    }
    return undefined;
  }

  // ------------------------------------------------------------ changes (after checks)

  request(request: ApprovalRequest, at: number): void {
    this.byId.set(request.id, { ...request, status: 'pending', requestedAt: at });
    if (request.toolCallId !== undefined) {
      this.byCall.set(callKey(request.requesterId, request.toolCallId), request.id);
    }
  }

  decide(record: ApprovalDecidedRecord): void {
    const approval = this.byId.get(record.approvalId) as Approval;
    const decided: Approval = { ...approval, status: record.decision, decidedAt: record.at };
    if (record.reason !== undefined) decided.reason = record.reason;
    if (record.deciderId !== undefined) decided.deciderId = record.deciderId;
    this.byId.set(approval.id, decided);
  }

  start(approvalId: string): void {
    const approval = this.byId.get(approvalId) as Approval;
    this.byId.set(approvalId, { ...approval, started: true });
  }

  /** Puts an approval back as it was (`undefined`: it did not exist). */
  revert(id: string, before: Approval | undefined): void {
    if (before === undefined) {
      const removed = this.byId.get(id);
      this.byId.delete(id);
      if (removed?.toolCallId !== undefined) {
        const key = callKey(removed.requesterId, removed.toolCallId);
        this.byCall.delete(key);
        // The call's earlier approval, if its id was used before, is the one it names again.
        for (const approval of this.byId.values()) {
          if (approval.toolCallId !== undefined) {
            if (callKey(approval.requesterId, approval.toolCallId) === key) {
              this.byCall.set(key, approval.id);
            }
          }
        }
      }
    } else {
      this.byId.set(id, before);
    }
  }

  /** Sets a gate's count (0 or `undefined` clears it). */
  setGateCount(gate: GateName, id: string, count: number | undefined): void {
    const key = countKey(gate, id);
    if (count === undefined || count === 0) this.counts.delete(key);
    else this.counts.set(key, count);
  }

  // ------------------------------------------------------------ snapshots

  /** Every approval, in request order, for a snapshot. */
  stored(): Approval[] {
    return [...this.byId.values()];
  }

  /** The non-zero gate counts, for a snapshot. */
  storedCounts(): GateCount[] {
    return [...this.counts].map(([key, count]) => {
      const [gate, id] = key.split('\n') as [GateName, string];
      return { gate, id, count };
    });
  }

  /** Rebuilds from a snapshot's parts; the first problem found, if any. */
  restore(approvals: readonly Approval[], counts: readonly GateCount[]): Problem | undefined {
    for (const approval of approvals) {
      const problem = this.checkRequested(approval);
      if (problem !== undefined) return invariant(problem.message);
      if (approval.status === 'pending' && approval.decidedAt !== undefined) {
        return invariant(`pending approval ${approval.id} has a decision time`);
      }
      if (
        approval.started === true &&
        (approval.kind !== 'tool' || approval.status !== 'approved')
      ) {
        return invariant(`approval ${approval.id} started without being an approved tool call`);
      }
      this.request(approval, approval.requestedAt);
      this.byId.set(approval.id, approval);
    }
    for (const { gate, id, count } of counts) {
      if (this.counts.has(countKey(gate, id))) return invariant(`gate count ${gate} ${id} twice`);
      this.counts.set(countKey(gate, id), count);
    }
    return undefined;
  }
}

/** The task or member a gate refusal counts against. */
export function gateSubject(
  record: Pick<GateRefusedRecord, 'gate' | 'memberId' | 'taskId'>,
): string | undefined {
  return record.gate === 'task_completed' ? record.taskId : record.memberId;
}

function isPlan(approval: Approval): boolean {
  return approval.kind === 'plan';
}

function callKey(requesterId: string, toolCallId: string): string {
  return `${requesterId}\n${toolCallId}`;
}

function countKey(gate: GateName, id: string): string {
  return `${gate}\n${id}`;
}
