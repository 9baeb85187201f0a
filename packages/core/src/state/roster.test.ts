import { describe, expect, it } from 'vitest';
import type { TeamRecord } from '../records.js';
import { isLivePhase, isPhaseTransition, validateMemberName } from './roster.js';
import { TeamState } from './team-state.js';
import { catchTeamError, createTestTeam, snapshot, TEAM_ID } from './test-fixtures.js';

const teammate = (id: string, name: string) => ({
  id,
  name,
  description: 'helps',
  agentType: 'worker',
  provider: 'scripted',
  context: 'fresh' as const,
});

describe('validateMemberName', () => {
  it.each(['a', 'alice', 'bob-2', 'x1-y2-z3', 'a'.repeat(64)])('accepts %j', (name) => {
    expect(() => validateMemberName(name)).not.toThrow();
  });

  it.each([
    '',
    'Alice',
    'al_ice',
    'al ice',
    '-alice',
    'alice-',
    'al--ice',
    'a'.repeat(65),
    'lead-',
  ])('refuses %j with INVALID_NAME', (name) => {
    expect(catchTeamError(() => validateMemberName(name)).code).toBe('INVALID_NAME');
  });

  it.each(['lead', 'LEAD', 'Lead', 'lEaD'])('reserves %j with NAME_RESERVED', (name) => {
    expect(catchTeamError(() => validateMemberName(name)).code).toBe('NAME_RESERVED');
  });

  it('does not reserve names that merely contain lead', () => {
    expect(() => validateMemberName('lead-dev')).not.toThrow();
    expect(() => validateMemberName('leader')).not.toThrow();
  });
});

describe('phases', () => {
  it('allows only provisioning -> active | failed and active -> retired', () => {
    const phases = ['provisioning', 'active', 'failed', 'retired'] as const;
    const allowed = new Set(['provisioning>active', 'provisioning>failed', 'active>retired']);
    for (const from of phases) {
      for (const to of phases) {
        expect(isPhaseTransition(from, to)).toBe(allowed.has(`${from}>${to}`));
      }
    }
  });

  it('counts provisioning and active as live', () => {
    expect(isLivePhase('provisioning')).toBe(true);
    expect(isLivePhase('active')).toBe(true);
    expect(isLivePhase('failed')).toBe(false);
    expect(isLivePhase('retired')).toBe(false);
  });
});

describe('createLead', () => {
  it('writes provisioning then active records named lead, stamped by the clock', () => {
    const team = createTestTeam();
    expect(team.log).toHaveLength(2);
    const [first, second] = team.log;
    expect(first).toMatchObject({
      seq: 1,
      teamId: TEAM_ID,
      schemaVersion: 1,
      type: 'member',
      member: {
        id: TEAM_ID,
        name: 'lead',
        phase: 'provisioning',
        context: 'fresh',
        description: '',
      },
    });
    expect(second).toMatchObject({ seq: 2, type: 'member', member: { phase: 'active' } });
    expect(first?.at).toBe(Date.UTC(2026, 0, 1));
    expect(team.state.leadId).toBe(TEAM_ID);
    expect(team.state.lastSeq).toBe(2);
  });

  it('refuses a second lead with NAME_TAKEN', () => {
    const team = createTestTeam();
    const before = snapshot(team.state);
    const error = catchTeamError(() =>
      team.state.createLead({ id: 'other', agentType: 'lead', provider: 'x' }),
    );
    expect(error.code).toBe('NAME_TAKEN');
    expect(snapshot(team.state)).toEqual(before);
  });

  it('refuses an invalid lead with INVALID_ARGUMENT and writes nothing', () => {
    const state = new TeamState({ teamId: TEAM_ID });
    const error = catchTeamError(() =>
      state.createLead({ id: TEAM_ID, agentType: '', provider: 'x' }),
    );
    expect(error.code).toBe('INVALID_ARGUMENT');
    expect(state.lastSeq).toBe(0);
    expect(state.leadId).toBeUndefined();
  });

  it('keeps an optional color', () => {
    const state = new TeamState({ teamId: TEAM_ID });
    const [, active] = state.createLead({
      id: TEAM_ID,
      agentType: 'lead',
      provider: 'x',
      color: 'blue',
      description: 'runs the team',
    });
    expect(active?.member).toMatchObject({ color: 'blue', description: 'runs the team' });
  });
});

