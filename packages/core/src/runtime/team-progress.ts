import type { MemberStatus } from '../ports/events.js';
import type { PlacementView } from '../ports/placement.js';
import type { Member, QueuedMessage } from '../records.js';

/**
 * Whether a team can still move without the member asking (the lead, usually): some other member
 * is working, is about to (it has mail that wakes it, or it is being spawned), or waits for a
 * process of the team to take it over. Derived from the team's records and its placement, so every
 * process of a team answers alike.
 */
export interface TeamProgress {
  /** True when some other member works or will. */
  readonly progressing: boolean;
  /** Names of the members working now (`running`, or `provisioning`). */
  readonly working: readonly string[];
  /** Names of the members with mail that wakes them, not working yet. */
  readonly woken: readonly string[];
  /** Names of the members no live process runs yet, that a willing live process will take. */
  readonly awaitingPlacement: readonly string[];
  /**
   * Names of the members parked on a tool call that someone else (another member, the host, a
   * person) is to approve: the team moves once they decide (or the request expires).
   */
  readonly awaitingApproval: readonly string[];
  /** Names of the members parked on a tool call that the asking member itself is to approve. */
  readonly awaitingYourDecision: readonly string[];
  /**
   * Members no live process can host, with the capabilities they wait for (a process with them
   * must join): not progress, since nothing that runs now will take them.
   */
  readonly awaitingCapabilities: readonly {
    /** The member's name. */
    readonly name: string;
    /** The capabilities it requires that no live process willing to run it has. */
    readonly requires: readonly string[];
  }[];
  /** One line for a model or a person: who moves, or why nothing does. */
  readonly summary: string;
}

/** What {@link teamProgress} reads. */
export interface ProgressInputs {
  /** Every member of the team. */
  readonly members: readonly Member[];
  /** The member asking: it does not count as progress for itself. */
  readonly selfId: string;
  /** A member's derived status (placement-aware). */
  statusOf(member: Member): MemberStatus;
  /** A member's pending mail. */
  pending(memberId: string): readonly QueuedMessage[];
  /**
   * True for a member whose turns a client takes (an MCP agent, a person at the dashboard). Such
   * a member is progress only while it works on a task it owns: a connected client with nothing
   * of the team's to do (a person watching the page) must not keep a stalled team waiting.
   */
  isClient?(member: Member): boolean;
  /** True when the member owns a task `in_progress`. */
  ownsTask?(memberId: string): boolean;
  /** The placement as this process sees it, for a team spread over processes. */
  readonly view?: PlacementView | undefined;
  /**
   * The pending tool approval the member is parked on, if any, with its approver (absent: the
   * host decides). A parked member takes no mail until it is decided.
   */
  parkedOn?(memberId: string):
    | {
        /** Who decides it; absent: the host. */
        approverId?: string | undefined;
      }
    | undefined;
}

/** The one rule of team progress, used by `wait_for_team`, the service and the example. */
export function teamProgress(inputs: ProgressInputs): TeamProgress {
  const working: string[] = [];
  const woken: string[] = [];
  const awaitingPlacement: string[] = [];
  const awaitingApproval: string[] = [];
  const awaitingYourDecision: string[] = [];
  const awaitingCapabilities: { name: string; requires: readonly string[] }[] = [];
  for (const member of inputs.members) {
    if (member.id === inputs.selfId) continue;
    if (member.phase === 'provisioning') {
      working.push(member.name);
      continue;
    }
    if (member.phase !== 'active') continue;
    if (inputs.isClient?.(member) === true) {
      if (inputs.ownsTask?.(member.id) === true && inputs.statusOf(member) !== 'inactive') {
        working.push(member.name);
      }
      continue;
    }
    const status = inputs.statusOf(member);
    const parked = inputs.parkedOn?.(member.id);
    if (status === 'running' || status === 'provisioning') {
      working.push(member.name);
    } else if (inputs.view?.awaiting.has(member.id) === true) {
      awaitingPlacement.push(member.name);
    } else if (inputs.view?.unhostable?.has(member.id) === true && status === 'inactive') {
      const requires = inputs.view.unhostable.get(member.id) ?? [];
      awaitingCapabilities.push({ name: member.name, requires });
    } else if (parked !== undefined && status !== 'failed') {
      // Its mail waits for the decision: it moves when the approver decides, not before.
      if (parked.approverId === inputs.selfId) awaitingYourDecision.push(member.name);
      else awaitingApproval.push(member.name);
    } else if (
      status !== 'failed' &&
      (inputs.pending(member.id).some((message) => message.delivery === 'wakeup') ||
        // a member with no runner that owns a task in progress is revived to resume it
        (status === 'inactive' && inputs.ownsTask?.(member.id) === true))
    ) {
      woken.push(member.name);
    }
  }
  const progressing =
    working.length + woken.length + awaitingPlacement.length + awaitingApproval.length > 0;
  const parts: string[] = [];
  if (working.length > 0) parts.push(`working: ${working.join(', ')}`);
  if (woken.length > 0) parts.push(`about to take mail: ${woken.join(', ')}`);
  if (awaitingPlacement.length > 0) {
    parts.push(`waiting for a process to take them over: ${awaitingPlacement.join(', ')}`);
  }
  if (awaitingApproval.length > 0) {
    parts.push(`waiting for an approval: ${awaitingApproval.join(', ')}`);
  }
  const unhosted =
    awaitingCapabilities.length === 0
      ? ''
      : `; no live process can run ${awaitingCapabilities
          .map((m) => `${m.name} (it needs ${m.requires.join(', ')})`)
          .join(', ')}: start one that has it`;
  const yours =
    awaitingYourDecision.length === 0
      ? ''
      : `; waiting for your decision on their approval requests: ${awaitingYourDecision.join(', ')}`;
  return {
    progressing,
    working,
    woken,
    awaitingPlacement,
    awaitingApproval,
    awaitingYourDecision,
    awaitingCapabilities,
    summary: `${
      progressing
        ? parts.join('; ')
        : 'no other member is working, about to, or waiting for a process'
    }${unhosted}${yours}`,
  };
}
