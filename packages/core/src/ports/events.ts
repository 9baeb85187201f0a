import type { ToolCall, Usage } from '../chat.js';
import type { TeamRecord } from '../records.js';

/** Derived runtime status of a member; never stored in the log. */
export type MemberStatus = 'provisioning' | 'running' | 'idle' | 'inactive' | 'failed' | 'retired';

/**
 * What an agent does, as observers see it. Durable changes (roster, tasks, mail) are published as
 * `record` events carrying the team-log record, so a reconnecting observer can resume from the log.
 */
export type AgentEvent =
  | {
      type: 'turn.start';
      reason: 'message' | 'task-claim' | 'host';
      messageId?: string;
      taskId?: string;
    }
  | { type: 'model.text-delta'; text: string }
  | { type: 'model.reasoning-delta'; text: string }
  | { type: 'model.step'; step: number; usage: Usage }
  | { type: 'tool.call'; toolCall: ToolCall }
  | { type: 'tool.result'; toolCallId: string; toolName: string; isError: boolean; text: string }
  | {
      type: 'turn.end';
      stopReason: 'end_turn' | 'step_limit' | 'interrupted' | 'error';
      steps: number;
      text: string;
    }
  | { type: 'status'; status: MemberStatus }
  | { type: 'record'; record: TeamRecord }
  | { type: 'error'; code: string; message: string }
  | { type: 'custom'; name: string; data: unknown };

/**
 * Where the runtime publishes agent events (the event hub implements it). `publish` must never
 * block and never throw to the caller: it is on every agent's hot path.
 */
export interface EventSink {
  publish(agentName: string, event: AgentEvent): void;
}

/** An EventSink that drops everything; valid wherever no one observes. */
export const noopEventSink: EventSink = { publish() {} };