describe('spawnMember', () => {
  it('records a provisioning teammate; members() lists the lead first, then spawn order', () => {
    const team = createTestTeam();
    const record = team.run((s) =>
      s.spawnMember(TEAM_ID, { ...teammate('m1', 'alice'), color: 'red' }),
    );
    expect(record).toMatchObject({
      seq: 3,
      type: 'member',
      member: { id: 'm1', name: 'alice', phase: 'provisioning', color: 'red', context: 'fresh' },
    });
    team.spawn('bob');
    expect(team.state.members().map((m) => m.name)).toEqual(['lead', 'alice', 'bob']);
    expect(team.state.member('m1')?.name).toBe('alice');
    expect(team.state.memberByName('bob')?.id).toBe('m-bob');
    expect(team.state.memberByName('nobody')).toBeUndefined();
    expect(team.state.member('nobody')).toBeUndefined();
    expect(team.state.isLive('m1')).toBe(true);
  });

  it('returns copies: mutating a returned member does not change the state', () => {
    const team = createTestTeam();
    const lead = team.state.member(TEAM_ID)!;
    lead.description = 'changed';
    expect(team.state.member(TEAM_ID)?.description).toBe('');
  });

  it.each([
    ['a teammate', 'LEAD_ONLY'],
    ['an unknown actor', 'LEAD_ONLY'],
  ])('refuses spawning by %s with %s', (who, code) => {
    const team = createTestTeam();
    const alice = team.spawn('alice');
    const actor = who === 'a teammate' ? alice : 'ghost';
    const before = snapshot(team.state);
    expect(catchTeamError(() => team.state.spawnMember(actor, teammate('m2', 'bob'))).code).toBe(
      code,
    );
    expect(snapshot(team.state)).toEqual(before);
  });

  it('refuses spawning with LEAD_ONLY when the team has no lead', () => {
    const state = new TeamState({ teamId: TEAM_ID });
    expect(catchTeamError(() => state.spawnMember(TEAM_ID, teammate('m1', 'a'))).code).toBe(
      'LEAD_ONLY',
    );
  });

  it('refuses a retired lead with NOT_A_MEMBER', () => {
    const team = createTestTeam();
    team.run((s) => s.setMemberPhase(TEAM_ID, 'retired'));
    expect(catchTeamError(() => team.state.spawnMember(TEAM_ID, teammate('m1', 'a'))).code).toBe(
      'NOT_A_MEMBER',
    );
  });

  it('refuses bad and reserved names', () => {
    const team = createTestTeam();
    expect(
      catchTeamError(() => team.state.spawnMember(TEAM_ID, teammate('m1', 'Bad Name'))).code,
    ).toBe('INVALID_NAME');
    expect(catchTeamError(() => team.state.spawnMember(TEAM_ID, teammate('m1', 'Lead'))).code).toBe(
      'NAME_RESERVED',
    );
    expect(team.state.members()).toHaveLength(1);
  });

  it('never reuses a name, even after the member retired or failed', () => {
    const team = createTestTeam();
    const alice = team.spawn('alice');
    expect(
      catchTeamError(() => team.state.spawnMember(TEAM_ID, teammate('x1', 'alice'))).code,
    ).toBe('NAME_TAKEN');
    team.run((s) => s.setMemberPhase(alice, 'retired'));
    expect(
      catchTeamError(() => team.state.spawnMember(TEAM_ID, teammate('x2', 'alice'))).code,
    ).toBe('NAME_TAKEN');
    const bob = team.spawn('bob', { activate: false });
    team.run((s) => s.setMemberPhase(bob, 'failed', 'model refused'));
    expect(team.state.member(bob)).toMatchObject({ phase: 'failed', error: 'model refused' });
    expect(catchTeamError(() => team.state.spawnMember(TEAM_ID, teammate('x3', 'bob'))).code).toBe(
      'NAME_TAKEN',
    );
  });

  it('refuses a member id that already exists with INVALID_ARGUMENT', () => {
    const team = createTestTeam();
    team.spawn('alice');
    expect(
      catchTeamError(() => team.state.spawnMember(TEAM_ID, teammate('m-alice', 'bob'))).code,
    ).toBe('INVALID_ARGUMENT');
  });

  it('refuses malformed input (empty agentType, bad context) with INVALID_ARGUMENT', () => {
    const team = createTestTeam();
    expect(
      catchTeamError(() =>
        team.state.spawnMember(TEAM_ID, { ...teammate('m1', 'alice'), agentType: '' }),
      ).code,
    ).toBe('INVALID_ARGUMENT');
    expect(
      catchTeamError(() =>
        team.state.spawnMember(TEAM_ID, {
          ...teammate('m1', 'alice'),
          context: 'warm' as unknown as 'fresh',
        }),
      ).code,
    ).toBe('INVALID_ARGUMENT');
    expect(team.state.lastSeq).toBe(2);
  });

  it('enforces maxMembers over live teammates only; failed and retired free their slot', () => {
    const team = createTestTeam({ limits: { maxMembers: 2 } });
    const a = team.spawn('a');
    const b = team.spawn('b', { activate: false });
    expect(team.state.liveTeammateCount()).toBe(2);
    const error = catchTeamError(() => team.state.spawnMember(TEAM_ID, teammate('m3', 'c')));
    expect(error.code).toBe('MEMBER_LIMIT');
    expect(error.details).toEqual({ limit: 2 });
    team.run((s) => s.setMemberPhase(a, 'retired'));
    team.spawn('c');
    team.run((s) => s.setMemberPhase(b, 'failed', 'boom'));
    team.spawn('d');
    expect(team.state.liveTeammateCount()).toBe(2);
    expect(catchTeamError(() => team.state.spawnMember(TEAM_ID, teammate('m5', 'e'))).code).toBe(
      'MEMBER_LIMIT',
    );
  });

  it('does not count the lead against maxMembers', () => {
    const team = createTestTeam({ limits: { maxMembers: 1 } });
    team.spawn('solo');
    expect(catchTeamError(() => team.state.spawnMember(TEAM_ID, teammate('m2', 'two'))).code).toBe(
      'MEMBER_LIMIT',
    );
  });
});

