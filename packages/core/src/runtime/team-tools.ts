import { z } from 'zod';
import { TeamError } from '../errors.js';
import {
  MEMBER_DESCRIPTION_MAX,
  MEMBER_NAME_MAX,
  MESSAGE_SUMMARY_MAX,
  TASK_BLOCKED_BY_MAX,
  TASK_DESCRIPTION_MAX,
  TASK_ID_PATTERN,
  TASK_PAGE_MAX,
  TASK_SUBJECT_MAX,
  TASK_WRITE_SCOPES_MAX,
  WAIT_OPEN_TASKS_MAX,
  WAIT_TIMEOUT_MAX_MS,
  WAIT_TIMEOUT_MIN_MS,
  WRITE_SCOPE_MAX,
} from '../limits.js';
import { TOOL_REF_MAX } from '../record-values.js';
import type { TeamRecord } from '../records.js';
import {
  APPROVAL_REASON_MAX,
  MemberContext,
  MessageDelivery,
  PLAN_MAX,
  TaskStatus,
} from '../records.js';
import { TASK_ACTION_TYPES } from '../rules.js';
import type { TaskAction, TaskActionType, TaskView } from '../state/index.js';
import type { AgentTool, ToolContext } from './agents.js';
import { defineTool } from './agents.js';
import type { DecideInput, MemberInfo, MemberTeamService } from './service-types.js';

/** Names of the tools every member gets. */
export const TEAM_TOOL_NAMES = [
  'send_message',
  'list_members',
  'task_create',
  'task_list',
  'task_get',
  'task_update',
] as const;

/** Names of the tools only the lead gets. */
export const LEAD_TOOL_NAMES = [
  'spawn_teammate',
  'interrupt_teammate',
  'shutdown_teammate',
  'wait_for_team',
  'decide_approval',
] as const;

/** The team tools a teammate under plan approval keeps until its plan is approved. */
export const PLAN_MODE_TEAM_TOOLS = [
  'send_message',
  'list_members',
  'task_list',
  'task_get',
] as const;

/** Input of `submit_plan`. */
export const SubmitPlanToolInput = z.object({
  /** The plan: what the teammate will do, step by step. */
  plan: z
    .string()
    .min(1)
    .max(PLAN_MAX)
    .describe('Your plan: what you will change and how, step by step, for the lead to approve.'),
});
export type SubmitPlanToolInput = z.infer<typeof SubmitPlanToolInput>;

// Annotated like the record enums, so the docs show the union instead of an object.
const decisionEnum: z.ZodEnum<Record<DecideInput['decision'], DecideInput['decision']>> = z.enum([
  'approved',
  'rejected',
]);

/** Input of `decide_approval`. */
export const DecideApprovalToolInput = z.object({
  /** The approval to decide, from its request. */
  approvalId: z.string().min(1).max(TOOL_REF_MAX).describe('The approval id from the request.'),
  /** Approve or reject. */
  decision: decisionEnum,
  /** Why; a rejection's reason reaches the requester. */
  reason: z
    .string()
    .max(APPROVAL_REASON_MAX)
    .optional()
    .describe('Why; for a rejection, what to do instead (the requester reads it).'),
});
export type DecideApprovalToolInput = z.infer<typeof DecideApprovalToolInput>;

// Every bound and value set below is the state's own (limits.ts, records.ts, rules.ts): the state
// enforces it for every caller, the schema only tells the model up front.
const name = z.string().min(1).max(MEMBER_NAME_MAX);
const taskId = z.string().regex(TASK_ID_PATTERN, 'a task id like task-3');
const blockedBy = z.array(taskId).max(TASK_BLOCKED_BY_MAX);
const writeScopes = z.array(z.string().min(1).max(WRITE_SCOPE_MAX)).max(TASK_WRITE_SCOPES_MAX);
// Annotated like the record enums, so the docs show the action union instead of an object.
const taskActionType: z.ZodEnum<Record<TaskActionType, TaskActionType>> = z.enum(
  TASK_ACTION_TYPES satisfies readonly TaskActionType[],
);

