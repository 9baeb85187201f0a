import type { ChatMessage, WireFormat } from '@teamwire/core';
import { type Findings, parseFindingsMessage, renderReport, SUMMARY_SUBJECT } from './findings.js';
import { last, type Step, type ToolOutcome } from './policy-conversation.js';
import {
  currentTasks,
  describeOpenTask,
  isLiveReviewer,
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

/** What the lead's policy needs besides the conversation. */
export interface LeadPolicyOptions {
  /** The team's wire format: the policy reads its mail with `parseEnvelope`. */
  format: WireFormat;
  /** How many reviewers to spawn (default 3). */
  teammates?: number;
  /** The directory shown in the report. */
  displayDir?: string;
}

export const REVIEW_SUBJECT_PREFIX = 'Review ';
export { SUMMARY_SUBJECT };
export const reviewerName = (i: number) => `reviewer-${i}`;

/** Review units from a file listing: workspace packages under packages/ and apps/, else top-level folders. */
export function unitsFromPaths(paths: readonly string[]): string[] {
  const packages = new Set<string>();
  for (const p of paths) {
    const m = /^((?:packages|apps)\/[^/]+)\/package\.json$/.exec(p);
    if (m?.[1]) packages.add(m[1]);
  }
  const containers = new Set([...packages].map((p) => p.split('/')[0]));
  const units = new Set<string>();
  for (const p of paths) {
    const [top, second, third] = p.split('/');
    // root files and hidden folders (.github, .changeset, ...) belong to no unit
    if (!top || second === undefined || top.startsWith('.')) continue;
    if (containers.has(top)) {
      // packages/ and apps/ split into their subfolders; a loose file there belongs to none
      if (third !== undefined) units.add(`${top}/${second}`);
    } else {
      units.add(top);
    }
  }
  return [...units].filter(Boolean).sort();
}

/** The lead's next step: plan the tasks, spawn reviewers, wait, write the report, shut down. */
export function leadStep(messages: readonly ChatMessage[], options: LeadPolicyOptions): Step {
  const teammates = options.teammates ?? 3;
  const { done, state, read } = leadTurn(messages);
  const failed = done.filter((o) => !o.ok && o.call.name !== 'wait_for_team');
  const fatal = failed.find((o) => ['list_files', 'write_report'].includes(o.call.name));
  if (fatal) return { text: `The review stopped: ${fatal.call.name} failed: ${fatal.text}` };

  if (!state) return read;
  const { files, members, board } = state;
  const units = unitsFromPaths((files.value as ListResult).files.map((f) => f.path));
  const roster = Array.isArray(members.value) ? (members.value as MemberLite[]) : [];
  const tasks = currentTasks(done, (board.value as { tasks: TaskLite[] }).tasks ?? []);
  const summary = [...tasks.values()].find((t) => t.subject === SUMMARY_SUBJECT);
  const bySubject = new Map([...tasks.values()].map((t) => [t.subject, t]));
  const reviewTasks = units
    .map((u) => bySubject.get(`${REVIEW_SUBJECT_PREFIX}${u}`))
    .filter((t) => t !== undefined);
  // every task the team still owes, not only the reviews the lead planned: a task someone else
  // added (the operator's, say) is work the team finishes before it is shut down
  const reviewerNames = new Set(Array.from({ length: teammates }, (_, i) => reviewerName(i + 1)));
  const spawned = new Set(roster.map((m) => m.name));
  for (const o of done) {
    if (o.call.name === 'spawn_teammate') spawned.add((o.call.input as { name: string }).name);
  }
  // replacements the lead spawned when every reviewer was gone are its reviewers too
  for (const name of spawned) if (/^reviewer-\d+$/.test(name)) reviewerNames.add(name);
  const open = [...tasks.values()].filter((t) => t.status !== 'completed' && t !== summary);
  const waitStep = () =>
    waitForOpenTasks({ done, roster, open, reviewerNames, spawned, teammates });
  if (summary?.status === 'completed') {
    // the roster and the board read at the start of the turn predate the spawns and the tasks
    // added since: read them again first
    const completedAt = done.findIndex(
      (o) =>
        o.call.name === 'task_update' &&
        (o.value as TaskLite).id === summary.id &&
        (o.value as TaskLite).status === 'completed',
    );
    if (completedAt > done.indexOf(members) || completedAt > done.indexOf(board)) {
      return {
        toolCalls: [
          { name: 'list_members', input: {} },
          { name: 'task_list', input: { limit: 100 } },
        ],
      };
    }
    // a task added after the report was planned: the team finishes it before it is shut down
    const step = open.length > 0 ? waitStep() : undefined;
    if (step) return step;
    const live = roster.filter(isLiveReviewer);
    const asked = new Set(
      done
        .filter((o) => o.call.name === 'shutdown_teammate')
        .map((o) => (o.call.input as { name: string }).name),
    );
    const toStop = live.filter((m) => !asked.has(m.name));
    if (toStop.length > 0) {
      return {
        text: 'The report is written; shutting the team down.',
        toolCalls: toStop.map((m) => ({
          name: 'shutdown_teammate',
          input: { name: m.name, reason: 'The review is complete.' },
        })),
      };
    }
    if (open.length > 0) {
      return {
        text: `The review stopped short: ${open.length} task(s) are not done: ${open.map(describeOpenTask).join(', ')}. The report marks the folders nobody reviewed.`,
      };
    }
    return { text: 'The review is complete; the report is in team-report.md.' };
  }

  // 1. the reviewers
  const missing = Array.from({ length: teammates }, (_, i) => reviewerName(i + 1)).filter(
    (n) => !spawned.has(n),
  );
  if (missing.length > 0) {
    return {
      text: `Spawning ${missing.length} reviewer(s).`,
      toolCalls: missing.map(spawnReviewer),
    };
  }

  // 2. one task per unit, then the summary task blocked by all of them
  const toCreate = units.filter((u) => !bySubject.has(`${REVIEW_SUBJECT_PREFIX}${u}`));
  if (toCreate.length > 0) {
    return {
      text: `Creating ${toCreate.length} review task(s).`,
      toolCalls: toCreate.map((unit) => ({
        name: 'task_create',
        input: {
          subject: `${REVIEW_SUBJECT_PREFIX}${unit}`,
          description: `Review the folder ${unit} (path: ${unit}): files, lines, largest files, TODO/FIXME markers and exported symbols; send the findings to the lead.`,
          writeScopes: [unit],
        },
      })),
    };
  }
  const summaryStep = summaryTaskStep(summary, {
    subject: SUMMARY_SUBJECT,
    description: 'Collect every reviewer finding and write team-report.md.',
    blockedBy: reviewTasks.map((t) => t.id),
  });
  if (summaryStep || !summary) return summaryStep as Step;

  // 3. wait until every task is completed, or the team stalled (then wrap up with what it has:
  //    the report marks the folders nobody reviewed)
  const step = open.length > 0 ? waitStep() : undefined;
  if (step) return step;

  // 4. write the report, complete the summary
  const summaryRefused = failed.find(
    (o) =>
      o.call.name === 'task_update' && (o.call.input as { taskId: string }).taskId === summary.id,
  );
  if (summaryRefused) {
    return { text: `The review stopped: completing ${summary.id} failed: ${summaryRefused.text}` };
  }
  if (!last(done, 'write_report')) {
    const findings = collectFindings(messages, options.format);
    const reviewers = new Map<string, string>();
    for (const [unit, f] of findings) reviewers.set(unit, f.reviewer);
    const markdown = renderReport({
      dir: options.displayDir ?? '.',
      units,
      findings: new Map([...findings].map(([u, f]) => [u, f.findings])),
      reviewers,
    });
    return {
      text:
        open.length === 0
          ? `All ${units.length} folders are reviewed; writing the report.`
          : `The team stalled with ${open.length} task(s) not done (${open.map(describeOpenTask).join(', ')}); writing the report with the folders it reviewed.`,
      toolCalls: [{ name: 'write_report', input: { markdown } }],
    };
  }
  return {
    toolCalls: [{ name: 'task_update', input: { taskId: summary.id, action: 'complete' } }],
  };
}

/** Every reviewer finding in the lead's conversation, newest per folder. */
function collectFindings(
  messages: readonly ChatMessage[],
  format: WireFormat,
): Map<string, { findings: Findings; reviewer: string }> {
  const out = new Map<string, { findings: Findings; reviewer: string }>();
  for (let i = 0; i < messages.length; i++) {
    const m = messages[i];
    if (m?.source?.kind !== 'team-message') continue;
    const group: ChatMessage[] = [m];
    const next = messages[i + 1];
    if (
      next &&
      next.source?.kind === 'team-message' &&
      next.source.messageId === m.source.messageId
    ) {
      group.push(next);
      i++;
    }
    const envelope = format.parseEnvelope(group);
    if (envelope?.kind !== 'message') continue;
    const findings = parseFindingsMessage(envelope.text);
    if (findings) out.set(findings.unit, { findings, reviewer: envelope.from });
  }
  return out;
}

/** The call that spawns reviewer `name`. */
function spawnReviewer(name: string) {
  return {
    name: 'spawn_teammate',
    input: {
      name,
      description: 'Reviews one folder at a time and reports its findings to the lead.',
      agentType: 'reviewer',
      context: 'fresh',
      prompt:
        'You are a code reviewer on this team. Claim ready review tasks from the task board one at a time; ' +
        'for each, inspect the folder with list_files, search_text and read_file, send your findings to the ' +
        'lead with send_message, then complete the task.',
    },
  };
}

/**
 * The step that waits for the open tasks: a wait, then a look at the board. When a wait finds
 * nobody working, the lead reads the board and the roster again first; if work is still open, it
 * nudges the idle reviewers once, or, when none is left (every one was shut down or failed),
 * spawns one more, at most as many more as it planned. Undefined once
 * the team stalled for `MAX_STALLED_WAITS` waits in a row (nothing the lead does makes it move: it
 * wraps up with what the team finished).
 */
function waitForOpenTasks(options: {
  done: readonly ToolOutcome[];
  roster: readonly MemberLite[];
  open: readonly TaskLite[];
  reviewerNames: ReadonlySet<string>;
  spawned: ReadonlySet<string>;
  teammates: number;
}): Step | undefined {
  const { done, roster, open, reviewerNames } = options;
  const { lastWait, listedSince, readSince, nudgedSince, stalled, stalledWaits } = waitState(
    done,
    (name) => reviewerNames.has(name),
  );
  if (!lastWait) return waitForTeamStep;
  // A wait that found nobody working says nothing of the board the lead read before it: the
  // team may have finished that work in between (the last review completed just before the
  // wait). The board and the roster are read again before the lead nudges anyone or gives up.
  if (stalled && !readSince) return rereadStep;
  if (stalledWaits >= MAX_STALLED_WAITS) return undefined;
  // once when the team stalls, not at every wait that finds it still stalled
  if (stalled && stalledWaits === 1 && !nudgedSince) {
    const idle = roster.filter(isLiveReviewer);
    if (idle.length > 0) {
      return {
        text: `${open.length} task(s) are open and nobody is working; nudging the reviewers.`,
        toolCalls: idle.map((m) => ({
          name: 'send_message',
          input: { to: m.name, message: 'Please claim the next ready task from the board.' },
        })),
      };
    }
    const numbers = [...options.spawned].map((n) => Number(/^reviewer-(\d+)$/.exec(n)?.[1] ?? 0));
    if (numbers.filter((n) => n > 0).length < 2 * options.teammates) {
      const name = reviewerName(Math.max(0, ...numbers) + 1);
      return {
        text: `${open.length} task(s) are open and no reviewer is left; spawning ${name}.`,
        toolCalls: [spawnReviewer(name)],
      };
    }
  }
  return listedSince
    ? waitForTeamStep
    : { toolCalls: [{ name: 'task_list', input: { limit: 100 } }] };
}
