import { TeamError } from '../errors.js';
import type { Task, TaskStatus } from '../records.js';
import { refuseIf } from './problem.js';
import { isLivePhase, type Roster } from './roster.js';
import {
  checkBlockedByList,
  checkNotDeleted,
  checkTaskDescription,
  checkTaskSubject,
  type TaskAction,
  type TaskBoard,
} from './task-board.js';
import type { TeamLimits } from './team-limits.js';
import { checkWriteScopeLimits, normalizeWriteScopes } from './write-scopes.js';

/*
 * The task commands decide: they validate a request against the roster and the board and return
 * the task snapshot that expresses it, changing nothing. `TeamState` stamps it into a record and
 * applies it.
 */

/** Input of `TeamState.createTask`. */
export interface CreateTaskInput {
  /** A short title, 1 to `TASK_SUBJECT_MAX` characters. */
  subject: string;
  /** What to do, 1 to `TASK_DESCRIPTION_MAX` characters. */
  description: string;
  /** Existing tasks that must be completed first. */
  blockedBy?: string[] | undefined;
  /** Relative path prefixes the task will write (advisory). */
  writeScopes?: string[] | undefined;
}

/** Input of `TeamState.updateTask`. */
export interface UpdateTaskInput {
  /** The task to change. */
  taskId: string;
  /** Compare-and-set: when given, the change is refused unless the task is at this revision. */
  expectedRevision?: number | undefined;
  /** The change to make. */
  action: TaskAction;
}

/** What the task commands read. */
export interface TaskContext {
  readonly roster: Roster;
  readonly board: TaskBoard;
}

/** A new `pending` task at revision 1 under the next id, created by a live member. */
export function decideCreateTask(
  { roster, board }: TaskContext,
  limits: TeamLimits,
  actorId: string,
  input: CreateTaskInput,
): Task {
  refuseIf(roster.checkActor(actorId));
  checkTaskSubject(input.subject);
  checkTaskDescription(input.description);
  const blockedBy = checkBlockedByList(input.blockedBy ?? []);
  checkWriteScopeLimits(input.writeScopes ?? []);
  const writeScopes = normalizeWriteScopes(input.writeScopes ?? []);
  if (board.activeCount >= limits.maxTasks) {
    throw new TeamError(
      'TASK_LIMIT',
      `the board already holds ${board.activeCount} tasks (limit ${limits.maxTasks}); complete or delete some first`,
      { details: { limit: limits.maxTasks } },
    );
  }
  const id = board.nextId;
  refuseIf(board.checkBlockedBy(id, blockedBy));
  return {
    id,
    revision: 1,
    subject: input.subject,
    description: input.description,
    status: 'pending',
    creatorId: actorId,
    blockedBy,
    writeScopes,
  };
}

/**
 * The next snapshot of a task after one action. Checks run in this order, each with its own code:
 * `NOT_A_MEMBER`, `TASK_NOT_FOUND`, `TASK_DELETED`, `REVISION_MISMATCH`, then the action's
 * authorization, then its own rules.
 */
export function decideUpdateTask(
  context: TaskContext,
  actorId: string,
  input: UpdateTaskInput,
): Task {
  const { roster, board } = context;
  refuseIf(roster.checkActor(actorId));
  const task = board.get(input.taskId);
  if (task === undefined) {
    throw new TeamError('TASK_NOT_FOUND', `no task with id ${input.taskId}`, {
      details: { taskId: input.taskId },
    });
  }
  refuseIf(checkNotDeleted(task));
  if (input.expectedRevision !== undefined && input.expectedRevision !== task.revision) {
    throw new TeamError(
      'REVISION_MISMATCH',
      `${task.id} is at revision ${task.revision}, not ${input.expectedRevision}; read it again`,
      { details: { taskId: task.id, expected: input.expectedRevision, actual: task.revision } },
    );
  }
  const action = input.action;
  switch (action?.type) {
    case 'claim':
      return claim(board, actorId, task);
    case 'release':
      requireStatusRight(roster, actorId, task, 'release');
      requireStatus(task, ['in_progress'], 'release');
      return nextRevision(task, { status: 'pending', ownerId: undefined });
    case 'complete':
      requireStatusRight(roster, actorId, task, 'complete');
      requireStatus(task, ['pending', 'in_progress'], 'complete');
      return nextRevision(task, { status: 'completed' });
    case 'reopen': {
      requireStatusRight(roster, actorId, task, 'reopen');
      requireStatus(task, ['completed'], 'reopen');
      const keepOwner = task.ownerId !== undefined && roster.isLive(task.ownerId);
      return nextRevision(
        task,
        keepOwner ? { status: 'in_progress' } : { status: 'pending', ownerId: undefined },
      );
    }
    case 'edit':
      return edit(roster, actorId, task, action);
    case 'set_dependencies': {
      requireEditRight(roster, actorId, task, 'change the dependencies of');
      const blockedBy = checkBlockedByList(action.blockedBy);
      refuseIf(board.checkBlockedBy(task.id, blockedBy, task.blockedBy));
      return nextRevision(task, { blockedBy });
    }
    case 'reassign':
      return reassign(roster, actorId, task, action.ownerId);
    case 'delete':
      requireEditRight(roster, actorId, task, 'delete');
      refuseIf(board.checkDeletable(task.id));
      return nextRevision(task, { status: 'deleted' });
    default:
      throw new TeamError(
        'INVALID_ARGUMENT',
        `unknown task action ${JSON.stringify((action as { type?: unknown } | undefined)?.type)}`,
        { details: { taskId: task.id } },
      );
  }
}

