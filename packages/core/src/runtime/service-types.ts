import type { ChatMessage } from '../chat.js';
import type { ContentBlock } from '../content.js';
import type { MemberStatus } from '../ports/events.js';
import type {
  Member,
  MemberContext,
  MessageDelivery,
  MessageKind,
  TaskStatus,
  TeamRecord,
} from '../records.js';
import type {
  Approval,
  ApprovalFilter,
  CreateTaskInput,
  TaskView,
  TeamLimits,
  UpdateTaskInput,
} from '../state/index.js';
import type { TeamProgress } from './team-progress.js';

/*
 * The public shapes of the runtime: the credential, the TeamService a host calls, the
 * MemberTeamService a tool gets, and their inputs and results. Types only, imported by every
 * other runtime file and importing none of them, so the runtime's imports point one way.
 */

/**
 * The credential of one member, issued by a `TeamService` and nothing else. Every service method
 * takes one as its first argument. An object the service did not issue, or the ref of a member
 * that is no longer live, is refused with `NOT_A_MEMBER`, whatever its fields say. Tools get only
 * their own member's ref, and a {@link MemberTeamService} already bound to it, so code acting for
 * a teammate can only act as that teammate.
 */
export interface AgentRef {
  /** The member this credential acts as. */
  readonly memberId: string;
  /** That member's name, for display; the service never trusts it. */
  readonly name: string;
}

/**
 * Why a turn ended. `stopped`: the runner ended it at a step boundary (e.g. a shutdown).
 * `repeated_failure`: the member made the same failing tool call, failing the same way, as many
 * times in a row as the team allows (`maxRepeatedFailures`), so the turn ended instead of looping.
 */
export type TurnStopReason =
  | 'end_turn'
  | 'step_limit'
  | 'interrupted'
  | 'stopped'
  | 'repeated_failure'
  | 'awaiting_approval';

/** The result of one turn. */
export interface TurnOutcome {
  /** Why the turn ended. */
  stopReason: TurnStopReason;
  /** Model calls made. */
  steps: number;
  /** The last non-empty assistant text of the turn ('' when there was none). */
  text: string;
}

/** A member as `listMembers` shows it: the roster record plus its derived runtime status. */
export interface MemberInfo extends Member {
  /** Same as `id`, named for callers that pass it on. */
  memberId: string;
  /** The derived runtime status. */
  status: MemberStatus;
  /** Whether this member is the lead. */
  isLead: boolean;
  /**
   * The process that runs the member, when the team spreads over processes and the placement
   * knows it (`here`: this one).
   */
  process?: {
    /** The store's id of that process. */
    processId: string;
    /** True when it is this process. */
    here: boolean;
  };
  /** Why the member's runner stopped, when its status is `failed`. */
  failure?: {
    /** The failure's `TeamError` code. */
    code: string;
    /** What failed, for people. */
    message: string;
  };
}

/** What `membership` answers: whose credential this is. */
export interface Membership {
  /** The credential itself. */
  agent: AgentRef;
  /** The member's roster record. */
  member: Member;
  /** Whether the member is the lead. */
  isLead: boolean;
  /** The member's derived runtime status. */
  status: MemberStatus;
}

/** Input of {@link TeamService.spawnTeammate}. */
export interface SpawnTeammateInput {
  /** A new name, unique in the team for its whole life (see `MEMBER_NAME_PATTERN`). */
  name: string;
  /** What the teammate is for, shown in the roster. */
  description: string;
  /** The teammate's first message, sent from the lead. */
  prompt: string;
  /** A registered agent type. */
  agentType: string;
  /** `fresh` (default): an empty conversation; `fork`: a copy of the lead's. */
  context?: MemberContext;
}

/** Result of {@link TeamService.spawnTeammate}. */
export interface SpawnTeammateResult {
  /** The new member's id. */
  memberId: string;
  /** The new member's name. */
  name: string;
  /** The id of the queued prompt message. */
  messageId: string;
}

