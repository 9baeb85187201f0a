import { isDeepStrictEqual } from 'node:util';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { textContent } from '../content.js';
import { TeamError } from '../errors.js';
import type { MessageKind, TeamRecord } from '../records.js';
import { parseTeamRecord } from '../records.js';
import { createManualClock } from '../testing/manual-clock.js';
import { foldTeam } from './fold.js';
import type { TaskAction } from './task-board.js';
import { TeamState } from './team-state.js';

/*
 * Model-based property test: random sequences of operations (mostly task-board actions, by random
 * actors, many of which must be refused) run against TeamState and against a deliberately naive
 * reference model written from the rules in the README. After every step the outcome (accepted,
 * or the refusal code) must agree, the board must agree, and folding every record emitted so far
 * (after a JSON round trip) must give exactly the incremental state.
 */

const TEAM = 'team-prop';
const LEAD = TEAM;
const ACTORS = [LEAD, 'alice', 'bob', 'carol', 'ghost'] as const;
const TEAMMATES = ['alice', 'bob', 'carol', 'ghost'] as const;
const LIMITS = { maxTasks: 6, maxPendingPerMember: 2, maxMessageBytes: 200, maxMembers: 8 };

/** Raw write scope -> its normalized form, or null when it must be refused. */
const SCOPES: readonly (readonly [string, string | null])[] = [
  ['src', 'src'],
  ['./src/', 'src'],
  ['src\\lib', 'src/lib'],
  ['src/lib/', 'src/lib'],
  ['docs', 'docs'],
  ['../up', null],
  ['/abs', null],
  ['C:/x', null],
  ['a//b', null],
  ['.', null],
];

type Text = 'ok' | 'empty' | 'long';
const textOf = (kind: Text, long: number): string =>
  kind === 'ok' ? 'fine' : kind === 'empty' ? '' : 'x'.repeat(long + 1);

type ActionSpec =
  | { type: 'claim' | 'release' | 'complete' | 'reopen' | 'delete' }
  | { type: 'edit'; subject?: Text; description?: Text; scopes?: number[] }
  | { type: 'set_dependencies'; blockedBy: number[] }
  | { type: 'reassign'; target: number };

type Op =
  | {
      op: 'create';
      actor: number;
      subject: Text;
      description: Text;
      blockedBy: number[];
      scopes: number[];
    }
  | {
      op: 'update';
      actor: number;
      task: number;
      revision: 'none' | 'current' | 'stale';
      action: ActionSpec;
    }
  | { op: 'phase'; member: number; phase: 'active' | 'failed' | 'retired' }
  | { op: 'release-all'; member: number }
  | {
      op: 'send';
      sender: number;
      target: number;
      kind: MessageKind;
      big: boolean;
      reuseId: boolean;
    }
  | { op: 'deliver'; pick: number };

/** Mostly live members (lead, alice, bob), sometimes the provisioning carol or an outsider. */
const actor = fc.oneof(
  { weight: 4, arbitrary: fc.constant(0) },
  { weight: 6, arbitrary: fc.integer({ min: 1, max: 2 }) },
  { weight: 1, arbitrary: fc.constant(3) },
  { weight: 1, arbitrary: fc.constant(4) },
);
/** A task reference, resolved at each step against the tasks created so far ({@link refResolver}). */
const taskRef = fc.nat({ max: 99 });
const text = fc.oneof(
  { weight: 8, arbitrary: fc.constant<Text>('ok') },
  { weight: 1, arbitrary: fc.constantFrom<Text>('empty', 'long') },
);
const scopeIndex = fc.oneof(
  { weight: 6, arbitrary: fc.integer({ min: 0, max: 4 }) },
  { weight: 1, arbitrary: fc.integer({ min: 5, max: SCOPES.length - 1 }) },
);
const scopes = fc.array(scopeIndex, { maxLength: 2 });