/** Input of `send_message`. */
export const SendMessageToolInput = z.object({
  /** The name of the member to message. */
  to: name.describe('The name of the member to message (see list_members).'),
  /** The message body. */
  message: z.string().min(1).describe('The message body.'),
  /** An optional one-line preview. */
  summary: z.string().max(MESSAGE_SUMMARY_MAX).optional().describe('An optional one-line preview.'),
  /** Whether the message wakes an idle target (default `wakeup`). */
  delivery: MessageDelivery.optional().describe(
    '"wakeup" (default) starts a turn of an idle recipient; "quiet" waits for its next step or turn (no need to wake them).',
  ),
});
export type SendMessageToolInput = z.infer<typeof SendMessageToolInput>;

/** Input of `list_members`. */
export const ListMembersToolInput = z.object({});
export type ListMembersToolInput = z.infer<typeof ListMembersToolInput>;

/** Input of `task_create`. */
export const TaskCreateToolInput = z.object({
  /** A short title. */
  subject: z.string().min(1).max(TASK_SUBJECT_MAX),
  /** What to do and how to tell it is done. */
  description: z.string().min(1).max(TASK_DESCRIPTION_MAX),
  /** Tasks that must be completed first. */
  blockedBy: blockedBy.optional().describe('Tasks that must be completed first.'),
  /** Relative path prefixes the task will write (advisory). */
  writeScopes: writeScopes
    .optional()
    .describe('Relative path prefixes this task will write (advisory).'),
});
export type TaskCreateToolInput = z.infer<typeof TaskCreateToolInput>;

/** Input of `task_list`. */
export const TaskListToolInput = z.object({
  /** One status or several. */
  status: z.union([TaskStatus, z.array(TaskStatus)]).optional(),
  /** Only tasks owned by this member (a name). */
  owner: name.optional().describe('Only tasks owned by this member.'),
  /** Only tasks nobody owns; not together with `owner`. */
  unowned: z.boolean().optional().describe('Only tasks nobody owns (true).'),
  /** Only tasks that can be claimed now (or only those that cannot). */
  ready: z.boolean().optional().describe('Only tasks that can be claimed now (or only not).'),
  /** The `nextCursor` of a previous page. */
  cursor: z.string().optional().describe('The nextCursor of a previous page.'),
  /** Page size. */
  limit: z
    .number()
    .int()
    .min(1)
    .max(TASK_PAGE_MAX)
    .optional()
    .describe(`Page size, 1-${TASK_PAGE_MAX} (default 50).`),
});
export type TaskListToolInput = z.infer<typeof TaskListToolInput>;

/** Input of `task_get`. */
export const TaskGetToolInput = z.object({
  /** The task to show. */
  taskId,
});
export type TaskGetToolInput = z.infer<typeof TaskGetToolInput>;

/** Input of `task_update`: one action, with the fields that action takes. */
export const TaskUpdateToolInput = z.object({
  /** The task to change. */
  taskId,
  /** What to do; the other fields are the action's arguments. */
  action: taskActionType.describe(
    'claim: take a ready task; release: give it back; complete; reopen; edit: change subject/description/writeScopes; set_dependencies: replace blockedBy; reassign (lead only): give it to owner; delete.',
  ),
  /** Refuse the change unless the task is still at this revision. */
  expectedRevision: z
    .number()
    .int()
    .min(1)
    .optional()
    .describe('Refuse the change unless the task is still at this revision.'),
  /** For `edit`: the new subject. */
  subject: z.string().min(1).max(TASK_SUBJECT_MAX).optional(),
  /** For `edit`: the new description. */
  description: z.string().min(1).max(TASK_DESCRIPTION_MAX).optional(),
  /** For `edit`: the new write scopes. */
  writeScopes: writeScopes.optional(),
  /** For `set_dependencies`: the new blocker list (may be empty). */
  blockedBy: blockedBy.optional(),
  /** For `reassign`: the new owner's name. */
  owner: name.optional().describe('For reassign: the new owner.'),
});
export type TaskUpdateToolInput = z.infer<typeof TaskUpdateToolInput>;

