import type { ToolCall, Usage } from '../chat.js';
import type { TeamRecord } from '../records.js';

/** Derived runtime status of a member; never stored in the log. */
export type MemberStatus = 'provisioning' | 'running' | 'idle' | 'inactive' | 'failed' | 'retired';

/** What happened to a member's workspace; see the `workspace` {@link AgentEvent}. */
export type WorkspaceEventAction =
  | 'acquired'
  | 'kept'
  | 'removed'
  | 'acquire-failed'
  | 'release-failed';

/**
 * What an agent does, as observers see it. Durable changes (roster, tasks, mail) are published as
 * `record` events carrying the team-log record, so a reconnecting observer can resume from the log.
 */
export type AgentEvent =
  | {
      /** A turn began. */
      type: 'turn.start';
      /**
       * What started it: team mail, a claimed task, the host, or a decision on the approval the
       * member waited for (`approval`: it resumes the calls it left).
       */
      reason: 'message' | 'task-claim' | 'host' | 'approval';
      /** The message that started it (`reason: 'message'`). */
      messageId?: string;
      /** The task that started it (`reason: 'task-claim'`). */
      taskId?: string;
    }
  | {
      /** Streamed assistant text. */
      type: 'model.text-delta';
      /** The next piece of text. */
      text: string;
    }
  | {
      /** Streamed model reasoning. */
      type: 'model.reasoning-delta';
      /** The next piece of reasoning. */
      text: string;
    }
  | {
      /** One model call of the turn finished. */
      type: 'model.step';
      /** The call's number in the turn, from 1. */
      step: number;
      /** The call's token counts. */
      usage: Usage;
    }
  | {
      /** The model asked for a tool; it runs next. */
      type: 'tool.call';
      /** The call as the model made it. */
      toolCall: ToolCall;
    }
  | {
      /** A tool finished. */
      type: 'tool.result';
      /** The call it answers. */
      toolCallId: string;
      /** The tool that ran. */
      toolName: string;
      /** True when the tool failed. */
      isError: boolean;
      /** The result as the model reads it. */
      text: string;
    }
  | {
      /** A turn ended. */
      type: 'turn.end';
      /** Why it ended; `error` when the turn failed (an `error` event precedes it). */
      stopReason:
        | 'end_turn'
        | 'step_limit'
        | 'interrupted'
        | 'repeated_failure'
        | 'awaiting_approval'
        | 'error';
      /** Model calls made. */
      steps: number;
      /** The turn's last non-empty assistant text ('' when there was none). */
      text: string;
    }
  | {
      /**
       * The member's next request would pass its context budget (or the provider refused it as
       * too long): the older part of its context is being summarised.
       */
      type: 'context.compacting';
      /** `budget`: the estimate passed the budget; `overflow`: the provider refused the request. */
      reason: 'budget' | 'overflow';
      /** The request's prompt tokens before compaction. */
      tokensBefore: number;
      /** True when no usage is known yet: the tokens are estimated from bytes only. */
      estimated: boolean;
    }
  | {
      /** A compaction is durable in the member's transcript; its context is the compacted one. */
      type: 'context.compacted';
      /** The compaction's id (as stored in the transcript). */
      compactionId: string;
      /** See `context.compacting`. */
      reason: 'budget' | 'overflow';
      /** Prompt tokens of the request before the compaction. */
      tokensBefore: number;
      /** Prompt tokens of the same request after it. */
      tokensAfter: number;
      /** True when the token counts are estimated from bytes only (no usage known yet). */
      estimated: boolean;
      /** Messages the summary replaced. */
      replacedMessages: number;
      /** Replaced messages kept verbatim after the summary (current tasks' prompts). */
      retainedMessages: number;
      /** How long the summary took (ms). */
      durationMs: number;
      /** The compaction policy's name. */
      policy: string;
    }
  | {
      /** The member's derived status changed. */
      type: 'status';
      /** The new status. */
      status: MemberStatus;
    }
  | {
      /** A durable change, after the log holds it. */
      type: 'record';
      /** The record as the team log stores it. */
      record: TeamRecord;
    }
  | {
      /** Something failed in the agent's runner. */
      type: 'error';
      /** The failure's `TeamError` code. */
      code: string;
      /** What failed, for people. */
      message: string;
    }
  | {
      /**
       * A member's own workspace (see `WorkspaceProvider`) changed hands: published under the
       * member's name when it is acquired (spawn, revival), released at retirement (kept with
       * work, or removed) or cleaned up after a failed spawn, and when either step failed.
       */
      type: 'workspace';
      /** The member whose workspace it is. */
      memberId: string;
      /**
       * `acquired`: the member works there now; `kept`: it retired and the workspace holds work
       * (commits or changes) so it stays; `removed`: it held no work and is gone;
       * `acquire-failed` / `release-failed`: the provider refused (see `error`).
       */
      action: WorkspaceEventAction;
      /** The workspace's directory; absent only when unknown (a failed first acquire, a clean-up). */
      path?: string;
      /** Its branch, when it has one. */
      branch?: string;
      /** On release: commits on the branch beyond its base. */
      commitsAhead?: number;
      /** On release: changed, uncommitted files (relative paths, at most 100). */
      changedFiles?: string[];
      /** On `acquire-failed` / `release-failed`: the `TeamError` code and message. */
      error?: {
        /** The failure's `TeamError` code, e.g. `WORKSPACE_TAKEN`. */
        code: string;
        /** What failed, for people. */
        message: string;
      };
    }
  | {
      /** An event a host or tool published under its own name. */
      type: 'custom';
      /** The event's name, chosen by its publisher. */
      name: string;
      /** Whatever the publisher attached. */
      data: unknown;
    };

/**
 * Where the runtime publishes agent events (the event hub implements it). `publish` must never
 * block and never throw to the caller: it is on every agent's hot path.
 */
export interface EventSink {
  /** Hands one event of `agentName` to the observers. Must return at once and never throw. */
  publish(agentName: string, event: AgentEvent): void;
}

/** An EventSink that drops everything; valid wherever no one observes. */
export const noopEventSink: EventSink = { publish() {} };
