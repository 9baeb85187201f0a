import { compiledSchema, Task } from '../records.js';
import type { Problem } from './problem.js';
import { type StoredText, snapshotInvalid, type TombstoneText } from './snapshot.js';
import { isNormalizedWriteScopeList } from './write-scopes.js';

const compiledTask: () => typeof Task = compiledSchema(Task);

/** `task-<n>` with a canonical number: its number, else 0. */
function canonicalNumber(id: string): number {
  if (!id.startsWith('task-')) return 0;
  const n = Number(id.slice('task-'.length));
  return Number.isSafeInteger(n) && n >= 1 && `task-${n}` === id ? n : 0;
}

/**
 * The deleted tasks of a restored snapshot (version 4), kept as the text they were stored as and
 * parsed only when one is first needed: a team's history leaves many more tombstones than live
 * tasks, and opening it should cost what the live ones cost. It holds exactly the task numbers
 * below `below` (the snapshot's next task number) that the snapshot's live tasks do not name.
 */
export class ColdTombstones {
  #source: TombstoneText | StoredText;
  #text: string | undefined;

  constructor(
    source: TombstoneText | StoredText,
    /** The snapshot's next task number: every task it holds is numbered below it. */
    readonly below: number,
    /** Ids of the live tasks the snapshot held (numbered below `below`, not in the text). */
    private readonly live: ReadonlySet<string>,
    /** The checks a tombstone must pass that span the state (its members). */
    private readonly check: (task: Task) => Problem | undefined,
  ) {
    this.#source = source;
  }

  /** Deleted tasks it holds. */
  get count(): number {
    return this.below - 1 - this.live.size;
  }

  /** Whether `id` is one of its tombstones (no text is read). */
  covers(id: string): boolean {
    const n = canonicalNumber(id);
    return n !== 0 && n < this.below && !this.live.has(id);
  }

  /** Its {@link TombstoneText}, read once (`SNAPSHOT_INVALID` when the stored copy is bad). */
  text(): string {
    if (this.#text === undefined) {
      const source = this.#source;
      this.#text = typeof source === 'string' ? source : source.text();
      this.#source = '';
    }
    return this.#text;
  }

  /**
   * Parses and checks every tombstone: one per number it covers, each a valid `deleted` task with
   * normalized write scopes and the members the state knows (`SNAPSHOT_INVALID` naming the first
   * problem).
   */
  load(): Task[] {
    const text = this.text();
    const tasks: Task[] = [];
    const seen = new Set<string>();
    let start = 0;
    while (start < text.length) {
      const end = text.indexOf('\n', start);
      if (end === -1) throw snapshotInvalid('the tombstones do not end with a newline');
      let value: unknown;
      try {
        value = JSON.parse(text.slice(start, end));
      } catch {
        throw snapshotInvalid(`tombstone line ${tasks.length + 1} is not JSON`);
      }
      start = end + 1;
      const parsed = compiledTask().safeParse(value);
      if (!parsed.success) {
        throw snapshotInvalid(`tombstone line ${tasks.length + 1} is not a task`);
      }
      const task = parsed.data as Task;
      const problem = this.problemOf(task, seen);
      if (problem !== undefined) throw snapshotInvalid(`invalid tombstone: ${problem}`);
      seen.add(task.id);
      tasks.push(task);
    }
    if (tasks.length !== this.count) {
      throw snapshotInvalid(
        `the snapshot holds ${tasks.length} tombstones, not the ${this.count} its task numbers leave`,
      );
    }
    return tasks;
  }

  private problemOf(task: Task, seen: ReadonlySet<string>): string | undefined {
    if (task.status !== 'deleted') return `${task.id} is not deleted`;
    if (!this.covers(task.id)) return `${task.id} is not a number the snapshot left to tombstones`;
    if (seen.has(task.id)) return `${task.id} is there twice`;
    if (!isNormalizedWriteScopeList(task.writeScopes)) {
      return `${task.id} write scopes are not normalized`;
    }
    return this.check(task)?.message;
  }
}
