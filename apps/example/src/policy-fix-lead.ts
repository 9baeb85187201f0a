import type { ChatMessage } from '@teamwire/core';
import { DEFAULT_TEAM_LIMITS } from '@teamwire/core';
import type { MergeOutcome } from './fix-tools.js';
import {
  last,
  outcomes,
  outcomeUnknown,
  type Step,
  type ToolOutcome,
} from './policy-conversation.js';
import { fixAssignment } from './policy-fix-reviewer.js';
import { unitsFromPaths } from './policy-lead.js';
import {
  currentTasks,
  describeOpenTask,
  isLive,
  leadTurn,
  MAX_STALLED_WAITS,
  type MemberLite,
  rereadStep,
  summaryTaskStep,
  type TaskLite,
  waitForTeamStep,
  waitState,
} from './policy-lead-common.js';
import type { ListResult } from './policy-reviewer.js';

export const FIX_SUBJECT_PREFIX = 'Fix ';
export const FIX_SUMMARY_SUBJECT = 'Merge the branches and write the report';
/** Reviewers of a folder that may fail to start (a start a crash cut off does not count) before the lead gives the folder up. */
const MAX_ATTEMPTS = 3;
/** The error core records for a member whose start a crash cut off. */
const INTERRUPTED = 'interrupted while provisioning';
/** Nudges per reviewer when nobody works and its folder is open. */
const MAX_NUDGES = 3;

/** The reviewer of unit `i` (1-based), `attempt` 1 the first. */
export const fixerName = (i: number, attempt = 1) =>
  attempt === 1 ? `fixer-${i}` : `fixer-${i}-${attempt}`;
const FIXER_NAME = /^fixer-\d+(-\d+)?$/;

export interface FixLeadPolicyOptions {
  /** The directory shown in the report. */
  displayDir?: string;
  /**
   * The team's limit of live teammates (its `maxMembers`; default core's): the lead never has
   * more reviewers at once. A folder past it waits until a reviewer whose folder is done has
   * been shut down and has freed its slot.
   */
  memberLimit?: number | undefined;
}

/** The code of a tool call's error (`{"error":{"code"}}`, as core renders a failed call). */
const errorCode = (o: ToolOutcome) =>
  o.ok ? undefined : (o.value as { error?: { code?: string } } | undefined)?.error?.code;

/** A spawn refused because the team was full: no member was made, so the name is still free. */
const refusedForLimit = (o: ToolOutcome) =>
  o.call.name === 'spawn_teammate' && errorCode(o) === 'MEMBER_LIMIT';

/**
 * The fix lead's next step: one task per folder and one reviewer per task (isolated, each in its
 * own worktree), wait, merge every reviewer's branch into the result branch one at a time, write
 * the report, complete the summary task and shut the reviewers down. Reads the files, the roster
 * and the board again at the start of each turn and after any call cut off by a kill.
 */