/** Input of {@link TeamService.sendMessage}: `text` or `content`. */
export interface SendMessageInput {
  /** The target member's name. */
  to: string;
  /** The body as plain text. */
  text?: string;
  /** The body as content blocks, for hosts that send more than text. */
  content?: ContentBlock[];
  /** `wakeup` (default) starts a turn of an idle target; `quiet` waits for its next step. */
  delivery?: MessageDelivery | undefined;
  /** A one-line preview shown in envelopes and UIs. */
  summary?: string | undefined;
}

/**
 * Result of {@link TeamService.sendMessage}. Both statuses mean the message is durable: do not
 * resend. `accepted`: handed to a live runner; `queued`: its target is not running now.
 */
export interface SendMessageResult {
  /** The id of the queued message. */
  messageId: string;
  /** See above. */
  status: 'accepted' | 'queued';
}

/** Input of {@link TeamService.listTasks}. */
export interface ListTasksInput {
  /** One status or several. Deleted tasks are listed only when this asks for `deleted`. */
  status?: TaskStatus | readonly TaskStatus[] | undefined;
  /** A member id, or `null` for unowned tasks. */
  ownerId?: string | null | undefined;
  /** Only tasks that can be claimed now (`true`) or only those that cannot (`false`). */
  ready?: boolean | undefined;
  /** The `nextCursor` of the previous page. */
  cursor?: string | undefined;
  /** 1-100, default 50. */
  limit?: number | undefined;
}

/** One page of tasks. */
export interface ListTasksResult {
  /** The page, in creation order. */
  tasks: TaskView[];
  /** Pass it as `cursor` for the next page; absent on the last page. */
  nextCursor?: string;
}

/** Input of {@link TeamService.waitForChange}. */
export interface WaitForChangeInput {
  /** 10_000 - 3_600_000 ms. */
  timeoutMs: number;
  /** Rejects the wait with `ABORTED`. */
  signal?: AbortSignal;
  /**
   * Also end the wait, without records, as soon as the team makes no progress without the caller
   * (see `TeamService.progress`): a member another process runs went idle, say, which appends
   * nothing. `wait_for_team` sets it, so a lead never waits out its timeout for a stalled team.
   */
  untilNoProgress?: boolean;
}

/** Result of {@link TeamService.waitForChange}: the records that arrived (empty on timeout). */
export interface WaitForChangeResult {
  /** False when the wait timed out, or ended because the team made no progress. */
  changed: boolean;
  /** Set when the wait ended because the team made no progress (`untilNoProgress`): why. */
  noProgress?: string;
  /** The records appended after the call, in log order. */
  records: TeamRecord[];
}

/** Input of {@link TeamService.readInbox}. */
export interface ReadInboxInput {
  /**
   * The cursor of the page read before: its messages are acknowledged (durably) before this page
   * is read, as {@link TeamService.ackInbox} would.
   */
  after?: string | undefined;
  /** Messages to return, 1-50 (default 10). A page also stops at 1 MiB of text. */
  limit?: number | undefined;
  /**
   * Only mail of these kinds (default: every kind). `remaining` then counts only these. A host
   * that handles some kinds itself reads them apart, e.g. one that never retires its member
   * leaves `shutdown_request` unread.
   */
  kinds?: readonly MessageKind[] | undefined;
}

/** One message of an external member's inbox, as its client reads it. */
export interface InboxMessage {
  /** The message id (a ulid); stable across reads and restarts, so a client can de-duplicate. */
  id: string;
  /** The sender's name. */
  from: string;
  /** What the message is, as the runtime set it (never read from the body). */
  kind: MessageKind;
  /** The sender's one-line preview. */
  summary?: string;
  /** For a `task_assignment`: the task concerned. */
  taskId?: string;
  /** The team's wire format rendering: exactly what a model-run teammate would read. */
  entries: ChatMessage[];
  /** {@link entries} as plain text (bodies escaped by the wire format). */
  text: string;
}

/** Result of {@link TeamService.readInbox}. */
export interface InboxPage {
  /** Pending messages in the order a teammate handles them (shutdown requests first). */
  messages: InboxMessage[];
  /**
   * Names exactly these messages: pass it to `ackInbox`, or as `after` of the next read, once they
   * are handled. Absent when the page is empty.
   */
  cursor?: string;
  /** Pending messages not on this page. */
  remaining: number;
  /** True when the acknowledged page held a shutdown request: the member has retired. */
  retired: boolean;
}

