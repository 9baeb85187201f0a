import type {
  AssistantMessage,
  ChatMessage,
  ModelAdapter,
  ModelRequest,
  ModelStreamEvent,
  ProtocolHooks,
  ToolCall,
  Usage,
} from '@teamwire/core';
import {
  contentText,
  INTERRUPTED_TOOL_RESULT,
  TERMINATED_TOOL_RESULT,
  TeamError,
} from '@teamwire/core';
import {
  type Findings,
  formatFindingsMessage,
  parseFindingsMessage,
  renderReport,
} from './findings.js';
import { EXPORT_PATTERN, SOURCE_EXTENSIONS, TODO_PATTERN } from './workspace-files.js';

/**
 * The embedded default model of the example: an offline, deterministic policy. It is NOT an LLM.
 * It reads the conversation (tool results, team mail) and answers with the tool calls a careful
 * reviewer or lead would make, so the whole runtime — mailboxes, priorities, the task board,
 * transcripts, the event hub — runs for real without a network or an API key. Every decision is a
 * pure function of the conversation, so a resumed run picks up exactly where it stopped.
 */
export interface PolicyOptions {
  role: 'lead' | 'reviewer';
  protocol: ProtocolHooks;
  /** Lead only: how many reviewers to spawn. */
  teammates?: number;
  /** Lead only: the directory shown in the report. */
  displayDir?: string;
  /** Milliseconds to pause before each answer, so a person can watch the board. Default 0. */
  paceMs?: number;
}

export const REVIEW_SUBJECT_PREFIX = 'Review ';
export const SUMMARY_SUBJECT = 'Write the team report';
export const reviewerName = (i: number) => `reviewer-${i}`;

type Step = { text?: string; toolCalls?: Omit<ToolCall, 'id'>[] };

interface ToolOutcome {
  call: ToolCall;
  ok: boolean;
  value: unknown;
  text: string;
}

export function createPolicyModel(options: PolicyOptions): ModelAdapter {
  return {
    specificationVersion: 'v1',
    provider: 'teamwire-policy',
    modelId: `offline-${options.role}-policy`,
    stream(request) {
      return streamStep(request, options);
    },
  };
}

async function* streamStep(
  request: ModelRequest,
  options: PolicyOptions,
): AsyncGenerator<ModelStreamEvent> {
  request.signal?.throwIfAborted();
  if (options.paceMs) await pause(options.paceMs, request.signal);
  const step =
    options.role === 'lead' ? leadStep(request.messages, options) : reviewerStep(request.messages);
  const prior = request.messages.reduce(
    (n, m) => n + (m.role === 'assistant' ? m.toolCalls.length : 0),
    0,
  );
  const toolCalls: ToolCall[] = (step.toolCalls ?? []).map((call, i) => ({
    ...call,
    id: `call_${prior + i + 1}`,
  }));
  const text = step.text ?? '';
  if (text) yield { type: 'text-delta', text };
  for (const call of toolCalls) {
    yield { type: 'tool-call-start', id: call.id, name: call.name };
    yield { type: 'tool-call', toolCall: call };
  }
  const usage = estimateUsage(request, text, toolCalls);
  const message: AssistantMessage = {
    role: 'assistant',
    content: text ? [{ type: 'text', text }] : [],
    toolCalls,
    usage,
    stopReason: toolCalls.length > 0 ? 'tool_calls' : 'end_turn',
  };
  yield { type: 'finish', message, usage, stopReason: message.stopReason ?? 'end_turn' };
}

function pause(ms: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clearTimeout(timer);
      reject(new TeamError('ABORTED', 'model call aborted'));
    };
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

/** Rough token counts (4 characters a token), so the summary shows the traffic a real model would see. */
function estimateUsage(request: ModelRequest, text: string, calls: readonly ToolCall[]): Usage {
  let chars = 0;
  for (const block of request.system) chars += block.text.length;
  for (const message of request.messages) chars += JSON.stringify(message).length;
  const out = text.length + JSON.stringify(calls).length;
  return { inputTokens: Math.ceil(chars / 4), outputTokens: Math.ceil(out / 4) };
}

/**
 * Messages of the current turn: everything after the last assistant message that ended a turn,
 * or from the last host prompt or task claim (a turn cut off by a crash never ended).
 */
