import { describe, expect, it } from 'vitest';
import type { ContentBlock } from '../content.js';
import { textContent } from '../content.js';
import type { Member, QueuedMessage, Task, TeamRecord } from '../records.js';
import { parseTeamRecord } from '../records.js';
import { foldTeam } from './fold.js';
import { TeamState } from './team-state.js';
import { catchTeamError, createTestTeam, snapshot, TEAM_ID } from './test-fixtures.js';

const AT = Date.UTC(2026, 0, 1);

function member(
  seq: number,
  fields: Partial<Member> & { id: string },
  teamId = TEAM_ID,
): TeamRecord {
  return {
    seq,
    at: AT,
    teamId,
    schemaVersion: 1,
    type: 'member',
    member: {
      name: fields.id,
      description: '',
      agentType: 'worker',
      provider: 'scripted',
      context: 'fresh',
      phase: 'provisioning',
      ...fields,
    },
  };
}

function task(seq: number, fields: Partial<Task> & { id: string }, teamId = TEAM_ID): TeamRecord {
  return {
    seq,
    at: AT,
    teamId,
    schemaVersion: 1,
    type: 'task',
    task: {
      revision: 1,
      subject: fields.id,
      description: 'd',
      status: 'pending',
      creatorId: TEAM_ID,
      blockedBy: [],
      writeScopes: [],
      ...fields,
    },
  };
}

function queued(seq: number, fields: Partial<QueuedMessage> & { id: string }): TeamRecord {
  return {
    seq,
    at: AT,
    teamId: TEAM_ID,
    schemaVersion: 1,
    type: 'message.queued',
    message: {
      senderId: TEAM_ID,
      senderName: 'lead',
      targetId: 'alice',
      kind: 'message',
      delivery: 'wakeup',
      content: textContent('hi'),
      ...fields,
    },
  };
}

function delivered(seq: number, messageId: string, targetId = 'alice'): TeamRecord {
  return {
    seq,
    at: AT,
    teamId: TEAM_ID,
    schemaVersion: 1,
    type: 'message.delivered',
    messageId,
    targetId,
  };
}

/** lead and alice active, task-1 and task-2 (task-2 blocked by task-1), message m1 to alice. */
function baseLog(): TeamRecord[] {
  return [
    member(1, { id: TEAM_ID, name: 'lead', agentType: 'lead' }),
    member(2, { id: TEAM_ID, name: 'lead', agentType: 'lead', phase: 'active' }),
    member(3, { id: 'alice' }),
    member(4, { id: 'alice', phase: 'active' }),
    task(5, { id: 'task-1' }),
    task(6, { id: 'task-2', blockedBy: ['task-1'] }),
    queued(7, { id: 'm1' }),
  ];
}

