import { TeamError } from '../errors.js';
import { TASK_BLOCKED_BY_MAX, TASK_DESCRIPTION_MAX, TASK_SUBJECT_MAX } from '../limits.js';
import type { Task, TaskStatus } from '../records.js';
import { isTaskReady } from '../task-readiness.js';
import { checkListLimit, checkTextLimit } from './input-limits.js';
import { invariant, type Problem } from './problem.js';
import type { StoredText, TombstoneText } from './snapshot.js';
import { ColdTombstones } from './tombstones.js';
import { anyWriteScopeOverlaps, isNormalizedWriteScopeList } from './write-scopes.js';

/** A task as callers see it: the stored snapshot plus facts derived from the rest of the board. */
export interface TaskView extends Task {
  /** `pending`, unowned, and every blocker `completed`: a member may claim it now. */
  ready: boolean;
  /**
   * Advisory notes, e.g. `write scopes overlap with task-3` for every other `in_progress` task whose
   * write scopes overlap this one's (computed for `pending` and `in_progress` tasks only).
   */
  warnings: string[];
}

/**
 * A change to one task, as `TeamState.updateTask` accepts it. Each accepted action writes one whole
 * `task` record with `revision + 1`.
 */
export type TaskAction =
  | {
      /** `pending`, unowned, every blocker `completed` -> `in_progress`, owned by the actor. */
      type: 'claim';
    }
  | {
      /** `in_progress` -> `pending`, owner cleared. */
      type: 'release';
    }
  | {
      /** Changes text or write scopes; status and owner stay. At least one field must be given. */
      type: 'edit';
      /** The new subject. */
      subject?: string | undefined;
      /** The new description. */
      description?: string | undefined;
      /** The new write scopes (normalized). */
      writeScopes?: string[] | undefined;
    }
  | {
      /** Replaces the blocker list (existing, non-deleted, no repeats, not itself, acyclic). */
      type: 'set_dependencies';
      /** The new blocker list; may be empty. */
      blockedBy: string[];
    }
  | {
      /** `pending | in_progress` -> `completed`; the owner is kept as the record of who did it. */
      type: 'complete';
    }
  | {
      /** `completed` -> `in_progress` when its owner is still live, else `pending` and unowned. */
      type: 'reopen';
    }
  | {
      /** Lead only: gives the task to a live member; `pending | in_progress` -> `in_progress`. */
      type: 'reassign';
      /** The new owner's member id. */
      ownerId: string;
    }
  | {
      /** Writes a `deleted` tombstone; refused while a non-deleted task is blocked by this one. */
      type: 'delete';
    };

/** The names of {@link TaskAction}s. */
export type TaskActionType = TaskAction['type'];

/** Filters of `TeamState.listTasks`; all given filters must match. */
export interface TaskListFilter {
  /** One status or several. Deleted tasks are listed only when this asks for `deleted`. */
  status?: TaskStatus | readonly TaskStatus[] | undefined;
  /** A member id, or `null` for unowned tasks. */
  ownerId?: string | null | undefined;
  /** Only tasks that can be claimed now (`true`) or only those that cannot (`false`). */
  ready?: boolean | undefined;
}

/** Checks a task subject: 1 to {@link TASK_SUBJECT_MAX} characters (`INVALID_ARGUMENT`). */
export function checkTaskSubject(subject: unknown): void {
  checkTextLimit('subject', subject, TASK_SUBJECT_MAX, 1);
}

/** Checks a task description: 1 to {@link TASK_DESCRIPTION_MAX} characters (`INVALID_ARGUMENT`). */
export function checkTaskDescription(description: unknown): void {
  checkTextLimit('description', description, TASK_DESCRIPTION_MAX, 1);
}

/**
 * Checks a `blockedBy` list as given: an array of strings with at most
 * {@link TASK_BLOCKED_BY_MAX} entries (`INVALID_ARGUMENT`); returns a copy. Whether the entries
 * name usable tasks is {@link TaskBoard.checkBlockedBy}'s question.
 */
export function checkBlockedByList(ids: unknown): string[] {
  const refuse = (): never => {
    throw new TeamError('INVALID_ARGUMENT', 'blockedBy must be an array of task ids', {
      details: { field: 'blockedBy' },
    });
  };
  if (!Array.isArray(ids)) refuse();
  // the count first: a huge list is refused without a pass over it
  checkListLimit('blockedBy', ids, TASK_BLOCKED_BY_MAX);
  if ((ids as unknown[]).some((id) => typeof id !== 'string')) refuse();
  return [...(ids as string[])];
}

