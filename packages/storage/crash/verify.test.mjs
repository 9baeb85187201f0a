// The crash test's checker must catch what it claims to catch: each case builds a small team
// folder by hand, breaks one promise, and expects the violation.

import { appendFileSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { TeamState, TRANSCRIPT_SCHEMA_VERSION, textContent } from '@teamwire/core';
import { createManualClock } from '@teamwire/core/testing';
import { afterEach, describe, expect, it } from 'vitest';
import { checkTeamFolder, readAcknowledged } from './verify.mjs';

const TEAM = 'team-1';
const ALICE = 'member-alice';
const BOB = 'member-bob';

const folders = [];
afterEach(() => {
  for (const folder of folders.splice(0)) rmSync(folder, { recursive: true, force: true });
});

/**
 * A team (lead, alice, bob) with two messages from the lead, `m-1` to alice and `m-2` to bob,
 * and a task alice claimed and completed. `deliver` lists the ids delivered (transcript line,
 * then `message.delivered`).
 */
function buildTeam({ deliver = ['m-1', 'm-2'] } = {}) {
  const state = new TeamState({ teamId: TEAM, clock: createManualClock() });
  const records = [...state.createLead({ id: TEAM, agentType: 'lead', provider: 'scripted:1' })];
  for (const [id, name] of [
    [ALICE, 'alice'],
    [BOB, 'bob'],
  ]) {
    records.push(
      state.spawnMember(TEAM, {
        id,
        name,
        description: name,
        agentType: 'worker',
        provider: 'scripted:1',
        context: 'fresh',
      }),
      state.setMemberPhase(id, 'active'),
    );
  }
  const transcripts = new Map([
    [ALICE, []],
    [BOB, []],
  ]);
  for (const [id, targetId] of [
    ['m-1', ALICE],
    ['m-2', BOB],
  ]) {
    records.push(
      state.queueMessage({
        id,
        senderId: TEAM,
        targetId,
        kind: 'message',
        delivery: 'wakeup',
        content: textContent(`hello ${id}`),
      }),
    );
  }
  for (const id of deliver) {
    const record = state.markDelivered({ messageId: id });
    transcripts.get(record.targetId).push(mailEntry(id));
    records.push(record);
  }
  records.push(state.createTask(TEAM, { subject: 'work', description: 'do it' }));
  records.push(state.updateTask(ALICE, { taskId: 'task-1', action: { type: 'claim' } }));
  records.push(state.updateTask(ALICE, { taskId: 'task-1', action: { type: 'complete' } }));
  return { records, transcripts };
}

function mailEntry(messageId) {
  return {
    schemaVersion: TRANSCRIPT_SCHEMA_VERSION,
    at: 1,
    message: {
      role: 'user',
      content: textContent(`[message from lead]\n${messageId}`),
      source: { kind: 'team-message', messageId, senderId: TEAM, senderName: 'lead' },
    },
  };
}

function writeFolder({ records, transcripts }) {
  const dir = mkdtempSync(join(tmpdir(), 'teamwire-crash-check-'));
  folders.push(dir);
  writeFileSync(join(dir, 'log.jsonl'), lines(records));
  mkdirSync(join(dir, 'transcripts'));
  for (const [memberId, entries] of transcripts) {
    if (entries.length > 0)
      writeFileSync(join(dir, 'transcripts', `${memberId}.jsonl`), lines(entries));
  }
  return dir;
}

function lines(values) {
  return values.map((value) => `${JSON.stringify(value)}\n`).join('');
}

async function check(dir, acknowledged, final = false) {
  return checkTeamFolder({ dir, teamId: TEAM, acknowledged, final });
}

describe('the crash test checker', () => {
  it('passes a consistent folder, after a kill and after the drain', async () => {
    const dir = writeFolder(buildTeam());
    const afterKill = await check(dir, ['m-1', 'm-2']);
    expect(afterKill.violations).toEqual([]);
    expect(afterKill.counts).toMatchObject({ queued: 2, delivered: 2, tasks: 1, taskRecords: 3 });
    expect((await check(dir, ['m-1', 'm-2'], true)).violations).toEqual([]);
  });

  it('reports an acknowledged send the log does not hold', async () => {
    const dir = writeFolder(buildTeam());
    const { violations } = await check(dir, ['m-1', 'm-9']);
    expect(violations).toEqual(['acknowledged send m-9 is not queued in the log']);
  });

  it('reports a message id that appears twice in a transcript', async () => {
    const team = buildTeam();
    team.transcripts.get(ALICE).push(mailEntry('m-1'));
    const { violations } = await check(writeFolder(team), []);
    expect(violations).toEqual(["message m-1 appears twice in alice's transcript"]);
  });

  it('reports a message in the transcript of a member it was not sent to', async () => {
    const team = buildTeam({ deliver: ['m-1'] });
    team.transcripts.get(ALICE).push(mailEntry('m-2'));
    const { violations } = await check(writeFolder(team), []);
    expect(violations).toEqual(["message m-2 for bob is in alice's transcript"]);
  });

  it('reports a message marked delivered that its target transcript lacks', async () => {
    const team = buildTeam();
    team.transcripts.set(BOB, []);
    const { violations } = await check(writeFolder(team), []);
    expect(violations).toEqual([
      "message m-2 is marked delivered but bob's transcript does not hold it",
    ]);
  });

  it('accepts pending mail after a kill but not after the drain', async () => {
    const team = buildTeam({ deliver: ['m-1'] });
    const dir = writeFolder(team);
    const afterKill = await check(dir, ['m-1', 'm-2']);
    expect(afterKill.violations).toEqual([]);
    expect(afterKill.counts.pending).toBe(1);
    const { violations } = await check(dir, ['m-1', 'm-2'], true);
    expect(violations).toEqual([
      '1 message(s) still pending after the drain, first m-2 for bob',
      "acknowledged send m-2 is in bob's transcript 0 times, not once",
      "message m-2 (message) is in bob's transcript 0 times, not once",
    ]);
  });

  it('counts a message held in the transcript but not yet marked delivered', async () => {
    const team = buildTeam({ deliver: ['m-1'] });
    team.transcripts.get(BOB).push(mailEntry('m-2'));
    const result = await check(writeFolder(team), ['m-2']);
    expect(result.violations).toEqual([]);
    expect(result.counts.heldUndelivered).toBe(1);
  });

  it('reports a task that passes between owners without being released', async () => {
    const team = buildTeam();
    const claim = team.records.find((r) => r.type === 'task' && r.task.status === 'in_progress');
    // Replace the completion by a second claim, as a lost compare-and-set would write it.
    const last = team.records.length - 1;
    team.records[last] = {
      ...claim,
      seq: team.records[last].seq,
      task: { ...claim.task, revision: 3, ownerId: BOB },
    };
    const { violations } = await check(writeFolder(team), []);
    expect(violations).toEqual([
      `task task-1 passes from owner ${ALICE} to ${BOB} at seq ${team.records[last].seq}`,
    ]);
  });

  it('reports a log that does not fold, such as a skipped task revision', async () => {
    const team = buildTeam();
    const last = team.records.length - 1;
    team.records[last] = {
      ...team.records[last],
      task: { ...team.records[last].task, revision: 4 },
    };
    const { violations } = await check(writeFolder(team), []);
    expect(violations).toHaveLength(1);
    expect(violations[0]).toMatch(/^the log does not fold: LOG_INVARIANT: .*revision 4/);
  });

  it('reports a log with a damaged line and tolerates a torn tail', async () => {
    const damaged = buildTeam();
    const dir = writeFolder(damaged);
    appendFileSync(join(dir, 'log.jsonl'), '{"seq":');
    const torn = await check(dir, []);
    expect(torn.violations).toEqual([]);
    expect(torn.counts.tornLogBytes).toBe(7);
    appendFileSync(join(dir, 'log.jsonl'), '\n');
    const { violations } = await check(dir, []);
    expect(violations).toHaveLength(1);
    expect(violations[0]).toMatch(/^the log .* does not read: CORRUPT_LOG/);
  });

  it('accepts a compaction that fits its context and reports one that does not', async () => {
    const compaction = (over) => ({
      schemaVersion: TRANSCRIPT_SCHEMA_VERSION,
      at: 2,
      message: {
        role: 'user',
        content: textContent('summary'),
        source: {
          kind: 'compaction',
          compactionId: 'c-1',
          contextLength: 3,
          head: 1,
          replaced: 1,
          retained: [],
          deliveredIds: ['m-1'],
          reason: 'budget',
          policy: 'deterministic',
          tokensBefore: 10,
          tokensAfter: 5,
          estimated: false,
          durationMs: 0,
          ...over,
        },
      },
    });
    const brief = {
      schemaVersion: TRANSCRIPT_SCHEMA_VERSION,
      at: 1,
      message: { role: 'user', content: textContent('brief') },
    };
    const answer = {
      schemaVersion: TRANSCRIPT_SCHEMA_VERSION,
      at: 1,
      message: { role: 'assistant', content: textContent('ok'), toolCalls: [] },
    };
    const folder = (entry) => {
      const team = buildTeam();
      team.transcripts.set(ALICE, [brief, mailEntry('m-1'), answer, entry]);
      return writeFolder(team);
    };
    const good = await check(folder(compaction({})), []);
    expect(good.violations).toEqual([]);
    expect(good.counts.compactions).toBe(1);

    const wrongLength = await check(folder(compaction({ contextLength: 4 })), []);
    expect(wrongLength.violations).toEqual([
      expect.stringMatching(/does not fold to a context: compaction c-1 .*3 messages, not 4/),
    ]);
    const unknownId = await check(folder(compaction({ deliveredIds: ['m-9'] })), []);
    expect(unknownId.violations).toEqual([
      expect.stringMatching(/compaction replaces message m-9, which no earlier line holds/),
    ]);
  });

  it('reads only the complete lines of the acknowledgement file', () => {
    const dir = mkdtempSync(join(tmpdir(), 'teamwire-crash-check-'));
    folders.push(dir);
    const path = join(dir, 'acks');
    expect(readAcknowledged(path)).toEqual([]);
    writeFileSync(path, 'm-1\nm-2\nm-3');
    expect(readAcknowledged(path)).toEqual(['m-1', 'm-2']);
  });
});
