import * as fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { TeamError, TeamErrorCode } from '../errors.js';
import { type TaskAction, taskNumber } from './task-board.js';
import type { TestTeam } from './test-fixtures.js';
import { catchTeamError, createTestTeam, snapshot, TEAM_ID } from './test-fixtures.js';

const LEAD = TEAM_ID;

/** Asserts `fn` is refused with `code` and that the refusal changed nothing. */
function expectRefused(team: TestTeam, fn: () => unknown, code: TeamErrorCode): TeamError {
  const before = snapshot(team.state);
  const error = catchTeamError(fn);
  expect(error.code).toBe(code);
  expect(snapshot(team.state)).toEqual(before);
  return error;
}

function update(team: TestTeam, actorId: string, taskId: string, action: TaskAction) {
  return team.run((s) => s.updateTask(actorId, { taskId, action })).task;
}

/** A team with a lead and two active teammates. */
function setup(limits?: { maxTasks?: number }) {
  const team = createTestTeam({ limits });
  const alice = team.spawn('alice');
  const bob = team.spawn('bob');
  return { team, alice, bob };
}

describe('createTask', () => {
  it('allocates task-<n> monotonically with revision 1, pending and unowned', () => {
    const { team, alice } = setup();
    const record = team.run((s) =>
      s.createTask(alice, {
        subject: 'Write parser',
        description: 'Parse the thing',
        writeScopes: ['./src/parser/', 'src\\parser', 'docs'],
      }),
    );
    expect(record).toMatchObject({ type: 'task', seq: team.state.lastSeq, teamId: TEAM_ID });
    expect(record.at).toBe(team.clock.now() - 1);
    expect(record.task).toEqual({
      id: 'task-1',
      revision: 1,
      subject: 'Write parser',
      description: 'Parse the thing',
      status: 'pending',
      creatorId: alice,
      blockedBy: [],
      writeScopes: ['src/parser', 'docs'],
    });
    expect(team.task('second', { blockedBy: ['task-1'] })).toBe('task-2');
    expect(team.state.getTask('task-2').blockedBy).toEqual(['task-1']);
  });

  it('never reuses a task number, even after a delete', () => {
    const { team } = setup();
    team.task('one');
    const two = team.task('two');
    update(team, LEAD, two, { type: 'delete' });
    expect(team.task('three')).toBe('task-3');
  });

  it('lets any live member create; refuses unknown and retired actors with NOT_A_MEMBER', () => {
    const { team, bob } = setup();
    expect(team.task('by bob', { actorId: bob })).toBe('task-1');
    const input = { subject: 's', description: 'd' };
    expectRefused(team, () => team.state.createTask('ghost', input), 'NOT_A_MEMBER');
    team.run((s) => s.setMemberPhase(bob, 'retired'));
    expectRefused(team, () => team.state.createTask(bob, input), 'NOT_A_MEMBER');
  });

  it('accepts a provisioning member as live', () => {
    const team = createTestTeam();
    const carol = team.spawn('carol', { activate: false });
    expect(team.task('early', { actorId: carol })).toBe('task-1');
  });

  it.each([
    ['empty subject', { subject: '', description: 'd' }],
    ['subject of 201 chars', { subject: 'x'.repeat(201), description: 'd' }],
    ['empty description', { subject: 's', description: '' }],
    ['description of 16385 chars', { subject: 's', description: 'x'.repeat(16385) }],
    ['non-string subject', { subject: 7 as unknown as string, description: 'd' }],
    [
      'non-array blockedBy',
      { subject: 's', description: 'd', blockedBy: 'task-1' as unknown as string[] },
    ],
  ])('refuses %s with INVALID_ARGUMENT', (_, input) => {
    const { team } = setup();
    expectRefused(team, () => team.state.createTask(LEAD, input), 'INVALID_ARGUMENT');
  });

  it('accepts subject and description at their maximum length', () => {
    const { team } = setup();
    const record = team.run((s) =>
      s.createTask(LEAD, { subject: 'x'.repeat(200), description: 'y'.repeat(16384) }),
    );
    expect(record.task.subject).toHaveLength(200);
  });

  it('refuses a bad write scope with INVALID_WRITE_SCOPE', () => {
    const { team } = setup();
    expectRefused(
      team,
      () => team.state.createTask(LEAD, { subject: 's', description: 'd', writeScopes: ['/etc'] }),
      'INVALID_WRITE_SCOPE',
    );
  });

  it('refuses missing, deleted and repeated blockers with INVALID_DEPENDENCY', () => {
    const { team } = setup();
    const one = team.task('one');
    const two = team.task('two');
    update(team, LEAD, two, { type: 'delete' });
    const make = (blockedBy: string[]) => () =>
      team.state.createTask(LEAD, { subject: 's', description: 'd', blockedBy });
    expectRefused(team, make(['task-9']), 'INVALID_DEPENDENCY');
    expectRefused(team, make(['task-4']), 'INVALID_DEPENDENCY'); // its own future id
    expectRefused(team, make([two]), 'INVALID_DEPENDENCY');
    expectRefused(team, make([one, one]), 'INVALID_DEPENDENCY');
  });

  it('enforces maxTasks over non-deleted tasks with TASK_LIMIT', () => {
    const { team } = setup({ maxTasks: 2 });
    const one = team.task('one');
    team.task('two');
    const error = expectRefused(
      team,
      () => team.state.createTask(LEAD, { subject: 's', description: 'd' }),
      'TASK_LIMIT',
    );
    expect(error.details).toEqual({ limit: 2 });
    update(team, LEAD, one, { type: 'complete' });
    expectRefused(
      team,
      () => team.state.createTask(LEAD, { subject: 's', description: 'd' }),
      'TASK_LIMIT',
    );
    update(team, LEAD, one, { type: 'delete' });
    expect(team.state.taskCount()).toBe(1);
    expect(team.task('three')).toBe('task-3');
  });
});