/** A deleted task is a tombstone: readable, never changed again (`TASK_DELETED`). */
export function checkNotDeleted(task: Task): Problem | undefined {
  if (task.status !== 'deleted') return undefined;
  return {
    code: 'TASK_DELETED',
    message: `${task.id} is deleted and cannot change`,
    details: { taskId: task.id },
  };
}

/** The numeric part of a `task-<n>` id. */
export function taskNumber(id: string): number {
  // Read in place, without a substring per call: the board asks for it on every edge it indexes.
  // Anything but a short run of digits takes the general path.
  const start = 'task-'.length;
  if (id.length <= start || id.length > start + 15) return Number(id.slice(start));
  let value = 0;
  for (let i = start; i < id.length; i++) {
    const digit = id.charCodeAt(i) - 48;
    if (digit < 0 || digit > 9) return Number(id.slice(start));
    value = value * 10 + digit;
  }
  return value;
}

/**
 * The task board's storage and its derived indexes, kept incrementally: tasks in creation order,
 * the next task number, the non-deleted count, a reverse index of blockers (so a delete check is
 * O(1)), and the in-progress tasks that have write scopes (so overlap warnings never scan the
 * whole board). It owns the board's invariants; {@link commit} trusts its caller to have run
 * {@link checkRecord} (replay) or built the snapshot from a checked command.
 */
export class TaskBoard {
  private readonly tasks = new Map<string, Task>();
  /** blocker id -> ids of non-deleted tasks blocked by it. */
  private readonly dependents = new Map<string, Set<string>>();
  private readonly inProgressScoped = new Set<string>();
  /**
   * Edges of non-deleted tasks that point to a higher-numbered blocker. While there are none,
   * every path along `blockedBy` descends in task numbers, which answers most cycle checks.
   */
  private upwardEdges = 0;
  private nextNumber = 1;
  private nonDeleted = 0;
  /**
   * The tombstones a snapshot (version 4) restored kept apart: not in `tasks` until one is first
   * needed, then all of them (`warm`). Kept after that for their text, which a snapshot reuses.
   */
  private cold: ColdTombstones | undefined;
  private warm = true;
  /** The tombstones {@link tombstoneText} wrote so far (besides `cold`), and their text. */
  private readonly written = { ids: new Set<string>(), text: '' };

  /** The number of the next created task (what {@link revert} restores). */
  get nextTaskNumber(): number {
    return this.nextNumber;
  }

  /** The id the next created task must carry. */
  get nextId(): string {
    return `task-${this.nextNumber}`;
  }

  /** Tasks that are not deleted. */
  get activeCount(): number {
    return this.nonDeleted;
  }

  /** The stored snapshot (not a copy: callers must not change it). */
  get(id: string): Task | undefined {
    const task = this.tasks.get(id);
    if (task !== undefined || this.warm || !(this.cold as ColdTombstones).covers(id)) return task;
    this.warmUp();
    return this.tasks.get(id);
  }

  /** Every task, tombstones included, in creation order. */
  values(): IterableIterator<Task> {
    this.warmUp();
    return this.tasks.values();
  }

  /** Copies of every task, tombstones included, in creation order. */
  snapshots(): Task[] {
    this.warmUp();
    const out: Task[] = [];
    for (const task of this.tasks.values()) {
      out.push({ ...task, blockedBy: [...task.blockedBy], writeScopes: [...task.writeScopes] });
    }
    return out;
  }

  /** Views of the tasks that match `filter`, in creation order (see {@link TaskListFilter}). */
  list(filter: TaskListFilter): TaskView[] {
    const statuses: readonly TaskStatus[] | undefined =
      filter.status === undefined
        ? undefined
        : typeof filter.status === 'string'
          ? [filter.status]
          : filter.status;
    if (statuses?.includes('deleted')) this.warmUp();
    const out: TaskView[] = [];
    for (const task of this.tasks.values()) {
      if (statuses === undefined ? task.status === 'deleted' : !statuses.includes(task.status)) {
        continue;
      }
      if (filter.ownerId !== undefined && (task.ownerId ?? null) !== filter.ownerId) continue;
      if (filter.ready !== undefined && this.isReady(task) !== filter.ready) continue;
      out.push(this.view(task));
    }
    return out;
  }

