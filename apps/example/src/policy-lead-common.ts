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
  /** Its agent type: the lead manages its `reviewer`s, never a person's member (`operator`). */
  agentType?: string;
  /** Why a failed member failed. */
  error?: string;
}
export const isLive = (status: string) => status !== 'failed' && status !== 'retired';
/** The agent type of the dashboard's operator: a person, whom the lead never shuts down. */
export const OPERATOR_TYPE = 'dashboard-operator';
/** A live member the lead manages (every teammate but the person at the dashboard). */
export const isLiveReviewer = (m: MemberLite) =>
  m.name !== 'lead' && isLive(m.status) && m.agentType !== OPERATOR_TYPE;

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

/** The step that waits for the team to change (or returns at once when nobody works). */
export const waitForTeamStep: Step = {
  toolCalls: [{ name: 'wait_for_team', input: { timeoutMs: 600_000 } }],
};

/** The step that reads the board and the roster again, in one model step. */
export const rereadStep: Step = {
  toolCalls: [
    { name: 'task_list', input: { limit: 100 } },
    { name: 'list_members', input: {} },
  ],
};

/**
 * No-progress waits in a row, the team looking the same at each, after which a lead stops
 * waiting and wraps up with what the team finished, saying what is missing: nothing it does
 * makes the team move, and another wait would only spend tokens.
 */
export const MAX_STALLED_WAITS = 3;

const noProgress = (wait: ToolOutcome | undefined) =>
  (wait?.value as { noProgress?: string } | undefined)?.noProgress;

/**
 * Where the lead is in waiting for the team: its last wait, what it did since, whether the team
 * stalled, and `stalledWaits`: how many of its latest waits in a row returned `noProgress` while
 * the team looked the same (the board as the lead knew it before each, and the members the wait
 * listed). A change of either between two waits is progress and starts the count again, so a
 * team that moves on slowly is not given up on.
 *
 * A wait that lists one of the lead's own teammates (`mine`) as `inactive` is no proof of a
 * stall and counts for nothing: this process does not run that member, which may be working, or
 * about to be taken over, in another process (a team spread over processes is watched by the
 * processes themselves: the main process ends a run whose workers have all exited).
 */
export function waitState(done: readonly ToolOutcome[], mine: (name: string) => boolean) {
  const waits = done.filter((o) => o.call.name === 'wait_for_team');
  const lastWait = waits.at(-1);
  const afterWait = lastWait ? done.slice(done.indexOf(lastWait) + 1) : [];
  // the board as the lead knew it after `seen` outcomes; the lead's own tasks (its report) are
  // not the team moving
  const boardAt = (seen: readonly ToolOutcome[]) => {
    const listed = (last(seen, 'task_list')?.value as { tasks?: TaskLite[] } | undefined)?.tasks;
    return JSON.stringify(
      [...currentTasks(seen, listed ?? []).values()]
        .filter((t) => t.owner !== 'lead')
        .map((t) => `${t.id} ${t.status} ${t.owner ?? ''}`),
    );
  };
  const view = (wait: ToolOutcome) =>
    JSON.stringify([
      boardAt(done.slice(0, done.indexOf(wait))),
      (wait.value as { members?: unknown }).members,
    ]);
  let stalledWaits = 0;
  let seen: string | undefined;
  const unseen = (wait: ToolOutcome) =>
    ((wait.value as { members?: unknown }).members as string[] | undefined)?.some((line) => {
      const [name, status] = String(line).split(': ');
      return status === 'inactive' && mine(name ?? '');
    }) === true;
  for (const wait of [...waits].reverse()) {
    if (noProgress(wait) === undefined || unseen(wait)) break;
    const now = view(wait);
    if (seen !== undefined && now !== seen) break;
    seen = now;
    stalledWaits++;
  }
  // a board that changed since the last wait (a task added or moved) is progress as well
  if (lastWait && boardAt(done) !== boardAt(done.slice(0, done.indexOf(lastWait)))) {
    stalledWaits = 0;
  }
  return {
    lastWait,
    listedSince: afterWait.some((o) => o.call.name === 'task_list'),
    // both the board and the roster read since the last wait
    readSince:
      afterWait.some((o) => o.call.name === 'task_list') &&
      afterWait.some((o) => o.call.name === 'list_members'),
    // a nudge, or a reviewer spawned to replace those that are gone
    nudgedSince: afterWait.some((o) => ['send_message', 'spawn_teammate'].includes(o.call.name)),
    stalled: noProgress(lastWait),
    stalledWaits,
  };
}

/** `task-3 "Review docs" (pending)`: a task that is not done, for a lead's last words. */
export const describeOpenTask = (task: TaskLite) =>
  `${task.id} "${task.subject}" (${task.status}${task.owner ? `, ${task.owner}` : ''})`;
