import type {
  IncomingProposal,
  MessageQueuedRecord,
  TeamRecord,
  TeamSequencer,
  TeamService,
} from '@teamwire/core';
import { createAgentRegistry, openTeam, TeamError } from '@teamwire/core';
import {
  conformanceRecord,
  createScriptedModel,
  createSimpleFormat,
  createSimplePolicy,
} from '@teamwire/core/testing';
import pg from 'pg';
import { afterEach, beforeEach, expect, it } from 'vitest';
import { PostgresSequencer, SEQUENCER_FORMAT_VERSION, sequencerChannelsOf } from './sequencer.js';
import type { PostgresTeamStore } from './store.js';
import { describePg, eventually, PG_URL, Scratch } from './test-support.js';

const TEAM = '01JTEAMSEQUENCER0000000000';
/** Short, so a process takes the sequencer's lock (and says so) within a test's patience. */
const POLL_MS = 50;

/** A `message.queued` record at `seq`, from the lead to `targetId`. */
function mail(seq: number, id: string, targetId = 'member-x'): MessageQueuedRecord {
  return {
    seq,
    at: 1_700_000_000_000 + seq,
    teamId: TEAM,
    schemaVersion: 1,
    type: 'message.queued',
    message: {
      id,
      senderId: TEAM,
      senderName: 'lead',
      targetId,
      kind: 'message',
      delivery: 'wakeup',
      content: [{ type: 'text', text: `mail ${id}` }],
    },
  };
}

function sequencerOf(store: PostgresTeamStore): PostgresSequencer {
  const sequencer = store.log.shared?.sequencer as TeamSequencer;
  expect(sequencer).toBeInstanceOf(PostgresSequencer);
  return sequencer as PostgresSequencer;
}

/** A placement that runs nothing (the process only writes), so its writes are not fenced. */
const RUNS_NOTHING = {
  specificationVersion: 'v1' as const,
  async start() {},
  runsHere: () => false,
  candidatesChanged() {},
  close: async () => {},
};

async function errorOf(promise: Promise<unknown>): Promise<TeamError> {
  try {
    await promise;
  } catch (error) {
    if (TeamError.isInstance(error)) return error;
    throw error;
  }
  throw new Error('expected a TeamError');
}