  /** Ids of the non-deleted tasks blocked by `id`, in task order. */
  dependentsOf(id: string): string[] {
    const set = this.dependents.get(id);
    if (set === undefined || set.size === 0) return [];
    return [...set].sort((a, b) => taskNumber(a) - taskNumber(b));
  }

  /**
   * Checks a proposed `blockedBy` list of task `taskId`: every entry names an existing,
   * non-deleted task other than `taskId`, without repeats, and the edges keep the graph acyclic.
   * The cycle search (O(tasks + edges)) is skipped when the set of blockers is unchanged.
   */
  checkBlockedBy(
    taskId: string,
    blockedBy: readonly string[],
    previous?: readonly string[],
  ): Problem | undefined {
    // No blockers: nothing to look up, and no edge that could close a cycle.
    if (blockedBy.length === 0) return undefined;
    // A short list (what boards hold) is searched for repeats in place, without a set.
    const seen = blockedBy.length > SHORT_LIST ? new Set<string>() : undefined;
    for (let i = 0; i < blockedBy.length; i++) {
      const blocker = blockedBy[i] as string;
      if (blocker === taskId) {
        return {
          code: 'INVALID_DEPENDENCY',
          message: `${taskId} cannot be blocked by itself`,
          details: { taskId, blocker },
        };
      }
      const repeated =
        seen === undefined
          ? i > 0 && blockedBy.lastIndexOf(blocker, i - 1) >= 0
          : seen.has(blocker);
      if (repeated) {
        return {
          code: 'INVALID_DEPENDENCY',
          message: `${taskId} lists blocker ${blocker} twice`,
          details: { taskId, blocker },
        };
      }
      seen?.add(blocker);
      const found = this.get(blocker);
      if (found === undefined) {
        return {
          code: 'INVALID_DEPENDENCY',
          message: `blocker ${blocker} of ${taskId} does not exist`,
          details: { taskId, blocker },
        };
      }
      if (found.status === 'deleted') {
        return {
          code: 'INVALID_DEPENDENCY',
          message: `blocker ${blocker} of ${taskId} is deleted`,
          details: { taskId, blocker },
        };
      }
    }
    // A cycle through this task needs a task blocked by it: its last edge ends here. A new task,
    // or one nothing depends on (most of a board), closes none, so no walk of its blockers is due.
    // Every task such a walk reaches is non-deleted (a blocker is never deleted while named), so
    // the index of non-deleted dependents answers exactly.
    if ((this.dependents.get(taskId)?.size ?? 0) === 0) return undefined;
    // The board is acyclic, so a cycle must take one of the edges this change adds: the walk
    // starts from the added blockers only (none when blockers are kept or dropped).
    const added =
      previous === undefined ? blockedBy : blockedBy.filter((id) => !previous.includes(id));
    if (added.length === 0) return undefined;
    // While every edge descends in task numbers, a path from a lower-numbered blocker never
    // climbs back to this task: no walk is due (boards mostly block tasks by older ones).
    if (this.upwardEdges === 0) {
      const number = taskNumber(taskId);
      if (added.every((id) => taskNumber(id) < number)) return undefined;
    }
    const cycle = this.findPath(added, taskId);
    if (cycle !== undefined) {
      return {
        code: 'DEPENDENCY_CYCLE',
        message: `blocking ${taskId} by ${cycle[0]} would close the cycle ${[taskId, ...cycle].join(' -> ')}`,
        details: { taskId, cycle: [taskId, ...cycle] },
      };
    }
    return undefined;
  }

  /**
   * A task that a non-deleted task is blocked by cannot be deleted (`TASK_HAS_DEPENDENTS`), so
   * `blockedBy` never names a tombstone.
   */
  checkDeletable(id: string): Problem | undefined {
    const dependents = this.dependentsOf(id);
    if (dependents.length === 0) return undefined;
    return {
      code: 'TASK_HAS_DEPENDENTS',
      message: `${id} cannot be deleted while tasks still depend on it: ${dependents.join(', ')} ${dependents.length === 1 ? 'is' : 'are'} blocked by it; change their dependencies first`,
      details: { taskId: id, dependents },
    };
  }

