import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { textContent } from '../content.js';
import type { TeamErrorCode } from '../errors.js';
import {
  AGENT_TYPE_MAX,
  isWithinTextLimit,
  MEMBER_COLOR_MAX,
  MEMBER_DESCRIPTION_MAX,
  MEMBER_ERROR_MAX,
  MEMBER_PROVIDER_MAX,
  MESSAGE_SUMMARY_MAX,
  TASK_BLOCKED_BY_MAX,
  TASK_DESCRIPTION_MAX,
  TASK_SUBJECT_MAX,
  TASK_WRITE_SCOPES_MAX,
  textLength,
  WRITE_SCOPE_MAX,
} from '../limits.js';
import type { TeamRecord } from '../records.js';
import { foldTeam } from './fold.js';
import type { TaskAction } from './task-board.js';
import type { SpawnMemberInput } from './team-state.js';
import { TeamState } from './team-state.js';
import type { TestTeam } from './test-fixtures.js';
import { catchTeamError, createTestTeam, snapshot, TEAM_ID } from './test-fixtures.js';

const LEAD = TEAM_ID;
/** One code point, two UTF-16 units. */
const EMOJI = '😀';
const over = (max: number) => 'x'.repeat(max + 1);

/** Asserts `fn` is refused with `code` (and `field`, when given) and that nothing changed. */
function expectRefused(team: TestTeam, fn: () => unknown, code: TeamErrorCode, field?: string) {
  const before = snapshot(team.state);
  const error = catchTeamError(fn);
  expect(error.code).toBe(code);
  if (field !== undefined) expect(error.details?.field).toBe(field);
  expect(snapshot(team.state)).toEqual(before);
  return error;
}

const teammate = (fields: Partial<SpawnMemberInput> = {}): SpawnMemberInput => ({
  id: 'm-new',
  name: 'newbie',
  description: 'helps',
  agentType: 'worker',
  provider: 'scripted',
  context: 'fresh',
  ...fields,
});

describe('textLength', () => {
  it('counts code points: a surrogate pair once, a lone surrogate as itself', () => {
    expect(textLength('abc')).toBe(3);
    expect(textLength(EMOJI.repeat(3))).toBe(3);
    expect(textLength('\uD83D')).toBe(1);
    expect(textLength('\uDE00\uD83D')).toBe(2); // reversed halves are two lone surrogates
    expect(textLength(`a${EMOJI}\uD83Db`)).toBe(4);
  });

  it('agrees with the zod bound the tool schemas use, on any string and bound', () => {
    const text = fc.oneof(
      fc.string({ unit: 'binary', maxLength: 40 }),
      fc.string({ unit: fc.constantFrom('a', EMOJI, '\uD83D', '\uDE00'), maxLength: 40 }),
    );
    fc.assert(
      fc.property(text, fc.integer({ min: 0, max: 50 }), (s, max) => {
        const zod = z.string().max(max).safeParse(s).success;
        expect(isWithinTextLimit(s, max)).toBe(zod);
        expect(textLength(s) <= max).toBe(zod);
      }),
    );
  });
});

describe('member input limits', () => {
  it.each([
    ['description', { description: over(MEMBER_DESCRIPTION_MAX) }],
    ['agentType', { agentType: over(AGENT_TYPE_MAX) }],
    ['provider', { provider: over(MEMBER_PROVIDER_MAX) }],
    ['color', { color: over(MEMBER_COLOR_MAX) }],
  ])('spawnMember refuses a %s over its limit with INVALID_ARGUMENT', (field, fields) => {
    const team = createTestTeam();
    const error = expectRefused(
      team,
      () => team.state.spawnMember(LEAD, teammate(fields)),
      'INVALID_ARGUMENT',
      field,
    );
    expect(error.message).toContain(field);
  });

  it('refuses a 10 MB description without echoing it', () => {
    const team = createTestTeam();
    const error = expectRefused(
      team,
      () => team.state.spawnMember(LEAD, teammate({ description: 'x'.repeat(10_000_000) })),
      'INVALID_ARGUMENT',
      'description',
    );
    expect(error.message.length).toBeLessThan(200);
    expect(error.details).toMatchObject({ max: MEMBER_DESCRIPTION_MAX, length: 10_000_000 });
  });

  it('accepts every field at its limit, counted in code points', () => {
    const team = createTestTeam();
    const record = team.run((s) =>
      s.spawnMember(
        LEAD,
        teammate({
          description: EMOJI.repeat(MEMBER_DESCRIPTION_MAX),
          agentType: EMOJI.repeat(AGENT_TYPE_MAX),
          provider: EMOJI.repeat(MEMBER_PROVIDER_MAX),
          color: EMOJI.repeat(MEMBER_COLOR_MAX),
        }),
      ),
    );
    expect(record.member.description).toHaveLength(2 * MEMBER_DESCRIPTION_MAX);
  });

  it('createLead refuses a description over its limit', () => {
    const state = new TeamState({ teamId: TEAM_ID });
    const error = catchTeamError(() =>
      state.createLead({
        id: TEAM_ID,
        agentType: 'lead',
        provider: 'x',
        description: over(MEMBER_DESCRIPTION_MAX),
      }),
    );
    expect(error).toMatchObject({ code: 'INVALID_ARGUMENT', details: { field: 'description' } });
    expect(state.lastSeq).toBe(0);
  });

  it('setMemberPhase refuses an error over its limit and keeps the member as it was', () => {
    const team = createTestTeam();
    const id = team.spawn('carol', { activate: false });
    expectRefused(
      team,
      () => team.state.setMemberPhase(id, 'failed', over(MEMBER_ERROR_MAX)),
      'INVALID_ARGUMENT',
      'error',
    );
    team.run((s) => s.setMemberPhase(id, 'failed', EMOJI.repeat(MEMBER_ERROR_MAX)));
    expect(team.state.member(id)?.phase).toBe('failed');
  });
});