describe('reading the board', () => {
  it('task() is undefined and getTask() is TASK_NOT_FOUND for a missing task', () => {
    const { team } = setup();
    expect(team.state.task('task-1')).toBeUndefined();
    expect(catchTeamError(() => team.state.getTask('task-1')).code).toBe('TASK_NOT_FOUND');
  });

  it('keeps tombstones readable but out of default listings', () => {
    const { team } = setup();
    const one = team.task('one');
    team.task('two');
    update(team, LEAD, one, { type: 'delete' });
    expect(team.state.getTask(one)).toMatchObject({ status: 'deleted', revision: 2, ready: false });
    expect(team.state.listTasks().map((t) => t.id)).toEqual(['task-2']);
    expect(team.state.listTasks({ status: 'deleted' }).map((t) => t.id)).toEqual(['task-1']);
    expect(team.state.listTasks({ status: ['deleted', 'pending'] }).map((t) => t.id)).toEqual([
      'task-1',
      'task-2',
    ]);
    expect(team.state.allTasks().map((t) => t.id)).toEqual(['task-1', 'task-2']);
  });

  it('filters by status, owner (null = unowned) and readiness, in creation order', () => {
    const { team, alice, bob } = setup();
    const a = team.task('a');
    const b = team.task('b');
    const c = team.task('c', { blockedBy: ['task-1'] });
    const d = team.task('d');
    update(team, alice, a, { type: 'claim' });
    update(team, bob, b, { type: 'claim' });
    update(team, bob, b, { type: 'complete' });
    const ids = (list: { id: string }[]) => list.map((t) => t.id);
    expect(ids(team.state.listTasks())).toEqual([a, b, c, d]);
    expect(ids(team.state.listTasks({ status: 'pending' }))).toEqual([c, d]);
    expect(ids(team.state.listTasks({ status: ['in_progress', 'completed'] }))).toEqual([a, b]);
    expect(ids(team.state.listTasks({ ownerId: bob }))).toEqual([b]);
    expect(ids(team.state.listTasks({ ownerId: null }))).toEqual([c, d]);
    expect(ids(team.state.listTasks({ ready: true }))).toEqual([d]);
    expect(ids(team.state.listTasks({ ready: false }))).toEqual([a, b, c]);
    expect(ids(team.state.listTasks({ status: 'pending', ready: false }))).toEqual([c]);
  });

  it('derives ready: pending, unowned and every blocker completed', () => {
    const { team, alice } = setup();
    const one = team.task('one');
    const two = team.task('two');
    const three = team.task('three', { blockedBy: [one, two] });
    expect(team.state.getTask(three).ready).toBe(false);
    update(team, LEAD, one, { type: 'complete' });
    expect(team.state.getTask(three).ready).toBe(false);
    update(team, alice, two, { type: 'claim' });
    expect(team.state.getTask(two).ready).toBe(false);
    update(team, alice, two, { type: 'complete' });
    expect(team.state.getTask(three).ready).toBe(true);
    update(team, LEAD, one, { type: 'reopen' });
    expect(team.state.getTask(three).ready).toBe(false);
  });

  it('warns about write scopes that overlap other in-progress tasks', () => {
    const { team, alice, bob } = setup();
    const a = team.task('a', { writeScopes: ['src'] });
    const b = team.task('b', { writeScopes: ['src/parser'] });
    const c = team.task('c', { writeScopes: ['srcx', 'docs/api'] });
    const d = team.task('d', { writeScopes: ['docs'] });
    // nothing is in progress yet: no warnings
    expect(team.state.listTasks().flatMap((t) => t.warnings)).toEqual([]);
    update(team, alice, c, { type: 'claim' });
    update(team, bob, a, { type: 'claim' });
    expect(team.state.getTask(b).warnings).toEqual(['write scopes overlap with task-1']);
    expect(team.state.getTask(a).warnings).toEqual([]);
    expect(team.state.getTask(d).warnings).toEqual(['write scopes overlap with task-3']);
    update(team, alice, b, { type: 'claim' });
    expect(team.state.getTask(a).warnings).toEqual(['write scopes overlap with task-2']);
    expect(team.state.getTask(b).warnings).toEqual(['write scopes overlap with task-1']);
    // completed tasks neither warn nor are warned about
    update(team, bob, a, { type: 'complete' });
    expect(team.state.getTask(a).warnings).toEqual([]);
    expect(team.state.getTask(b).warnings).toEqual([]);
    // several overlaps are listed in task order
    update(team, LEAD, d, { type: 'edit', writeScopes: ['src/parser/x', 'docs'] });
    expect(team.state.getTask(d).warnings).toEqual([
      'write scopes overlap with task-2',
      'write scopes overlap with task-3',
    ]);
  });

  it('returns views that do not alias the state', () => {
    const { team } = setup();
    const one = team.task('one', { writeScopes: ['src'] });
    const view = team.state.getTask(one);
    view.writeScopes.push('evil');
    view.blockedBy.push('task-9');
    view.subject = 'changed';
    expect(team.state.getTask(one)).toMatchObject({
      subject: 'one',
      writeScopes: ['src'],
      blockedBy: [],
    });
  });
});

