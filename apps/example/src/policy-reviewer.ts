import type { ChatMessage } from '@teamwire/core';
import { contentText, isCompaction } from '@teamwire/core';
import { type Findings, formatFindingsMessage, SUMMARY_SUBJECT } from './findings.js';
import {
  currentTurn,
  last,
  outcomes,
  outcomeUnknown,
  type Step,
  type ToolOutcome,
} from './policy-conversation.js';
import { EXPORT_PATTERN, SOURCE_EXTENSIONS, TODO_PATTERN } from './workspace-files.js';

/** What `list_files` returns. */
export interface ListResult {
  files: { path: string; lines: number | null }[];
  total: number;
}
export interface SearchResult {
  matches: { path: string; line: number; text: string }[];
  total: number;
}

/**
 * The reviewer's next step: review the claimed folder, send the findings, complete the task.
 *
 * A task is worked on from where the transcript stands, not from scratch: a claim prompt for a
 * task this reviewer already worked on (core resumes an owned task after an interrupt, and a
 * member revived in another process after a takeover) continues with the reads, the findings
 * message and the completion its earlier turns on that task made; findings already sent are not
 * sent again. A task that names no folder (one the lead did not plan, e.g. from the operator) is
 * completed with a note to the lead, never released and claimed again.
 *
 * It reads only its tasks' turns, so its context budget may summarise everything before them (see
 * context-window.ts). A compaction during the task may also replace the task's first reads: core
 * keeps the task's prompt and the latest call with its results, so the policy reads what it lost
 * again, all in one call once its context was compacted, and never needs an older result than
 * the latest call's for the next step.
 */
export function reviewerStep(messages: readonly ChatMessage[]): Step {
  const turn = currentTurn(messages);
  const start = turn.find((m) => m.role === 'user');
  const claim = start?.role === 'user' && start.source?.kind === 'task-claim' ? start : undefined;
  if (claim?.source?.kind !== 'task-claim') {
    // the prompt of a completed task is no longer kept through a compaction: its completion is
    const completed = outcomes(turn)
      .filter((o) => o.ok && o.call.name === 'task_update')
      .map((o) => o.call.input as { taskId?: string; action?: string })
      .find((input) => input.action === 'complete');
    if (completed) return { text: `Reviewed ${completed.taskId}.` };
    return { text: 'Ready to review; I will claim a ready task from the board.' };
  }
  const taskId = claim.source.taskId;
  const prompt = contentText(claim.content);
  // a call whose outcome is unknown is made again: reads are harmless, a second findings message
  // replaces the first in the lead's report, and completing a completed task is refused
  const current = outcomes(turn).filter((o) => !outcomeUnknown(o));
  const earlier = earlierWork(messages, taskId, messages.indexOf(claim));
  const unit = /\(path: ([^)\s]+)\)/.exec(prompt)?.[1];
  if (!unit) return unplannedTaskStep(taskId, prompt, [...earlier, ...current]);
  const failed = current.find((o) => !o.ok);
  if (failed) {
    if (last(current, 'task_update')) return { text: `Stopped on ${taskId}: ${failed.text}` };
    return {
      text: `Could not review ${unit}: ${failed.call.name} failed (${failed.text}). Releasing ${taskId}.`,
      toolCalls: [{ name: 'task_update', input: { taskId, action: 'release' } }],
    };
  }
  const done = [...earlier, ...current];
  if (done.some((o) => isCompletionOf(o, taskId))) return { text: `Reviewed ${unit} (${taskId}).` };
  // latest first: a compaction may have replaced what led to it
  if (last(done, 'send_message')) {
    return { toolCalls: [{ name: 'task_update', input: { taskId, action: 'complete' } }] };
  }
  const reads = readFolder(done, unit, taskId, { compacted: messages.some(isCompaction) });
  if ('step' in reads) return reads.step;
  const findings = reads.findings();
  return {
    text: `Finished reviewing ${unit}; sending my findings to the lead.`,
    toolCalls: [
      {
        name: 'send_message',
        input: {
          to: 'lead',
          message: formatFindingsMessage(findings),
          summary: `findings for ${unit}`,
        },
      },
    ],
  };
}

