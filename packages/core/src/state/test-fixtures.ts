import { TeamError } from '../errors.js';
import type { Task, TeamRecord } from '../records.js';
import type { ManualClock } from '../testing/manual-clock.js';
import { createManualClock } from '../testing/manual-clock.js';
import type { TeamStateSnapshot } from './snapshot.js';
import type { TeamLimits, TeamStateOptions } from './team-state.js';
import { TeamState } from './team-state.js';

/** The team id used by the state tests; the lead's id equals it, as in a real team. */
export const TEAM_ID = 'team-01';

/** A team with a live lead, a manual clock, and the log of every record its commands emitted. */
export interface TestTeam {
  state: TeamState;
  clock: ManualClock;
  log: TeamRecord[];
  leadId: string;
  /** Runs a command and appends what it emitted to {@link log}. */
  run<R extends TeamRecord | TeamRecord[]>(command: (state: TeamState) => R): R;
  /** Spawns and activates a teammate; returns its id. */
  spawn(name: string, options?: { activate?: boolean }): string;
  /** Creates a task as `actorId` (default: the lead); returns its id. */
  task(
    subject: string,
    options?: { actorId?: string; blockedBy?: string[]; writeScopes?: string[] },
  ): string;
}

export function createTestTeam(
  options: {
    limits?: Partial<TeamLimits> | undefined;
    traceContext?: TeamStateOptions['traceContext'];
  } = {},
): TestTeam {
  const clock = createManualClock();
  const state = new TeamState({
    teamId: TEAM_ID,
    clock,
    limits: options.limits,
    traceContext: options.traceContext,
  });
  const log: TeamRecord[] = [];
  const run = <R extends TeamRecord | TeamRecord[]>(command: (s: TeamState) => R): R => {
    const out = command(state);
    if (Array.isArray(out)) log.push(...out);
    else log.push(out);
    clock.advance(1);
    return out;
  };
  run((s) => s.createLead({ id: TEAM_ID, agentType: 'lead', provider: 'scripted' }));
  return {
    state,
    clock,
    log,
    leadId: TEAM_ID,
    run,
    spawn(name, spawnOptions = {}) {
      const id = `m-${name}`;
      run((s) =>
        s.spawnMember(TEAM_ID, {
          id,
          name,
          description: `${name} teammate`,
          agentType: 'worker',
          provider: 'scripted',
          context: 'fresh',
        }),
      );
      if (spawnOptions.activate !== false) run((s) => s.setMemberPhase(id, 'active'));
      return id;
    },
    task(subject, taskOptions = {}) {
      const record = run((s) =>
        s.createTask(taskOptions.actorId ?? TEAM_ID, {
          subject,
          description: `${subject} in detail`,
          blockedBy: taskOptions.blockedBy,
          writeScopes: taskOptions.writeScopes,
        }),
      );
      return record.task.id;
    },
  };
}

/** Runs `fn`, which must throw a TeamError, and returns it (any other outcome fails the test). */
export function catchTeamError(fn: () => unknown): TeamError {
  try {
    fn();
  } catch (error) {
    if (TeamError.isInstance(error)) return error;
    throw error;
  }
  throw new Error('expected a TeamError, but nothing was thrown');
}

/** Everything observable about a state, for "a refusal changed nothing" checks. */
export function snapshot(state: TeamState): unknown {
  return {
    lastSeq: state.lastSeq,
    leadId: state.leadId,
    members: state.members(),
    tasks: state.allTasks(),
    pending: state.pendingMail(),
  };
}

/**
 * `snapshot` (the current version, as plain JSON) in the layout of versions 1 to 3, which keep
 * every task, tombstones included, in `tasks`: what a store written by an older version holds.
 */
export function olderSnapshotLayout(
  snapshot: TeamStateSnapshot,
  version: 1 | 2 | 3,
): TeamStateSnapshot {
  const { tombstones, deliveredLast: _last, ...rest } = snapshot;
  const text = typeof tombstones === 'object' ? tombstones.text() : (tombstones ?? '');
  const deleted =
    text === ''
      ? []
      : text
          .trimEnd()
          .split('\n')
          .map((line) => JSON.parse(line) as Task);
  const tasks = [...snapshot.tasks, ...deleted].sort(
    (a, b) => Number(a.id.slice('task-'.length)) - Number(b.id.slice('task-'.length)),
  );
  return { ...rest, version, tasks };
}
