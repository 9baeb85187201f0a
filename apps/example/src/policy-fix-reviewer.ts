import type { ChatMessage } from '@teamwire/core';
import { contentText } from '@teamwire/core';
import type { Findings } from './findings.js';
import { currentTurn, last, outcomes, outcomeUnknown, type Step } from './policy-conversation.js';
import { readFolder } from './policy-reviewer.js';

/** The file each reviewer writes into its folder (kept equal to fix-tools' REVIEW_FILE). */
const REVIEW_FILE = 'REVIEW.md';

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

/** The deterministic content of a folder's REVIEW.md (no reviewer or task id: any run writes the same). */
export function renderFolderReview(findings: Findings): string {
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
  return `${out.join('\n')}\n`;
}

/**
 * The fix reviewer's next step. Every turn starts over from the task's state (a turn may be a
 * revival after a kill): claim the assigned task, review the folder, write and commit its
 * REVIEW.md, complete the task. Each step is idempotent: the same file is written again, a second
 * commit finds nothing to commit, a completed task ends the turn.
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
  const failed = done.find((o) => !o.ok);
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
  if (task.status === 'completed') return { text: `${unit} is done (${taskId}).` };
  if (task.status === 'pending' && task.owner === undefined) {
    return { toolCalls: [{ name: 'task_update', input: { taskId, action: 'claim' } }] };
  }
  if (task.owner !== me) return { text: `${taskId} is not mine (owner: ${task.owner ?? 'none'}).` };

  const reads = readFolder(done, unit, taskId);
  if ('step' in reads) return reads.step;
  const file = `${unit}/${REVIEW_FILE}`;
  const paths = options.conflictFile ? [unit, options.conflictFile] : [unit];
  const written = new Set(
    done
      .filter((o) => o.call.name === 'write_file')
      .map((o) => (o.call.input as { path: string }).path),
  );
  if (!written.has(file) || (options.conflictFile && !written.has(options.conflictFile))) {
    const findings = reads.findings();
    const writes = [
      { name: 'write_file', input: { path: file, content: renderFolderReview(findings) } },
    ];
    if (options.conflictFile) {
      writes.push({
        name: 'write_file',
        input: { path: options.conflictFile, content: `Last folder reviewed: ${unit}\n` },
      });
    }
    return { text: `Writing ${file}.`, toolCalls: writes };
  }
  if (!last(done, 'commit_changes')) {
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
