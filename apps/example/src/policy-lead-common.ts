import type { ChatMessage } from '@teamwire/core';
import {
  currentTurn,
  last,
  outcomes,
  outcomeUnknown,
  type Step,
  type ToolOutcome,
} from './policy-conversation.js';

/*
 * What the policies of both leads (the review's and the fix's) share: how they read the current
 * turn, the roster and the board, and how they set up and wait on the summary task.
 */

/** A task as the team tools show it (`owner` is a member name). */
export interface TaskLite {
  id: string;
  subject: string;
  status: string;
  owner?: string;
}
/** A member as `list_members` shows it. */
export interface MemberLite {
  name: string;
  status: string;
  /** Why a failed member failed. */
  error?: string;
}
export const isLive = (status: string) => status !== 'failed' && status !== 'retired';

/**
 * The lead's view of its current turn. `done`: every call whose outcome is known. `fresh`: the
 * calls after the last one whose outcome is unknown (a kill or an interrupt cut it off): the
 * files, the roster and the board read before it may be stale, so they are read again before
 * anything is decided, and a resumed lead never creates a task or spawns a reviewer twice.
 * `state`: the latest fresh reads of the files, the roster and the board, or else `read`, the
 * step that reads them.
 */
export function leadTurn(messages: readonly ChatMessage[]) {
  const all = outcomes(currentTurn(messages));
  let cut = -1;
  all.forEach((o, i) => {
    if (outcomeUnknown(o)) cut = i;
  });
  const fresh = all.slice(cut + 1);
  const done = all.filter((o) => !outcomeUnknown(o));
  const files = last(fresh, 'list_files');
  const members = last(fresh, 'list_members');
  const board = last(fresh, 'task_list');
  const state = files && members && board ? { files, members, board } : undefined;
  const read: Step = {
    toolCalls: [
      { name: 'list_files', input: { path: '.', limit: 2000 } },
      { name: 'list_members', input: {} },
      { name: 'task_list', input: { limit: 100 } },
    ],
  };
  return { done, state, read };
}

/** The board as of the latest task_list, updated by the task results seen after it. */
export function currentTasks(
  done: readonly ToolOutcome[],
  listed: readonly TaskLite[],
): Map<string, TaskLite> {
  const tasks = new Map(listed.map((t) => [t.id, t]));
  const board = done.filter((o) => o.call.name === 'task_list').at(-1);
  const after = board ? done.slice(done.indexOf(board) + 1) : done;
  for (const o of after) {
    if (!o.ok || !['task_create', 'task_update'].includes(o.call.name)) continue;
    const task = o.value as TaskLite;
    if (typeof task?.id === 'string') tasks.set(task.id, task);
  }
  return tasks;
}

/**
 * The summary task, blocked by every unit task and owned by the lead: the step that creates it
 * or takes it, or undefined once the lead owns it.
 */
export function summaryTaskStep(
  summary: TaskLite | undefined,
  create: { subject: string; description: string; blockedBy: string[] },
): Step | undefined {
  if (!summary) return { toolCalls: [{ name: 'task_create', input: create }] };
  if (summary.status === 'pending' && !summary.owner) {
    return {
      toolCalls: [
        { name: 'task_update', input: { taskId: summary.id, action: 'reassign', owner: 'lead' } },
      ],
    };
  }
  return undefined;
}

/** Where the lead is in waiting for the team: its last wait, what it did since, and whether the team stalled. */
export function waitState(done: readonly ToolOutcome[]) {
  const lastWait = last(done, 'wait_for_team');
  const afterWait = lastWait ? done.slice(done.indexOf(lastWait) + 1) : [];
  const stalled = (lastWait?.value as { noProgress?: string } | undefined)?.noProgress;
  return {
    lastWait,
    listedSince: afterWait.some((o) => o.call.name === 'task_list'),
    nudgedSince: afterWait.some((o) => o.call.name === 'send_message'),
    stalled,
  };
}