/** Each case: extra valid records after the base log, then the bad record (at the next seq). */
const violations: [string, string, (seq: number) => TeamRecord[]][] = [
  // members
  [
    'a member first appearing as active',
    'first appears in phase active',
    (s) => [member(s, { id: 'bob', phase: 'active' })],
  ],
  [
    'a member restating its phase',
    'cannot move from phase active to active',
    (s) => [member(s, { id: 'alice', phase: 'active' })],
  ],
  [
    'a member going back to provisioning',
    'cannot move from phase active to provisioning',
    (s) => [member(s, { id: 'alice' })],
  ],
  [
    'an active member failing',
    'cannot move from phase active to failed',
    (s) => [member(s, { id: 'alice', phase: 'failed' })],
  ],
  [
    'a retired member coming back',
    'cannot move from phase retired to active',
    (s) => [
      member(s, { id: 'alice', phase: 'retired' }),
      member(s + 1, { id: 'alice', phase: 'active' }),
    ],
  ],
  [
    'a failed member activating',
    'cannot move from phase failed to active',
    (s) => [
      member(s, { id: 'bob' }),
      member(s + 1, { id: 'bob', phase: 'failed', error: 'x' }),
      member(s + 2, { id: 'bob', phase: 'active' }),
    ],
  ],
  [
    'a member renamed',
    'changed its name',
    (s) => [member(s, { id: 'alice', name: 'alicia', phase: 'retired' })],
  ],
  [
    'a member changing provider',
    'changed its provider',
    (s) => [member(s, { id: 'alice', provider: 'other', phase: 'retired' })],
  ],
  [
    'a member changing context',
    'changed its context',
    (s) => [member(s, { id: 'alice', context: 'fork', phase: 'retired' })],
  ],
  [
    'a member changing agent type',
    'changed its agentType',
    (s) => [member(s, { id: 'alice', agentType: 'x', phase: 'retired' })],
  ],
  [
    'a second member with a used name',
    '"alice" is already used',
    (s) => [member(s, { id: 'alice-2', name: 'alice' })],
  ],
  ['a second lead', '"lead" is already used', (s) => [member(s, { id: 'lead-2', name: 'lead' })]],
  // tasks
  [
    'a new task skipping a number',
    'does not carry the next task id task-3',
    (s) => [task(s, { id: 'task-4' })],
  ],
  [
    'a task restated at its revision',
    'revision 1 does not follow revision 1',
    (s) => [task(s, { id: 'task-1', revision: 1 })],
  ],
  [
    'a new task starting at revision 2',
    'has revision 2, not 1',
    (s) => [task(s, { id: 'task-3', revision: 2 })],
  ],
  [
    'a task skipping a revision',
    'revision 3 does not follow revision 1',
    (s) => [task(s, { id: 'task-1', revision: 3 })],
  ],
  [
    'a task changing its creator',
    'changed its creator',
    (s) => [task(s, { id: 'task-1', revision: 2, creatorId: 'alice' })],
  ],
  [
    'a task created by a non-member',
    'creator ghost is not a team member',
    (s) => [task(s, { id: 'task-3', creatorId: 'ghost' })],
  ],
  [
    'a task owned by a non-member',
    'owner ghost is not a team member',
    (s) => [task(s, { id: 'task-1', revision: 2, status: 'in_progress', ownerId: 'ghost' })],
  ],
  [
    'a pending task with an owner',
    'pending task task-1 has an owner',
    (s) => [task(s, { id: 'task-1', revision: 2, ownerId: 'alice' })],
  ],
  [
    'an in-progress task without owner',
    'has no owner',
    (s) => [task(s, { id: 'task-1', revision: 2, status: 'in_progress' })],
  ],
  [
    'a blocker that does not exist',
    'blocker task-9 of task-3 does not exist',
    (s) => [task(s, { id: 'task-3', blockedBy: ['task-9'] })],
  ],
  [
    'a task blocked by itself',
    'cannot be blocked by itself',
    (s) => [task(s, { id: 'task-1', revision: 2, blockedBy: ['task-1'] })],
  ],
  [
    'a repeated blocker',
    'lists blocker task-1 twice',
    (s) => [task(s, { id: 'task-3', blockedBy: ['task-1', 'task-1'] })],
  ],
  [
    'a deleted blocker',
    'blocker task-3 of task-1 is deleted',
    (s) => [
      task(s, { id: 'task-3' }),
      task(s + 1, { id: 'task-3', revision: 2, status: 'deleted' }),
      task(s + 2, { id: 'task-1', revision: 2, blockedBy: ['task-3'] }),
    ],
  ],
  [
    'a dependency cycle',
    'cycle task-1 -> task-2 -> task-1',
    (s) => [task(s, { id: 'task-1', revision: 2, blockedBy: ['task-2'] })],
  ],
  [
    // task-1 -> task-3 climbs to a newer task, so the closing edge to an older one needs the walk
    'a cycle closed by an edge to an older task',
    'cycle task-3 -> task-2 -> task-1 -> task-3',
    (s) => [
      task(s, { id: 'task-3' }),
      task(s + 1, { id: 'task-1', revision: 2, blockedBy: ['task-3'] }),
      task(s + 2, { id: 'task-3', revision: 2, blockedBy: ['task-2'] }),
    ],
  ],
  [
    'a task handed from a member to a non-member',
    'owner ghost is not a team member',
    (s) => [
      task(s, { id: 'task-1', revision: 2, status: 'in_progress', ownerId: 'alice' }),
      task(s + 1, { id: 'task-1', revision: 3, status: 'in_progress', ownerId: 'ghost' }),
    ],
  ],
  [
    'a change after deletion',
    'is deleted and cannot change',
    (s) => [
      task(s, { id: 'task-2', revision: 2, status: 'deleted', blockedBy: ['task-1'] }),
      task(s + 1, { id: 'task-2', revision: 3, status: 'pending', blockedBy: ['task-1'] }),
    ],
  ],
  [
    'deleting a task others are blocked by',
    'still depend on it',
    (s) => [task(s, { id: 'task-1', revision: 2, status: 'deleted' })],
  ],
  [
    'unnormalized write scopes',
    'not normalized',
    (s) => [task(s, { id: 'task-3', writeScopes: ['./src'] })],
  ],
  [
    'repeated write scopes',
    'not normalized',
    (s) => [task(s, { id: 'task-3', writeScopes: ['src', 'src'] })],
  ],
  [
    'an invalid write scope',
    'not normalized',
    (s) => [task(s, { id: 'task-3', writeScopes: ['../up'] })],
  ],
  // messages
  ['a message queued twice', 'queued twice', (s) => [queued(s, { id: 'm1' })]],
  [
    'a message from a non-member',
    'sender ghost is not a team member',
    (s) => [queued(s, { id: 'm2', senderId: 'ghost', senderName: 'ghost' })],
  ],
  [
    'a message to a non-member',
    'target ghost is not a team member',
    (s) => [queued(s, { id: 'm2', targetId: 'ghost' })],
  ],
  [
    'a message with a forged sender name',
    'is not its sender',
    (s) => [queued(s, { id: 'm2', senderName: 'alice' })],
  ],
  ['a delivery before queueing', 'before it was queued', (s) => [delivered(s, 'm2')]],
  ['a delivery twice', 'delivered twice', (s) => [delivered(s, 'm1'), delivered(s + 1, 'm1')]],
  ['a delivery to another target', 'not its target alice', (s) => [delivered(s, 'm1', TEAM_ID)]],
];