  /**
   * The rules every stored snapshot keeps, which replay checks: a new task carries the next id
   * and revision 1; a change follows the previous revision by one, keeps the creator and never
   * touches a tombstone; `pending` means unowned and `in_progress` owned; write scopes are a
   * normalized list; blockers are valid and acyclic; a deleted task has no dependents. Whether
   * creator and owner are members is the roster's to answer.
   */
  checkRecord(task: Task): Problem | undefined {
    const previous = this.get(task.id);
    if (previous === undefined) {
      if (task.id !== this.nextId) {
        return invariant(`new task ${task.id} does not carry the next task id ${this.nextId}`);
      }
      if (task.revision !== 1) {
        return invariant(`new task ${task.id} has revision ${task.revision}, not 1`);
      }
    } else {
      const deleted = checkNotDeleted(previous);
      if (deleted !== undefined) return deleted;
      if (task.revision !== previous.revision + 1) {
        return invariant(
          `task ${task.id} revision ${task.revision} does not follow revision ${previous.revision}`,
        );
      }
      if (task.creatorId !== previous.creatorId) {
        return invariant(`task ${task.id} changed its creator`);
      }
    }
    if (task.status === 'pending' && task.ownerId !== undefined) {
      return invariant(`pending task ${task.id} has an owner`);
    }
    if (task.status === 'in_progress' && task.ownerId === undefined) {
      return invariant(`in-progress task ${task.id} has no owner`);
    }
    // A list equal to the previous revision's was checked with it.
    const scopesKept = previous !== undefined && sameList(previous.writeScopes, task.writeScopes);
    if (!scopesKept && !isNormalizedWriteScopeList(task.writeScopes)) {
      return invariant(`task ${task.id} write scopes are not normalized`);
    }
    // Blockers equal to the previous (non-deleted) revision's were checked with it and still
    // hold: a task named as a blocker by a non-deleted task cannot be deleted, and unchanged
    // edges close no cycle. Most revisions (a claim, a completion) keep them.
    if (previous === undefined || !sameList(previous.blockedBy, task.blockedBy)) {
      const blockers = this.checkBlockedBy(task.id, task.blockedBy, previous?.blockedBy);
      if (blockers !== undefined) return blockers;
    }
    return task.status === 'deleted' ? this.checkDeletable(task.id) : undefined;
  }

  /**
   * Stores a validated snapshot (new or next revision) and updates the indexes. Map order is
   * creation order because a new task always carries the next number.
   */
  commit(task: Task): void {
    const previous = this.get(task.id);
    if (previous === undefined) {
      this.nextNumber = Math.max(this.nextNumber, taskNumber(task.id) + 1);
    } else if (previous.status !== 'deleted') {
      this.nonDeleted--;
      // Most revisions keep the blockers (a claim, a completion): the edges stay as they are.
      if (task.status !== 'deleted' && sameList(previous.blockedBy, task.blockedBy)) {
        this.tasks.set(task.id, task);
        this.nonDeleted++;
        this.indexInProgress(task);
        return;
      }
      this.unlinkBlockers(previous);
    }
    this.tasks.set(task.id, task);
    if (task.status !== 'deleted') {
      this.nonDeleted++;
      const number = taskNumber(task.id);
      for (const blocker of task.blockedBy) {
        let set = this.dependents.get(blocker);
        if (set === undefined) {
          set = new Set();
          this.dependents.set(blocker, set);
        }
        set.add(task.id);
        if (taskNumber(blocker) > number) this.upwardEdges++;
      }
    }
    this.indexInProgress(task);
  }

  /** Takes the edges of a non-deleted `task` out of the indexes. */
  private unlinkBlockers(task: Task): void {
    const number = taskNumber(task.id);
    for (const blocker of task.blockedBy) {
      this.dependents.get(blocker)?.delete(task.id);
      if (taskNumber(blocker) > number) this.upwardEdges--;
    }
  }

  /** Keeps `inProgressScoped` in step with a task's new revision. */
  private indexInProgress(task: Task): void {
    if (task.status === 'in_progress' && task.writeScopes.length > 0) {
      this.inProgressScoped.add(task.id);
    } else {
      this.inProgressScoped.delete(task.id);
    }
  }