function currentTurn(messages: readonly ChatMessage[]): ChatMessage[] {
  let start = 0;
  for (let i = messages.length - 1; i >= 0; i--) {
    const m = messages[i];
    if (m?.role === 'assistant' && m.toolCalls.length === 0 && m.source === undefined) {
      start = i + 1;
      break;
    }
    if (m?.role === 'user' && (m.source?.kind === 'host' || m.source?.kind === 'task-claim')) {
      start = i;
      break;
    }
  }
  return messages.slice(start);
}

/** Every tool call of `messages` paired with its result. */
function outcomes(messages: readonly ChatMessage[]): ToolOutcome[] {
  const results = new Map<string, { text: string; isError: boolean }>();
  for (const m of messages) {
    if (m.role === 'tool' && m.source === undefined) {
      results.set(m.toolCallId, { text: contentText(m.content), isError: m.isError === true });
    }
  }
  const out: ToolOutcome[] = [];
  for (const m of messages) {
    if (m.role !== 'assistant' || m.source !== undefined) continue;
    for (const call of m.toolCalls) {
      const result = results.get(call.id);
      if (!result) continue;
      let value: unknown = result.text;
      try {
        value = JSON.parse(result.text);
      } catch {
        // plain text result
      }
      out.push({ call, ok: !result.isError, value, text: result.text });
    }
  }
  return out;
}

const last = (list: readonly ToolOutcome[], name: string) =>
  list.filter((o) => o.call.name === name).at(-1);

/**
 * A call cut off by an interrupt or a process termination: it may or may not have changed the
 * team, so the policy neither trusts it nor counts it as a failure.
 */
const outcomeUnknown = (o: ToolOutcome) =>
  !o.ok && (o.text === TERMINATED_TOOL_RESULT || o.text === INTERRUPTED_TOOL_RESULT);

// ---------------------------------------------------------------- reviewer

interface ListResult {
  files: { path: string; lines: number | null }[];
  total: number;
}
interface SearchResult {
  matches: { path: string; line: number; text: string }[];
  total: number;
}

function reviewerStep(messages: readonly ChatMessage[]): Step {
  const turn = currentTurn(messages);
  const start = turn.find((m) => m.role === 'user');
  const claim = start?.role === 'user' && start.source?.kind === 'task-claim' ? start : undefined;
  if (claim?.source?.kind !== 'task-claim') {
    return { text: 'Ready to review; I will claim a ready task from the board.' };
  }
  const taskId = claim.source.taskId;
  const unit = /\(path: ([^)\s]+)\)/.exec(contentText(claim.content))?.[1];
  if (!unit) {
    return {
      text: `Task ${taskId} names no folder to review; releasing it.`,
      toolCalls: [{ name: 'task_update', input: { taskId, action: 'release' } }],
    };
  }
  // a call whose outcome is unknown is made again: reads are harmless, a second findings message
  // replaces the first in the lead's report, and completing a completed task is refused
  const done = outcomes(turn).filter((o) => !outcomeUnknown(o));
  const failed = done.find((o) => !o.ok);
  if (failed) {
    if (last(done, 'task_update')) return { text: `Stopped on ${taskId}: ${failed.text}` };
    return {
      text: `Could not review ${unit}: ${failed.call.name} failed (${failed.text}). Releasing ${taskId}.`,
      toolCalls: [{ name: 'task_update', input: { taskId, action: 'release' } }],
    };
  }
  const list = last(done, 'list_files');
  if (!list) return { toolCalls: [{ name: 'list_files', input: { path: unit, limit: 2000 } }] };
  const searches = done.filter((o) => o.call.name === 'search_text');
  const todo = searches.find(
    (o) => (o.call.input as { pattern?: string }).pattern === TODO_PATTERN.source,
  );
  const exported = searches.find(
    (o) => (o.call.input as { pattern?: string }).pattern === EXPORT_PATTERN.source,
  );
  if (!todo || !exported) {
    return {
      toolCalls: [
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
      ],
    };
  }
  const files = (list.value as ListResult).files;
  const largest = files
    .filter((f): f is { path: string; lines: number } => f.lines !== null)
    .sort((a, b) => b.lines - a.lines || (a.path < b.path ? -1 : 1))
    .slice(0, 3);
  const read = last(done, 'read_file');
  if (!read && largest[0]) {
    return { toolCalls: [{ name: 'read_file', input: { path: largest[0].path, maxLines: 80 } }] };
  }
  const sent = last(done, 'send_message');
  if (!sent) {
    const findings = computeFindings({
      unit,
      taskId,
      list: list.value as ListResult,
      todo: todo.value as SearchResult,
      exported: exported.value as SearchResult,
      largest,
      read: read?.value as { path: string; text: string; totalLines: number } | undefined,
    });
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
  if (!last(done, 'task_update')) {
    return { toolCalls: [{ name: 'task_update', input: { taskId, action: 'complete' } }] };
  }
  return { text: `Reviewed ${unit} (${taskId}).` };
}

