import type { ChatMessage } from '@teamwire/core';
import { contentText } from '@teamwire/core';
import type { Findings } from './findings.js';
import {
  currentTurn,
  outcomes,
  outcomeUnknown,
  type Step,
  type ToolOutcome,
} from './policy-conversation.js';
import { readFolder } from './policy-reviewer.js';

/** The file each reviewer writes into its folder (kept equal to fix-tools' REVIEW_FILE). */
const REVIEW_FILE = 'REVIEW.md';

/** Refusals of a folder's commit after which its reviewer completes the task without it. */
export const MAX_COMMIT_REFUSALS = 3;

/** A commit that was not run: its approval was rejected or expired (core's `APPROVAL_REJECTED`). */
const isRefusal = (o: ToolOutcome) =>
  o.call.name === 'commit_changes' &&
  !o.ok &&
  (o.value as { error?: { code?: string } } | undefined)?.error?.code === 'APPROVAL_REJECTED';

/**
 * `it was rejected: <reason>`, `its approval expired before anyone decided`: how a refusal reads
 * in REVIEW.md and in the reviewer's words.
 */
function refusalNote(o: ToolOutcome): string {
  const message = (o.value as { error?: { message?: string } } | undefined)?.error?.message;
  return (message ?? o.text).replace(/^Not run: /, '');
}

/** What the fix reviewer's policy needs besides the conversation. */
export interface FixReviewerPolicyOptions {
  /**
   * Test-only: a file at the repository root that every reviewer also writes (with its folder's
   * name), so that two branches change one file and their merges conflict.
   */
  conflictFile?: string | undefined;
}

/** The assignment a fix reviewer is spawned with; its policy reads it back from its first prompt. */
export function fixAssignment(name: string, unit: string, taskId: string): string {
  return (
    `You are ${name}. Fix folder (path: ${unit}) as ${taskId}: claim ${taskId}, review the folder in ` +
    `your own worktree with list_files, search_text and read_file, write its ${REVIEW_FILE} with ` +
    'write_file, commit it with commit_changes, then complete the task.'
  );
}

const ASSIGNMENT = /You are ([a-z0-9-]+)\. Fix folder \(path: ([^)\s]+)\) as (task-\d+):/;

/** A task as `task_get` / `task_update` show it. */
interface TaskLite {
  id: string;
  status: string;
  owner?: string;
}

/**
 * The deterministic content of a folder's REVIEW.md (no reviewer or task id: any run writes the
 * same). `refusals`: the notes of the commits refused so far, each revision lists them all.
 */