/** Input of `interrupt_teammate`. */
export const InterruptTeammateToolInput = z.object({
  /** The teammate whose turn to abort. */
  name,
});
export type InterruptTeammateToolInput = z.infer<typeof InterruptTeammateToolInput>;

/** Input of `shutdown_teammate`. */
export const ShutdownTeammateToolInput = z.object({
  /** The teammate to shut down. */
  name,
  /** Why, shown to the teammate. */
  reason: z.string().optional().describe('Why, shown to the teammate.'),
});
export type ShutdownTeammateToolInput = z.infer<typeof ShutdownTeammateToolInput>;

/** Input of `wait_for_team`. */
export const WaitForTeamToolInput = z.object({
  /** How long to wait for a change. */
  timeoutMs: z
    .number()
    .int()
    .min(WAIT_TIMEOUT_MIN_MS)
    .max(WAIT_TIMEOUT_MAX_MS)
    .optional()
    .describe('How long to wait for a change (default 600000).'),
});
export type WaitForTeamToolInput = z.infer<typeof WaitForTeamToolInput>;

/** The `spawn_teammate` input schema, whose agent types are those of the registry. */
export function spawnTeammateToolInput(agentTypes: readonly [string, ...string[]]) {
  return z.object({
    /** A new, unique name: lowercase words joined by hyphens. */
    name: name.describe('A new, unique name: lowercase words joined by hyphens.'),
    /** What the teammate is for, shown in the roster. */
    description: z
      .string()
      .min(1)
      .max(MEMBER_DESCRIPTION_MAX)
      .describe('The teammate role, in one sentence.'),
    /** The first message the teammate gets from the lead. */
    prompt: z.string().min(1).describe('The first message the teammate gets from you.'),
    /** The agent type; the first registered one when absent. */
    agentType: z.enum(agentTypes).optional().describe(`The agent type (default ${agentTypes[0]}).`),
    /** `fresh` (default) or `fork` (a copy of the lead's conversation). */
    context: MemberContext.optional().describe(
      '"fresh" (default): an empty conversation; "fork": a copy of yours.',
    ),
  });
}

const DEFAULT_WAIT_MS = 600_000;

/** A task as tools show it: owner by name, derived facts, no empty fields. */
export function compactTask(
  task: TaskView,
  names: ReadonlyMap<string, string>,
  detail: 'full' | 'summary',
): Record<string, unknown> {
  return {
    id: task.id,
    subject: task.subject,
    status: task.status,
    ...(task.ownerId === undefined ? {} : { owner: names.get(task.ownerId) ?? task.ownerId }),
    ...(task.blockedBy.length > 0 ? { blockedBy: task.blockedBy } : {}),
    ...(task.status === 'pending' ? { ready: task.ready } : {}),
    revision: task.revision,
    ...(detail === 'full'
      ? {
          description: task.description,
          creator: names.get(task.creatorId) ?? task.creatorId,
          ...(task.writeScopes.length > 0 ? { writeScopes: task.writeScopes } : {}),
        }
      : {}),
    ...(task.warnings.length > 0 ? { warnings: task.warnings } : {}),
  };
}

function memberNames(team: MemberTeamService): Map<string, string> {
  return new Map(team.listMembers().map((m) => [m.memberId, m.name]));
}

function memberIdByName(team: MemberTeamService, memberName: string): string {
  const found = team.listMembers().find((m) => m.name === memberName);
  if (found === undefined) {
    throw new TeamError('UNKNOWN_MEMBER', `no member named "${memberName}"`, {
      details: { name: memberName },
    });
  }
  return found.memberId;
}