const actionSpec: fc.Arbitrary<ActionSpec> = fc.oneof(
  { weight: 4, arbitrary: fc.constant({ type: 'claim' as const }) },
  { weight: 3, arbitrary: fc.constant({ type: 'release' as const }) },
  { weight: 4, arbitrary: fc.constant({ type: 'complete' as const }) },
  { weight: 3, arbitrary: fc.constant({ type: 'reopen' as const }) },
  { weight: 2, arbitrary: fc.constant({ type: 'delete' as const }) },
  {
    weight: 2,
    arbitrary: fc.record(
      {
        type: fc.constant('edit' as const),
        subject: text,
        description: text,
        scopes,
      },
      { requiredKeys: ['type'] },
    ),
  },
  {
    weight: 4,
    arbitrary: fc.record({
      type: fc.constant('set_dependencies' as const),
      blockedBy: fc.array(taskRef, { maxLength: 3 }),
    }),
  },
  {
    weight: 2,
    arbitrary: fc.record({
      type: fc.constant('reassign' as const),
      target: actor,
    }),
  },
);

const opArb: fc.Arbitrary<Op> = fc.oneof(
  {
    weight: 5,
    arbitrary: fc.record({
      op: fc.constant('create' as const),
      actor,
      subject: text,
      description: text,
      blockedBy: fc.oneof(
        { weight: 3, arbitrary: fc.constant<number[]>([]) },
        { weight: 2, arbitrary: fc.array(taskRef, { minLength: 1, maxLength: 2 }) },
      ),
      scopes,
    }),
  },
  {
    weight: 12,
    arbitrary: fc.record({
      op: fc.constant('update' as const),
      actor,
      task: taskRef,
      revision: fc.constantFrom<'none' | 'current' | 'stale'>(
        'none',
        'none',
        'none',
        'current',
        'current',
        'stale',
      ),
      action: actionSpec,
    }),
  },
  {
    weight: 1,
    arbitrary: fc.record({
      op: fc.constant('phase' as const),
      member: fc.integer({ min: 0, max: TEAMMATES.length - 1 }),
      phase: fc.constantFrom('active' as const, 'failed' as const, 'retired' as const),
    }),
  },
  {
    weight: 1,
    arbitrary: fc.record({ op: fc.constant('release-all' as const), member: actor }),
  },
  {
    weight: 3,
    arbitrary: fc.record({
      op: fc.constant('send' as const),
      sender: actor,
      target: actor,
      kind: fc.constantFrom<MessageKind>(
        'message',
        'task_assignment',
        'idle_notification',
        'shutdown_request',
      ),
      big: fc.oneof(
        { weight: 5, arbitrary: fc.constant(false) },
        { weight: 1, arbitrary: fc.constant(true) },
      ),
      reuseId: fc.boolean(),
    }),
  },
  {
    weight: 2,
    arbitrary: fc.record({
      op: fc.constant('deliver' as const),
      pick: fc.integer({ min: -1, max: 4 }),
    }),
  },
);

// ------------------------------------------------------------------ reference model

type Ref = (n: number) => string;

/**
 * Resolves raw task references against the `count` tasks created so far: about nine in ten name
 * an existing task (when there is one), the rest the next id or the one after, which do not exist.
 */
function refResolver(count: number): Ref {
  return (n) => (n < 90 && count > 0 ? `task-${(n % count) + 1}` : `task-${count + 1 + (n % 2)}`);
}

interface MTask {
  id: string;
  revision: number;
  subject: string;
  description: string;
  status: 'pending' | 'in_progress' | 'completed' | 'deleted';
  creatorId: string;
  ownerId: string | undefined;
  blockedBy: string[];
  writeScopes: string[];
}

interface MMessage {
  id: string;
  targetId: string;
  kind: MessageKind;
}

function seedTask(id: string, creatorId: string): MTask {
  return {
    id,
    revision: 1,
    subject: 'fine',
    description: 'fine',
    status: 'pending',
    creatorId,
    ownerId: undefined,
    blockedBy: [],
    writeScopes: [],
  };
}