const isCompletionOf = (o: ToolOutcome, taskId: string) => {
  const input = o.call.input as { taskId?: string; action?: string };
  return (
    o.ok && o.call.name === 'task_update' && input.taskId === taskId && input.action === 'complete'
  );
};

/**
 * What this reviewer's earlier turns on `taskId` got done before the claim prompt at `claimAt`:
 * the calls that succeeded in every turn a prompt for that task started (a resume after an
 * interrupt, a revival after a takeover, a claim again after a release), since the reviewer last
 * completed it (a task reopened and claimed again is reviewed again). Calls that failed or whose
 * outcome is unknown are left out: they are made again.
 */
function earlierWork(
  messages: readonly ChatMessage[],
  taskId: string,
  claimAt: number,
): ToolOutcome[] {
  let work: ToolOutcome[] = [];
  let segment: ChatMessage[] | undefined;
  const close = () => {
    if (!segment) return;
    const ok = outcomes(segment).filter((o) => o.ok);
    work = ok.some((o) => isCompletionOf(o, taskId)) ? [] : [...work, ...ok];
    segment = undefined;
  };
  for (const m of messages.slice(0, claimAt)) {
    const starts =
      m.role === 'user' && (m.source?.kind === 'task-claim' || m.source?.kind === 'host');
    if (starts) {
      close();
      if (m.source?.kind === 'task-claim' && m.source.taskId === taskId) segment = [];
    }
    segment?.push(m);
    // a turn ends with an answer without tool calls
    if (m.role === 'assistant' && m.toolCalls.length === 0 && m.source === undefined) close();
  }
  close();
  return work;
}

/**
 * A claimed task that names no folder: not a review the lead planned (an operator's task, say).
 * The reviewer cannot do it, and releasing it would only have it claimed again: it tells the lead
 * and completes it, in one step; whatever comes back, the turn ends there.
 */
function unplannedTaskStep(taskId: string, prompt: string, done: readonly ToolOutcome[]): Step {
  const subject = new RegExp(`${taskId}: (.*)`).exec(prompt)?.[1]?.trim() ?? '';
  if (subject === SUMMARY_SUBJECT) {
    // The lead's own task, claimed in the moment before the lead took it: give it back (core
    // never has this member claim it again) and let the lead write its report.
    if (done.some((o) => o.call.name === 'task_update')) {
      return { text: `Left ${taskId} to the lead.` };
    }
    return {
      text: `${taskId} is the lead's report; giving it back.`,
      toolCalls: [{ name: 'task_update', input: { taskId, action: 'release' } }],
    };
  }
  const failed = done.find((o) => !o.ok);
  if (failed) {
    return { text: `Could not close ${taskId}: ${failed.call.name} failed (${failed.text}).` };
  }
  if (done.some((o) => isCompletionOf(o, taskId))) {
    return { text: `Completed ${taskId} with a note to the lead: it names no folder to review.` };
  }
  const complete = { name: 'task_update', input: { taskId, action: 'complete' } };
  if (last(done, 'send_message')) return { toolCalls: [complete] };
  return {
    text: `${taskId} names no folder to review; telling the lead and completing it.`,
    toolCalls: [
      {
        name: 'send_message',
        input: {
          to: 'lead',
          message: `${taskId}${subject ? ` ("${subject}")` : ''} names no folder to review, so I cannot do it as a review; I completed it without changes so that it does not hold the team up.`,
          summary: `${taskId} is not a review`,
        },
      },
      complete,
    ],
  };
}

/**
 * A reviewer's reads of its folder (shared with the fix job): its files, its TODO/FIXME markers
 * and exports, the start of its largest file. `step`: the next read; once all are in, the
 * folder's `findings`. `compacted`: the context was compacted, so a read may be missing because
 * a summary replaced it; then every missing read is made again in one call (with the file read
 * whose path is known), so that the results the findings need all follow the latest call, which
 * a compaction always keeps.
 */