function toAction(input: TaskUpdateToolInput, team: MemberTeamService): TaskAction {
  switch (input.action) {
    case 'edit':
      return {
        type: 'edit',
        subject: input.subject,
        description: input.description,
        writeScopes: input.writeScopes,
      };
    case 'set_dependencies':
      if (input.blockedBy === undefined) {
        throw new TeamError('INVALID_ARGUMENT', 'set_dependencies needs blockedBy (may be [])');
      }
      return { type: 'set_dependencies', blockedBy: input.blockedBy };
    case 'reassign':
      if (input.owner === undefined) {
        throw new TeamError('INVALID_ARGUMENT', 'reassign needs owner (a member name)');
      }
      return { type: 'reassign', ownerId: memberIdByName(team, input.owner) };
    default:
      return { type: input.action };
  }
}

/**
 * One line telling a member what a record changed (what `wait_for_team` shows), or `undefined`
 * for a record not worth a line (a delivery). `names` maps member ids to names.
 */
export function describeTeamChange(
  record: TeamRecord,
  names: ReadonlyMap<string, string>,
): string | undefined {
  switch (record.type) {
    case 'member':
      return `${record.member.name} is ${record.member.phase}`;
    case 'task': {
      const owner =
        record.task.ownerId === undefined
          ? ''
          : ` (${names.get(record.task.ownerId) ?? record.task.ownerId})`;
      return `${record.task.id} ${record.task.status}${owner}`;
    }
    case 'message.queued':
      return `${record.message.kind.replace('_', ' ')} ${record.message.senderName} -> ${names.get(record.message.targetId) ?? record.message.targetId}`;
    case 'message.dead_lettered':
      return `message ${record.messageId} to ${names.get(record.targetId) ?? record.targetId} dead-lettered: ${record.reason}`;
    case 'approval.requested':
      return `approval ${record.approval.id} requested by ${names.get(record.approval.requesterId) ?? record.approval.requesterId}: ${record.approval.kind === 'plan' ? 'a plan' : record.approval.toolName}`;
    case 'approval.decided':
      return `approval ${record.approvalId} ${record.decision}`;
    case 'gate.refused':
      return `${record.gate} gate refused ${names.get(record.memberId) ?? record.memberId}${record.taskId === undefined ? '' : ` on ${record.taskId}`}`;
    default:
      return undefined;
  }
}

/** `name: status` of every member but `self` (a member id), as the wait tools show them. */
export function memberStatusLines(members: readonly MemberInfo[], self: string): string[] {
  return members.filter((m) => m.memberId !== self).map((m) => `${m.name}: ${m.status}`);
}

/**
 * The board's open tasks now, one line each (`task-4 "Review tools": in_progress, reviewer-2`),
 * for an answer of no progress: what the asking lead read before its wait may be stale (the last
 * task may have been completed since), and this is the board it decides on. At most
 * `WAIT_OPEN_TASKS_MAX` lines, then one that counts the rest.
 */
export function openTaskLines(team: MemberTeamService): string[] {
  const names = memberNames(team);
  const lines: string[] = [];
  let more = 0;
  let cursor: string | undefined;
  do {
    const page = team.listTasks({
      status: ['pending', 'in_progress'],
      cursor,
      limit: TASK_PAGE_MAX,
    });
    for (const task of page.tasks) {
      if (lines.length >= WAIT_OPEN_TASKS_MAX) {
        more++;
        continue;
      }
      const owner =
        task.ownerId === undefined ? '' : `, ${names.get(task.ownerId) ?? task.ownerId}`;
      const state = task.status === 'pending' ? (task.ready ? ', ready' : ', blocked') : '';
      lines.push(`${task.id} ${JSON.stringify(task.subject)}: ${task.status}${owner}${state}`);
    }
    cursor = page.nextCursor;
  } while (cursor !== undefined);
  if (more > 0) lines.push(`and ${more} more open task(s): task_list shows them`);
  return lines;
}