class Model {
  phases = new Map<string, string>([
    [LEAD, 'active'],
    ['alice', 'active'],
    ['bob', 'active'],
    ['carol', 'provisioning'],
  ]);
  /** The board {@link setup} starts from. */
  tasks: MTask[] = [
    { ...seedTask('task-1', LEAD), blockedBy: [] },
    { ...seedTask('task-2', 'alice'), blockedBy: ['task-1'] },
    { ...seedTask('task-3', 'bob'), blockedBy: [] },
  ];
  pending: MMessage[] = [];
  queued = new Set<string>();

  live(id: string): boolean {
    const phase = this.phases.get(id);
    return phase === 'provisioning' || phase === 'active';
  }

  find(id: string): MTask | undefined {
    return this.tasks.find((t) => t.id === id);
  }

  normalize(raw: number[]): string[] | null {
    const out: string[] = [];
    for (const i of raw) {
      const normalized = SCOPES[i]![1];
      if (normalized === null) return null;
      if (!out.includes(normalized)) out.push(normalized);
    }
    return out;
  }

  badDependency(taskId: string, ids: string[]): boolean {
    return ids.some(
      (id, i) =>
        id === taskId ||
        ids.indexOf(id) !== i ||
        this.find(id) === undefined ||
        this.find(id)!.status === 'deleted',
    );
  }

  /** Naive reachability: can `to` be reached from `from` along blockedBy edges? */
  reaches(from: string, to: string, seen = new Set<string>()): boolean {
    if (from === to) return true;
    if (seen.has(from)) return false;
    seen.add(from);
    return (this.find(from)?.blockedBy ?? []).some((next) => this.reaches(next, to, seen));
  }

  create(actorId: string, op: Extract<Op, { op: 'create' }>, ref: Ref): string | undefined {
    if (!this.live(actorId)) return 'NOT_A_MEMBER';
    if (op.subject !== 'ok' || op.description !== 'ok') return 'INVALID_ARGUMENT';
    const writeScopes = this.normalize(op.scopes);
    if (writeScopes === null) return 'INVALID_WRITE_SCOPE';
    if (this.tasks.filter((t) => t.status !== 'deleted').length >= LIMITS.maxTasks) {
      return 'TASK_LIMIT';
    }
    const id = `task-${this.tasks.length + 1}`;
    const blockedBy = op.blockedBy.map(ref);
    if (this.badDependency(id, blockedBy)) return 'INVALID_DEPENDENCY';
    this.tasks.push({
      id,
      revision: 1,
      subject: 'fine',
      description: 'fine',
      status: 'pending',
      creatorId: actorId,
      ownerId: undefined,
      blockedBy,
      writeScopes,
    });
    return undefined;
  }

