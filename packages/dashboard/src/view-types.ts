import type {
  ApprovalKind,
  ApprovalStatus,
  DeadLetterReason,
  GateName,
  MemberStatus,
  MessageKind,
  TaskStatus,
} from '@teamwire/core';
import type { APPROVAL_TEXT_KEEP, MAIL_TEXT_KEEP, SnapshotRecord } from './snapshot-record.js';

/* What the page shows, and what it loads first: the view model's types and bounds. */

/** Characters of streamed output kept per member. */
export const OUTPUT_KEEP = 4000;
/** Mail items kept in the timeline (the oldest go first). */
export const MAIL_KEEP = 1000;
/** Decided approvals kept for the history (the oldest decided go first; pending ones all stay). */
export const APPROVALS_DECIDED_KEEP = 50;
/** Gate refusals kept (the oldest go first). */
export const GATE_REFUSALS_KEEP = 100;

/** One member as the page shows it. */
export interface MemberView {
  /** The member id (a ulid; the team id for the lead). */
  id: string;
  /** Its name. */
  name: string;
  /** Its agent type. */
  agentType: string;
  /** Its model provider, or `external`. */
  provider: string;
  /** What it is for, cut to {@link MAIL_TEXT_KEEP} characters. */
  description: string;
  /** Characters of the description left out (0 when it is whole). */
  descriptionMore: number;
  /** Its lifecycle phase, from its member records. */
  phase: 'provisioning' | 'active' | 'failed' | 'retired';
  /** The derived status, from the snapshot and then `status` events. */
  status: MemberStatus;
  /** Whether its runner is running now, from the hub's presence. */
  active: boolean;
  /** The tool it is running now, if any. */
  currentTool?: string | undefined;
  /** The streamed text of its current (or last) turn, the last {@link OUTPUT_KEEP} characters. */
  output: string;
  /** Turns started, as seen by this page (or as its transcript shows, see `DashboardSnapshot.usage`). */
  turns: number;
  /** Input tokens of its model calls, as seen by this page (the hub's history and live). */
  inputTokens: number;
  /** Output tokens of its model calls, as seen by this page. */
  outputTokens: number;
  /** Compactions of its context, as seen by this page. */
  compactions: number;
  /** True while its context is being compacted. */
  compacting: boolean;
  /** Its last compaction: prompt tokens before and after, and how long the summary took. */
  lastCompaction?:
    | {
        /** Prompt tokens before. */
        tokensBefore: number;
        /** Prompt tokens after. */
        tokensAfter: number;
        /** How long it took (ms). */
        durationMs: number;
      }
    | undefined;
  /** Its last runner error. */
  lastError?:
    | {
        /** The error's `TeamError` code. */
        code: string;
        /** What failed. */
        message: string;
      }
    | undefined;
  /** Messages to it that ended without delivery (dead letters), as seen by this page. */
  deadLetters: number;
  /** Its display color. */
  color?: string | undefined;
  /** Run by a client (an MCP member, or the dashboard's own operator). */
  external: boolean;
}

/** One task as the page shows it. */
export interface TaskView {
  /** The task id (`task-<n>`). */
  id: string;
  /** Its title. */
  subject: string;
  /** Where it stands. */
  status: TaskStatus;
  /** The owner's name. */
  owner?: string | undefined;
  /** The owner's member id. */
  ownerId?: string | undefined;
  /** The tasks it waits for. */
  blockedBy: string[];
  /** Its compare-and-set revision. */
  revision: number;
  /** Claimable now, by core's rule (`isTaskReady`): pending, unowned, every blocker completed. */
  ready: boolean;
}

/** One message of the timeline. */
export interface MailView {
  /** The message id. */
  id: string;
  /** The seq of its `message.queued` record. */
  seq: number;
  /** When it was queued (ms since the Unix epoch). */
  at: number;
  /** The sender's name. */
  from: string;
  /** The target's name. */
  to: string;
  /** What the message is (set by the runtime). */
  kind: MessageKind;
  /** The sender's one-line preview, cut to {@link MAIL_TEXT_KEEP} characters. */
  summary?: string | undefined;
  /** Characters of the summary left out (0 when it is whole). */
  summaryMore: number;
  /** The body's text, cut to {@link MAIL_TEXT_KEEP} characters. */
  text: string;
  /**
   * Characters of the body left out (0 when it is whole): the page shows the cut, and fetches the
   * whole text from `GET api/messages/<seq>` when asked to.
   */
  more: number;
  /** Whether its `message.delivered` record was seen. */
  delivered: boolean;
  /**
   * Set when its `message.dead_lettered` record was seen: it ended without delivery, and never
   * will be delivered.
   */
  deadLetter?: DeadLetterView | undefined;
}

/** Why a message of the timeline ended without delivery. */
export interface DeadLetterView {
  /** Why, as core says it (`TARGET_FAILED`, `TARGET_RETIRED`, `EXCEEDS_CONTEXT`). */
  reason: DeadLetterReason;
  /** More about why, cut to {@link MAIL_TEXT_KEEP} characters. */
  detail?: string | undefined;
  /** Characters of the detail left out (0 when it is whole). */
  detailMore: number;
  /** When it ended (ms since the Unix epoch). */
  at: number;
}