describe('setMemberPhase', () => {
  it('walks provisioning -> active -> retired', () => {
    const team = createTestTeam();
    const id = team.spawn('alice', { activate: false });
    expect(team.run((s) => s.setMemberPhase(id, 'active')).member.phase).toBe('active');
    expect(team.run((s) => s.setMemberPhase(id, 'retired')).member.phase).toBe('retired');
    expect(team.state.isLive(id)).toBe(false);
  });

  it.each([
    ['active', 'active'],
    ['active', 'failed'],
    ['retired', 'active'],
    ['retired', 'retired'],
  ] as const)('refuses %s -> %s with INVALID_PHASE', (from, to) => {
    const team = createTestTeam();
    const id = team.spawn('alice');
    if (from === 'retired') team.run((s) => s.setMemberPhase(id, 'retired'));
    const before = snapshot(team.state);
    const error = catchTeamError(() => team.state.setMemberPhase(id, to));
    expect(error.code).toBe('INVALID_PHASE');
    expect(error.details).toMatchObject({ from, to });
    expect(snapshot(team.state)).toEqual(before);
  });

  it('refuses provisioning -> retired and failed -> anything', () => {
    const team = createTestTeam();
    const id = team.spawn('alice', { activate: false });
    expect(catchTeamError(() => team.state.setMemberPhase(id, 'retired')).code).toBe(
      'INVALID_PHASE',
    );
    team.run((s) => s.setMemberPhase(id, 'failed'));
    expect(catchTeamError(() => team.state.setMemberPhase(id, 'active')).code).toBe(
      'INVALID_PHASE',
    );
  });

  it('refuses an unknown member with UNKNOWN_MEMBER', () => {
    const team = createTestTeam();
    expect(catchTeamError(() => team.state.setMemberPhase('ghost', 'active')).code).toBe(
      'UNKNOWN_MEMBER',
    );
  });
});