export function fixLeadStep(messages: readonly ChatMessage[], options: FixLeadPolicyOptions): Step {
  const { done, state, read } = leadTurn(messages);
  const fatal = done.find(
    (o) => !o.ok && ['list_files', 'write_report', 'task_create'].includes(o.call.name),
  );
  if (fatal) return { text: `The fix stopped: ${fatal.call.name} failed: ${fatal.text}` };

  if (!state) return read;
  const { files, members, board } = state;
  const units = unitsFromPaths((files.value as ListResult).files.map((f) => f.path));
  const status = new Map<string, string>();
  const errors = new Map<string, string>();
  for (const m of Array.isArray(members.value) ? (members.value as MemberLite[]) : []) {
    status.set(m.name, m.status);
    if (m.error !== undefined) errors.set(m.name, m.error);
  }
  // A start cut off by a kill says nothing about the folder: only real failures use up attempts.
  const failedAttempts = (i: number, upTo: number) => {
    let failed = 0;
    for (let a = 1; a <= upTo; a++) {
      const name = fixerName(i + 1, a);
      if (status.get(name) === 'failed' && errors.get(name) !== INTERRUPTED) failed++;
    }
    return failed;
  };
  for (const o of done) {
    if (o.call.name !== 'spawn_teammate' || refusedForLimit(o)) continue;
    const name = (o.call.input as { name: string }).name;
    if (!status.has(name) || !o.ok) status.set(name, o.ok ? 'provisioning' : 'failed');
  }
  const tasks = currentTasks(done, (board.value as { tasks: TaskLite[] }).tasks ?? []);
  const bySubject = new Map([...tasks.values()].map((t) => [t.subject, t]));
  const summary = bySubject.get(FIX_SUMMARY_SUBJECT);
  const reviewers = [...status.keys()].filter((n) => n !== 'lead');
  // asked in any turn: a notice that wakes the lead must not bring a second request
  const asked = new Set(
    outcomes(messages)
      .filter((o) => o.call.name === 'shutdown_teammate' && o.ok)
      .map((o) => (o.call.input as { name: string }).name),
  );
  const unitTasks = units.map((u) => bySubject.get(`${FIX_SUBJECT_PREFIX}${u}`));
  const open = units.filter((_, i) => unitTasks[i]?.status !== 'completed');

  if (summary?.status === 'completed') {
    const completedAt = done.findIndex(
      (o) => o.call.name === 'task_update' && (o.value as TaskLite).id === summary.id,
    );
    if (completedAt > done.indexOf(members)) {
      return { toolCalls: [{ name: 'list_members', input: {} }] };
    }
    const toStop = reviewers.filter((n) => isLive(status.get(n) ?? '') && !asked.has(n));
    if (toStop.length > 0) {
      return {
        text: 'The report is written; shutting the reviewers down.',
        toolCalls: toStop.map((name) => ({
          name: 'shutdown_teammate',
          input: { name, reason: 'The fix is merged and reported.' },
        })),
      };
    }
    if (open.length > 0) {
      const missing = open.map((u) =>
        describeOpenTask(bySubject.get(`${FIX_SUBJECT_PREFIX}${u}`) as TaskLite),
      );
      return {
        text: `The fix stopped short: ${open.length} folder(s) are unfinished: ${missing.join(', ')}. The report lists them.`,
      };
    }
    const uncommitted = [...mergeOutcomes(messages).values()].filter(
      (m) => typeof m !== 'string' && m.exists && m.merged && m.commits.length === 0,
    );
    if (uncommitted.length > 0) {
      return {
        text: `The fix stopped short: ${uncommitted.length} folder(s) have no commit (refused). The report lists them.`,
      };
    }
    return { text: 'The fix is complete; the report is written.' };
  }

  // 1. one task per folder, then the summary task blocked by all of them, owned by the lead
  const toCreate = units.filter((u) => !bySubject.has(`${FIX_SUBJECT_PREFIX}${u}`));
  if (toCreate.length > 0) {
    return {
      text: `Creating ${toCreate.length} fix task(s).`,
      toolCalls: toCreate.map((unit) => ({
        name: 'task_create',
        input: {
          subject: `${FIX_SUBJECT_PREFIX}${unit}`,
          description: `Write ${unit}/REVIEW.md with the folder's review findings and commit it (path: ${unit}).`,
          writeScopes: [unit],
        },
      })),
    };
  }
  const summaryStep = summaryTaskStep(summary, {
    subject: FIX_SUMMARY_SUBJECT,
    description: 'Merge every reviewer branch into the result branch and write team-report.md.',
    blockedBy: unitTasks.map((t) => (t as TaskLite).id),
  });
  if (summaryStep || !summary) return summaryStep as Step;

  // 2. one reviewer per folder, as many at once as the team's member limit allows; one that
  //    failed to start is replaced under a new name
  const current = units.map((_, i) => {
    let attempt = 1;
    while (status.has(fixerName(i + 1, attempt + 1))) attempt++;
    return { name: fixerName(i + 1, attempt), attempt };
  });
  const live = reviewers.filter((n) => isLive(status.get(n) ?? '')).length;
  // refused for the limit since the roster was read: it is out of date; read again after a wait
  const full = done.slice(done.indexOf(members) + 1).some(refusedForLimit);
  let free = full ? 0 : (options.memberLimit ?? DEFAULT_TEAM_LIMITS.maxMembers) - live;
  let waiting = 0;
  const spawns: Step['toolCalls'] = [];
  units.forEach((unit, i) => {
    const task = unitTasks[i] as TaskLite;
    let { name, attempt } = current[i] as { name: string; attempt: number };
    if (task.status === 'completed') return;
    if (status.get(name) === 'failed' && failedAttempts(i, attempt) < MAX_ATTEMPTS) {
      name = fixerName(i + 1, ++attempt);
    }
    if (status.has(name)) return;
    if (free <= 0) {
      waiting++;
      return;
    }
    free--;
    (current[i] as { name: string }).name = name;
    spawns.push({
      name: 'spawn_teammate',
      input: {
        name,
        description: `Writes and commits the review notes of ${unit} in its own worktree.`,
        agentType: 'fixer',
        context: 'fresh',
        prompt: fixAssignment(name, unit, task.id),
      },
    });
  });
  if (spawns.length > 0)
    return { text: `Spawning ${spawns.length} reviewer(s).`, toolCalls: spawns };
  // a reviewer whose folder is done gives its slot to a folder that waits for one (its branch
  // stays, to be merged with the others)
  const finished = current.filter(
    (c, i) =>
      unitTasks[i]?.status === 'completed' &&
      isLive(status.get(c.name) ?? '') &&
      !asked.has(c.name),
  );
  const toRetire = finished.slice(0, waiting);
  if (toRetire.length > 0) {
    return {
      text: `${waiting} folder(s) wait for a free place on the team; retiring ${toRetire.length} reviewer(s) whose folder is done.`,
      toolCalls: toRetire.map((c) => ({
        name: 'shutdown_teammate',
        input: { name: c.name, reason: 'Your folder is done; its place goes to the next folder.' },
      })),
    };
  }

  // 3. wait until every folder is done (or nobody can finish the rest); the board and the
  //    roster are read again after each wait (a retired reviewer frees a place)
  let givenUp = false;
  if (open.length > 0) {
    const { lastWait, readSince, nudgedSince, stalled, stalledWaits } = waitState(done, (name) =>
      FIXER_NAME.test(name),
    );
    // After every wait the board and the roster are read again, before anything is decided on
    // them: a wait that found nobody working says nothing of the board read before it (the last
    // folder may have been completed in between), so no reviewer is nudged and nothing given up
    // on a stale board.
    if (lastWait && !readSince) return rereadStep;
    if (!lastWait || !stalled || nudgedSince) {
      return waitForTeamStep;
    }
    if (stalledWaits >= MAX_STALLED_WAITS) givenUp = true;
    else if (stalled && !nudgedSince) {
      const nudged = outcomes(messages).filter((o) => o.call.name === 'send_message');
      const nudges = open
        .map((unit) => current[units.indexOf(unit)]?.name as string)
        .filter((name) => isLive(status.get(name) ?? 'failed'))
        .filter(
          (name) =>
            nudged.filter((o) => (o.call.input as { to: string }).to === name).length < MAX_NUDGES,
        );
      if (nudges.length > 0) {
        return {
          text: `${open.length} folder(s) are open and nobody is working; nudging their reviewers.`,
          toolCalls: nudges.map((to) => ({
            name: 'send_message',
            input: {
              to,
              message:
                'Please finish your folder: claim your task if needed, write, commit and complete it.',
            },
          })),
        };
      }
      // nobody left to nudge: given up at once, unless a folder waits for a place that a
      // retiring reviewer is about to free
      givenUp = waiting === 0;
    }
    if (!givenUp) {
      return waitForTeamStep;
    }
  }

  // 4. merge every reviewer's branch, one at a time (each merge moves the result branch)
  const merges = mergeOutcomes(messages);
  const toMerge = current
    .map((c) => c.name)
    .filter((name) => status.has(name) && status.get(name) !== 'failed');
  const next = toMerge.find((name) => !merges.has(name));
  if (next) {
    return { toolCalls: [{ name: 'merge_branch', input: { member: next } }] };
  }

  // 5. tasks the lead did not plan (an operator's, say) that nobody took: no reviewer of this
  //    job can do them, so the lead notes them in the report and completes them, rather than
  //    leave them to hold the team up
  const planned = new Set([summary.id, ...unitTasks.map((t) => t?.id)]);
  const unplanned = [...tasks.values()].filter(
    (t) =>
      !planned.has(t.id) &&
      ((t.status === 'pending' && !t.owner) || (t.status === 'in_progress' && t.owner === 'lead')),
  );
  const noted = outcomes(messages).filter(
    (o) =>
      o.ok &&
      o.call.name === 'task_update' &&
      !planned.has((o.value as TaskLite).id) &&
      (o.value as TaskLite).status === 'completed',
  );
  const tried = new Set(
    done
      .filter((o) => o.call.name === 'task_update')
      .map((o) => (o.call.input as { taskId: string }).taskId),
  );
  const toNote = unplanned.filter((t) => !tried.has(t.id));
  if (toNote.length > 0) {
    return {
      text: `${toNote.length} task(s) on the board are not folders of this job; noting them in the report.`,
      toolCalls: toNote.map((t) => ({
        name: 'task_update',
        input: { taskId: t.id, action: 'complete' },
      })),
    };
  }

  // 6. the report, then the summary task
  const summaryRefused = done.find(
    (o) =>
      !o.ok &&
      o.call.name === 'task_update' &&
      (o.call.input as { taskId: string }).taskId === summary.id,
  );
  if (summaryRefused) {
    return { text: `The fix stopped: completing ${summary.id} failed: ${summaryRefused.text}` };
  }
  if (!last(done, 'write_report')) {
    const markdown = renderFixReport({
      dir: options.displayDir ?? '.',
      units,
      reviewers: current.map((c) => c.name),
      open: new Set(open),
      merges,
      unplanned: noted.map((o) => o.value as TaskLite),
    });
    return {
      text: `Merged ${merges.size} branch(es); writing the report.`,
      toolCalls: [{ name: 'write_report', input: { markdown } }],
    };
  }
  return {
    toolCalls: [{ name: 'task_update', input: { taskId: summary.id, action: 'complete' } }],
  };
}