describe('task input limits', () => {
  const input = { subject: 's', description: 'd' };

  it('counts subject and description in code points, as the tool schemas do', () => {
    const team = createTestTeam();
    const record = team.run((s) =>
      s.createTask(LEAD, {
        subject: EMOJI.repeat(TASK_SUBJECT_MAX),
        description: EMOJI.repeat(TASK_DESCRIPTION_MAX),
      }),
    );
    expect(record.task.subject).toBe(EMOJI.repeat(TASK_SUBJECT_MAX));
    expectRefused(
      team,
      () => team.state.createTask(LEAD, { ...input, subject: EMOJI.repeat(TASK_SUBJECT_MAX + 1) }),
      'INVALID_ARGUMENT',
      'subject',
    );
    expectRefused(
      team,
      () =>
        team.state.updateTask(LEAD, {
          taskId: record.task.id,
          action: { type: 'edit', description: EMOJI.repeat(TASK_DESCRIPTION_MAX + 1) },
        }),
      'INVALID_ARGUMENT',
      'description',
    );
  });

  it('refuses more write scopes than the limit, on create and on edit', () => {
    const team = createTestTeam();
    const tooMany = Array.from({ length: TASK_WRITE_SCOPES_MAX + 1 }, (_, i) => `src/m${i}`);
    const error = expectRefused(
      team,
      () => team.state.createTask(LEAD, { ...input, writeScopes: tooMany }),
      'INVALID_ARGUMENT',
      'writeScopes',
    );
    expect(error.details).toMatchObject({ max: TASK_WRITE_SCOPES_MAX, count: tooMany.length });
    const id = team.task('scoped', { writeScopes: tooMany.slice(1) });
    expect(team.state.getTask(id).writeScopes).toHaveLength(TASK_WRITE_SCOPES_MAX);
    expectRefused(
      team,
      () =>
        team.state.updateTask(LEAD, { taskId: id, action: { type: 'edit', writeScopes: tooMany } }),
      'INVALID_ARGUMENT',
      'writeScopes',
    );
  });

  it('refuses a write scope longer than the limit, even one that would normalize shorter', () => {
    const team = createTestTeam();
    const long = `src/${'a'.repeat(WRITE_SCOPE_MAX)}`;
    expectRefused(
      team,
      () => team.state.createTask(LEAD, { ...input, writeScopes: ['docs', long] }),
      'INVALID_ARGUMENT',
      'writeScopes[1]',
    );
    expectRefused(
      team,
      () =>
        team.state.createTask(LEAD, {
          ...input,
          writeScopes: [`./${'a'.repeat(WRITE_SCOPE_MAX - 1)}/`],
        }),
      'INVALID_ARGUMENT',
      'writeScopes[0]',
    );
    expectRefused(
      team,
      () => team.state.createTask(LEAD, { ...input, writeScopes: ['x'.repeat(10_000_000)] }),
      'INVALID_ARGUMENT',
      'writeScopes[0]',
    );
    const id = team.task('at the limit', { writeScopes: [EMOJI.repeat(WRITE_SCOPE_MAX)] });
    expect(team.state.getTask(id).writeScopes).toEqual([EMOJI.repeat(WRITE_SCOPE_MAX)]);
  });

  it('refuses a blockedBy list longer than the limit, on create and on set_dependencies', () => {
    const team = createTestTeam({ limits: { maxTasks: TASK_BLOCKED_BY_MAX + 3 } });
    const blockers = Array.from({ length: TASK_BLOCKED_BY_MAX + 1 }, (_, i) => team.task(`b${i}`));
    expectRefused(
      team,
      () => team.state.createTask(LEAD, { ...input, blockedBy: blockers }),
      'INVALID_ARGUMENT',
      'blockedBy',
    );
    const id = team.task('roll-up', { blockedBy: blockers.slice(1) });
    const action: TaskAction = { type: 'set_dependencies', blockedBy: blockers };
    expectRefused(
      team,
      () => team.state.updateTask(LEAD, { taskId: id, action }),
      'INVALID_ARGUMENT',
      'blockedBy',
    );
    expect(team.state.getTask(id).blockedBy).toHaveLength(TASK_BLOCKED_BY_MAX);
  });
});

