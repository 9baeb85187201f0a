import type { Task } from '../records.js';
import { taskNumber } from '../rules.js';

function isBlank(value: string | undefined): value is undefined {
  return value === undefined || value.trim() === '';
}

/**
 * The line the lead reads when a teammate's turn ended without any text, so an idle teammate
 * never shows up as an empty message.
 */
export function idleFallbackLine(from: string): string {
  return `${from} is idle and ready for the next instruction.`;
}

/** The idle notice: the teammate's last text as written, or {@link idleFallbackLine} when blank. */
export function formatIdleNotice(options: { from: string; text?: string | undefined }): string {
  return isBlank(options.text) ? idleFallbackLine(options.from) : options.text;
}

/**
 * How many open tasks a claim prompt lists before it summarises the rest, so a huge board does
 * not flood every turn's prompt.
 */
export const CLAIM_PROMPT_MAX_LISTED_TASKS = 50;

function oneLine(text: string): string {
  return text.replace(/\s*[\r\n]+\s*/g, ' ').trim();
}

function describeTask(task: Task, ownerId: string | undefined, openIds: ReadonlySet<string>) {
  const state: string[] = [task.status === 'in_progress' ? 'in progress' : task.status];
  if (task.ownerId === undefined) state.push('unowned');
  else if (task.ownerId === ownerId) state.push('yours');
  else state.push('owned by another member');
  const blockers = task.blockedBy.filter((id) => openIds.has(id));
  const blocked = blockers.length > 0 ? ` (blocked by ${blockers.join(', ')})` : '';
  return `- ${task.id} [${state.join(', ')}] ${oneLine(task.subject)}${blocked}`;
}

/**
 * The text that starts a teammate's turn after it claims a ready task. It gives the task in full
 * and then the whole open board, and tells the model to continue with the next ready task when
 * this one is done: a model shown only one task tends to stop after it.
 */
export function formatTaskClaimPrompt(options: {
  task: Task;
  openTasks: readonly Task[];
  resumed?: boolean | undefined;
}): string {
  const { task } = options;
  const open = new Map<string, Task>();
  for (const t of options.openTasks) {
    if (t.status === 'pending' || t.status === 'in_progress') open.set(t.id, t);
  }
  if (task.status === 'pending' || task.status === 'in_progress') open.set(task.id, task);
  const listed = [...open.values()].sort(
    (a, b) => (taskNumber(a.id) ?? 0) - (taskNumber(b.id) ?? 0),
  );
  const openIds = new Set(open.keys());

  const lines = [`You claimed ${task.id}: ${oneLine(task.subject)}`, '', task.description];
  if (options.resumed === true) lines.push('', resumedNote(task.id));
  if (task.writeScopes.length > 0) {
    lines.push('', `Write scopes (advisory): ${task.writeScopes.join(', ')}`);
  }
  lines.push('', `Open tasks on the board (${listed.length}):`);
  for (const t of listed.slice(0, CLAIM_PROMPT_MAX_LISTED_TASKS)) {
    lines.push(describeTask(t, task.ownerId, openIds));
  }
  if (listed.length > CLAIM_PROMPT_MAX_LISTED_TASKS) {
    lines.push(
      `- ... and ${listed.length - CLAIM_PROMPT_MAX_LISTED_TASKS} more (list the task board to see them)`,
    );
  }
  lines.push(
    '',
    `Work on ${task.id} now. When it is done, mark it completed, then claim the next open task ` +
      'that is pending, unowned and not blocked (lowest id first), and keep going until none is ' +
      'left. Message the lead when you are finished or stuck.',
  );
  return lines.join('\n');
}

/** The text of the message that tells a member a task was assigned to it. */
export function formatAssignmentNotice(options: { task: Task; assignedBy: string }): string {
  const { task, assignedBy } = options;
  return [
    `${assignedBy} assigned you ${task.id}: ${oneLine(task.subject)}`,
    '',
    task.description,
    '',
    `Start it when you are free and mark it in progress, mark it completed when it is done, and ` +
      `message ${assignedBy} if you are blocked.`,
  ].join('\n');
}

/**
 * What a member resuming a task it owns is told (after an interrupt, or revived in another
 * process): its conversation above already holds this task's prompt and its work on it.
 */
export function resumedNote(taskId: string): string {
  return (
    `You are resuming ${taskId}: your work on it stopped part-way. Your conversation above shows ` +
    'what you already did; messages you sent were delivered, so do not send them again. Go on ' +
    'from where you stopped.'
  );
}
