import type { TeamRecord } from '@teamwire/core';
import { TeamError, TeamState } from '@teamwire/core';
import { createManualClock } from '@teamwire/core/testing';
import { afterEach, expect, it } from 'vitest';
import { describePg, Scratch } from './test-support.js';

const TEAM = '01JTEAMAPPENDPG00000000000';

describePg('validation of appended records', () => {
  let scratch: Scratch;
  afterEach(async () => {
    await scratch.cleanup();
  });

  it('writes the records the team state built as they are, and validates anything else', async () => {
    scratch = new Scratch();
    const store = await scratch.open(TEAM);
    const state = new TeamState({ teamId: TEAM, clock: createManualClock() });
    const heard: TeamRecord[] = [];
    store.log.subscribe({ listener: (record) => heard.push(record) });

    const built: TeamRecord[] = [
      ...state.createLead({ id: TEAM, agentType: 'lead', provider: 'scripted' }),
      state.createTask(TEAM, { subject: 'first', description: 'the first task' }),
    ];
    await store.log.append({ records: built });
    // checked when they were built: written without being parsed and copied again
    expect(heard).toHaveLength(3);
    for (const [i, record] of built.entries()) expect(heard[i]).toBe(record);

    // a copy of a built record is not one: it is validated, and what is written is a new copy
    const second = state.createTask(TEAM, { subject: 'second', description: 'the second task' });
    const copy = JSON.parse(JSON.stringify(second)) as TeamRecord;
    await store.log.append({ records: [copy] });
    expect(heard[3]).not.toBe(copy);
    expect(heard[3]).toStrictEqual(second);

    // and refused when it does not match the schema, with nothing written
    const third = state.createTask(TEAM, { subject: 'third', description: 'the third task' });
    const broken = { ...third, task: { ...third.task, subject: '' } };
    const refusal = await store.log.append({ records: [broken] }).catch((error: unknown) => error);
    expect(TeamError.hasCode(refusal, 'INVALID_RECORD')).toBe(true);
    expect(store.log.lastSeq()).toBe(4);
    await store.log.append({ records: [third] });
    expect(heard[4]).toBe(third);

    // every row written reads back, validated, as the records
    const read: TeamRecord[] = [];
    for await (const record of store.log.read()) read.push(record);
    expect(read).toStrictEqual([...built, second, third]);
  });
});