describe('fold strictness', () => {
  it.each(violations)('refuses %s with LOG_INVARIANT naming the seq', (_label, why, bad) => {
    const base = baseLog();
    const extra = bad(base.length + 1);
    const badSeq = base.length + extra.length;
    const error = catchTeamError(() => foldTeam([...base, ...extra], { teamId: TEAM_ID }));
    expect(error.code).toBe('LOG_INVARIANT');
    expect(error.message).toContain(why);
    expect(error.message).toContain(`at seq ${badSeq}`);
    expect(error.details).toMatchObject({ seq: badSeq });
  });

  it.each(violations)('leaves the state unchanged after refusing %s', (_label, _why, bad) => {
    const base = baseLog();
    const extra = bad(base.length + 1);
    const state = TeamState.fromRecords([...base, ...extra.slice(0, -1)], { teamId: TEAM_ID });
    const before = snapshot(state);
    expect(catchTeamError(() => state.apply(extra.at(-1)!)).code).toBe('LOG_INVARIANT');
    expect(snapshot(state)).toEqual(before);
    // and it keeps working: a valid record at the same seq is accepted
    state.apply(queued(state.lastSeq + 1, { id: 'm-next' }));
    expect(state.isPending('m-next')).toBe(true);
  });

  it.each([
    ['a gap', 9],
    ['a repeat', 7],
    ['a step back', 3],
  ])('refuses a seq with %s', (_, seq) => {
    const error = catchTeamError(() =>
      foldTeam([...baseLog(), delivered(seq, 'm1')], { teamId: TEAM_ID }),
    );
    expect(error.code).toBe('LOG_INVARIANT');
    expect(error.details).toMatchObject({ seq, expected: 8 });
  });

  it('refuses a log that does not start at seq 1', () => {
    expect(
      catchTeamError(() =>
        foldTeam([member(2, { id: TEAM_ID, name: 'lead' })], { teamId: TEAM_ID }),
      ).code,
    ).toBe('LOG_INVARIANT');
  });

  it('accepts the base log', () => {
    const folded = foldTeam(baseLog(), { teamId: TEAM_ID });
    expect(folded.roster.map((m) => [m.name, m.phase])).toEqual([
      ['lead', 'active'],
      ['alice', 'active'],
    ]);
    expect(folded.tasks.map((t) => t.id)).toEqual(['task-1', 'task-2']);
    expect(folded.pendingMail.map((m) => m.id)).toEqual(['m1']);
    expect(folded.lastSeq).toBe(7);
  });

  it('does not enforce limits on replay', () => {
    const state = TeamState.fromRecords(
      [
        ...baseLog(),
        member(8, { id: 'bob' }),
        member(9, { id: 'carol' }),
        queued(10, { id: 'm2' }),
      ],
      { teamId: TEAM_ID, limits: { maxMembers: 1, maxTasks: 1, maxPendingPerMember: 1 } },
    );
    expect(state.liveTeammateCount()).toBe(3);
    expect(state.pendingCount('alice')).toBe(2);
  });
});