describe('updateTask: common refusals', () => {
  it('refuses unknown and non-live actors with NOT_A_MEMBER', () => {
    const { team, alice } = setup();
    const one = team.task('one');
    expectRefused(
      team,
      () => team.state.updateTask('ghost', { taskId: one, action: { type: 'claim' } }),
      'NOT_A_MEMBER',
    );
    team.run((s) => s.setMemberPhase(alice, 'retired'));
    expectRefused(
      team,
      () => team.state.updateTask(alice, { taskId: one, action: { type: 'claim' } }),
      'NOT_A_MEMBER',
    );
  });

  it('refuses a missing task with TASK_NOT_FOUND', () => {
    const { team } = setup();
    expectRefused(
      team,
      () => team.state.updateTask(LEAD, { taskId: 'task-1', action: { type: 'claim' } }),
      'TASK_NOT_FOUND',
    );
  });

  it.each<TaskAction>([
    { type: 'claim' },
    { type: 'release' },
    { type: 'edit', subject: 'x' },
    { type: 'set_dependencies', blockedBy: [] },
    { type: 'complete' },
    { type: 'reopen' },
    { type: 'reassign', ownerId: TEAM_ID },
    { type: 'delete' },
  ])('refuses $type on a deleted task with TASK_DELETED', (action) => {
    const { team } = setup();
    const one = team.task('one');
    update(team, LEAD, one, { type: 'delete' });
    expectRefused(team, () => team.state.updateTask(LEAD, { taskId: one, action }), 'TASK_DELETED');
  });

  it('compares and sets on expectedRevision (REVISION_MISMATCH with expected/actual)', () => {
    const { team, alice } = setup();
    const one = team.task('one');
    const claimed = team.run((s) =>
      s.updateTask(alice, { taskId: one, expectedRevision: 1, action: { type: 'claim' } }),
    );
    expect(claimed.task.revision).toBe(2);
    const error = expectRefused(
      team,
      () =>
        team.state.updateTask(alice, {
          taskId: one,
          expectedRevision: 1,
          action: { type: 'complete' },
        }),
      'REVISION_MISMATCH',
    );
    expect(error.details).toEqual({ taskId: one, expected: 1, actual: 2 });
    expect(
      team.run((s) =>
        s.updateTask(alice, { taskId: one, expectedRevision: 2, action: { type: 'complete' } }),
      ).task.revision,
    ).toBe(3);
  });

  it('refuses an unknown action with INVALID_ARGUMENT', () => {
    const { team } = setup();
    const one = team.task('one');
    expectRefused(
      team,
      () =>
        team.state.updateTask(LEAD, {
          taskId: one,
          action: { type: 'explode' } as unknown as TaskAction,
        }),
      'INVALID_ARGUMENT',
    );
  });
});