  update(
    actorId: string,
    taskId: string,
    expected: number | undefined,
    action: ActionSpec,
    ref: Ref,
  ): string | undefined {
    if (!this.live(actorId)) return 'NOT_A_MEMBER';
    const task = this.find(taskId);
    if (task === undefined) return 'TASK_NOT_FOUND';
    if (task.status === 'deleted') return 'TASK_DELETED';
    if (expected !== undefined && expected !== task.revision) return 'REVISION_MISMATCH';
    const isLead = actorId === LEAD;
    const canEdit =
      actorId === task.ownerId ||
      isLead ||
      (task.ownerId === undefined && actorId === task.creatorId);
    const canChangeStatus = actorId === task.ownerId || isLead;
    const next = { ...task, blockedBy: [...task.blockedBy], writeScopes: [...task.writeScopes] };
    switch (action.type) {
      case 'claim':
        if (task.status === 'in_progress' && task.ownerId !== actorId) return 'TASK_OWNED';
        if (task.status !== 'pending') return 'INVALID_TASK_STATUS';
        if (task.blockedBy.some((b) => this.find(b)?.status !== 'completed')) return 'TASK_BLOCKED';
        next.status = 'in_progress';
        next.ownerId = actorId;
        break;
      case 'release':
        if (!canChangeStatus) return 'NOT_ALLOWED_TO_CHANGE_STATUS';
        if (task.status !== 'in_progress') return 'INVALID_TASK_STATUS';
        next.status = 'pending';
        next.ownerId = undefined;
        break;
      case 'complete':
        if (!canChangeStatus) return 'NOT_ALLOWED_TO_CHANGE_STATUS';
        if (task.status !== 'pending' && task.status !== 'in_progress')
          return 'INVALID_TASK_STATUS';
        next.status = 'completed';
        break;
      case 'reopen':
        if (!canChangeStatus) return 'NOT_ALLOWED_TO_CHANGE_STATUS';
        if (task.status !== 'completed') return 'INVALID_TASK_STATUS';
        if (task.ownerId !== undefined && this.live(task.ownerId)) {
          next.status = 'in_progress';
        } else {
          next.status = 'pending';
          next.ownerId = undefined;
        }
        break;
      case 'edit': {
        if (!canEdit) return 'NOT_ALLOWED_TO_EDIT';
        if (
          action.subject === undefined &&
          action.description === undefined &&
          action.scopes === undefined
        ) {
          return 'INVALID_ARGUMENT';
        }
        if (action.subject !== undefined && action.subject !== 'ok') return 'INVALID_ARGUMENT';
        if (action.description !== undefined && action.description !== 'ok')
          return 'INVALID_ARGUMENT';
        if (action.scopes !== undefined) {
          const normalized = this.normalize(action.scopes);
          if (normalized === null) return 'INVALID_WRITE_SCOPE';
          next.writeScopes = normalized;
        }
        if (action.subject !== undefined) next.subject = 'fine';
        if (action.description !== undefined) next.description = 'fine';
        break;
      }
      case 'set_dependencies': {
        if (!canEdit) return 'NOT_ALLOWED_TO_EDIT';
        const blockedBy = action.blockedBy.map(ref);
        if (this.badDependency(task.id, blockedBy)) return 'INVALID_DEPENDENCY';
        if (blockedBy.some((b) => this.reaches(b, task.id))) return 'DEPENDENCY_CYCLE';
        next.blockedBy = blockedBy;
        break;
      }
      case 'reassign': {
        if (!isLead) return 'NOT_ALLOWED_TO_REASSIGN';
        if (task.status !== 'pending' && task.status !== 'in_progress')
          return 'INVALID_TASK_STATUS';
        const target = ACTORS[action.target]!;
        if (!this.phases.has(target)) return 'UNKNOWN_MEMBER';
        if (!this.live(target)) return 'INVALID_PHASE';
        next.status = 'in_progress';
        next.ownerId = target;
        break;
      }
      case 'delete':
        if (!canEdit) return 'NOT_ALLOWED_TO_EDIT';
        if (this.tasks.some((t) => t.status !== 'deleted' && t.blockedBy.includes(task.id))) {
          return 'TASK_HAS_DEPENDENTS';
        }
        next.status = 'deleted';
        break;
    }
    next.revision = task.revision + 1;
    this.tasks[this.tasks.indexOf(task)] = next;
    return undefined;
  }

  setPhase(memberId: string, phase: string): string | undefined {
    const current = this.phases.get(memberId);
    if (current === undefined) return 'UNKNOWN_MEMBER';
    const allowed =
      (current === 'provisioning' && (phase === 'active' || phase === 'failed')) ||
      (current === 'active' && phase === 'retired');
    if (!allowed) return 'INVALID_PHASE';
    this.phases.set(memberId, phase);
    return undefined;
  }

  releaseAll(memberId: string): number {
    let count = 0;
    this.tasks = this.tasks.map((t) => {
      if (t.status !== 'in_progress' || t.ownerId !== memberId) return t;
      count++;
      return { ...t, status: 'pending', ownerId: undefined, revision: t.revision + 1 };
    });
    return count;
  }