export function renderFolderReview(findings: Findings, refusals: readonly string[] = []): string {
  const largest =
    findings.largest.map((f) => `\`${f.path}\` (${f.lines} lines)`).join(', ') || 'none';
  const out = [
    `# Review of ${findings.unit}`,
    '',
    '_Written by the teamwire example (`demo fix`, offline policy model)._',
    '',
    `- files: ${findings.files}`,
    `- lines: ${findings.lines}`,
    `- TODO/FIXME: ${findings.todoFixme}`,
    `- exported symbols: ${findings.exportedSymbols}`,
    `- largest files: ${largest}`,
  ];
  if (findings.exportNames.length > 0) {
    out.push(`- exports: ${findings.exportNames.map((n) => `\`${n}\``).join(', ')}`);
  }
  if (findings.notes.length > 0)
    out.push('', '## Notes', '', ...findings.notes.map((n) => `- ${n}`));
  if (refusals.length > 0) {
    out.push(
      '',
      '## Approval',
      '',
      'The commit of this file was refused; this revision takes note of why:',
      '',
      ...refusals.map((note, i) => `- refusal ${i + 1}: ${note}`),
    );
  }
  return `${out.join('\n')}\n`;
}

/**
 * The fix reviewer's next step. Every turn starts over from the task's state (a turn may be a
 * revival after a kill): claim the assigned task, review the folder, write and commit its
 * REVIEW.md, complete the task. Each step is idempotent: the same file is written again, a second
 * commit finds nothing to commit, a completed task ends the turn. A commit refused by its approver
 * (rejected or expired) is revised: REVIEW.md is written again noting every refusal's reason and
 * committed again; after {@link MAX_COMMIT_REFUSALS} refusals the task is completed without the
 * commit, and the reviewer says so.
 */
export function fixReviewerStep(
  messages: readonly ChatMessage[],
  options: FixReviewerPolicyOptions = {},
): Step {
  let assignment: RegExpExecArray | null = null;
  for (const m of messages) {
    if (m.role !== 'user') continue;
    assignment = ASSIGNMENT.exec(contentText(m.content));
    if (assignment) break;
  }
  if (!assignment) return { text: 'I have no folder assigned.' };
  const [, me, unit, taskId] = assignment as unknown as [string, string, string, string];

  const done = outcomes(currentTurn(messages)).filter((o) => !outcomeUnknown(o));
  // refusals count over the whole conversation: a revived reviewer's turn starts afresh
  const refusals = outcomes(messages).filter(isRefusal);
  const file = `${unit}/${REVIEW_FILE}`;
  const givenUp = refusals.length >= MAX_COMMIT_REFUSALS;
  const lastRefusal = refusals.at(-1);
  const failed = done.find((o) => !o.ok && !isRefusal(o));
  if (failed) {
    return { text: `Stopped on ${unit}: ${failed.call.name} failed (${failed.text}).` };
  }
  const taskResults = done.filter(
    (o) =>
      (o.call.name === 'task_get' || o.call.name === 'task_update') &&
      (o.value as TaskLite)?.id === taskId,
  );
  const task = taskResults.at(-1)?.value as TaskLite | undefined;
  if (!task) return { toolCalls: [{ name: 'task_get', input: { taskId } }] };
  if (task.status === 'completed') {
    return {
      text: givenUp
        ? `${unit} is done (${taskId}) without its commit: it was refused ${refusals.length} times.`
        : `${unit} is done (${taskId}).`,
    };
  }
  if (task.status === 'pending' && task.owner === undefined) {
    return { toolCalls: [{ name: 'task_update', input: { taskId, action: 'claim' } }] };
  }
  if (task.owner !== me) return { text: `${taskId} is not mine (owner: ${task.owner ?? 'none'}).` };
  if (givenUp && lastRefusal) {
    return {
      text: `The commit of ${file} was refused ${refusals.length} times (last: ${refusalNote(lastRefusal)}); completing ${taskId} without it.`,
      toolCalls: [{ name: 'task_update', input: { taskId, action: 'complete' } }],
    };
  }

  const reads = readFolder(done, unit, taskId);
  if ('step' in reads) return reads.step;
  const paths = options.conflictFile ? [unit, options.conflictFile] : [unit];
  // where a call is in this turn (-1: not in it); the refusals were read from the whole conversation
  const at = (o: ToolOutcome | undefined) =>
    o === undefined ? -1 : done.findIndex((d) => d.call.id === o.call.id);
  const writes = done.filter((o) => o.call.name === 'write_file');
  const written = new Set(writes.map((o) => (o.call.input as { path: string }).path));
  // a refused commit is revised: the file is written again, noting why, before the next commit
  const revise = lastRefusal !== undefined && at(writes.at(-1)) < at(lastRefusal);
  if (
    revise ||
    !written.has(file) ||
    (options.conflictFile && !written.has(options.conflictFile))
  ) {
    const findings = reads.findings();
    const content = renderFolderReview(findings, refusals.map(refusalNote));
    const toWrite = [{ name: 'write_file', input: { path: file, content } }];
    if (options.conflictFile) {
      toWrite.push({
        name: 'write_file',
        input: { path: options.conflictFile, content: `Last folder reviewed: ${unit}\n` },
      });
    }
    return {
      text: lastRefusal
        ? `My commit was refused (${refusalNote(lastRefusal)}); revising ${file}.`
        : `Writing ${file}.`,
      toolCalls: toWrite,
    };
  }
  const commits = done.filter((o) => o.call.name === 'commit_changes');
  if (at(commits.at(-1)) < at(writes.at(-1))) {
    return {
      toolCalls: [
        { name: 'commit_changes', input: { message: `Add review notes for ${unit}`, paths } },
      ],
    };
  }
  return {
    text: `Committed ${file} on my branch.`,
    toolCalls: [{ name: 'task_update', input: { taskId, action: 'complete' } }],
  };
}