describe('claim', () => {
  it('moves a ready task to in_progress owned by the claimer', () => {
    const { team, bob } = setup();
    const one = team.task('one');
    expect(update(team, bob, one, { type: 'claim' })).toMatchObject({
      status: 'in_progress',
      ownerId: bob,
      revision: 2,
    });
  });

  it('refuses a task owned by someone else with TASK_OWNED', () => {
    const { team, alice, bob } = setup();
    const one = team.task('one');
    update(team, alice, one, { type: 'claim' });
    const error = expectRefused(
      team,
      () => team.state.updateTask(bob, { taskId: one, action: { type: 'claim' } }),
      'TASK_OWNED',
    );
    expect(error.details).toMatchObject({ ownerId: alice });
  });

  it('refuses claiming a completed task or re-claiming one own with INVALID_TASK_STATUS', () => {
    const { team, alice } = setup();
    const one = team.task('one');
    const two = team.task('two');
    update(team, alice, one, { type: 'claim' });
    expectRefused(
      team,
      () => team.state.updateTask(alice, { taskId: one, action: { type: 'claim' } }),
      'INVALID_TASK_STATUS',
    );
    update(team, LEAD, two, { type: 'complete' });
    expectRefused(
      team,
      () => team.state.updateTask(alice, { taskId: two, action: { type: 'claim' } }),
      'INVALID_TASK_STATUS',
    );
  });

  it('refuses a task with an unfinished blocker with TASK_BLOCKED', () => {
    const { team, alice } = setup();
    const one = team.task('one');
    const two = team.task('two');
    const three = team.task('three', { blockedBy: [one, two] });
    update(team, LEAD, one, { type: 'complete' });
    const error = expectRefused(
      team,
      () => team.state.updateTask(alice, { taskId: three, action: { type: 'claim' } }),
      'TASK_BLOCKED',
    );
    expect(error.details).toEqual({ taskId: three, blockedBy: [two] });
    update(team, LEAD, two, { type: 'complete' });
    expect(update(team, alice, three, { type: 'claim' }).ownerId).toBe(alice);
  });
});

describe('release', () => {
  it('lets the owner or the lead put an in-progress task back to pending, unowned', () => {
    const { team, alice } = setup();
    const one = team.task('one');
    update(team, alice, one, { type: 'claim' });
    const released = update(team, alice, one, { type: 'release' });
    expect(released).toMatchObject({ status: 'pending', revision: 3 });
    expect(released).not.toHaveProperty('ownerId');
    update(team, alice, one, { type: 'claim' });
    expect(update(team, LEAD, one, { type: 'release' }).status).toBe('pending');
  });

  it('refuses anyone else with NOT_ALLOWED_TO_CHANGE_STATUS, even the creator', () => {
    const { team, alice, bob } = setup();
    const one = team.task('one', { actorId: bob });
    update(team, alice, one, { type: 'claim' });
    expectRefused(
      team,
      () => team.state.updateTask(bob, { taskId: one, action: { type: 'release' } }),
      'NOT_ALLOWED_TO_CHANGE_STATUS',
    );
  });

  it('refuses a task that is not in progress with INVALID_TASK_STATUS', () => {
    const { team } = setup();
    const one = team.task('one');
    expectRefused(
      team,
      () => team.state.updateTask(LEAD, { taskId: one, action: { type: 'release' } }),
      'INVALID_TASK_STATUS',
    );
  });
});