  send(
    id: string,
    senderId: string,
    targetId: string,
    kind: MessageKind,
    big: boolean,
  ): string | undefined {
    if (!this.live(senderId)) return 'NOT_A_MEMBER';
    if (!this.phases.has(targetId)) return 'UNKNOWN_TARGET';
    if (senderId === targetId) return 'SELF_MESSAGE';
    if (!this.live(targetId)) return 'INVALID_PHASE';
    if (big) return 'MESSAGE_TOO_LARGE';
    const bounded = (k: MessageKind) => k === 'message' || k === 'task_assignment';
    if (
      bounded(kind) &&
      this.pending.filter((m) => m.targetId === targetId && bounded(m.kind)).length >=
        LIMITS.maxPendingPerMember
    ) {
      return 'MAILBOX_FULL';
    }
    if (this.queued.has(id)) return 'MESSAGE_STATE';
    this.queued.add(id);
    this.pending.push({ id, targetId, kind });
    return undefined;
  }

  deliver(id: string): string | undefined {
    const index = this.pending.findIndex((m) => m.id === id);
    if (index < 0) return 'MESSAGE_STATE';
    this.pending.splice(index, 1);
    return undefined;
  }

  isReady(task: MTask): boolean {
    return (
      task.status === 'pending' &&
      task.ownerId === undefined &&
      task.blockedBy.every((b) => this.find(b)?.status === 'completed')
    );
  }
}

// ------------------------------------------------------------------ the system under test

function toAction(spec: ActionSpec, ref: Ref): TaskAction {
  switch (spec.type) {
    case 'edit':
      return {
        type: 'edit',
        ...(spec.subject === undefined ? {} : { subject: textOf(spec.subject, 200) }),
        ...(spec.description === undefined ? {} : { description: textOf(spec.description, 16384) }),
        ...(spec.scopes === undefined
          ? {}
          : { writeScopes: spec.scopes.map((i) => SCOPES[i]![0]) }),
      };
    case 'set_dependencies':
      return { type: 'set_dependencies', blockedBy: spec.blockedBy.map(ref) };
    case 'reassign':
      return { type: 'reassign', ownerId: ACTORS[spec.target]! };
    default:
      return { type: spec.type };
  }
}

/** Runs `command`; returns the emitted records, or the refusal code. */
function attempt(command: () => TeamRecord | TeamRecord[]): TeamRecord[] | string {
  try {
    const out = command();
    return Array.isArray(out) ? out : [out];
  } catch (error) {
    if (TeamError.isInstance(error)) return error.code;
    throw error;
  }
}

function setup() {
  const clock = createManualClock();
  const state = new TeamState({ teamId: TEAM, clock, limits: LIMITS });
  const log: TeamRecord[] = [];
  log.push(...state.createLead({ id: LEAD, agentType: 'lead', provider: 'scripted' }));
  for (const name of ['alice', 'bob', 'carol']) {
    log.push(
      state.spawnMember(LEAD, {
        id: name,
        name,
        description: name,
        agentType: 'worker',
        provider: 'scripted',
        context: 'fresh',
      }),
    );
    if (name !== 'carol') log.push(state.setMemberPhase(name, 'active'));
  }
  const seed = { subject: 'fine', description: 'fine' };
  log.push(state.createTask(LEAD, seed));
  log.push(state.createTask('alice', { ...seed, blockedBy: ['task-1'] }));
  log.push(state.createTask('bob', seed));
  return { clock, state, log };
}