describe('message input limits', () => {
  function setup() {
    const team = createTestTeam();
    const alice = team.spawn('alice');
    let n = 0;
    const send = (fields: { summary?: string; taskId?: string }) =>
      team.state.queueMessage({
        id: `msg-${++n}`,
        senderId: LEAD,
        targetId: alice,
        kind: 'message',
        delivery: 'wakeup',
        content: textContent('hi'),
        ...fields,
      });
    return { team, send };
  }

  it('refuses a summary over its limit with INVALID_ARGUMENT; one at the limit in emoji fits', () => {
    const { team, send } = setup();
    expectRefused(
      team,
      () => send({ summary: 'x'.repeat(10_000_000) }),
      'INVALID_ARGUMENT',
      'summary',
    );
    expectRefused(
      team,
      () => send({ summary: EMOJI.repeat(MESSAGE_SUMMARY_MAX + 1) }),
      'INVALID_ARGUMENT',
      'summary',
    );
    const record = team.run(() => send({ summary: EMOJI.repeat(MESSAGE_SUMMARY_MAX) }));
    expect(record.message.summary).toBe(EMOJI.repeat(MESSAGE_SUMMARY_MAX));
  });

  it('refuses a taskId that names no task with TASK_NOT_FOUND', () => {
    const { team, send } = setup();
    expectRefused(team, () => send({ taskId: `task-${'9'.repeat(1000)}` }), 'TASK_NOT_FOUND');
    const taskId = team.task('real');
    expect(team.run(() => send({ taskId })).message.taskId).toBe(taskId);
  });
});

describe('replay and input limits', () => {
  it('folds a log whose records exceed the input limits (they bind new input only)', () => {
    // What an older writer could have stored: every field far over today's input limits.
    const team = createTestTeam();
    const alice = team.spawn('alice');
    const task = team.task('old');
    team.run((s) =>
      s.queueMessage({
        id: 'm1',
        senderId: LEAD,
        targetId: alice,
        kind: 'message',
        delivery: 'wakeup',
        content: textContent('hi'),
      }),
    );
    const big = (text: string) => text.repeat(3000);
    const log: TeamRecord[] = team.log.map((record) => {
      const copy = structuredClone(record);
      if (copy.type === 'member' && copy.member.id === alice) {
        copy.member.description = big('d');
        copy.member.provider = big('p');
      }
      if (copy.type === 'task' && copy.task.id === task) {
        copy.task.writeScopes = Array.from(
          { length: TASK_WRITE_SCOPES_MAX + 5 },
          (_, i) => `src/${i}/${'a'.repeat(WRITE_SCOPE_MAX)}`,
        );
      }
      if (copy.type === 'message.queued') {
        copy.message.summary = big('s');
        copy.message.taskId = 'task-404';
      }
      return copy;
    });
    const folded = foldTeam(log, { teamId: TEAM_ID });
    expect(folded.roster.find((m) => m.id === alice)?.description).toHaveLength(3000);
    expect(folded.pendingMail[0]?.summary).toHaveLength(3000);
    // Carried-over values stay usable: an edit of the subject keeps the stored scopes. The same
    // values given again as new input are refused.
    const state = TeamState.fromRecords(log, { teamId: TEAM_ID });
    const stored = state.getTask(task).writeScopes;
    const edited = state.updateTask(LEAD, {
      taskId: task,
      action: { type: 'edit', subject: 'renamed' },
    });
    expect(edited.task.writeScopes).toEqual(stored);
    const error = catchTeamError(() =>
      state.updateTask(LEAD, { taskId: task, action: { type: 'edit', writeScopes: stored } }),
    );
    expect(error).toMatchObject({ code: 'INVALID_ARGUMENT', details: { field: 'writeScopes' } });
  });
});