/**
 * Every merge of the whole conversation, newest per member: a merge outlives the turn it was made
 * in. A call cut off by a kill is not counted (it is made again: a second merge finds the branch
 * already merged); one that failed outright is reported, not retried.
 */
function mergeOutcomes(messages: readonly ChatMessage[]): Map<string, MergeOutcome | string> {
  const out = new Map<string, MergeOutcome | string>();
  for (const o of outcomes(messages)) {
    if (o.call.name !== 'merge_branch' || outcomeUnknown(o)) continue;
    const member = (o.call.input as { member: string }).member;
    out.set(member, o.ok ? (o.value as MergeOutcome) : o.text);
  }
  return out;
}

/** The report's result for a folder whose branch holds no commit. */
export const NOT_COMMITTED = 'not committed';

/** The team report of the fix job: merged branches, their commits and files, every conflict. */
export function renderFixReport(options: {
  dir: string;
  units: readonly string[];
  reviewers: readonly string[];
  open: ReadonlySet<string>;
  merges: ReadonlyMap<string, MergeOutcome | string>;
  /** Tasks the lead did not plan, completed by it without changes. */
  unplanned?: readonly TaskLite[];
}): string {
  const outcomesList = [...options.merges.values()].filter(
    (m): m is MergeOutcome => typeof m !== 'string',
  );
  const into = outcomesList[0]?.into ?? '(none)';
  const out = [
    '# Team fix report',
    '',
    `Directory: \`${options.dir}\``,
    `Result branch: \`${into}\``,
    '',
    '| folder | reviewer | branch | result | commits | files changed |',
    '|---|---|---|---|---:|---:|',
  ];
  const conflicts: string[] = [];
  const uncommitted: string[] = [];
  const details: string[] = [];
  options.units.forEach((unit, i) => {
    const name = options.reviewers[i] ?? '?';
    const m = options.merges.get(name);
    if (m === undefined || typeof m === 'string') {
      const why = m === undefined ? 'not merged' : `merge failed: ${m.slice(0, 200)}`;
      out.push(
        `| ${unit} | ${name} | - | ${options.open.has(unit) ? 'unfinished, ' : ''}${why} | - | - |`,
      );
      return;
    }
    // a branch without a commit: its reviewer's commit was refused (see `fix --approve`)
    const result = !m.exists
      ? 'no branch'
      : !m.merged
        ? 'conflict'
        : m.commits.length === 0
          ? NOT_COMMITTED
          : 'merged';
    if (result === NOT_COMMITTED) uncommitted.push(`- ${unit} (${name})`);
    out.push(
      `| ${unit} | ${name} | \`${m.branch}\` | ${result} | ${m.commits.length} | ${m.files.length} |`,
    );
    details.push(`## ${unit}`, '', `- reviewer: ${name}`, `- branch: \`${m.branch}\``);
    details.push(`- result: ${result}${m.merged ? ` into \`${m.into}\`` : ''}`);
    for (const c of m.commits) details.push(`- commit \`${c.commit.slice(0, 12)}\` ${c.subject}`);
    details.push(`- files: ${m.files.map((f) => `\`${f}\``).join(', ') || 'none'}`, '');
    for (const c of m.conflicts) conflicts.push(`- \`${m.branch}\`: \`${c.path}\` (${c.type})`);
  });
  out.push('', '## Conflicts', '');
  out.push(...(conflicts.length > 0 ? conflicts : ['None.']));
  if (uncommitted.length > 0) {
    out.push('', '## Not committed', '');
    out.push(
      'Their reviewer completed the folder without a commit (its commit was refused): nothing of them is on the result branch.',
      '',
      ...uncommitted,
    );
  }
  if (options.unplanned && options.unplanned.length > 0) {
    out.push('', '## Tasks outside the plan', '');
    out.push(
      'Not folders of this job: the lead noted them here and completed them without changes.',
    );
    out.push('', ...options.unplanned.map((t) => `- ${t.id} "${t.subject}"`));
  }
  out.push('', ...details);
  return out.join('\n');
}
