import type { TranscriptEntry } from '@teamwire/core';
import { afterEach, beforeEach, expect, it } from 'vitest';
import { MAX_VALUE_BYTES } from './limits.js';
import { describePg, Scratch } from './test-support.js';

const TEAM = '01JTEAMTRANSCRIPTS00000000';
const ALICE = 'alice-id';

function mail(text: string, messageId: string): TranscriptEntry {
  return {
    schemaVersion: 1,
    at: 1,
    message: {
      role: 'user',
      content: [{ type: 'text', text }],
      source: { kind: 'team-message', messageId, senderId: 'lead-id', senderName: 'lead' },
    },
  };
}

function plain(text: string): TranscriptEntry {
  return { schemaVersion: 1, at: 2, message: { role: 'user', content: [{ type: 'text', text }] } };
}

describePg('PostgreSQL transcripts', () => {
  let scratch: Scratch;
  beforeEach(() => {
    scratch = new Scratch();
  });
  afterEach(async () => {
    await scratch.cleanup();
  });

  it('records a team message once per member: a second append of it is MESSAGE_STATE, nothing written', async () => {
    const store = await scratch.open(TEAM);
    await store.transcripts.append({ memberId: ALICE, entries: [mail('hello', 'msg-1')] });
    const again = store.transcripts.append({
      memberId: ALICE,
      entries: [plain('before'), mail('hello again', 'msg-1')],
    });
    await expect(again).rejects.toMatchObject({
      code: 'MESSAGE_STATE',
      details: { messageId: 'msg-1', memberId: ALICE },
    });
    await expect(again).rejects.toThrow(/message msg-1 is already in member alice-id's transcript/);
    expect(await store.transcripts.load({ memberId: ALICE })).toEqual([mail('hello', 'msg-1')]);
    // Another member may hold the same message; a later append of this member goes on.
    await store.transcripts.append({ memberId: 'bob-id', entries: [mail('hello', 'msg-1')] });
    await store.transcripts.append({ memberId: ALICE, entries: [plain('next')] });
    expect(await store.transcripts.load({ memberId: ALICE })).toHaveLength(2);
  });

  it('stores one message rendered to several entries in one append as its parts', async () => {
    const store = await scratch.open(TEAM);
    const entries = [mail('call', 'msg-7'), mail('result', 'msg-7'), mail('other', 'msg-8')];
    await store.transcripts.append({ memberId: ALICE, entries });
    expect(await store.transcripts.load({ memberId: ALICE })).toEqual(entries);
    const rows = await scratch.sql(
      `SELECT message_id, message_part FROM "${scratch.schema}".transcript ORDER BY idx`,
    );
    expect(rows.rows).toEqual([
      { message_id: 'msg-7', message_part: 0 },
      { message_id: 'msg-7', message_part: 1 },
      { message_id: 'msg-8', message_part: 0 },
    ]);
  });

  it('loads long transcripts page by page', async () => {
    const store = await scratch.open(TEAM);
    const entries = Array.from({ length: 2500 }, (_, i) => plain(`entry ${i}`));
    await store.transcripts.append({ memberId: ALICE, entries: entries.slice(0, 1200) });
    await store.transcripts.append({ memberId: ALICE, entries: entries.slice(1200) });
    expect(await store.transcripts.load({ memberId: ALICE })).toEqual(entries);
  });

  it('refuses an entry over the size limit and an invalid member id (INVALID_ARGUMENT)', async () => {
    const store = await scratch.open(TEAM);
    await expect(
      store.transcripts.append({
        memberId: ALICE,
        entries: [plain('x'.repeat(MAX_VALUE_BYTES + 1))],
      }),
    ).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
    await expect(
      store.transcripts.append({ memberId: '', entries: [plain('x')] }),
    ).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
    await expect(
      store.transcripts.append({ memberId: ALICE, entries: [{ bad: true } as never] }),
    ).rejects.toMatchObject({ code: 'INVALID_RECORD' });
    expect(await store.transcripts.load({ memberId: ALICE })).toEqual([]);
  });

  it('reports a row that does not decode as CORRUPT_LOG naming member and idx', async () => {
    const store = await scratch.open(TEAM);
    await store.transcripts.append({ memberId: ALICE, entries: [plain('a'), plain('b')] });
    await scratch.sql(`UPDATE "${scratch.schema}".transcript SET entry = '[]' WHERE idx = 2`);
    await expect(store.transcripts.load({ memberId: ALICE })).rejects.toMatchObject({
      code: 'CORRUPT_LOG',
      details: { memberId: ALICE, idx: 2 },
    });
  });
});