/** Result of {@link TeamService.ackInbox}. */
export interface AckInboxResult {
  /** Messages newly marked delivered (0 when the cursor was acknowledged before). */
  acknowledged: number;
  /** True when the page held a shutdown request: the member has retired. */
  retired: boolean;
}

/**
 * The API host code calls. Every method takes the calling agent's {@link AgentRef} as its
 * credential; the service checks it was issued here and that the member is live. Tools never get
 * this object: they get their own member's {@link MemberTeamService} (see {@link forMember}), which
 * cannot reach the lead's credential or act as anyone else.
 *
 * Mutations validate and apply to the in-memory state synchronously, then append the record to
 * the team log and answer once it is durable; concurrent calls therefore serialize on the event
 * loop and their appends pipeline in order. If an append fails, the in-memory state may be ahead
 * of the log, so the service turns itself off: every later call throws `STORE_CLOSED` (with the
 * cause) and the team must be reopened from its log.
 */
export interface TeamService {
  /** The team id (the lead's member id). */
  readonly teamId: string;
  /** The lead's credential (for the host that runs the lead). */
  readonly lead: AgentRef;
  /** The limits this team enforces (defaults with the team's overrides). */
  readonly limits: TeamLimits;
  /**
   * The service bound to `agent`: the same operations without the credential argument, acting only
   * as that member (one object per member). `NOT_A_MEMBER` when the service did not issue `agent`;
   * liveness is checked on every call of the view.
   */
  forMember(agent: AgentRef): MemberTeamService;
  /** Whose credential this is; `NOT_A_MEMBER` when it is not a live member's. */
  membership(agent: AgentRef): Membership;
  /** Like {@link membership}, `undefined` instead of throwing. */
  tryMembership(agent: AgentRef): Membership | undefined;
  /** Every member, lead first, with derived status. */
  listMembers(agent: AgentRef): MemberInfo[];
  /**
   * Whether the team moves without `agent`: another member works, has mail that wakes it, or
   * waits for a process to take it over (see `teamProgress`). The same in every process of a team.
   */
  progress(agent: AgentRef): TeamProgress;
  /** Lead only: records a teammate, queues its prompt and starts its runner. */
  spawnTeammate(agent: AgentRef, input: SpawnTeammateInput): Promise<SpawnTeammateResult>;
  /** Queues a message (durable before this answers) and dispatches or wakes its target. */
  sendMessage(agent: AgentRef, input: SendMessageInput): Promise<SendMessageResult>;
  /** Creates a pending task owned by nobody; see `TeamState.createTask` for the checks. */
  createTask(agent: AgentRef, input: CreateTaskInput): Promise<TaskView>;
  /** One task with its derived fields; `TASK_NOT_FOUND` when there is none. */
  getTask(agent: AgentRef, input: { taskId: string }): TaskView;
  /** One page of tasks matching the filters, in creation order. */
  listTasks(agent: AgentRef, input?: ListTasksInput): ListTasksResult;
  /** Applies a task action; a reassign also sends the new owner a task assignment. */
  updateTask(agent: AgentRef, input: UpdateTaskInput): Promise<TaskView>;
  /**
   * Edge-triggered: resolves with the records appended after the call (those of the same burst
   * together), or `{changed: false}` after `timeoutMs`. The signal rejects it with `ABORTED`.
   */
  waitForChange(agent: AgentRef, input: WaitForChangeInput): Promise<WaitForChangeResult>;
  /** Lead only: aborts the target's running turn; its inbox is kept. */
  interrupt(
    agent: AgentRef,
    input: { target: string },
  ): Promise<{
    /** False when the target had no running turn. */
    interrupted: boolean;
  }>;
  /** Lead only: queues a shutdown request, handled at the target's next boundary. */
  shutdown(
    agent: AgentRef,
    input: { target: string; reason?: string | undefined },
  ): Promise<SendMessageResult>;
  /**
   * Host only: the credential of the live external member named `name` (see
   * `ExternalAgentDefinition`), for a host that serves its client, e.g. an MCP server once the
   * client's token checked out. `UNKNOWN_MEMBER` when there is none, `NOT_A_MEMBER` when it is not
   * live, `NOT_EXTERNAL` when teamwire runs it, `NOT_PLACED_HERE` when another process serves it.
   */
  externalMember(name: string): AgentRef;
  /**
   * External members only: acknowledges the page `input.after` names, then returns pending mail
   * with a cursor. A message counts as delivered only once acknowledged: until then it comes
   * again on every read, across restarts; after, never. `NOT_EXTERNAL` for a member teamwire
   * runs, `INVALID_CURSOR` (nothing written) for a cursor this member was not given.
   */
  readInbox(agent: AgentRef, input?: ReadInboxInput): Promise<InboxPage>;
  /** External members only: marks the page `cursor` names delivered; durable when it answers. */
  ackInbox(agent: AgentRef, input: { cursor: string }): Promise<AckInboxResult>;
  /**
   * Calls `listener` whenever mail for the external member `agent` becomes durable (sent here or
   * by another process of the team), until the returned function is called. For push: a client
   * then reads its inbox instead of polling.
   */
  watchInbox(agent: AgentRef, listener: () => void): () => void;
  /**
   * Decides a pending approval, once: as `agent` (its approver) or, without `agent`, as the host
   * (any approval). `APPROVAL_NOT_FOUND`, `APPROVAL_DECIDED` when a decision or an expiry came
   * first, `NOT_THE_APPROVER` for a member that is not its approver. Approved, the call runs (or
   * the teammate gets its full tools); rejected, the reason is what the requester reads. The
   * requester gets an `approval_decision` message, which resumes it.
   */
  decide(input: DecideInput, agent?: AgentRef): Promise<ApprovalView>;
  /** The team's approvals in request order (every status unless filtered), with names. */
  approvals(filter?: ApprovalFilter): ApprovalView[];
  /**
   * A teammate under plan approval submits its plan: a pending `plan` approval for the lead (its
   * type's approver), who gets it as an `approval_request` message. `APPROVAL_STATE` while another
   * plan of the member waits.
   */
  submitPlan(agent: AgentRef, input: { plan: string }): Promise<ApprovalView>;
  /** Starts a lead turn with a host message (after the current one); resolves when it ends. */
  promptLead(input: string | ContentBlock[]): Promise<TurnOutcome>;
  /**
   * Resolves once no runner is working, no wakeup mail waits for a live runner, and no live runner
   * owes a turn (one its process stopped in, or a lead turn that failed, taken after the lead's
   * retry wait; a lead that keeps failing keeps the team from going idle). A member parked on an
   * approval waits for the decision and does not hold it up.
   */
  idle(): Promise<void>;
  /**
   * Stops every runner (running turns are aborted), waits for in-flight appends (bounded by
   * `disposeTimeoutMs`) and refuses further calls with `DISPOSED`. The ports are not closed: their
   * owner closes them. In a team spread over processes (a placement), the members this process
   * runs are first stopped at their next turn boundary (bounded by `handoverTimeoutMs`; the
   * service still takes calls meanwhile) and handed to the other processes at once.
   */
  dispose(): Promise<void>;
}