describe('activateMember and the recorded workspace', () => {
  const workspace = { path: '/repo/.teamwire/alice', branch: 'teamwire/alice', base: 'abc123' };

  it('records the workspace with the move to active and keeps it on every later record', () => {
    const team = createTestTeam();
    const id = team.spawn('alice', { activate: false });
    const active = team.run((s) => s.activateMember(id, { workspace }));
    expect(active.member).toMatchObject({ phase: 'active', workspace });
    expect(team.state.member(id)?.workspace).toEqual(workspace);
    const retired = team.run((s) => s.setMemberPhase(id, 'retired'));
    expect(retired.member.workspace).toEqual(workspace);
    // the whole log folds again, strictly
    const replayed = TeamState.fromRecords(team.log, { teamId: TEAM_ID });
    expect(replayed.member(id)).toEqual(team.state.member(id));
  });

  it('activates without a workspace like setMemberPhase(active)', () => {
    const team = createTestTeam();
    const id = team.spawn('alice', { activate: false });
    const active = team.run((s) => s.activateMember(id));
    expect(active.member.phase).toBe('active');
    expect('workspace' in active.member).toBe(false);
  });

  it('refuses an active member with INVALID_PHASE and a malformed workspace with INVALID_ARGUMENT', () => {
    const team = createTestTeam();
    const id = team.spawn('alice');
    expect(catchTeamError(() => team.state.activateMember(id, { workspace })).code).toBe(
      'INVALID_PHASE',
    );
    const bob = team.spawn('bob', { activate: false });
    const before = snapshot(team.state);
    expect(
      catchTeamError(() => team.state.activateMember(bob, { workspace: { path: '' } })).code,
    ).toBe('INVALID_ARGUMENT');
    expect(snapshot(team.state)).toEqual(before);
  });

  it.each([
    ['a first record with a workspace', 'first', /first appears with a workspace/],
    ['a workspace gained on retire', 'late', /gained a workspace/],
    ['a changed workspace', 'changed', /changed its workspace/],
    ['a dropped workspace', 'dropped', /changed its workspace/],
  ] as const)('refuses %s on replay with LOG_INVARIANT', (_label, kind, why) => {
    const team = createTestTeam();
    const id = team.spawn('alice', { activate: false });
    const spawned = team.log.at(-1) as Extract<TeamRecord, { type: 'member' }>;
    let bad: TeamRecord;
    if (kind === 'first') {
      team.log.pop();
      bad = { ...spawned, member: { ...spawned.member, workspace } };
    } else if (kind === 'late') {
      team.run((s) => s.setMemberPhase(id, 'active'));
      const retired = team.state.setMemberPhase(id, 'retired');
      bad = { ...retired, member: { ...retired.member, workspace } };
    } else {
      team.run((s) => s.activateMember(id, { workspace }));
      const retired = team.state.setMemberPhase(id, 'retired');
      const { workspace: _dropped, ...rest } = retired.member;
      bad = {
        ...retired,
        member: kind === 'dropped' ? rest : { ...rest, workspace: { ...workspace, branch: 'x' } },
      };
    }
    const state = TeamState.fromRecords(team.log, { teamId: TEAM_ID });
    const error = catchTeamError(() => state.apply(bad));
    expect(error.code).toBe('LOG_INVARIANT');
    expect(error.message).toMatch(why);
  });
});

describe('limits', () => {
  it('defaults and merges partial limits', () => {
    const state = new TeamState({ teamId: 't', limits: { maxTasks: 3 } });
    expect(state.limits).toEqual({
      maxMembers: 8,
      maxTasks: 3,
      maxPendingPerMember: 64,
      maxMessageBytes: 65536,
    });
  });

  it('refuses a negative or fractional limit and an empty team id', () => {
    expect(
      catchTeamError(() => new TeamState({ teamId: 't', limits: { maxMembers: -1 } })).code,
    ).toBe('INVALID_ARGUMENT');
    expect(
      catchTeamError(() => new TeamState({ teamId: 't', limits: { maxTasks: 1.5 } })).code,
    ).toBe('INVALID_ARGUMENT');
    expect(catchTeamError(() => new TeamState({ teamId: '' })).code).toBe('INVALID_ARGUMENT');
  });
});