/**
 * The team tools every member gets: messaging, the roster and the task board. Errors reach the
 * model as tool errors carrying the `TeamError` code (the agent loop renders them).
 */
export function createTeamTools(): AgentTool<unknown>[] {
  const tools = [
    defineTool({
      name: 'send_message',
      description:
        'Send a message to another team member by name. It is stored durably before this returns.',
      inputSchema: SendMessageToolInput,
      async execute(input, { team }: ToolContext) {
        return team.sendMessage({
          to: input.to,
          text: input.message,
          summary: input.summary,
          delivery: input.delivery,
        });
      },
    }),
    defineTool({
      name: 'list_members',
      readOnly: true,
      description:
        'List the team members (lead first) with their role and status, and why a failed one failed.',
      inputSchema: ListMembersToolInput,
      async execute(_input, { team }: ToolContext) {
        // Why a member failed tells the lead whether starting another is worth it.
        return team.listMembers().map((m) => ({
          name: m.name,
          description: m.description,
          agentType: m.agentType,
          status: m.status,
          ...(m.phase === 'failed' && m.error !== undefined ? { error: m.error } : {}),
        }));
      },
    }),
    defineTool({
      name: 'task_create',
      description: 'Create a task on the shared board. Returns the task with its id.',
      inputSchema: TaskCreateToolInput,
      async execute(input, { team }: ToolContext) {
        const task = await team.createTask({
          subject: input.subject,
          description: input.description,
          blockedBy: input.blockedBy,
          writeScopes: input.writeScopes,
        });
        return compactTask(task, memberNames(team), 'summary');
      },
    }),
    defineTool({
      name: 'task_list',
      readOnly: true,
      description:
        'List tasks in creation order, with filters. Pass nextCursor back as cursor for the next page.',
      inputSchema: TaskListToolInput,
      async execute(input, { team }: ToolContext) {
        if (input.owner !== undefined && input.unowned === true) {
          throw new TeamError('INVALID_ARGUMENT', 'give owner or unowned, not both');
        }
        const ownerId =
          input.owner !== undefined
            ? memberIdByName(team, input.owner)
            : input.unowned === true
              ? null
              : undefined;
        const page = team.listTasks({
          status: input.status,
          ownerId,
          ready: input.ready,
          cursor: input.cursor,
          limit: input.limit,
        });
        const names = memberNames(team);
        return {
          tasks: page.tasks.map((task) => compactTask(task, names, 'summary')),
          ...(page.nextCursor === undefined ? {} : { nextCursor: page.nextCursor }),
        };
      },
    }),
    defineTool({
      name: 'task_get',
      readOnly: true,
      description: 'Get one task with its description and write scopes.',
      inputSchema: TaskGetToolInput,
      async execute(input, { team }: ToolContext) {
        return compactTask(team.getTask({ taskId: input.taskId }), memberNames(team), 'full');
      },
    }),
    defineTool({
      name: 'task_update',
      description:
        'Change a task: claim, release, complete, reopen, edit, set_dependencies, reassign (lead only) or delete.',
      inputSchema: TaskUpdateToolInput,
      async execute(input, { team }: ToolContext) {
        const task = await team.updateTask({
          taskId: input.taskId,
          action: toAction(input, team),
          ...(input.expectedRevision === undefined
            ? {}
            : { expectedRevision: input.expectedRevision }),
        });
        return compactTask(task, memberNames(team), 'summary');
      },
    }),
  ];
  return tools as AgentTool<unknown>[];
}

/**
 * The tool a teammate under plan approval submits its plan with; it works with its reading tools
 * until the plan is approved.
 */