function computeFindings(input: {
  unit: string;
  taskId: string;
  list: ListResult;
  todo: SearchResult;
  exported: SearchResult;
  largest: { path: string; lines: number }[];
  read?: { path: string; text: string; totalLines: number };
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

// ---------------------------------------------------------------- lead

/** A task as the team tools show it (`owner` is a member name). */
interface TaskLite {
  id: string;
  subject: string;
  status: string;
  owner?: string;
}
/** A member as `list_members` shows it. */
interface MemberLite {
  name: string;
  status: string;
}
const isLive = (m: MemberLite) => m.status !== 'failed' && m.status !== 'retired';

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

function leadStep(messages: readonly ChatMessage[], options: PolicyOptions): Step {
  const turn = currentTurn(messages);
  const all = outcomes(turn);
  const teammates = options.teammates ?? 3;
  // After a call whose outcome is unknown (a kill or an interrupt cut it off) the files, the roster
  // and the board read before it may be stale: read them again before deciding anything, so a
  // resumed lead never creates a task or spawns a reviewer twice.
  let cut = -1;
  all.forEach((o, i) => {
    if (outcomeUnknown(o)) cut = i;
  });
  const fresh = all.slice(cut + 1);
  const done = all.filter((o) => !outcomeUnknown(o));
  const failed = done.filter((o) => !o.ok && o.call.name !== 'wait_for_team');
  const fatal = failed.find((o) => ['list_files', 'write_report'].includes(o.call.name));
  if (fatal) return { text: `The review stopped: ${fatal.call.name} failed: ${fatal.text}` };

  const files = last(fresh, 'list_files');
  const members = last(fresh, 'list_members');
  const board = last(fresh, 'task_list');
  if (!files || !members || !board) {
    return {
      toolCalls: [
        { name: 'list_files', input: { path: '.', limit: 2000 } },
        { name: 'list_members', input: {} },
        { name: 'task_list', input: { limit: 100 } },
      ],
    };
  }
  const units = unitsFromPaths((files.value as ListResult).files.map((f) => f.path));
  const roster = Array.isArray(members.value) ? (members.value as MemberLite[]) : [];
  const tasks = currentTasks(done, (board.value as { tasks: TaskLite[] }).tasks ?? []);
  const summary = [...tasks.values()].find((t) => t.subject === SUMMARY_SUBJECT);
  if (summary?.status === 'completed') {
    // the roster read at the start of the turn predates the spawns: read it again first
    const completedAt = done.findIndex(
      (o) =>
        o.call.name === 'task_update' &&
        (o.value as TaskLite).id === summary.id &&
        (o.value as TaskLite).status === 'completed',
    );
    if (completedAt > done.indexOf(members)) {
      return { toolCalls: [{ name: 'list_members', input: {} }] };
    }
    const live = roster.filter((m) => m.name !== 'lead' && isLive(m));
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
    return { text: 'The review is complete; the report is in team-report.md.' };
  }

  // 1. the reviewers
  const spawned = new Set(roster.map((m) => m.name));
  for (const o of done) {
    if (o.call.name === 'spawn_teammate') spawned.add((o.call.input as { name: string }).name);
  }
  const missing = Array.from({ length: teammates }, (_, i) => reviewerName(i + 1)).filter(
    (n) => !spawned.has(n),
  );
  if (missing.length > 0) {
    return {
      text: `Spawning ${missing.length} reviewer(s).`,
      toolCalls: missing.map((name) => ({
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
      })),
    };
  }

  // 2. one task per unit, then the summary task blocked by all of them
  const bySubject = new Map([...tasks.values()].map((t) => [t.subject, t]));
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
  const reviewTasks = units
    .map((u) => bySubject.get(`${REVIEW_SUBJECT_PREFIX}${u}`))
    .filter((t) => t !== undefined);
  if (!summary) {
    return {
      toolCalls: [
        {
          name: 'task_create',
          input: {
            subject: SUMMARY_SUBJECT,
            description: 'Collect every reviewer finding and write team-report.md.',
            blockedBy: reviewTasks.map((t) => t.id),
          },
        },
      ],
    };
  }
  if (summary.status === 'pending' && !summary.owner) {
    return {
      toolCalls: [
        { name: 'task_update', input: { taskId: summary.id, action: 'reassign', owner: 'lead' } },
      ],
    };
  }

  // 3. wait until every review task is completed
  const open = reviewTasks.filter((t) => t.status !== 'completed');
  if (open.length > 0) {
    const lastWait = last(done, 'wait_for_team');
    const afterWait = lastWait ? done.slice(done.indexOf(lastWait) + 1) : [];
    const stalled = (lastWait?.value as { noProgress?: string } | undefined)?.noProgress;
    if (lastWait && !afterWait.some((o) => o.call.name === 'task_list')) {
      if (stalled && !afterWait.some((o) => o.call.name === 'send_message')) {
        const idle = roster.filter((m) => m.name !== 'lead' && isLive(m));
        if (idle.length > 0) {
          return {
            text: `${open.length} review task(s) are open and nobody is working; nudging the reviewers.`,
            toolCalls: idle.map((m) => ({
              name: 'send_message',
              input: {
                to: m.name,
                message: 'Please claim the next ready review task from the board.',
              },
            })),
          };
        }
      }
      return { toolCalls: [{ name: 'task_list', input: { limit: 100 } }] };
    }
    return { toolCalls: [{ name: 'wait_for_team', input: { timeoutMs: 600_000 } }] };
  }

  // 4. write the report, complete the summary
  if (!last(done, 'write_report')) {
    const findings = collectFindings(messages, options.protocol);
    const reviewers = new Map<string, string>();
    for (const [unit, f] of findings) reviewers.set(unit, f.reviewer);
    const markdown = renderReport({
      dir: options.displayDir ?? '.',
      units,
      findings: new Map([...findings].map(([u, f]) => [u, f.findings])),
      reviewers,
    });
    return {
      text: `All ${units.length} folders are reviewed; writing the report.`,
      toolCalls: [{ name: 'write_report', input: { markdown } }],
    };
  }
  return {
    toolCalls: [{ name: 'task_update', input: { taskId: summary.id, action: 'complete' } }],
  };
}

/** The board as of the latest task_list, updated by the task results seen after it. */
function currentTasks(
  done: readonly ToolOutcome[],
  listed: readonly TaskLite[],
): Map<string, TaskLite> {
  const tasks = new Map(listed.map((t) => [t.id, t]));
  const board = done.filter((o) => o.call.name === 'task_list').at(-1);
  const after = board ? done.slice(done.indexOf(board) + 1) : done;
  for (const o of after) {
    if (!o.ok || !['task_create', 'task_update'].includes(o.call.name)) continue;
    const task = o.value as TaskLite;
    if (typeof task?.id === 'string') tasks.set(task.id, task);
  }
  return tasks;
}

/** Every reviewer finding in the lead's conversation, newest per folder. */
function collectFindings(
  messages: readonly ChatMessage[],
  protocol: ProtocolHooks,
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
    const envelope = protocol.parseEnvelope(group);
    if (envelope?.kind !== 'message') continue;
    const findings = parseFindingsMessage(envelope.text);
    if (findings) out.set(findings.unit, { findings, reviewer: envelope.from });
  }
  return out;
}

export function assertPolicyRole(role: string): asserts role is PolicyOptions['role'] {
  if (role !== 'lead' && role !== 'reviewer') {
    throw new TeamError('INVALID_ARGUMENT', `unknown policy role ${role}`);
  }
}