describe('foldTeam', () => {
  it('folds an empty log to an empty team', () => {
    expect(foldTeam([], { teamId: TEAM_ID })).toEqual({
      roster: [],
      tasks: [],
      pendingMail: [],
      deadLetters: [],
      lastSeq: 0,
    });
  });

  it('skips records of other teams but counts their seq (a forked log)', () => {
    const parent = 'parent-team';
    const records: TeamRecord[] = [
      member(1, { id: parent, name: 'lead' }, parent),
      member(2, { id: parent, name: 'lead', phase: 'active' }, parent),
      task(3, { id: 'task-1', creatorId: parent }, parent),
      // would break our invariants, but it is not ours
      task(4, { id: 'task-7', revision: 5, creatorId: 'nobody' }, parent),
      ...baseLog().map((record) => ({ ...record, seq: record.seq + 4 })),
      member(12, { id: 'x', phase: 'retired' }, parent),
    ];
    const folded = foldTeam(records, { teamId: TEAM_ID });
    expect(folded.lastSeq).toBe(12);
    expect(folded.roster.map((m) => m.id)).toEqual([TEAM_ID, 'alice']);
    expect(folded.tasks.map((t) => [t.id, t.creatorId])).toEqual([
      ['task-1', TEAM_ID],
      ['task-2', TEAM_ID],
    ]);
    const parentView = foldTeam(records.slice(0, 3), { teamId: parent });
    expect(parentView.tasks.map((t) => t.id)).toEqual(['task-1']);
  });

  it('lists the lead first even when a teammate record came earlier in the log', () => {
    const folded = foldTeam(
      [member(1, { id: 'alice' }), member(2, { id: TEAM_ID, name: 'lead' })],
      { teamId: TEAM_ID },
    );
    expect(folded.roster.map((m) => m.name)).toEqual(['lead', 'alice']);
  });

  it('returns tombstones in creation order', () => {
    const folded = foldTeam(
      [
        ...baseLog(),
        task(8, { id: 'task-2', revision: 2, status: 'deleted', blockedBy: ['task-1'] }),
        task(9, { id: 'task-3' }),
      ],
      { teamId: TEAM_ID },
    );
    expect(folded.tasks.map((t) => [t.id, t.status])).toEqual([
      ['task-1', 'pending'],
      ['task-2', 'deleted'],
      ['task-3', 'pending'],
    ]);
  });
});