export function readFolder(
  done: readonly ToolOutcome[],
  unit: string,
  taskId: string,
  options: { compacted?: boolean } = {},
): { step: Step } | { findings: () => Findings } {
  const list = last(done, 'list_files');
  const searches = done.filter((o) => o.call.name === 'search_text');
  const byPattern = (p: RegExp) =>
    searches.find((o) => (o.call.input as { pattern?: string }).pattern === p.source);
  const todo = byPattern(TODO_PATTERN);
  const exported = byPattern(EXPORT_PATTERN);
  const read = last(done, 'read_file');
  const listCall = { name: 'list_files', input: { path: unit, limit: 2000 } };
  const searchCalls = [
    { name: 'search_text', input: { pattern: TODO_PATTERN.source, path: unit, limit: 20 } },
    {
      name: 'search_text',
      input: {
        pattern: EXPORT_PATTERN.source,
        path: unit,
        extensions: SOURCE_EXTENSIONS,
        limit: 500,
      },
    },
  ];
  const largestOf = (result: ListResult) =>
    result.files
      .filter((f): f is { path: string; lines: number } => f.lines !== null)
      .sort((a, b) => b.lines - a.lines || (a.path < b.path ? -1 : 1))
      .slice(0, 3);
  const readCall = (path: string) => ({ name: 'read_file', input: { path, maxLines: 80 } });
  if (options.compacted && (!list || !todo || !exported)) {
    const known = read
      ? (read.call.input as { path: string }).path
      : list
        ? largestOf(list.value as ListResult)[0]?.path
        : undefined;
    return {
      step: {
        toolCalls: [listCall, ...searchCalls, ...(known === undefined ? [] : [readCall(known)])],
      },
    };
  }
  if (!list) return { step: { toolCalls: [listCall] } };
  if (!todo || !exported) return { step: { toolCalls: searchCalls } };
  const largest = largestOf(list.value as ListResult);
  if (!read && largest[0]) return { step: { toolCalls: [readCall(largest[0].path)] } };
  return {
    findings: () =>
      computeFindings({
        unit,
        taskId,
        list: list.value as ListResult,
        todo: todo.value as SearchResult,
        exported: exported.value as SearchResult,
        largest,
        read: read?.value as { path: string; text: string; totalLines: number } | undefined,
      }),
  };
}

/** The findings of one folder from the reviewer's tool results (shared with the fix job). */
export function computeFindings(input: {
  unit: string;
  taskId: string;
  list: ListResult;
  todo: SearchResult;
  exported: SearchResult;
  largest: { path: string; lines: number }[];
  read?: { path: string; text: string; totalLines: number } | undefined;
}): Findings {
  const files = input.list.files;
  const lines = files.reduce((n, f) => n + (f.lines ?? 0), 0);
  const names: string[] = [];
  for (const match of input.exported.matches) {
    const name = EXPORT_PATTERN.exec(match.text)?.[1];
    if (name && !names.includes(name)) names.push(name);
  }
  const notes: string[] = [];
  const tests = files.filter((f) => /\.(test|spec)\.[cm]?[jt]sx?$/.test(f.path)).length;
  const sources = files.filter(
    (f) => SOURCE_EXTENSIONS.some((ext) => f.path.endsWith(ext)) && !/\.(test|spec)\./.test(f.path),
  ).length;
  notes.push(`${tests} test file(s) beside ${sources} source file(s).`);
  const big = files.filter((f) => (f.lines ?? 0) > 500);
  if (big.length > 0) {
    notes.push(
      `${big.length} file(s) over 500 lines: ${big
        .map((f) => f.path)
        .slice(0, 5)
        .join(', ')}.`,
    );
  }
  for (const m of input.todo.matches.slice(0, 3)) {
    notes.push(`marker at ${m.path}:${m.line}: ${m.text.trim().slice(0, 100)}`);
  }
  if (input.read) {
    const imports = input.read.text.split('\n').filter((l) => /^import\s/.test(l)).length;
    notes.push(
      `read the largest file ${input.read.path} (${input.read.totalLines} lines; ${imports} import line(s) in its first part).`,
    );
  }
  return {
    unit: input.unit,
    taskId: input.taskId,
    files: input.list.total,
    lines,
    largest: input.largest,
    todoFixme: input.todo.total,
    exportedSymbols: input.exported.total,
    exportNames: names.slice(0, 20),
    notes,
  };
}
