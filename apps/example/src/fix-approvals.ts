import { createInterface } from 'node:readline';
import { type ApprovalView, TeamError, type TeamService } from '@teamwire/core';
import type { AppIo } from './app-io.js';
import { COMMIT_TOOL, type CommitInput } from './fix-tools.js';
import type { TeamObserver } from './observe.js';
import type { RunHooks } from './team-run.js';

/*
 * `fix --approve` at the terminal: every commit a reviewer asks for is printed as one line, and
 * the answers are read from stdin, one a line (a person at a terminal, or a program through a
 * pipe). Decisions made anywhere (here, on the dashboard, an expiry) are printed as they happen,
 * from the team's approval records.
 */

/** How to answer, as each request's line says it. */
export const ANSWER_HINT =
  'answer y or n <reason> (the oldest waiting), or <id> y or <id> n <reason>';

/** A folder whose commit was refused and never approved: it is not on the result branch. */
export interface RefusedFolder {
  folder: string;
  /** The reviewer whose commit it was (the last one asking). */
  reviewer: string;
  /** Refusals (rejections and expiries) of its commits. */
  refusals: number;
  /** The last refusal: `rejected: <reason>` or `expired`. */
  last: string;
}

/** The input of a `commit_changes` approval (empty paths when it cannot be read). */
export function commitInput(approval: Pick<ApprovalView, 'input'>): CommitInput {
  try {
    const parsed = JSON.parse(approval.input ?? 'null') as Partial<CommitInput> | null;
    return {
      message: typeof parsed?.message === 'string' ? parsed.message : '',
      paths: Array.isArray(parsed?.paths) ? parsed.paths.map(String) : [],
    };
  } catch {
    return { message: '', paths: [] };
  }
}

const isCommit = (a: ApprovalView) => a.kind === 'tool' && a.toolName === COMMIT_TOOL;
const refusal = (a: ApprovalView) => a.status === 'rejected' || a.status === 'expired';

/**
 * The folders (the first path of a commit) whose commits were refused, rejected or expired, with
 * none approved: a reviewer gives such a folder up after its third refusal.
 */
export function refusedFolders(approvals: readonly ApprovalView[]): RefusedFolder[] {
  const byFolder = new Map<string, ApprovalView[]>();
  for (const a of approvals.filter(isCommit)) {
    const folder = commitInput(a).paths[0];
    if (folder === undefined) continue;
    byFolder.set(folder, [...(byFolder.get(folder) ?? []), a]);
  }
  const out: RefusedFolder[] = [];
  for (const [folder, list] of byFolder) {
    if (list.some((a) => a.status === 'approved')) continue;
    const refused = list.filter(refusal);
    const last = refused.at(-1);
    if (last === undefined) continue;
    out.push({
      folder,
      reviewer: last.requester,
      refusals: refused.length,
      last: `${last.status}${last.reason === undefined ? '' : `: ${last.reason}`}`,
    });
  }
  return out.sort((a, b) => a.folder.localeCompare(b.folder));
}

/** The line of the run's summary (and its missing work) for a refused folder. */
export function refusedLine(r: RefusedFolder): string {
  return `${r.folder}: its commit was refused ${r.refusals} time(s) (${r.reviewer}; last: ${r.last}), so it is not on the result branch`;
}

/** One line for a pending request: who wants to commit what, and how to answer. */
export function requestLine(a: ApprovalView): string {
  const what =
    a.toolName === COMMIT_TOOL
      ? (() => {
          const input = commitInput(a);
          return `wants to commit ${input.paths.join(', ')}: ${JSON.stringify(input.message)}`;
        })()
      : `wants to run ${a.toolName ?? a.kind}: ${a.input ?? ''}`;
  const expires =
    a.expiresAt === undefined
      ? ''
      : ` (expires in ${Math.max(0, (a.expiresAt - Date.now()) / 1000).toFixed(1)} s)`;
  return `approval ${a.id}: ${a.requester} ${what}${expires} — ${ANSWER_HINT}`;
}

/** One line for a decision, as the records say it. */
export function decisionLine(a: ApprovalView): string {
  const by = a.status === 'expired' ? '' : ` by ${a.decider ?? 'the host'}`;
  const reason = a.reason === undefined ? '' : `: ${a.reason}`;
  return `approval ${a.id}: ${a.status}${by}${reason} (${a.requester}'s ${a.toolName ?? a.kind})`;
}