describe('records written by commands', () => {
  function busyTeam() {
    const team = createTestTeam();
    const alice = team.spawn('alice');
    const bob = team.spawn('bob', { activate: false });
    team.run((s) => s.setMemberPhase(bob, 'failed', 'provider down'));
    const one = team.task('one', { writeScopes: ['src'] });
    const two = team.task('two', { blockedBy: [one], writeScopes: ['./docs/'] });
    team.run((s) => s.updateTask(alice, { taskId: one, action: { type: 'claim' } }));
    team.run((s) => s.updateTask(alice, { taskId: one, action: { type: 'complete' } }));
    team.run((s) =>
      s.updateTask(TEAM_ID, { taskId: two, action: { type: 'reassign', ownerId: alice } }),
    );
    team.run((s) => s.releaseTasksOf(alice));
    team.task('three');
    team.run((s) => s.updateTask(TEAM_ID, { taskId: 'task-3', action: { type: 'delete' } }));
    const unknownBlock = { type: 'audio', format: 'wav', data: 'UklGRg==' } as ContentBlock;
    team.run((s) =>
      s.queueMessage({
        id: 'm1',
        senderId: TEAM_ID,
        targetId: alice,
        kind: 'message',
        delivery: 'wakeup',
        content: [...textContent('listen'), unknownBlock],
        summary: 'audio',
      }),
    );
    team.run((s) =>
      s.queueMessage({
        id: 'm2',
        senderId: alice,
        targetId: TEAM_ID,
        kind: 'idle_notification',
        delivery: 'quiet',
        content: textContent('idle'),
      }),
    );
    team.run((s) => s.markDelivered({ messageId: 'm2' }));
    return { team, unknownBlock };
  }

  it('round-trip through JSON and parseTeamRecord unchanged', () => {
    const { team } = busyTeam();
    const parsed = team.log.map((record) => parseTeamRecord(JSON.parse(JSON.stringify(record))));
    expect(parsed).toStrictEqual(team.log);
    expect(team.log.map((r) => r.seq)).toEqual(team.log.map((_, i) => i + 1));
  });

  it('fold back into exactly the incremental state', () => {
    const { team } = busyTeam();
    const parsed = team.log.map((record) => parseTeamRecord(JSON.parse(JSON.stringify(record))));
    const folded = foldTeam(parsed, { teamId: TEAM_ID });
    expect(folded).toStrictEqual({
      roster: team.state.members(),
      tasks: team.state.allTasks(),
      pendingMail: team.state.pendingMail(),
      deadLetters: team.state.deadLetters(),
      lastSeq: team.state.lastSeq,
    });
    const replayed = TeamState.fromRecords(parsed, { teamId: TEAM_ID });
    expect(snapshot(replayed)).toStrictEqual(snapshot(team.state));
    expect(
      replayed.listTasks({ status: ['pending', 'in_progress', 'completed', 'deleted'] }),
    ).toStrictEqual(
      team.state.listTasks({ status: ['pending', 'in_progress', 'completed', 'deleted'] }),
    );
  });

  it('keep unknown content block types through the round trip and the fold', () => {
    const { team, unknownBlock } = busyTeam();
    const parsed = team.log.map((record) => parseTeamRecord(JSON.parse(JSON.stringify(record))));
    const folded = foldTeam(parsed, { teamId: TEAM_ID });
    expect(folded.pendingMail).toHaveLength(1);
    expect(folded.pendingMail[0]?.content).toStrictEqual([...textContent('listen'), unknownBlock]);
  });

  it('are refused with UNSUPPORTED_SCHEMA_VERSION when their schemaVersion is unknown', () => {
    const { team } = busyTeam();
    const first = team.log[0]!;
    const newer = { ...first, schemaVersion: 4 };
    const error = catchTeamError(() => parseTeamRecord(newer));
    expect(error.code).toBe('UNSUPPORTED_SCHEMA_VERSION');
    expect(error.details).toEqual({ schemaVersion: 4, supported: 3 });
    expect(catchTeamError(() => parseTeamRecord({ ...first, schemaVersion: undefined })).code).toBe(
      'INVALID_RECORD',
    );
    const state = new TeamState({ teamId: TEAM_ID });
    expect(catchTeamError(() => state.apply(newer as unknown as TeamRecord)).code).toBe(
      'UNSUPPORTED_SCHEMA_VERSION',
    );
    expect(state.lastSeq).toBe(0);
    expect(state.members()).toEqual([]);
  });

  it('are refused with INVALID_RECORD when malformed', () => {
    const { team } = busyTeam();
    const taskRecord = team.log.find((r) => r.type === 'task')!;
    const broken = JSON.parse(JSON.stringify(taskRecord));
    broken.task.status = 'paused';
    const error = catchTeamError(() => parseTeamRecord(broken));
    expect(error.code).toBe('INVALID_RECORD');
    expect(error.details).toEqual({ seq: taskRecord.seq });
  });
});