describe('edit', () => {
  it('changes subject, description and normalized write scopes, keeping status and owner', () => {
    const { team, alice } = setup();
    const one = team.task('one', { writeScopes: ['a'] });
    update(team, alice, one, { type: 'claim' });
    const edited = update(team, alice, one, {
      type: 'edit',
      subject: 'new subject',
      description: 'new description',
      writeScopes: ['./b/', 'b', 'c\\d'],
    });
    expect(edited).toMatchObject({
      subject: 'new subject',
      description: 'new description',
      writeScopes: ['b', 'c/d'],
      status: 'in_progress',
      ownerId: alice,
      revision: 3,
    });
    expect(update(team, alice, one, { type: 'edit', subject: 'only subject' })).toMatchObject({
      subject: 'only subject',
      description: 'new description',
      writeScopes: ['b', 'c/d'],
    });
  });

  it('allows the owner, the lead, and the creator while unowned', () => {
    const { team, alice, bob } = setup();
    const one = team.task('one', { actorId: bob });
    expect(update(team, bob, one, { type: 'edit', subject: 'by creator' }).subject).toBe(
      'by creator',
    );
    expect(update(team, LEAD, one, { type: 'edit', subject: 'by lead' }).subject).toBe('by lead');
    update(team, alice, one, { type: 'claim' });
    expect(update(team, alice, one, { type: 'edit', subject: 'by owner' }).subject).toBe(
      'by owner',
    );
  });

  it('refuses the creator of an owned task and strangers with NOT_ALLOWED_TO_EDIT', () => {
    const { team, alice, bob } = setup();
    const carol = team.spawn('carol');
    const one = team.task('one', { actorId: bob });
    expectRefused(
      team,
      () => team.state.updateTask(carol, { taskId: one, action: { type: 'edit', subject: 'x' } }),
      'NOT_ALLOWED_TO_EDIT',
    );
    update(team, alice, one, { type: 'claim' });
    expectRefused(
      team,
      () => team.state.updateTask(bob, { taskId: one, action: { type: 'edit', subject: 'x' } }),
      'NOT_ALLOWED_TO_EDIT',
    );
  });

  it('refuses an empty edit or bad text with INVALID_ARGUMENT and a bad scope with INVALID_WRITE_SCOPE', () => {
    const { team } = setup();
    const one = team.task('one');
    const edit = (action: TaskAction) => () => team.state.updateTask(LEAD, { taskId: one, action });
    expectRefused(team, edit({ type: 'edit' }), 'INVALID_ARGUMENT');
    expectRefused(team, edit({ type: 'edit', subject: '' }), 'INVALID_ARGUMENT');
    expectRefused(team, edit({ type: 'edit', description: 'x'.repeat(16385) }), 'INVALID_ARGUMENT');
    expectRefused(team, edit({ type: 'edit', writeScopes: ['a/../b'] }), 'INVALID_WRITE_SCOPE');
  });
});