/** A line of stdin, understood: which approval (absent: the oldest pending), and the answer. */
export type Answer =
  | { approvalId?: string; decision: 'approved' | 'rejected'; reason?: string }
  | { error: string };

/** Reads one answer: `y`, `n [reason]`, `<id> y`, `<id> n [reason]` (also `yes` / `no`). */
export function parseAnswer(line: string): Answer | undefined {
  const words = line.trim().split(/\s+/).filter(Boolean);
  if (words.length === 0) return undefined;
  let approvalId: string | undefined;
  if (!/^(y|yes|n|no)$/i.test(words[0] as string)) approvalId = words.shift();
  const verb = words.shift()?.toLowerCase();
  const reason = words.join(' ');
  const id = approvalId === undefined ? {} : { approvalId };
  if (verb === 'y' || verb === 'yes') {
    return { ...id, decision: 'approved', ...(reason ? { reason } : {}) };
  }
  if (verb === 'n' || verb === 'no') {
    return { ...id, decision: 'rejected', ...(reason ? { reason } : {}) };
  }
  return { error: `not an answer: ${JSON.stringify(line.trim())} (${ANSWER_HINT})` };
}

/**
 * The approvals of a `fix --approve` run at the terminal: prints the pending requests when the
 * team opens (a resumed team's are still there) and each new one, prints every decision, and
 * decides what stdin answers. `refused()`: the folders refused for good, once the team rested.
 */
export function terminalApprovals(io: AppIo): RunHooks & { refused(): RefusedFolder[] } {
  let team: TeamService | undefined;
  let observer: TeamObserver | undefined;
  let refused: RefusedFolder[] = [];
  let stopListening: (() => void) | undefined;
  let lines: ReturnType<typeof createInterface> | undefined;
  let closed = false;
  /** The status each approval had when last printed. */
  const seen = new Map<string, string>();
  let syncQueued = false;

  const print = (line: string) => observer?.print(line);
  const sync = (initial: boolean) => {
    syncQueued = false;
    if (team === undefined || closed) return;
    let all: ApprovalView[];
    try {
      all = team.approvals();
    } catch {
      return; // the team is closing
    }
    for (const a of all) {
      const before = seen.get(a.id);
      if (before === a.status) continue;
      seen.set(a.id, a.status);
      if (a.status === 'pending') print(requestLine(a));
      else if (!initial || before !== undefined) print(decisionLine(a));
    }
  };

  const answer = async (line: string) => {
    const parsed = parseAnswer(line);
    if (parsed === undefined || team === undefined || closed) return;
    if ('error' in parsed) {
      print(parsed.error);
      return;
    }
    const pending = team.approvals({ status: 'pending' });
    const approvalId = parsed.approvalId ?? pending[0]?.id;
    if (approvalId === undefined) {
      print('no approval is waiting');
      return;
    }
    try {
      await team.decide({
        approvalId,
        decision: parsed.decision,
        ...(parsed.reason === undefined ? {} : { reason: parsed.reason }),
      });
    } catch (error) {
      const why = TeamError.isInstance(error) ? `${error.code}: ${error.message}` : String(error);
      print(`approval ${approvalId}: not decided (${why})`);
    }
  };

  return {
    started(run) {
      team = run.team;
      observer = run.observer;
      sync(true);
      stopListening = run.hub.listen((item) => {
        if (item.type !== 'event' || item.event.type !== 'record') return;
        if (!item.event.record.type.startsWith('approval.') || syncQueued) return;
        syncQueued = true;
        // after the publish: the team's state holds the record by then
        queueMicrotask(() => sync(false));
      });
      if (io.stdin !== undefined) {
        lines = createInterface({ input: io.stdin, crlfDelay: Number.POSITIVE_INFINITY });
        lines.on('line', (line) => void answer(line));
        lines.on('close', () => {
          if (!closed) print('approvals: stdin is closed; no more answers come from here');
        });
      }
    },
    async settle(settled) {
      refused = refusedFolders(settled.approvals());
    },
    async stopped() {
      closed = true;
      stopListening?.();
      lines?.close();
      io.stdin?.pause();
    },
    refused: () => refused,
  };
}