/**
 * System action (no authorization): every `in_progress` task owned by `memberId` back to
 * `pending` and unowned, in task order.
 */
export function decideReleaseTasksOf(board: TaskBoard, memberId: string): Task[] {
  const out: Task[] = [];
  for (const task of board.liveTasks()) {
    if (task.status === 'in_progress' && task.ownerId === memberId) {
      out.push(nextRevision(task, { status: 'pending', ownerId: undefined }));
    }
  }
  return out;
}

function claim(board: TaskBoard, actorId: string, task: Task): Task {
  if (task.status === 'in_progress' && task.ownerId !== actorId) {
    throw new TeamError('TASK_OWNED', `${task.id} is already owned by ${task.ownerId}`, {
      details: { taskId: task.id, ownerId: task.ownerId },
    });
  }
  requireStatus(task, ['pending'], 'claim');
  if (!board.blockersDone(task)) {
    const open = task.blockedBy.filter((id) => board.get(id)?.status !== 'completed');
    throw new TeamError(
      'TASK_BLOCKED',
      `${task.id} is blocked by ${open.join(', ')}, not completed yet`,
      { details: { taskId: task.id, blockedBy: open } },
    );
  }
  return nextRevision(task, { status: 'in_progress', ownerId: actorId });
}

function edit(
  roster: Roster,
  actorId: string,
  task: Task,
  action: Extract<TaskAction, { type: 'edit' }>,
): Task {
  requireEditRight(roster, actorId, task, 'edit');
  if (
    action.subject === undefined &&
    action.description === undefined &&
    action.writeScopes === undefined
  ) {
    throw new TeamError(
      'INVALID_ARGUMENT',
      'an edit must change the subject, the description or the write scopes',
      { details: { taskId: task.id } },
    );
  }
  const changes: Partial<Task> = {};
  if (action.subject !== undefined) {
    checkTaskSubject(action.subject);
    changes.subject = action.subject;
  }
  if (action.description !== undefined) {
    checkTaskDescription(action.description);
    changes.description = action.description;
  }
  if (action.writeScopes !== undefined) {
    checkWriteScopeLimits(action.writeScopes);
    changes.writeScopes = normalizeWriteScopes(action.writeScopes);
  }
  return nextRevision(task, changes);
}

function reassign(roster: Roster, actorId: string, task: Task, ownerId: string): Task {
  if (actorId !== roster.leadId) {
    throw new TeamError('NOT_ALLOWED_TO_REASSIGN', 'only the team lead may reassign tasks', {
      details: { taskId: task.id, actorId },
    });
  }
  requireStatus(task, ['pending', 'in_progress'], 'reassign');
  const target = roster.get(ownerId);
  if (target === undefined) {
    throw new TeamError('UNKNOWN_MEMBER', `no member with id ${String(ownerId)}`, {
      details: { memberId: ownerId },
    });
  }
  if (!isLivePhase(target.phase)) {
    throw new TeamError('INVALID_PHASE', `${target.name} is ${target.phase} and cannot own tasks`, {
      details: { memberId: ownerId, phase: target.phase },
    });
  }
  return nextRevision(task, { status: 'in_progress', ownerId });
}

/** Owner, lead, or the creator while the task is unowned. */
function requireEditRight(roster: Roster, actorId: string, task: Task, verb: string): void {
  const allowed =
    actorId === task.ownerId ||
    actorId === roster.leadId ||
    (task.ownerId === undefined && actorId === task.creatorId);
  if (!allowed) {
    throw new TeamError(
      'NOT_ALLOWED_TO_EDIT',
      `only the owner, the lead, or the creator of an unowned task may ${verb} ${task.id}`,
      { details: { taskId: task.id, actorId, ownerId: task.ownerId } },
    );
  }
}

/** Owner or lead. */
function requireStatusRight(roster: Roster, actorId: string, task: Task, verb: string): void {
  if (actorId !== task.ownerId && actorId !== roster.leadId) {
    throw new TeamError(
      'NOT_ALLOWED_TO_CHANGE_STATUS',
      `only the owner or the lead may ${verb} ${task.id}`,
      { details: { taskId: task.id, actorId, ownerId: task.ownerId } },
    );
  }
}

function requireStatus(task: Task, allowed: readonly TaskStatus[], verb: string): void {
  if (!allowed.includes(task.status)) {
    throw new TeamError(
      'INVALID_TASK_STATUS',
      `cannot ${verb} ${task.id}: it is ${task.status} (needs ${allowed.join(' or ')})`,
      { details: { taskId: task.id, status: task.status, allowed } },
    );
  }
}

/** The next snapshot of `task`; an `ownerId: undefined` change removes the owner key. */
function nextRevision(task: Task, changes: Partial<Task>): Task {
  const next: Task = { ...task, ...changes, revision: task.revision + 1 };
  if ('ownerId' in changes && changes.ownerId === undefined) delete next.ownerId;
  return next;
}