export function createPlanTools(): AgentTool<unknown>[] {
  const tools = [
    defineTool({
      name: 'submit_plan',
      description:
        'Submit your plan for approval before you change anything. Then end your turn: the decision comes as a message (approved: you get all your tools; rejected: revise and submit again).',
      inputSchema: SubmitPlanToolInput,
      async execute(input, { team }: ToolContext) {
        const submitted = await team.submitPlan({ plan: input.plan });
        return {
          approvalId: submitted.approvalId,
          status: submitted.status,
          next: 'End your turn now; the decision reaches you as a message.',
        };
      },
    }),
  ];
  return tools as AgentTool<unknown>[];
}

/** The tools only the lead gets: spawning, interrupting, shutting down and waiting. */
export function createLeadTools(options: {
  agentTypes: readonly [string, ...string[]];
}): AgentTool<unknown>[] {
  const tools = [
    defineTool({
      name: 'spawn_teammate',
      description:
        'Start a new teammate. It begins with your prompt as its first message and reports back when idle.',
      inputSchema: spawnTeammateToolInput(options.agentTypes),
      async execute(input, { team }: ToolContext) {
        return team.spawnTeammate({
          name: input.name,
          description: input.description,
          prompt: input.prompt,
          agentType: input.agentType ?? options.agentTypes[0],
          context: input.context ?? 'fresh',
        });
      },
    }),
    defineTool({
      name: 'interrupt_teammate',
      description:
        'Stop what a teammate is doing now. Its mail is kept; it waits for the next message.',
      inputSchema: InterruptTeammateToolInput,
      async execute(input, { team }: ToolContext) {
        if (input.name === team.agent.name) {
          throw new TeamError('INVALID_ARGUMENT', 'you cannot interrupt yourself');
        }
        return team.interrupt({ target: input.name });
      },
    }),
    defineTool({
      name: 'shutdown_teammate',
      description:
        'Ask a teammate to shut down. It stops at its next step, releases its tasks and leaves the team.',
      inputSchema: ShutdownTeammateToolInput,
      async execute(input, { team }: ToolContext) {
        return team.shutdown({
          target: input.name,
          reason: input.reason,
        });
      },
    }),
    defineTool({
      name: 'decide_approval',
      description:
        'Approve or reject a pending approval a teammate asked you for (a tool call or a plan). Approved, the call runs (or the teammate gets all its tools); rejected, your reason is what it reads.',
      inputSchema: DecideApprovalToolInput,
      async execute(input, { team }: ToolContext) {
        const decided = await team.decide({
          approvalId: input.approvalId,
          decision: input.decision,
          reason: input.reason,
        });
        return { approvalId: decided.approvalId, status: decided.status };
      },
    }),
    defineTool({
      name: 'wait_for_team',
      description:
        'Wait until something changes in the team (a message, a task, a member). Returns at once with noProgress when no teammate is working, about to, or waiting for a process to take it over; openTasks then lists the board as it is now (a task you saw open may have been completed since).',
      inputSchema: WaitForTeamToolInput,
      async execute(input, { team, signal }: ToolContext) {
        const self = team.agent.memberId;
        // why nobody works, who is there and what is still open, all as they are now
        const stalled = (why: string) => ({
          noProgress: why,
          members: memberStatusLines(team.listMembers(), self),
          openTasks: openTaskLines(team),
        });
        const progress = team.progress();
        if (!progress.progressing) return stalled(progress.summary);
        const result = await team.waitForChange({
          timeoutMs: input.timeoutMs ?? DEFAULT_WAIT_MS,
          signal,
          untilNoProgress: true,
        });
        const now = team.listMembers();
        const names = new Map(now.map((m) => [m.memberId, m.name]));
        if (result.noProgress !== undefined) return stalled(result.noProgress);
        return {
          changed: result.changed,
          changes: result.records
            .map((record) => describeTeamChange(record, names))
            .filter((line): line is string => line !== undefined),
          members: memberStatusLines(now, self),
        };
      },
    }),
  ];
  return tools as AgentTool<unknown>[];
}