describe('set_dependencies', () => {
  it('replaces the blockers; clearing and restating are allowed', () => {
    const { team } = setup();
    const one = team.task('one');
    const two = team.task('two');
    const three = team.task('three');
    expect(
      update(team, LEAD, three, { type: 'set_dependencies', blockedBy: [two, one] }).blockedBy,
    ).toEqual([two, one]);
    expect(
      update(team, LEAD, three, { type: 'set_dependencies', blockedBy: [one, two] }).revision,
    ).toBe(3);
    expect(
      update(team, LEAD, three, { type: 'set_dependencies', blockedBy: [] }).blockedBy,
    ).toEqual([]);
  });

  it('uses the edit authorization (NOT_ALLOWED_TO_EDIT)', () => {
    const { team, alice, bob } = setup();
    const one = team.task('one');
    const two = team.task('two');
    expectRefused(
      team,
      () =>
        team.state.updateTask(alice, {
          taskId: two,
          action: { type: 'set_dependencies', blockedBy: [one] },
        }),
      'NOT_ALLOWED_TO_EDIT',
    );
    update(team, bob, two, { type: 'claim' });
    expect(
      update(team, bob, two, { type: 'set_dependencies', blockedBy: [one] }).blockedBy,
    ).toEqual([one]);
  });

  it('refuses self, missing, deleted and repeated blockers with INVALID_DEPENDENCY', () => {
    const { team } = setup();
    const one = team.task('one');
    const two = team.task('two');
    const three = team.task('three');
    update(team, LEAD, three, { type: 'delete' });
    const set = (blockedBy: string[]) => () =>
      team.state.updateTask(LEAD, { taskId: two, action: { type: 'set_dependencies', blockedBy } });
    expectRefused(team, set([two]), 'INVALID_DEPENDENCY');
    expectRefused(team, set(['task-99']), 'INVALID_DEPENDENCY');
    expectRefused(team, set([three]), 'INVALID_DEPENDENCY');
    expectRefused(team, set([one, one]), 'INVALID_DEPENDENCY');
  });

  it('refuses a change that closes a cycle with DEPENDENCY_CYCLE naming the cycle', () => {
    const { team } = setup();
    const one = team.task('one');
    const two = team.task('two', { blockedBy: [one] });
    const three = team.task('three', { blockedBy: [two] });
    const direct = expectRefused(
      team,
      () =>
        team.state.updateTask(LEAD, {
          taskId: one,
          action: { type: 'set_dependencies', blockedBy: [two] },
        }),
      'DEPENDENCY_CYCLE',
    );
    expect(direct.details).toEqual({ taskId: one, cycle: [one, two, one] });
    const long = expectRefused(
      team,
      () =>
        team.state.updateTask(LEAD, {
          taskId: one,
          action: { type: 'set_dependencies', blockedBy: [three] },
        }),
      'DEPENDENCY_CYCLE',
    );
    expect(long.details).toEqual({ taskId: one, cycle: [one, three, two, one] });
    // a diamond is not a cycle
    expect(
      update(team, LEAD, three, { type: 'set_dependencies', blockedBy: [two, one] }).blockedBy,
    ).toEqual([two, one]);
  });

  it('sees a cycle only through the dependencies a task has now', () => {
    const { team } = setup();
    const one = team.task('one');
    const two = team.task('two', { blockedBy: [one] });
    const three = team.task('three', { blockedBy: [two] });
    // two no longer waits for one: one may now wait for three (and so for two)
    update(team, LEAD, two, { type: 'set_dependencies', blockedBy: [] });
    expect(
      update(team, LEAD, one, { type: 'set_dependencies', blockedBy: [three] }).blockedBy,
    ).toEqual([three]);
    // and from then on two cannot wait for one again
    const closed = expectRefused(
      team,
      () =>
        team.state.updateTask(LEAD, {
          taskId: two,
          action: { type: 'set_dependencies', blockedBy: [one] },
        }),
      'DEPENDENCY_CYCLE',
    );
    expect(closed.details).toEqual({ taskId: two, cycle: [two, one, three, two] });
  });
});

