import { foldTeam, type Task, type TeamLog, type TeamRecord } from '@teamwire/core';

/*
 * What a finished run left undone, and the exit code that says so: a review or fix that ends with
 * a task not completed or without its report exits non-zero and names what is missing, so that a
 * partial result never looks like success.
 */

/** What a run's outcome is judged on. */
export interface RunOutcome {
  /** Why the run stopped short, when it was not Ctrl-C (e.g. every worker exited). */
  problem?: string | undefined;
  interrupted: boolean;
  /** The work the run did not do, one line each (see {@link missingWork}). */
  missing: readonly string[];
}

/** A task as the summary names it: id, subject, status and owner. */
export interface OpenTask {
  id: string;
  subject: string;
  status: string;
  owner?: string | undefined;
}

/**
 * The tasks of the team's final board that are neither completed nor deleted, read from its log
 * (the board of this process sees only what happened since it started: a resumed run did not see
 * the records before it).
 */
export async function openTasksOf(log: TeamLog, teamId: string): Promise<OpenTask[]> {
  const records: TeamRecord[] = [];
  for await (const record of log.read()) records.push(record);
  const team = foldTeam(records, { teamId });
  const names = new Map(team.roster.map((m) => [m.id, m.name]));
  return team.tasks.filter(isOpen).map((task) => ({
    id: task.id,
    subject: task.subject,
    status: task.status,
    ...(task.ownerId === undefined ? {} : { owner: names.get(task.ownerId) ?? task.ownerId }),
  }));
}

const isOpen = (task: Task) => task.status !== 'completed' && task.status !== 'deleted';

/** The work a run did not do, one line each: every open task, and the report when it is missing. */
export function missingWork(input: {
  openTasks: readonly OpenTask[];
  reportWritten: boolean;
  reportPath: string;
}): string[] {
  const out = input.openTasks.map(
    (t) => `${t.id} "${t.subject}" is ${t.status}${t.owner ? ` (${t.owner})` : ''}`,
  );
  if (!input.reportWritten) out.push(`the report ${input.reportPath} was not written`);
  return out;
}

/**
 * The exit code of a review or fix: 1 when it stopped short for a reason of its own, 130 after
 * Ctrl-C, 1 when work is missing, else 0.
 */
export function runExitCode(outcome: RunOutcome): number {
  if (outcome.problem) return 1;
  if (outcome.interrupted) return 130;
  return outcome.missing.length > 0 ? 1 : 0;
}

/** The summary's lines naming the missing work (none for a run stopped by Ctrl-C: it resumes). */
export function missingLines(outcome: RunOutcome): string[] {
  if (outcome.interrupted || outcome.missing.length === 0) return [];
  return [
    `  work missing (${outcome.missing.length}):`,
    ...outcome.missing.map((line) => `    - ${line}`),
  ];
}
