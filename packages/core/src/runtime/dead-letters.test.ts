import { describe, expect, it } from 'vitest';
import { textContent } from '../content.js';
import { foldTeam } from '../state/fold.js';
import { TeamState } from '../state/team-state.js';
import { createManualClock } from '../testing/manual-clock.js';
import { createMemoryTeamLog, createMemoryTranscriptStore } from '../testing/memory-stores.js';
import { notedLead, openHarness, spawnIdle, TEAM_ID } from './test-harness.js';

const ready = ({ call }: { call: number }) => ({ text: call === 1 ? 'Ready.' : `reply ${call}` });

function teamWithWorker(clock = createManualClock()) {
  const state = new TeamState({ teamId: TEAM_ID, clock });
  const records = [
    ...state.createLead({ id: TEAM_ID, agentType: 'lead', provider: 'scripted:scripted-1' }),
    state.spawnMember(TEAM_ID, {
      id: 'm-bob',
      name: 'bob',
      description: 'a worker',
      agentType: 'worker',
      provider: 'scripted:scripted-1',
      context: 'fresh',
    }),
    state.queueMessage({
      id: 'spawn-prompt',
      senderId: TEAM_ID,
      targetId: 'm-bob',
      kind: 'message',
      delivery: 'wakeup',
      content: textContent('Review the folder.'),
    }),
  ];
  return { state, records, clock };
}

describe('dead letters: mail that can never be delivered ends, with a reason', () => {
  it('ends the spawn prompt of a member a crash left provisioning, so nothing stays pending', async () => {
    const { records, clock } = teamWithWorker();
    const log = createMemoryTeamLog({ teamId: TEAM_ID });
    await log.append({ records });
    const h = await openHarness({
      memory: { log, transcripts: createMemoryTranscriptStore() },
      scripts: { lead: notedLead },
      clock,
    });
    await h.service.idle();
    const team = foldTeam(log.records(), { teamId: TEAM_ID });
    expect(team.roster.find((m) => m.name === 'bob')?.phase).toBe('failed');
    expect(team.pendingMail).toEqual([]);
    expect(team.deadLetters.map((d) => [d.message.id, d.reason])).toEqual([
      ['spawn-prompt', 'TARGET_FAILED'],
    ]);
    expect(team.deadLetters[0]?.detail).toMatch(/bob failed: interrupted while provisioning/);
  });

  it('ends mail still pending when its target retires, a second shutdown request included', async () => {
    const h = await openHarness({ scripts: { lead: notedLead, bob: ready } });
    await spawnIdle(h, 'bob');
    const later = await h.service.sendMessage(h.service.lead, {
      to: 'bob',
      text: 'later',
      delivery: 'quiet',
    });
    await h.service.shutdown(h.service.lead, { target: 'bob' });
    const again = await h.service.shutdown(h.service.lead, { target: 'bob' });
    await h.service.idle();
    const team = foldTeam(h.log.records(), { teamId: TEAM_ID });
    expect(team.pendingMail).toEqual([]);
    expect(team.deadLetters.map((d) => [d.message.id, d.reason])).toEqual([
      [later.messageId, 'TARGET_RETIRED'],
      [again.messageId, 'TARGET_RETIRED'],
    ]);
  });

  it('sweeps mail a log left pending for members that already left when the team opens', async () => {
    const { state, records, clock } = teamWithWorker();
    // An older writer retired bob without ending its mail.
    records.push(state.activateMember('m-bob'), state.setMemberPhase('m-bob', 'retired'));
    const log = createMemoryTeamLog({ teamId: TEAM_ID });
    await log.append({ records });
    const h = await openHarness({
      memory: { log, transcripts: createMemoryTranscriptStore() },
      scripts: { lead: notedLead },
      clock,
    });
    await h.service.idle();
    const team = foldTeam(log.records(), { teamId: TEAM_ID });
    expect(team.pendingMail).toEqual([]);
    expect(team.deadLetters.map((d) => [d.message.id, d.reason])).toEqual([
      ['spawn-prompt', 'TARGET_RETIRED'],
    ]);
  });

  it('is final: a dead letter is never delivered, survives a snapshot, and reverts exactly', () => {
    const { state } = teamWithWorker();
    state.startJournal();
    const settled = state.lastSeq;
    const [, dead] = state.leave('m-bob', 'failed', 'no model');
    expect(dead).toMatchObject({
      type: 'message.dead_lettered',
      schemaVersion: 2,
      messageId: 'spawn-prompt',
      reason: 'TARGET_FAILED',
    });
    expect(() => state.markDelivered({ messageId: 'spawn-prompt' })).toThrow(
      expect.objectContaining({ code: 'MESSAGE_STATE' }),
    );
    state.revertTo(settled);
    expect(state.pending('m-bob').map((m) => m.id)).toEqual(['spawn-prompt']);
    expect(state.deadLetters()).toEqual([]);
    state.leave('m-bob', 'failed', 'no model');
    state.settle(state.lastSeq);
    const restored = TeamState.fromSnapshot(JSON.parse(JSON.stringify(state.snapshot())), {
      teamId: TEAM_ID,
    });
    expect(restored.deadLetters()).toEqual(state.deadLetters());
    expect(restored.pendingMail()).toEqual([]);
    expect(() => restored.markDelivered({ messageId: 'spawn-prompt' })).toThrow(
      expect.objectContaining({ code: 'MESSAGE_STATE' }),
    );
  });
});