describe('complete', () => {
  it('completes pending or in-progress tasks, keeping the owner', () => {
    const { team, alice } = setup();
    const one = team.task('one');
    const two = team.task('two');
    update(team, alice, one, { type: 'claim' });
    expect(update(team, alice, one, { type: 'complete' })).toMatchObject({
      status: 'completed',
      ownerId: alice,
    });
    const done = update(team, LEAD, two, { type: 'complete' });
    expect(done.status).toBe('completed');
    expect(done).not.toHaveProperty('ownerId');
  });

  it('refuses anyone but the owner or the lead with NOT_ALLOWED_TO_CHANGE_STATUS', () => {
    const { team, alice, bob } = setup();
    const one = team.task('one', { actorId: bob });
    expectRefused(
      team,
      () => team.state.updateTask(bob, { taskId: one, action: { type: 'complete' } }),
      'NOT_ALLOWED_TO_CHANGE_STATUS',
    );
    update(team, alice, one, { type: 'claim' });
    expectRefused(
      team,
      () => team.state.updateTask(bob, { taskId: one, action: { type: 'complete' } }),
      'NOT_ALLOWED_TO_CHANGE_STATUS',
    );
  });

  it('refuses a completed task with INVALID_TASK_STATUS', () => {
    const { team } = setup();
    const one = team.task('one');
    update(team, LEAD, one, { type: 'complete' });
    expectRefused(
      team,
      () => team.state.updateTask(LEAD, { taskId: one, action: { type: 'complete' } }),
      'INVALID_TASK_STATUS',
    );
  });
});

describe('reopen', () => {
  it('returns a completed task to its live owner, or to pending when unowned', () => {
    const { team, alice } = setup();
    const one = team.task('one');
    const two = team.task('two');
    update(team, alice, one, { type: 'claim' });
    update(team, alice, one, { type: 'complete' });
    expect(update(team, alice, one, { type: 'reopen' })).toMatchObject({
      status: 'in_progress',
      ownerId: alice,
    });
    update(team, LEAD, two, { type: 'complete' });
    expect(update(team, LEAD, two, { type: 'reopen' }).status).toBe('pending');
  });

  it('clears an owner that is no longer live, so the task becomes claimable', () => {
    const { team, alice } = setup();
    const one = team.task('one');
    update(team, alice, one, { type: 'claim' });
    update(team, alice, one, { type: 'complete' });
    team.run((s) => s.setMemberPhase(alice, 'retired'));
    const reopened = update(team, LEAD, one, { type: 'reopen' });
    expect(reopened.status).toBe('pending');
    expect(reopened).not.toHaveProperty('ownerId');
    expect(team.state.getTask(one).ready).toBe(true);
  });

  it('refuses a task that is not completed with INVALID_TASK_STATUS', () => {
    const { team } = setup();
    const one = team.task('one');
    expectRefused(
      team,
      () => team.state.updateTask(LEAD, { taskId: one, action: { type: 'reopen' } }),
      'INVALID_TASK_STATUS',
    );
  });

  it('refuses anyone but the owner or the lead with NOT_ALLOWED_TO_CHANGE_STATUS', () => {
    const { team, alice, bob } = setup();
    const one = team.task('one', { actorId: bob });
    update(team, alice, one, { type: 'claim' });
    update(team, alice, one, { type: 'complete' });
    expectRefused(
      team,
      () => team.state.updateTask(bob, { taskId: one, action: { type: 'reopen' } }),
      'NOT_ALLOWED_TO_CHANGE_STATUS',
    );
  });
});

describe('reassign', () => {
  it('lets the lead give a pending or in-progress task to a live member', () => {
    const { team, alice, bob } = setup();
    const one = team.task('one');
    expect(update(team, LEAD, one, { type: 'reassign', ownerId: alice })).toMatchObject({
      status: 'in_progress',
      ownerId: alice,
    });
    expect(update(team, LEAD, one, { type: 'reassign', ownerId: bob }).ownerId).toBe(bob);
    const fresh = team.spawn('fresh', { activate: false });
    expect(update(team, LEAD, one, { type: 'reassign', ownerId: fresh }).ownerId).toBe(fresh);
  });

  it('refuses everyone but the lead with NOT_ALLOWED_TO_REASSIGN, even the owner', () => {
    const { team, alice, bob } = setup();
    const one = team.task('one');
    update(team, alice, one, { type: 'claim' });
    expectRefused(
      team,
      () =>
        team.state.updateTask(alice, {
          taskId: one,
          action: { type: 'reassign', ownerId: bob },
        }),
      'NOT_ALLOWED_TO_REASSIGN',
    );
  });

  it('refuses a completed task with INVALID_TASK_STATUS', () => {
    const { team, alice } = setup();
    const one = team.task('one');
    update(team, LEAD, one, { type: 'complete' });
    expectRefused(
      team,
      () =>
        team.state.updateTask(LEAD, {
          taskId: one,
          action: { type: 'reassign', ownerId: alice },
        }),
      'INVALID_TASK_STATUS',
    );
  });

  it('refuses an unknown target (UNKNOWN_MEMBER) and a retired one (INVALID_PHASE)', () => {
    const { team, alice } = setup();
    const one = team.task('one');
    const reassign = (ownerId: string) => () =>
      team.state.updateTask(LEAD, { taskId: one, action: { type: 'reassign', ownerId } });
    expectRefused(team, reassign('ghost'), 'UNKNOWN_MEMBER');
    team.run((s) => s.setMemberPhase(alice, 'retired'));
    expectRefused(team, reassign(alice), 'INVALID_PHASE');
  });
});