/**
 * The team as one member sees it: the {@link TeamService} API bound to that member's credential,
 * as `TeamService.forMember` hands it out and as every tool gets it (`ToolContext.team`).
 *
 * It can act only as its member. No method takes a credential, so it cannot be pointed at another
 * member; it holds no reachable reference to the service (its methods close over it), so the lead's
 * credential and the host-only operations (`lead`, `promptLead`, `idle`, `dispose`) are out of
 * reach. Every call re-checks that the member is still live (`NOT_A_MEMBER` once it retired), and
 * lead-only calls refuse a teammate's view with `LEAD_ONLY`.
 */
export interface MemberTeamService {
  /** The team id (the lead's member id). */
  readonly teamId: string;
  /** The limits this team enforces. */
  readonly limits: TeamLimits;
  /** The bound member's own credential. */
  readonly agent: AgentRef;
  /** The bound member: `{agent, member, isLead, status}`. */
  membership(): Membership;
  /** Every member, lead first, with derived status. */
  listMembers(): MemberInfo[];
  /** See `TeamService.progress`. */
  progress(): TeamProgress;
  /** Lead only: records a teammate, queues its prompt and starts its runner. */
  spawnTeammate(input: SpawnTeammateInput): Promise<SpawnTeammateResult>;
  /** Queues a message from the bound member (durable before this answers). */
  sendMessage(input: SendMessageInput): Promise<SendMessageResult>;
  /** See `TeamService.createTask`. */
  createTask(input: CreateTaskInput): Promise<TaskView>;
  /** See `TeamService.getTask`. */
  getTask(input: { taskId: string }): TaskView;
  /** See `TeamService.listTasks`. */
  listTasks(input?: ListTasksInput): ListTasksResult;
  /** Applies a task action as the bound member. */
  updateTask(input: UpdateTaskInput): Promise<TaskView>;
  /** See `TeamService.waitForChange`; the records are copies. */
  waitForChange(input: WaitForChangeInput): Promise<WaitForChangeResult>;
  /** Lead only: aborts the target's running turn; its inbox is kept. */
  interrupt(input: { target: string }): Promise<{
    /** False when the target had no running turn. */
    interrupted: boolean;
  }>;
  /** Lead only: queues a shutdown request, handled at the target's next boundary. */
  shutdown(input: { target: string; reason?: string | undefined }): Promise<SendMessageResult>;
  /** See `TeamService.readInbox` (external members only). */
  readInbox(input?: ReadInboxInput): Promise<InboxPage>;
  /** See `TeamService.ackInbox` (external members only). */
  ackInbox(input: { cursor: string }): Promise<AckInboxResult>;
  /** See `TeamService.watchInbox` (external members only). */
  watchInbox(listener: () => void): () => void;
  /** Decides a pending approval this member is the approver of; see `TeamService.decide`. */
  decide(input: DecideInput): Promise<ApprovalView>;
  /** See `TeamService.approvals`. */
  approvals(filter?: ApprovalFilter): ApprovalView[];
  /** Submits the bound teammate's plan for approval; see `TeamService.submitPlan`. */
  submitPlan(input: { plan: string }): Promise<ApprovalView>;
}