/** One approval as the page shows it: the request, and its decision once there is one. */
export interface ApprovalItem {
  /** The approval id (a ulid). */
  id: string;
  /** The seq of its `approval.requested` record. */
  seq: number;
  /** A tool call, or a teammate's plan. */
  kind: ApprovalKind;
  /** The requester's name. */
  requester: string;
  /**
   * The approver's name; absent when only the host decides. The page decides as the operator
   * member when it is the approver, else as the host.
   */
  approver?: string | undefined;
  /** For `tool`: the tool called. */
  toolName?: string | undefined;
  /** For `tool`: the call's input as JSON, cut to {@link APPROVAL_TEXT_KEEP} characters. */
  input?: string | undefined;
  /** Characters of the input left out (0 when it is whole). */
  inputMore: number;
  /** For `plan`: the plan, cut to {@link APPROVAL_TEXT_KEEP} characters. */
  plan?: string | undefined;
  /** Characters of the plan left out (0 when it is whole). */
  planMore: number;
  /** The task the requester was working on. */
  taskId?: string | undefined;
  /** `pending` until its one decision. */
  status: ApprovalStatus;
  /** When it was requested (ms since the Unix epoch). */
  requestedAt: number;
  /** When it expires undecided (the team clock's ms), if ever. */
  expiresAt?: number | undefined;
  /** When it was decided. */
  decidedAt?: number | undefined;
  /** Why it was decided so, cut to {@link MAIL_TEXT_KEEP} characters. */
  reason?: string | undefined;
  /** Characters of the reason left out (0 when it is whole). */
  reasonMore: number;
  /**
   * Who decided: a member's name, `host` for the host (the page's person, when not a member),
   * absent for an expiry or a cancel.
   */
  decider?: string | undefined;
  /** For an approved tool call: whether it began running. */
  started: boolean;
}

/** One refusal of a quality gate. */
export interface GateRefusalView {
  /** The seq of its `gate.refused` record. */
  seq: number;
  /** When it refused (ms since the Unix epoch). */
  at: number;
  /** Which gate: a task's completion or a teammate's idle. */
  gate: GateName;
  /** The member refused: the task's owner, or the teammate going idle. */
  member: string;
  /** For `task_completed`: the task that stays in progress. */
  taskId?: string | undefined;
  /** What the gate said, cut to {@link MAIL_TEXT_KEEP} characters. */
  feedback: string;
  /** Characters of the feedback left out (0 when it is whole). */
  feedbackMore: number;
  /** The how-many-th refusal in a row. */
  attempt: number;
}

/** What the server answers on `GET /api/snapshot`; see the package README. */
export interface DashboardSnapshot {
  /** Format version of this object. */
  version: 1;
  /** The team. */
  teamId: string;
  /**
   * The team log, in seq order, long texts cut: every member record and the newest other records
   * that fit the snapshot's bounds (`truncated` says how many are left out).
   */
  records: SnapshotRecord[];
  /** Records left out. */
  truncated: number;
  /** Derived statuses by member name, when the server runs the team (absent when read-only). */
  statuses?: Record<string, MemberStatus>;
  /** The hub's epoch, when there is a live stream. */
  epoch?: string;
  /** True when the page can only watch. */
  readOnly: boolean;
  /** The name the person at the page sends as, when it can act. */
  operator?: string;
  /**
   * Turns and tokens by member name, read from the members' transcripts when the snapshot was
   * taken (see `transcriptUsage`): what a page shows when its hub brings no model events (a
   * read-only page that follows a log written elsewhere). A hub's `turn.start` and `model.step`
   * events stamped at or before a member's `through` are already counted here.
   */
  usage?: Record<
    string,
    {
      /** Turns its transcript shows. */
      turns: number;
      /** Input tokens of its model calls. */
      inputTokens: number;
      /** Output tokens of its model calls. */
      outputTokens: number;
      /** The time of the last transcript entry counted (ms since the Unix epoch; 0 when none). */
      through: number;
    }
  >;
}

/** The whole view. Mutated in place by the functions below; `version` counts the changes. */
export interface DashboardState {
  /** The team. */
  teamId: string;
  /** Grows with every change: a page re-renders when it moves. */
  version: number;
  /** True when the page can only watch. */
  readOnly: boolean;
  /** The member name the person at the page acts as. */
  operator?: string | undefined;
  /** The hub's epoch the snapshot was taken under. */
  epoch?: string | undefined;
  /** The last log seq applied. */
  lastRecordSeq: number;
  /** Members by id, in spawn order. */
  members: Map<string, MemberView>;
  /** Member ids by name. */
  byName: Map<string, string>;
  /** Tasks by id, in creation order. */
  tasks: Map<string, TaskView>;
  /** The timeline, oldest first. */
  mail: MailView[];
  /**
   * Approvals by id, in request order: every pending one, and the newest
   * {@link APPROVALS_DECIDED_KEEP} decided ones.
   */
  approvals: Map<string, ApprovalItem>;
  /** Quality gate refusals, oldest first, the newest {@link GATE_REFUSALS_KEEP}. */
  gateRefusals: GateRefusalView[];
  /** Items the hub could not deliver (a slow page, an old cursor). */
  missed: number;
  /**
   * By member name, the time through which the snapshot's `usage` counted its turns and tokens:
   * hub events of that member stamped at or before it are not counted again.
   */
  usageThrough: Map<string, number>;
}