describe('delete', () => {
  it('writes a tombstone; the creator may delete while unowned, the owner and the lead always', () => {
    const { team, alice, bob } = setup();
    const one = team.task('one', { actorId: bob });
    const two = team.task('two', { actorId: bob });
    const three = team.task('three');
    expect(update(team, bob, one, { type: 'delete' })).toMatchObject({
      status: 'deleted',
      revision: 2,
    });
    update(team, alice, two, { type: 'claim' });
    expectRefused(
      team,
      () => team.state.updateTask(bob, { taskId: two, action: { type: 'delete' } }),
      'NOT_ALLOWED_TO_EDIT',
    );
    expect(update(team, alice, two, { type: 'delete' })).toMatchObject({
      status: 'deleted',
      ownerId: alice,
    });
    expect(update(team, LEAD, three, { type: 'delete' }).status).toBe('deleted');
    expect(team.state.taskCount()).toBe(0);
  });

  it('refuses while a non-deleted task is blocked by it (TASK_HAS_DEPENDENTS)', () => {
    const { team } = setup();
    const one = team.task('one');
    const two = team.task('two', { blockedBy: [one] });
    const three = team.task('three', { blockedBy: [one] });
    update(team, LEAD, two, { type: 'complete' });
    const error = expectRefused(
      team,
      () => team.state.updateTask(LEAD, { taskId: one, action: { type: 'delete' } }),
      'TASK_HAS_DEPENDENTS',
    );
    expect(error.details).toEqual({ taskId: one, dependents: [two, three] });
    update(team, LEAD, two, { type: 'delete' });
    update(team, LEAD, three, { type: 'set_dependencies', blockedBy: [] });
    expect(update(team, LEAD, one, { type: 'delete' }).status).toBe('deleted');
  });
});

describe('releaseTasksOf', () => {
  it('returns every in-progress task of a member to pending and leaves the rest alone', () => {
    const { team, alice, bob } = setup();
    const one = team.task('one');
    const two = team.task('two');
    const three = team.task('three');
    const four = team.task('four');
    update(team, alice, one, { type: 'claim' });
    update(team, alice, two, { type: 'claim' });
    update(team, alice, three, { type: 'claim' });
    update(team, alice, three, { type: 'complete' });
    update(team, bob, four, { type: 'claim' });
    const records = team.run((s) => s.releaseTasksOf(alice));
    expect(records.map((r) => [r.task.id, r.task.status, r.task.ownerId])).toEqual([
      [one, 'pending', undefined],
      [two, 'pending', undefined],
    ]);
    expect(team.state.getTask(three)).toMatchObject({ status: 'completed', ownerId: alice });
    expect(team.state.getTask(four)).toMatchObject({ status: 'in_progress', ownerId: bob });
    expect(team.state.releaseTasksOf(alice)).toEqual([]);
  });
});

describe('taskNumber', () => {
  it('reads the number after the prefix as Number does, for any text', () => {
    const digits = fc.stringMatching(/^[0-9]{0,24}$/);
    const text = fc.oneof(
      digits.map((d) => `task-${d}`),
      fc.string().map((rest) => `task-${rest}`),
      fc.string(),
    );
    fc.assert(
      fc.property(text, (id) => {
        expect(Object.is(taskNumber(id), Number(id.slice('task-'.length)))).toBe(true);
      }),
      { numRuns: 2_000 },
    );
    expect(taskNumber('task-12')).toBe(12);
  });
});