function runStep(state: TeamState, model: Model, op: Op, ids: { n: number; last?: string }) {
  const ref = refResolver(model.tasks.length);
  switch (op.op) {
    case 'create': {
      const actorId = ACTORS[op.actor]!;
      const got = attempt(() =>
        state.createTask(actorId, {
          subject: textOf(op.subject, 200),
          description: textOf(op.description, 16384),
          blockedBy: op.blockedBy.map(ref),
          writeScopes: op.scopes.map((i) => SCOPES[i]![0]),
        }),
      );
      return { got, want: model.create(actorId, op, ref) };
    }
    case 'update': {
      const actorId = ACTORS[op.actor]!;
      const taskId = ref(op.task);
      const current = model.find(taskId)?.revision ?? 1;
      const expectedRevision =
        op.revision === 'none' ? undefined : op.revision === 'current' ? current : current + 1;
      const got = attempt(() =>
        state.updateTask(actorId, { taskId, expectedRevision, action: toAction(op.action, ref) }),
      );
      return { got, want: model.update(actorId, taskId, expectedRevision, op.action, ref) };
    }
    case 'phase': {
      const memberId = TEAMMATES[op.member]!;
      const got = attempt(() => state.setMemberPhase(memberId, op.phase));
      return { got, want: model.setPhase(memberId, op.phase) };
    }
    case 'release-all': {
      const memberId = ACTORS[op.member]!;
      const got = attempt(() => state.releaseTasksOf(memberId));
      const count = model.releaseAll(memberId);
      expect(Array.isArray(got) ? got.length : got).toBe(count);
      return { got, want: undefined };
    }
    case 'send': {
      const id = op.reuseId && ids.last !== undefined ? ids.last : `msg-${++ids.n}`;
      const senderId = ACTORS[op.sender]!;
      const targetId = ACTORS[op.target]!;
      const got = attempt(() =>
        state.queueMessage({
          id,
          senderId,
          targetId,
          kind: op.kind,
          delivery: 'wakeup',
          content: textContent(op.big ? 'x'.repeat(LIMITS.maxMessageBytes) : `note ${id}`),
        }),
      );
      const want = model.send(id, senderId, targetId, op.kind, op.big);
      if (want === undefined) ids.last = id;
      return { got, want };
    }
    case 'deliver': {
      const id = op.pick < 0 ? 'msg-none' : (model.pending[op.pick]?.id ?? ids.last ?? 'msg-none');
      const got = attempt(() => state.markDelivered({ messageId: id }));
      return { got, want: model.deliver(id) };
    }
  }
}

/**
 * Deep equality through node's fast comparison; only a mismatch goes through `expect`, for its
 * readable diff. Keeps hundreds of checks per run cheap enough for a few-second property test.
 */
function same(actual: unknown, expected: unknown, step: () => string): void {
  if (!isDeepStrictEqual(actual, expected)) expect(actual, step()).toStrictEqual(expected);
}

describe('TeamState against a reference model', () => {
  // a generous timeout: the run takes about a second, more on a loaded machine
  it('agrees on every outcome, and the fold of the emitted records equals the incremental state', {
    timeout: 30_000,
  }, () => {
    fc.assert(
      fc.property(fc.array(opArb, { minLength: 10, maxLength: 50, size: 'max' }), (ops) => {
        const { clock, state, log } = setup();
        // what a durable store hands back: a JSON round trip, validated on read
        const stored = log.map((record) => parseTeamRecord(JSON.parse(JSON.stringify(record))));
        const model = new Model();
        const ids = { n: 0 } as { n: number; last?: string };
        for (const [index, op] of ops.entries()) {
          const step = () => `step ${index}: ${JSON.stringify(op)}`;
          clock.advance(1);
          const seqBefore = state.lastSeq;
          const { got, want } = runStep(state, model, op, ids);
          // (a) accepted, or refused with the same code, as the reference says
          same(typeof got === 'string' ? got : 'accepted', want ?? 'accepted', step);
          if (typeof got === 'string') {
            same(state.lastSeq, seqBefore, step);
          } else {
            same(
              got.map((r) => r.seq),
              got.map((_, i) => seqBefore + 1 + i),
              step,
            );
            log.push(...got);
            for (const record of got) {
              stored.push(parseTeamRecord(JSON.parse(JSON.stringify(record))));
            }
          }
          // the roster, the board and the mail match the reference
          same(
            state.members().map((m) => [m.id, m.phase]),
            [...model.phases],
            step,
          );
          same(
            state.allTasks().map((t) => ({ ...t, ownerId: t.ownerId })),
            model.tasks,
            step,
          );
          same(
            state.listTasks({ ready: true }).map((t) => t.id),
            model.tasks.filter((t) => model.isReady(t)).map((t) => t.id),
            step,
          );
          same(
            state.pendingMail().map((m) => m.id),
            model.pending.map((m) => m.id),
            step,
          );
          for (const target of ACTORS) {
            same(
              state.pending(target).map((m) => m.id),
              model.pending.filter((m) => m.targetId === target).map((m) => m.id),
              step,
            );
          }
          // (b) the fold of every record emitted so far equals the incremental state
          same(
            foldTeam(stored, { teamId: TEAM }),
            {
              roster: state.members(),
              tasks: state.allTasks(),
              pendingMail: state.pendingMail(),
              deadLetters: state.deadLetters(),
              lastSeq: state.lastSeq,
            },
            step,
          );
        }
      }),
      { numRuns: 150 },
    );
  });
});

