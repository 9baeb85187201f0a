import {
  createEventHub,
  DEAD_LETTER_DETAIL_MAX,
  DEFAULT_TEAM_LIMITS,
  MEMBER_DESCRIPTION_MAX,
  type TeamRecord,
  TeamState,
} from '@teamwire/core';
import { createManualClock, createMemoryTeamLog } from '@teamwire/core/testing';
import { afterEach, describe, expect, it } from 'vitest';
import {
  type DashboardRoutesOptions,
  type DashboardSnapshot,
  MAIL_TEXT_KEEP,
  type MessageBody,
  SNAPSHOT_BYTES_DEFAULT,
} from './index.js';
import {
  at,
  chattyLog,
  fakePage,
  http,
  isLegalMessage,
  serveRoutes,
  type TestServer,
} from './test-helpers.js';
import { fromSnapshot } from './view-model.js';

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function serve(
  log: DashboardRoutesOptions['log'],
  options: Partial<DashboardRoutesOptions> = {},
): Promise<TestServer> {
  const page = await fakePage();
  const hub = createEventHub({ teamId: 't1' });
  cleanups.push(page.remove, () => hub.close());
  const server = await serveRoutes({ log, hub, assetsDir: page.dir, ...options });
  cleanups.push(() => server.close());
  return server;
}

const snapshotOf = async (server: TestServer) => {
  const reply = await http(at(server, `/api/snapshot?token=${server.token}`));
  return { reply, snapshot: JSON.parse(reply.body) as DashboardSnapshot };
};

const FILLER = 'All work and no play makes a long message. '.repeat(1500).slice(0, 60 * 1024);

/** Seqs from `from` to `to`, both included. */
const range = (from: number, to: number) =>
  Array.from({ length: to - from + 1 }, (_, i) => from + i);