  /**
   * Fills an empty board from a snapshot's tasks: `task-1` to `task-<n>` in order (tombstones
   * included, as every created task keeps its number), `nextNumber` one past the last, and every
   * task as {@link checkRecord} leaves it: `pending` unowned, `in_progress` owned, normalized write
   * scopes, blockers that exist, are not deleted and do not form a cycle.
   */
  restore(tasks: readonly Task[], nextNumber: number): Problem | undefined {
    for (const task of tasks) {
      if (task.id !== this.nextId) {
        return invariant(`task ${task.id} is out of order: expected ${this.nextId}`);
      }
      this.commit(task);
    }
    if (nextNumber !== this.nextNumber) {
      return invariant(`next task number ${nextNumber} does not follow the last task`);
    }
    for (const task of this.tasks.values()) {
      if (task.status === 'pending' && task.ownerId !== undefined) {
        return invariant(`pending task ${task.id} has an owner`);
      }
      if (task.status === 'in_progress' && task.ownerId === undefined) {
        return invariant(`in-progress task ${task.id} has no owner`);
      }
      if (!isNormalizedWriteScopeList(task.writeScopes)) {
        return invariant(`task ${task.id} write scopes are not normalized`);
      }
      if (task.status === 'deleted') continue;
      // The list given as unchanged skips the per-task cycle search: one pass below covers all.
      const blockers = this.checkBlockedBy(task.id, task.blockedBy, task.blockedBy);
      if (blockers !== undefined) return blockers;
    }
    return this.findAnyCycle();
  }

  /**
   * Fills an empty board from a version 4 snapshot: `live`, its tasks that are not deleted, in
   * creation order and numbered below `nextNumber`, checked as {@link restore} checks them; every
   * other number below `nextNumber` is a tombstone in `tombstones`, read and checked (with
   * `check`, the state's checks of its members) only when one is first needed.
   */
  restoreLive(
    live: readonly Task[],
    nextNumber: number,
    tombstones: TombstoneText | StoredText | undefined,
    check: (task: Task) => Problem | undefined,
  ): Problem | undefined {
    let last = 0;
    const ids = new Set<string>();
    for (const task of live) {
      const n = taskNumber(task.id);
      if (!(n > last) || n >= nextNumber) {
        return invariant(`task ${task.id} is out of order or not below ${nextNumber}`);
      }
      if (task.status === 'deleted') return invariant(`live task ${task.id} is deleted`);
      last = n;
      ids.add(task.id);
      this.commit(task);
    }
    this.nextNumber = nextNumber;
    const cold = new ColdTombstones(tombstones ?? '', nextNumber, ids, check);
    const given = typeof tombstones === 'string' ? tombstones.length : (tombstones?.bytes ?? 0);
    if (cold.count === 0 && given > 0) return invariant('tombstones of no deleted task');
    if (cold.count > 0) {
      this.cold = cold;
      this.warm = false;
    }
    for (const task of live) {
      if (task.status === 'pending' && task.ownerId !== undefined) {
        return invariant(`pending task ${task.id} has an owner`);
      }
      if (task.status === 'in_progress' && task.ownerId === undefined) {
        return invariant(`in-progress task ${task.id} has no owner`);
      }
      if (!isNormalizedWriteScopeList(task.writeScopes)) {
        return invariant(`task ${task.id} write scopes are not normalized`);
      }
      const blockers = this.checkBlockedBy(task.id, task.blockedBy, task.blockedBy);
      if (blockers !== undefined) return blockers;
    }
    return this.findAnyCycle();
  }

  /** Brings the tombstones kept apart into the board, in creation order (once). */
  private warmUp(): void {
    if (this.warm) return;
    const tombstones = (this.cold as ColdTombstones).load();
    const all = [...this.tasks.values(), ...tombstones];
    all.sort((a, b) => taskNumber(a.id) - taskNumber(b.id));
    this.tasks.clear();
    for (const task of all) this.tasks.set(task.id, task);
    this.warm = true;
  }

  /** The tasks that are not deleted, in creation order (what a snapshot's `tasks` holds). */
  liveTasks(): Task[] {
    const out: Task[] = [];
    for (const task of this.tasks.values()) if (task.status !== 'deleted') out.push(task);
    return out;
  }

  /**
   * Every tombstone as {@link TombstoneText} (what a snapshot's `tombstones` holds). A tombstone
   * never changes, and a snapshot is taken only of settled records, so the text of those already
   * written is kept and each call adds only the tasks deleted since.
   */
  tombstoneText(): TombstoneText {
    const { cold, written } = this;
    const lines: string[] = [];
    for (const task of this.tasks.values()) {
      if (task.status !== 'deleted' || written.ids.has(task.id)) continue;
      if (cold?.covers(task.id)) continue;
      lines.push(`${JSON.stringify(task)}\n`);
      written.ids.add(task.id);
    }
    if (lines.length > 0) written.text += lines.join('');
    return cold === undefined ? written.text : cold.text() + written.text;
  }