/** What a quality gate answers: let it pass, or refuse with feedback for the member. */
export type GateVerdict =
  | {
      /** It passes. */
      allow: true;
    }
  | {
      /** It is refused. */
      allow: false;
      /** What the member should do, for it to read. */
      feedback: string;
    };

/**
 * Quality gates the host supplies (`openTeam`'s `gates`). A gate may refuse with feedback: a
 * refused completion leaves the task `in_progress` (the completing call fails with
 * `GATE_REFUSED`, and the owner gets the feedback as mail when someone else completed its task);
 * a refused idle sends the teammate the feedback as mail, which starts its next turn. Refusals
 * are counted in a row; at `maxRefusals` the lead is told, and an idle gate is not asked again
 * until the teammate's idle passes.
 */
export interface TeamGates {
  /** Asked before a task becomes `completed`. */
  taskCompleted?: (input: { task: TaskView; member: Member }) => GateVerdict | Promise<GateVerdict>;
  /** Asked when a teammate ends a turn with nothing left to do, before the lead hears it is idle. */
  teammateIdle?: (input: {
    member: Member;
    /** The teammate's last words of the turn. */
    text: string;
    /** The tasks it still has in progress. */
    tasks: readonly TaskView[];
  }) => GateVerdict | Promise<GateVerdict>;
  /** Refusals in a row after which the lead is told (default 3). */
  maxRefusals?: number;
}

/** Input of `TeamService.decide`. */
export interface DecideInput {
  /** The approval to decide (from `approvals()` or the request's mail). */
  approvalId: string;
  /** `approved` runs the call (or gives the teammate its full tools); `rejected` refuses it. */
  decision: 'approved' | 'rejected';
  /** Why: a rejection's reason reaches the requester as the call's result or the plan feedback. */
  reason?: string | undefined;
}

/** An approval as the service shows it: the record's facts plus the members' names. */
export interface ApprovalView extends Approval {
  /** Same as `id`. */
  approvalId: string;
  /** The requester's name. */
  requester: string;
  /** The approver's name; absent: the host decides. */
  approver?: string;
  /** The decider's name, once decided by a member. */
  decider?: string;
}