describePg('the sequencer of a team on PostgreSQL', () => {
  let scratch: Scratch;
  const services: TeamService[] = [];
  const clients: pg.Client[] = [];
  beforeEach(() => {
    scratch = new Scratch();
    services.length = 0;
  });
  afterEach(async () => {
    for (const service of services) await service.dispose().catch(() => undefined);
    for (const client of clients.splice(0)) await client.end().catch(() => undefined);
    await scratch.cleanup();
  });

  async function records(): Promise<TeamRecord[]> {
    const rows = await scratch.sql<{ record: string }>(
      `SELECT record FROM "${scratch.schema}".team_log WHERE team_id = $1 ORDER BY seq`,
      [TEAM],
    );
    return rows.rows.map((row) => JSON.parse(row.record) as TeamRecord);
  }

  /** A connection of the test's own, as `user` when given (ended after the test). */
  async function connect(user?: string): Promise<pg.Client> {
    const url = new URL(PG_URL);
    if (user !== undefined) url.username = user;
    const client = new pg.Client({ connectionString: url.toString() });
    client.on('error', () => {});
    await client.connect();
    clients.push(client);
    return client;
  }

  /** The team's proposals' channel, where proposers wake the sequencer. */
  const proposalsChannel = () =>
    sequencerChannelsOf(scratch.schema, TEAM, 'process-test').proposals;

  /**
   * Proposes as a proposer does: a row of the proposals table under `id` (the payload's own
   * unless given) and a wake, in one statement.
   */
  async function propose(payload: string, id?: string): Promise<void> {
    let rowId: unknown = id;
    try {
      rowId ??= (JSON.parse(payload) as { id?: unknown }).id;
    } catch {
      // not JSON: the row gets an id of its own
    }
    const client = await connect();
    await client.query(
      `WITH p AS (INSERT INTO "${scratch.schema}".team_proposals (team_id, id, payload)
                  VALUES ($1, $2::uuid, $3) RETURNING 1)
       SELECT pg_notify($4, $5) FROM p`,
      [
        TEAM,
        typeof rowId === 'string' && /^[0-9a-f-]{36}$/.test(rowId) ? rowId : crypto.randomUUID(),
        payload,
        proposalsChannel(),
        JSON.stringify({ v: SEQUENCER_FORMAT_VERSION, k: 'w' }),
      ],
    );
  }

  /** A store that serves as sequencer, handing every proposal it gets to `received`. */
  async function leader(received: IncomingProposal[]): Promise<PostgresTeamStore> {
    const store = await scratch.open(TEAM, { pollMs: POLL_MS });
    const sequencer = sequencerOf(store);
    sequencer.serve((proposal) => received.push(proposal));
    await eventually(() => sequencer.leading(), 'the sequencer lock');
    return store;
  }

  function proposalPayload(overrides: Record<string, unknown> = {}): string {
    return JSON.stringify({
      v: SEQUENCER_FORMAT_VERSION,
      k: 'p',
      id: crypto.randomUUID(),
      from: 'process-b',
      actor: null,
      token: null,
      records: [mail(2, 'm-forged')],
      ...overrides,
    });
  }

  it('writes a proposal id once: a second append of it is SEQ_CONFLICT naming it, nothing written', async () => {
    const store = await scratch.open(TEAM);
    const id = crypto.randomUUID();
    await store.log.append({ records: [conformanceRecord(TEAM, 1)] });
    await store.log.append({ records: [mail(2, 'a')], parts: [{ count: 1, proposalId: id }] });
    const error = await errorOf(
      store.log.append({ records: [mail(3, 'b')], parts: [{ count: 1, proposalId: id }] }),
    );
    expect(error.code).toBe('SEQ_CONFLICT');
    expect(error.details?.proposalIds).toEqual([id]);
    expect((await records()).map((r) => r.seq)).toEqual([1, 2]);
    const stored = await scratch.sql<{ proposal_id: string | null }>(
      `SELECT proposal_id::text AS proposal_id FROM "${scratch.schema}".team_log ORDER BY seq`,
    );
    expect(stored.rows.map((row) => row.proposal_id)).toEqual([null, id]);
  });

  it('writes the commands proposed together under one id in one append, the id held once', async () => {
    // A proposer whose proposal went unanswered appends its commands itself: one part each, all
    // under the proposal's id.
    const store = await scratch.open(TEAM);
    const id = crypto.randomUUID();
    await store.log.append({ records: [conformanceRecord(TEAM, 1)] });
    await store.log.append({
      records: [mail(2, 'a'), mail(3, 'b')],
      parts: [
        { count: 1, proposalId: id },
        { count: 1, proposalId: id },
      ],
    });
    const stored = await scratch.sql<{ proposal_id: string | null }>(
      `SELECT proposal_id::text AS proposal_id FROM "${scratch.schema}".team_log ORDER BY seq`,
    );
    expect(stored.rows.map((row) => row.proposal_id)).toEqual([null, id, null]);
  });

  it("fences each part with its own proposer's claim: one failed claim refuses only its part", async () => {
    const received: IncomingProposal[] = [];
    const store = await leader(received);
    await store.log.append({ records: [conformanceRecord(TEAM, 1)] });
    await propose(proposalPayload({ actor: 'member-x', token: '424242' }));
    await eventually(() => received.length === 1, 'the proposal');
    const proposal = received[0] as IncomingProposal;
    expect(proposal.actorId).toBe('member-x');
    const own = crypto.randomUUID();
    const batch = [mail(2, 'm-forged'), mail(3, 'm-own')];
    // process-b holds no placement of member-x with token 424242: its part is refused
    const refused = await errorOf(
      store.log.append({
        records: batch,
        parts: [
          { count: 1, actorId: 'member-x', proposal },
          { count: 1, proposalId: own },
        ],
      }),
    );
    expect(refused.code).toBe('FENCED');
    expect(refused.details).toMatchObject({ memberId: 'member-x', part: 0 });
    expect((await records()).map((r) => r.seq)).toEqual([1]);
    // the other part goes through alone
    await store.log.append({ records: [mail(2, 'm-own')], parts: [{ count: 1, proposalId: own }] });
    // with the claim in place, the proposal is written with its proposer's process and token
    await scratch.sql(
      `INSERT INTO "${scratch.schema}".placements (team_id, member_id, process_id, token)
       VALUES ($1, 'member-x', 'process-b', 424242)`,
      [TEAM],
    );
    await store.log.append({
      records: [mail(3, 'm-forged')],
      parts: [{ count: 1, actorId: 'member-x', proposal }],
    });
    const rows = await scratch.sql<{ process_id: string; fence: string; proposal_id: string }>(
      `SELECT process_id, fence::text AS fence, proposal_id::text AS proposal_id
         FROM "${scratch.schema}".team_log WHERE seq = 3`,
    );
    expect(rows.rows).toEqual([
      { process_id: 'process-b', fence: '424242', proposal_id: proposal.id },
    ]);
  });

  it('validates every proposal it takes and drops what is malformed, too large or stale', async () => {
    const received: IncomingProposal[] = [];
    const store = await leader(received);
    const sequencer = sequencerOf(store);
    const before = sequencer.stats.dropped;
    const stale = proposalPayload();
    await scratch.sql(
      `INSERT INTO "${scratch.schema}".team_proposals (team_id, id, payload, proposed_at)
       VALUES ($1, $2::uuid, $3, clock_timestamp() - interval '1 minute')`,
      [TEAM, JSON.parse(stale).id, stale],
    );
    const bad = [
      'not json',
      JSON.stringify({ v: 99, k: 'p' }),
      proposalPayload({ id: 'not-a-uuid' }),
      proposalPayload({ token: 'drop table' }),
      proposalPayload({ records: [] }),
      proposalPayload({ records: [{ ...mail(2, 'x'), teamId: 'another-team' }] }),
      proposalPayload({ records: [mail(2, 'x'), mail(4, 'y')] }),
      proposalPayload({ records: [{ ...conformanceRecord(TEAM, 1), seq: 2 }] }),
      proposalPayload({ records: [{ ...mail(2, 'x'), type: 'nonsense' }] }),
      proposalPayload({ pad: 'x'.repeat(7300) }),
      proposalPayload({ k: 'h' }),
    ];
    for (const payload of bad) await propose(payload);
    // a row whose id is not its payload's
    await propose(proposalPayload(), crypto.randomUUID());
    await propose(proposalPayload());
    await eventually(() => received.length === 1, 'the valid proposal');
    // the stale row, each bad one and the one under another id
    expect(sequencer.stats.dropped - before).toBe(bad.length + 2);
    expect(received[0]?.records).toEqual([mail(2, 'm-forged')]);
    // every row was taken out
    const left = await scratch.sql(`SELECT 1 FROM "${scratch.schema}".team_proposals`);
    expect(left.rows).toEqual([]);
  });

  it('takes proposals only from its table: a NOTIFYed one, which any role may send, is dropped', async () => {
    const received: IncomingProposal[] = [];
    const store = await leader(received);
    const sequencer = sequencerOf(store);
    // a role that may connect but has no privilege on the team's tables
    const role = `${scratch.schema}_outsider`;
    await scratch.sql(`CREATE ROLE ${role} LOGIN`);
    // it may see the schema, not write its tables
    await scratch.sql(`GRANT USAGE ON SCHEMA "${scratch.schema}" TO ${role}`);
    try {
      const outsider = await connect(role);
      const forged = proposalPayload();
      // it may NOTIFY the proposals' channel (PostgreSQL asks no privilege for that)...
      await outsider.query('SELECT pg_notify($1, $2)', [proposalsChannel(), forged]);
      // ...and it may wake the sequencer, which then finds nothing
      const wakes = sequencer.stats.received.wake;
      await outsider.query('SELECT pg_notify($1, $2)', [
        proposalsChannel(),
        JSON.stringify({ v: SEQUENCER_FORMAT_VERSION, k: 'w' }),
      ]);
      await eventually(() => sequencer.stats.received.wake > wakes, 'the wake');
      // but it cannot write a proposal row
      const refused = await outsider
        .query(
          `INSERT INTO "${scratch.schema}".team_proposals (team_id, id, payload) VALUES ($1, $2, $3)`,
          [TEAM, JSON.parse(forged).id, forged],
        )
        .then(
          () => undefined,
          (error: { code?: string }) => error.code,
        );
      expect(refused).toBe('42501');
      // a proposal from a process of the team, written after the forged payload, is the only one
      await propose(proposalPayload({ records: [mail(2, 'm-real')] }));
      await eventually(() => received.length === 1, 'the real proposal');
      expect(
        received.map((p) => p.records[0]?.type === 'message.queued' && p.records[0].message.id),
      ).toEqual(['m-real']);
      expect(sequencer.stats.dropped).toBeGreaterThanOrEqual(1);
    } finally {
      for (const client of clients.splice(0)) await client.end().catch(() => undefined);
      await scratch.sql(`DROP OWNED BY ${role}`);
      await scratch.sql(`DROP ROLE ${role}`);
    }
  });

  describePg('with team services', () => {
    async function openProcess(lead: boolean): Promise<{
      store: PostgresTeamStore;
      service: TeamService;
    }> {
      const store = await scratch.open(TEAM, {
        pollMs: POLL_MS,
        leaseMs: 2000,
        runs: { lead, agentTypes: [] },
      });
      const model = createScriptedModel({ scripts: { lead: () => ({ text: 'OK.' }) } });
      const service = await openTeam({
        teamId: TEAM,
        log: store.log,
        transcripts: store.transcripts,
        format: createSimpleFormat(),
        policy: createSimplePolicy(),
        agents: createAgentRegistry([
          { type: 'lead', systemPrompt: 'You lead.', model },
          { type: 'worker', systemPrompt: 'You work.', model },
        ]),
        lead: { agentType: 'lead' },
        idleClaim: false,
        ...(lead ? {} : { placement: RUNS_NOTHING }),
      });
      services.push(service);
      return { store, service };
    }

    /** The lead's process (the sequencer: it serves first) and two writers, three teammates. */
    async function team() {
      const a = await openProcess(true);
      await eventually(() => sequencerOf(a.store).leading(), 'the sequencer lock');
      const b = await openProcess(false);
      const c = await openProcess(false);
      for (const name of ['alice', 'bob', 'carol']) {
        await a.service.spawnTeammate(a.service.lead, {
          name,
          description: 'helps',
          prompt: `Hi ${name}.`,
          agentType: 'worker',
        });
      }
      for (const p of [b, c]) {
        await eventually(() => p.service.listMembers(p.service.lead).length === 4, 'the team');
      }
      // the writers hear the sequencer (it says so at every look)
      await new Promise((resolve) => setTimeout(resolve, 3 * POLL_MS));
      return { a, b, c };
    }

    async function sendMany(
      procs: { service: TeamService }[],
      count: number,
      tag: string,
    ): Promise<string[]> {
      const ids = await Promise.all(
        procs.map(async ({ service }, p) => {
          const out: string[] = [];
          for (let i = 0; i < count; i++) {
            const to = ['alice', 'bob', 'carol'][(p + i) % 3] as string;
            const sent = await service.sendMessage(service.lead, { to, text: `${tag} ${p} ${i}` });
            out.push(sent.messageId);
          }
          return out;
        }),
      );
      return ids.flat();
    }

    it('commits interleaved proposals of several processes once each, through the sequencer', async () => {
      const { a, b, c } = await team();
      const sent = await sendMany([a, b, c], 8, 'hello');
      const queued = (await records()).flatMap((r) =>
        r.type === 'message.queued' && r.message.content[0]?.type === 'text' ? [r.message] : [],
      );
      const mine = queued.filter((m) => sent.includes(m.id));
      expect(mine.map((m) => m.id).toSorted()).toEqual(sent.toSorted());
      expect(new Set(mine.map((m) => m.id)).size).toBe(mine.length);
      // the writers' mail went through the sequencer: proposals committed, rows carry their ids
      const committed = [b, c].reduce(
        (sum, p) => sum + sequencerOf(p.store).stats.outcomes.committed,
        0,
      );
      expect(committed).toBeGreaterThan(0);
      const withIds = await scratch.sql<{ n: string }>(
        `SELECT count(*)::text AS n FROM "${scratch.schema}".team_log WHERE proposal_id IS NOT NULL`,
      );
      expect(Number(withIds.rows[0]?.n)).toBeGreaterThanOrEqual(committed);
      // every process holds the same mailboxes
      for (const p of [b, c]) {
        await eventually(
          () => p.store.log.lastSeq() === a.store.log.lastSeq(),
          'the writers reading the log',
        );
      }
    });

    it('sends a proposal to the sequencer alone and its answer to its proposer alone', async () => {
      const { a, b, c } = await team();
      const heard = (p: { store: PostgresTeamStore }) => ({
        ...sequencerOf(p.store).stats.received,
      });
      const [heardA, heardB, heardC] = [heard(a), heard(b), heard(c)];
      await sendMany([b], 6, 'hello');
      const committed = sequencerOf(b.store).stats.outcomes.committed;
      expect(committed).toBeGreaterThan(0);
      const since = (p: { store: PostgresTeamStore }, before: typeof heardA) => {
        const now = sequencerOf(p.store).stats.received;
        return {
          wake: now.wake - before.wake,
          proposal: now.proposal - before.proposal,
          answer: now.answer - before.answer,
        };
      };
      // the sequencer took every proposal, the proposer heard its answers, the bystander neither
      expect(since(a, heardA).proposal).toBeGreaterThanOrEqual(committed);
      expect(since(a, heardA).wake).toBeGreaterThan(0);
      expect(since(b, heardB)).toMatchObject({ wake: 0, proposal: 0 });
      expect(since(b, heardB).answer).toBeGreaterThan(0);
      expect(since(c, heardC)).toEqual({ wake: 0, proposal: 0, answer: 0 });
      expect(sequencerOf(c.store).stats.received.hello).toBeGreaterThan(0);
    });

    it('settles every send exactly once when the sequencer loses its connections mid-batch', async () => {
      const { a, b, c } = await team();
      const writers = [b, c];
      const sending = sendMany(writers, 12, 'through a failover');
      await eventually(
        () => writers.some((p) => sequencerOf(p.store).stats.outcomes.committed > 0),
        'proposals committed',
      );
      // every connection of the sequencer's process goes, its lock with them
      await scratch.sql(
        `SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = $1`,
        [`teamwire:${a.store.processId}`.slice(0, 63)],
      );
      const sent = await sending;
      const queued = (await records()).flatMap((r) =>
        r.type === 'message.queued' ? [r.message.id] : [],
      );
      for (const id of sent) expect(queued.filter((q) => q === id)).toHaveLength(1);
      expect(sent).toHaveLength(24);
      // the team has a sequencer again: whichever process takes the lock at its next look, the
      // old one's doorbell reconnecting first included
      await eventually(
        () => [a, ...writers].some((p) => sequencerOf(p.store).leading()),
        'a process leading again',
      );
    });
  });
});
