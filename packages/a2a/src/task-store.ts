import { open, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { TeamError } from '@teamwire/core';
import { z } from 'zod';

/** Version of the durable A2A task format (a JSONL line, a PostgreSQL row's `body`). */
export const A2A_TASK_FORMAT_VERSION = 1;

/** The states an A2A task of a team takes. */
export type A2ATaskState =
  | 'submitted'
  | 'working'
  | 'input-required'
  | 'completed'
  | 'failed'
  | 'canceled';

/** One message of a task's history, as text. */
export interface A2AHistoryEntry {
  /** `user`: the A2A client; `agent`: the team. */
  role: 'user' | 'agent';
  /** The A2A message id. */
  messageId: string;
  /** The message text. */
  text: string;
}

/** One result of a task: the lead's answer. */
export interface A2AStoredArtifact {
  /** The artifact id (the team message id of the answer). */
  artifactId: string;
  /** Its name (`answer`). */
  name: string;
  /** Its text. */
  text: string;
}

/** A client message accepted and not yet sent to the lead. */
export interface A2APendingMessage {
  /** The client's message id. */
  messageId: string;
  /** Its text. */
  text: string;
}

/** An A2A task of the team, as stored (format {@link A2A_TASK_FORMAT_VERSION}). */
export interface StoredA2ATask {
  /** Always {@link A2A_TASK_FORMAT_VERSION}. */
  v: 1;
  /** The A2A task id. */
  id: string;
  /** The A2A context id: a conversation of tasks. */
  contextId: string;
  /** The task's state. */
  state: A2ATaskState;
  /** The text of the last status, when it has one. */
  statusText?: string | undefined;
  /** Every client message of the task, and the team's answers. */
  history: A2AHistoryEntry[];
  /** The team's results: the lead's answer. */
  artifacts: A2AStoredArtifact[];
  /** The client messages accepted for this task: a retry of one answers this task again. */
  messageIds: string[];
  /**
   * A client message accepted but not yet sent to the lead as team mail: sent on the next start
   * unless the team's log holds it already.
   */
  pending?: A2APendingMessage | undefined;
  /** Ids of the team messages sent to the lead for this task. */
  teamMail: string[];
  /** Ids of the lead's messages applied to this task: mail read again after a crash is skipped. */
  appliedMail: string[];
  /** When the task last changed (ISO 8601). */
  updatedAt: string;
}

/** Longest A2A id (message, task, context) taken from a client, and kept in a stored task. */
export const A2A_ID_MAX = 256;

const id = z.string().min(1).max(A2A_ID_MAX);
const StoredA2ATaskSchema = z.strictObject({
  v: z.literal(A2A_TASK_FORMAT_VERSION),
  id,
  contextId: id,
  state: z.enum(['submitted', 'working', 'input-required', 'completed', 'failed', 'canceled']),
  statusText: z.string().optional(),
  history: z.array(
    z.strictObject({ role: z.enum(['user', 'agent']), messageId: id, text: z.string() }),
  ),
  artifacts: z.array(
    z.strictObject({ artifactId: z.string().min(1), name: z.string(), text: z.string() }),
  ),
  messageIds: z.array(id),
  pending: z.strictObject({ messageId: id, text: z.string() }).optional(),
  teamMail: z.array(z.string().min(1)),
  appliedMail: z.array(z.string().min(1)),
  updatedAt: z.string(),
});

/**
 * Where a team keeps its A2A tasks, so that `tasks/get` answers after a restart and a retried
 * client message finds its task. `put` is durable when it resolves.
 */
export interface A2ATaskStore {
  /** Every stored task, the newest version of each. */
  loadAll(): Promise<StoredA2ATask[]>;
  /** Writes a task's whole new version. */
  put(task: StoredA2ATask): Promise<void>;
  /** Releases the store's resources (not the team's). */
  close(): Promise<void>;
}

/** Name of the JSONL file of the A2A tasks in a team's state folder. */
export const A2A_TASKS_FILE = 'a2a-tasks.jsonl';

function invalid(where: string, cause: unknown): TeamError {
  return new TeamError('INVALID_RECORD', `invalid A2A task record at ${where}`, {
    details: { where },
    cause,
  });
}

/** Parses one stored task (a JSONL line's or a row's body); `INVALID_RECORD` when it is not one. */
export function parseStoredTask(value: unknown, where: string): StoredA2ATask {
  const parsed = StoredA2ATaskSchema.safeParse(value);
  if (!parsed.success) throw invalid(where, parsed.error);
  return parsed.data as StoredA2ATask;
}

/**
 * A2A tasks in `a2a-tasks.jsonl` of a team's JSONL state folder (`dir`): one line per version of a
 * task (`{"v":1,"id":…}`), appended and `fdatasync`ed, the last line of an id winning. A torn last
 * line (a crash mid-append) is cut off on open; any other line that is not a valid task is refused with
 * `INVALID_RECORD` and the file is left as it is.
 */
export async function openJsonlA2ATaskStore(dir: string): Promise<A2ATaskStore> {
  const path = join(dir, A2A_TASKS_FILE);
  let text = '';
  try {
    text = await readFile(path, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
  }
  const lines = text.split('\n');
  const torn = lines.at(-1) !== '';
  const tasks = new Map<string, StoredA2ATask>();
  let tornBytes = 0;
  lines.forEach((line, index) => {
    if (line === '') return;
    const last = index === lines.length - 1;
    let value: unknown;
    try {
      value = JSON.parse(line);
    } catch (error) {
      if (last && torn) {
        tornBytes = Buffer.byteLength(line); // a torn tail: the append never completed
        return;
      }
      throw invalid(`${path}:${index + 1}`, error);
    }
    const task = parseStoredTask(value, `${path}:${index + 1}`);
    tasks.set(task.id, task);
  });
  if (tornBytes > 0) {
    // cut the torn tail off, so the next line starts clean and the file folds again
    const repair = await open(path, 'r+');
    try {
      await repair.truncate(Buffer.byteLength(text) - tornBytes);
      await repair.datasync();
    } finally {
      await repair.close();
    }
  }
  const file = await open(path, 'a');
  // a complete last line without its newline is ended before the next one
  let needsNewline = torn && tornBytes === 0 && text.length > 0;
  let queue: Promise<void> = Promise.resolve();
  return {
    async loadAll() {
      return [...tasks.values()];
    },
    put(task) {
      const line = `${needsNewline ? '\n' : ''}${JSON.stringify(parseStoredTask(task, path))}\n`;
      needsNewline = false;
      const write = queue.then(async () => {
        await file.write(line);
        await file.datasync();
        tasks.set(task.id, task);
      });
      queue = write.catch(() => undefined);
      return write;
    },
    async close() {
      await queue;
      await file.close();
    },
  };
}

/** The rows of a query's result. */
export interface PgRows {
  /** The rows, by column name. */
  rows: Array<Record<string, unknown>>;
}

/** What {@link openPostgresA2ATaskStore} needs of a `pg` pool (or client). */
export interface PgQueryable {
  /** Runs one statement. */
  query(text: string, values?: unknown[]): Promise<PgRows>;
}

/** The PostgreSQL table of the A2A tasks: one row per task, `body` its newest version. */
export const A2A_TASKS_TABLE = 'teamwire_a2a_tasks';

/**
 * A2A tasks in PostgreSQL, table {@link A2A_TASKS_TABLE} (created when missing): one row per
 * `(team_id, task_id)` with the task as `body` (jsonb, format {@link A2A_TASK_FORMAT_VERSION}),
 * upserted. The pool is the caller's: `close` leaves it open.
 */
export async function openPostgresA2ATaskStore(
  pool: PgQueryable,
  teamId: string,
): Promise<A2ATaskStore> {
  await pool.query(
    `CREATE TABLE IF NOT EXISTS ${A2A_TASKS_TABLE} (
       team_id text NOT NULL,
       task_id text NOT NULL,
       format smallint NOT NULL,
       body jsonb NOT NULL,
       updated_at timestamptz NOT NULL DEFAULT now(),
       PRIMARY KEY (team_id, task_id)
     )`,
  );
  return {
    async loadAll() {
      const { rows } = await pool.query(
        `SELECT task_id, body FROM ${A2A_TASKS_TABLE} WHERE team_id = $1 ORDER BY updated_at`,
        [teamId],
      );
      return rows.map((row) => parseStoredTask(row.body, `${A2A_TASKS_TABLE}/${row.task_id}`));
    },
    async put(task) {
      const body = parseStoredTask(task, `${A2A_TASKS_TABLE}/${task.id}`);
      await pool.query(
        `INSERT INTO ${A2A_TASKS_TABLE} (team_id, task_id, format, body) VALUES ($1, $2, $3, $4)
         ON CONFLICT (team_id, task_id) DO UPDATE SET body = EXCLUDED.body, format = EXCLUDED.format,
           updated_at = now()`,
        [teamId, task.id, A2A_TASK_FORMAT_VERSION, JSON.stringify(body)],
      );
    },
    async close() {},
  };
}