describe('the snapshot', () => {
  it('of 10,000 legal 60 KiB messages is a 200 of JSON within its byte bound, each body cut with its mark', async () => {
    const text = (seq: number) => `message ${seq}: ${FILLER}`;
    expect(isLegalMessage(text(10_002))).toBe(true);
    const server = await serve(chattyLog({ teamId: 't1', messages: 10_000, text }));
    const { reply, snapshot } = await snapshotOf(server);
    expect(reply.status).toBe(200);
    expect(reply.raw.length).toBeLessThanOrEqual(SNAPSHOT_BYTES_DEFAULT);
    expect(Number(reply.headers['content-length'])).toBe(reply.raw.length);
    expect(snapshot).toMatchObject({ version: 1, teamId: 't1', readOnly: true });
    const seqs = snapshot.records.map((r) => r.seq);
    // both members, then the newest messages, in seq order
    expect(seqs).toEqual([1, 2, ...range(seqs[2] as number, 10_002)]);
    expect(snapshot.truncated).toBe(10_002 - seqs.length);
    for (const record of snapshot.records.slice(2)) {
      expect(record.cut).toEqual({ 'message.content': text(record.seq).length });
      expect(record.type === 'message.queued' && record.message.content).toEqual([
        { type: 'text', text: text(record.seq).slice(0, MAIL_TEXT_KEEP) },
      ]);
    }

    // the page asks for one whole
    const whole = await http(at(server, '/api/messages/10002'), {
      headers: { authorization: `Bearer ${server.token}` },
    });
    expect(whole.status).toBe(200);
    expect(JSON.parse(whole.body)).toEqual({
      seq: 10_002,
      id: 'm-10002',
      text: text(10_002),
      more: 0,
    } satisfies MessageBody);
  });

  it('holds the member records and the newest records that fit maxSnapshotBytes, and cuts long descriptions', async () => {
    const text = (seq: number) => `note ${seq} ${'y'.repeat(2000)}`;
    const description = 'd'.repeat(MEMBER_DESCRIPTION_MAX);
    const log = chattyLog({
      teamId: 't1',
      messages: 200,
      text,
      change: (record) =>
        record.type === 'member' && record.member.name === 'ann'
          ? { ...record, member: { ...record.member, description } }
          : record,
    });
    const maxSnapshotBytes = 32 * 1024;
    const server = await serve(log, { maxSnapshotBytes });
    const { reply, snapshot } = await snapshotOf(server);
    expect(reply.status).toBe(200);
    expect(reply.raw.length).toBeLessThanOrEqual(maxSnapshotBytes);
    const seqs = snapshot.records.map((r) => r.seq);
    expect(seqs.length).toBeGreaterThan(12);
    expect(seqs).toEqual([1, 2, ...range(seqs[2] as number, 202)]);
    expect(snapshot.truncated).toBe(202 - seqs.length);
    const ann = snapshot.records[1] as TeamRecord & { cut?: object };
    expect(ann.cut).toEqual({ 'member.description': MEMBER_DESCRIPTION_MAX });
    expect(ann.type === 'member' && ann.member.description).toBe(
      description.slice(0, MAIL_TEXT_KEEP),
    );
    // a snapshot too small for any message still holds the members
    const tiny = await serve(log, { maxSnapshotBytes: 1600 });
    expect((await snapshotOf(tiny)).snapshot.records.map((r) => r.seq)).toEqual([1, 2]);
    await expect(serve(log, { maxSnapshotBytes: -1 })).rejects.toMatchObject({
      code: 'INVALID_ARGUMENT',
    });
  });

  it('carries dead letters within its byte bound, each long detail cut with its mark', async () => {
    const state = new TeamState({ teamId: 't1', clock: createManualClock() });
    const records: TeamRecord[] = [
      ...state.createLead({ id: 't1', agentType: 'lead', provider: 'scripted' }),
      state.spawnMember('t1', {
        id: 'ann-id',
        name: 'ann',
        description: 'works',
        agentType: 'worker',
        provider: 'scripted',
        context: 'fresh',
      }),
    ];
    for (let i = 0; i < 100; i++) {
      records.push(
        state.queueMessage({
          id: `m-${i}`,
          senderId: 't1',
          targetId: 'ann-id',
          kind: 'message',
          delivery: 'wakeup',
          content: [{ type: 'text', text: `note ${i}` }],
        }),
        state.deadLetter({
          messageId: `m-${i}`,
          reason: 'EXCEEDS_CONTEXT',
          detail: `note ${i} ${'is too large '.repeat(DEAD_LETTER_DETAIL_MAX)}`,
        }),
      );
    }
    const log = createMemoryTeamLog({ teamId: 't1' });
    await log.append({ records });
    const maxSnapshotBytes = 16 * 1024;
    const { reply, snapshot } = await snapshotOf(await serve(log, { maxSnapshotBytes }));
    expect(reply.status).toBe(200);
    expect(reply.raw.length).toBeLessThanOrEqual(maxSnapshotBytes);
    expect(snapshot.truncated).toBeGreaterThan(0);
    const dead = snapshot.records.filter((r) => r.type === 'message.dead_lettered');
    expect(dead.length).toBeGreaterThan(5);
    for (const record of dead) {
      const written = records.find((r) => r.seq === record.seq) as typeof record;
      expect(record.cut).toEqual({ 'deadLetter.detail': written.detail?.length });
      expect(record.detail).toBe(written.detail?.slice(0, MAIL_TEXT_KEEP));
    }
    // the page marks each message it holds, and counts every dead letter for ann
    const view = fromSnapshot(snapshot);
    const shown = new Set(view.mail.map((m) => m.id));
    const marked = dead.filter((r) => shown.has(r.messageId));
    expect(marked.length).toBeGreaterThan(0);
    expect(view.mail.map((m) => [m.id, m.deadLetter?.detailMore])).toEqual(
      marked.map((r) => [r.messageId, (r.cut?.['deadLetter.detail'] ?? 0) - MAIL_TEXT_KEEP]),
    );
    expect(view.members.get('ann-id')?.deadLetters).toBe(dead.length);
  });

  it('answers 500 with a JSON error, never a 200 cut short, when a record cannot be serialized', async () => {
    const log = chattyLog({
      teamId: 't1',
      messages: 5,
      text: (seq) => `m${seq}`,
      change: (record) =>
        record.seq === 4 ? ({ ...record, at: 4n } as unknown as TeamRecord) : record,
    });
    const server = await serve(log);
    const reply = await http(at(server, `/api/snapshot?token=${server.token}`));
    expect(reply.status).toBe(500);
    expect(JSON.parse(reply.body)).toEqual({
      error: { code: 'INTERNAL', message: 'the dashboard failed to read the team' },
    });
  });
});

describe('GET api/messages/<seq>', () => {
  it('needs the token, names a message by its seq, and bounds the text it answers', async () => {
    // a log written under larger limits than the default: its message is cut to the bound
    const huge = '"é😀\n'.repeat(40_000);
    const text = (seq: number) => (seq === 4 ? huge : `m${seq}`);
    const server = await serve(chattyLog({ teamId: 't1', messages: 3, text }));
    const get = (path: string, token: string | null = server.token) =>
      http(at(server, path), {
        headers: token === null ? {} : { authorization: `Bearer ${token}` },
      });
    expect((await get('/api/messages/3', null)).status).toBe(401);
    expect((await get('/api/messages/3?token=not-the-token-at-all', null)).status).toBe(401);
    for (const bad of ['abc', '0', '-1', '1e3', '12345678901234567']) {
      expect((await get(`/api/messages/${bad}`)).status, bad).toBe(400);
    }
    expect((await get('/api/messages/1')).status).toBe(404); // a member record
    expect((await get('/api/messages/6')).status).toBe(404); // past the end
    expect(JSON.parse((await get('/api/messages/3')).body)).toEqual({
      seq: 3,
      id: 'm-3',
      text: 'm3',
      more: 0,
    });
    const cut = JSON.parse((await get('/api/messages/4')).body) as MessageBody;
    const bytes = Buffer.byteLength(JSON.stringify(cut.text));
    expect(bytes).toBeLessThanOrEqual(DEFAULT_TEAM_LIMITS.maxMessageBytes);
    expect(bytes).toBeGreaterThan(DEFAULT_TEAM_LIMITS.maxMessageBytes - 16);
    expect(huge.startsWith(cut.text)).toBe(true);
    expect(cut.more).toBe(huge.length - cut.text.length);
  });
});