  /** A cycle among the blockers of non-deleted tasks, in O(tasks + edges) (iterative DFS). */
  private findAnyCycle(): Problem | undefined {
    const done = new Set<string>();
    const onPath = new Set<string>();
    for (const start of this.tasks.values()) {
      if (start.status === 'deleted' || done.has(start.id)) continue;
      const stack: { task: Task; next: number }[] = [{ task: start, next: 0 }];
      onPath.add(start.id);
      while (stack.length > 0) {
        const top = stack[stack.length - 1] as { task: Task; next: number };
        const blocker = top.task.blockedBy[top.next++];
        if (blocker === undefined) {
          stack.pop();
          onPath.delete(top.task.id);
          done.add(top.task.id);
          continue;
        }
        if (onPath.has(blocker))
          return invariant(`tasks ${top.task.id} and ${blocker} block each other in a cycle`);
        if (done.has(blocker)) continue;
        const next = this.tasks.get(blocker);
        if (next === undefined) continue;
        onPath.add(blocker);
        stack.push({ task: next, next: 0 });
      }
    }
    return undefined;
  }

  /**
   * Undoes the commit of `task`, the latest record of its task, which replaced `previous`
   * (`undefined`: it created the task, when the next task number was `nextNumber`).
   */
  revert(task: Task, previous: Task | undefined, nextNumber: number): void {
    if (previous !== undefined) {
      this.commit(previous);
      return;
    }
    if (task.status !== 'deleted') {
      this.nonDeleted--;
      this.unlinkBlockers(task);
    }
    this.tasks.delete(task.id);
    this.dependents.delete(task.id);
    this.inProgressScoped.delete(task.id);
    this.nextNumber = nextNumber;
  }

  /** True when every blocker of `task` is completed. */
  blockersDone(task: Task): boolean {
    for (const blocker of task.blockedBy) {
      if (this.tasks.get(blocker)?.status !== 'completed') return false;
    }
    return true;
  }

  /** Whether `task` is claimable now (see {@link TaskView.ready}): core's one readiness rule. */
  isReady(task: Task): boolean {
    return isTaskReady(task, this.statusOf);
  }

  private readonly statusOf = (taskId: string): TaskStatus | undefined =>
    this.tasks.get(taskId)?.status;

  /** Builds the caller-facing view of `task`; arrays are copies, so callers may keep them. */
  view(task: Task): TaskView {
    const warnings: string[] = [];
    if (
      (task.status === 'pending' || task.status === 'in_progress') &&
      task.writeScopes.length > 0 &&
      this.inProgressScoped.size > 0
    ) {
      const overlapping: string[] = [];
      for (const otherId of this.inProgressScoped) {
        if (otherId === task.id) continue;
        const other = this.tasks.get(otherId);
        if (other && anyWriteScopeOverlaps(task.writeScopes, other.writeScopes)) {
          overlapping.push(otherId);
        }
      }
      overlapping.sort((a, b) => taskNumber(a) - taskNumber(b));
      for (const id of overlapping) warnings.push(`write scopes overlap with ${id}`);
    }
    return {
      ...task,
      blockedBy: [...task.blockedBy],
      writeScopes: [...task.writeScopes],
      ready: this.isReady(task),
      warnings,
    };
  }

  /** Depth-first search along `blockedBy` edges from `starts`; the path to `target`, if any. */
  private findPath(starts: readonly string[], target: string): string[] | undefined {
    const parent = new Map<string, string | undefined>();
    const stack: string[] = [];
    for (const start of starts) {
      if (!parent.has(start)) {
        parent.set(start, undefined);
        stack.push(start);
      }
    }
    while (stack.length > 0) {
      const id = stack.pop()!;
      if (id === target) {
        const path: string[] = [];
        for (let at: string | undefined = id; at !== undefined; at = parent.get(at)) path.push(at);
        return path.reverse();
      }
      for (const next of this.tasks.get(id)?.blockedBy ?? []) {
        if (!parent.has(next)) {
          parent.set(next, id);
          stack.push(next);
        }
      }
    }
    return undefined;
  }
}

/** Lists up to this long are searched for repeats by comparison instead of through a set. */
const SHORT_LIST = 8;

/** Two lists with the same strings in the same order. */
function sameList(a: readonly string[], b: readonly string[]): boolean {
  if (a === b) return true;
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}