/** What a state shows its readers: compared whole after a revert. */
function observable(state: TeamState) {
  return {
    lastSeq: state.lastSeq,
    members: state.members(),
    live: state.liveTeammateCount(),
    tasks: state.allTasks(),
    ready: state.listTasks({ ready: true }).map((t) => t.id),
    count: state.taskCount(),
    pendingMail: state.pendingMail(),
    inboxes: ACTORS.map((target) => [target, state.pending(target), state.pendingCount(target)]),
    dependents: state.allTasks().map((t) => state.getTask(t.id)),
  };
}

describe('TeamState.revertTo', () => {
  it('reverting to any seq after the settled one gives exactly the state of that prefix, and the reverted records apply again', {
    timeout: 30_000,
  }, () => {
    fc.assert(
      fc.property(
        fc.array(opArb, { minLength: 5, maxLength: 40, size: 'max' }),
        fc.double({ min: 0, max: 1, noNaN: true }),
        (ops, at) => {
          const { clock, state, log } = setup();
          state.startJournal();
          const settled = state.lastSeq;
          const model = new Model();
          const ids = { n: 0 } as { n: number; last?: string };
          for (const op of ops) {
            clock.advance(1);
            const { got } = runStep(state, model, op, ids);
            if (typeof got !== 'string') log.push(...got);
          }
          const full = observable(state);
          const mark = settled + Math.floor(at * (state.lastSeq - settled + 1));
          const target = Math.min(mark, state.lastSeq);
          state.revertTo(target);
          const prefix = TeamState.fromRecords(log.slice(0, target), {
            teamId: TEAM,
            clock,
            limits: LIMITS,
          });
          same(observable(state), observable(prefix), () => `revert to ${target} of ${log.length}`);
          // the next task id and a delivery order are decided the same way as on the prefix
          same(
            attempt(() => state.createTask(LEAD, { subject: 'again', description: 'again' })),
            attempt(() => prefix.createTask(LEAD, { subject: 'again', description: 'again' })),
            () => 'a command after the revert',
          );
          state.revertTo(target);
          for (const record of log.slice(target)) state.apply(record);
          same(observable(state), full, () => 'the reverted records applied again');
        },
      ),
      { numRuns: 150 },
    );
  });

  it('settledMember shows a member as the durable records have it, not a change still pending', () => {
    const { state } = setup();
    state.startJournal();
    const retired = state.setMemberPhase('alice', 'retired');
    expect(state.member('alice')?.phase).toBe('retired');
    expect(state.settledMember('alice')?.phase).toBe('active');
    const spawned = state.spawnMember(LEAD, {
      id: 'dave',
      name: 'dave',
      description: 'dave',
      agentType: 'worker',
      provider: 'scripted',
      context: 'fresh',
    });
    expect(state.settledMember('dave')).toBeUndefined();
    state.settle(retired.seq);
    expect(state.settledMember('alice')?.phase).toBe('retired');
    expect(state.settledMember('dave')).toBeUndefined();
    state.settle(spawned.seq);
    expect(state.settledMember('dave')?.phase).toBe('provisioning');
  });

  it('refuses to revert settled records', () => {
    const { state } = setup();
    state.startJournal();
    const record = state.createTask(LEAD, { subject: 'a', description: 'b' });
    state.settle(record.seq);
    expect(() => state.revertTo(record.seq - 1)).toThrow(
      expect.objectContaining({ code: 'INVALID_ARGUMENT' }),
    );
    expect(state.task(record.task.id)?.subject).toBe('a');
  });
});
