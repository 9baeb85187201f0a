import { type ChildProcess, fork } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import { availableParallelism, cpus } from 'node:os';
import { fileURLToPath } from 'node:url';
import {
  type Clock,
  type EventSink,
  type MessageQueuedRecord,
  openTeam,
  TeamError,
  type TeamRecord,
  TeamState,
  textContent,
} from '@teamwire/core';
import { createScriptedModel } from '@teamwire/core/testing';
import { openPostgresTeamStore, type PostgresTeamStore } from '@teamwire/postgres';
import { xmlFormat } from '@teamwire/protocol';
import pg from 'pg';
import type { Bench, BenchContext } from './context.js';
import { ForkedProcess } from './forked.js';
import {
  type FromTeammate,
  POSTGRES_TEAMMATE_ENV,
  type ToTeammate,
  wallNow,
} from './postgres-teammate.js';
import {
  countingLog,
  type FromWriter,
  POSTGRES_WRITER_ENV,
  POSTGRES_WRITER_PROFILE_ENV,
  storePool,
  type ToWriter,
  type WriterRound,
} from './postgres-writer.js';
import { createRandom, createUlidLike, prose, type Random } from './random.js';
import { type Figure, figure, formatNumber as formatRate } from './report.js';
import { median, now, percentile, within } from './stats.js';
import { benchAgents, errorCollector } from './team-fixture.js';
import { LEAD_TYPE, WORKER_TYPE } from './team-log.js';

const BENCH = 'postgres';
/** Connections, callers, stores or processes of the rows that write concurrently. */
const WRITERS = 16;

/** The database: `TEAMWIRE_PG_URL` (as for the package's tests), else the local default. */
export function pgUrl(): string {
  return process.env.TEAMWIRE_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
}

/** `host:port` of a connection string (never its password), as node-postgres resolves it. */
function serverOf(url: string): string {
  try {
    const probe = new pg.Client({ connectionString: url });
    return `${probe.host}:${probe.port}`;
  } catch {
    return '(unparsable TEAMWIRE_PG_URL)';
  }
}

/** Why the database cannot be used, or `undefined` when it answers. */
async function unreachable(url: string): Promise<string | undefined> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 3000 });
  client.on('error', () => {});
  try {
    await client.connect();
    await client.query('SELECT 1');
    return undefined;
  } catch (error) {
    return error instanceof Error ? error.message || error.name : String(error);
  } finally {
    await client.end().catch(() => undefined);
  }
}

/** Ulid-sized team ids (26 characters), one per measured team of the run. */
let teamCounter = 0;
function teamId(tag: string): string {
  teamCounter++;
  return `01JC0PG${tag.toUpperCase().padEnd(5, '0').slice(0, 5)}${String(teamCounter).padStart(14, '0')}`;
}

/** Teammate name `i` (from 1). */
function workerName(i: number): string {
  return `worker-${i}`;
}

// ------------------------------------------------------------------ scratch schema

/**
 * The run's own SQL schema (random name, dropped at the end): the store's tables, created by its
 * first open, and `bare_log`, the baseline's plain table (`LIKE team_log INCLUDING ALL`: the same
 * columns, types, defaults, checks and primary key, no CTE, no NOTIFY, no fencing).
 */
class Scratch {
  readonly schema = `bench_pg_${randomBytes(6).toString('hex')}`;
  readonly url: string;
  readonly admin: pg.Pool;
  readonly stores: PostgresTeamStore[] = [];
  readonly clients: pg.Client[] = [];
  readonly pools: pg.Pool[] = [];
  readonly bareTable = `"${this.schema}".bare_log`;
  /** The LISTEN/NOTIFY channel of the store in this schema (its name for short schema names). */
  readonly channel = `teamwire_${this.schema}`;

  constructor(url: string) {
    this.url = url;
    this.admin = new pg.Pool({ connectionString: url, max: 2 });
    this.admin.on('error', () => {});
  }

  /** Opens a store of `team` in the scratch schema, with its own pool (as a process would). */
  async open(
    team: string,
    options: Partial<Parameters<typeof openPostgresTeamStore>[0]> = {},
  ): Promise<PostgresTeamStore> {
    const store = await openPostgresTeamStore({
      teamId: team,
      schema: this.schema,
      ...(options.pool === undefined ? { connectionString: this.url } : {}),
      ...options,
    });
    this.stores.push(store);
    return store;
  }

  /** Closes `store` now (it is also closed by cleanup if this is not called). */
  async close(store: PostgresTeamStore): Promise<void> {
    await store.close();
    const i = this.stores.indexOf(store);
    if (i >= 0) this.stores.splice(i, 1);
  }

  /** The baseline table; the store's tables must exist (a store was opened). */
  async createBareTable(): Promise<void> {
    await this.admin.query(
      `CREATE TABLE ${this.bareTable} (LIKE "${this.schema}".team_log INCLUDING ALL)`,
    );
  }

  /**
   * A pool for a store, with the settings the store gives the pool it makes itself, ended by
   * cleanup (a store never ends a pool it was given).
   */
  pool(): pg.Pool {
    const pool = storePool(this.url);
    this.pools.push(pool);
    return pool;
  }

  /** Ends the pools made by {@link pool} (their stores must be closed). */
  async endPools(): Promise<void> {
    for (const pool of this.pools.splice(0)) await pool.end().catch(() => undefined);
  }

  /** A connection of the baseline's own. */
  async client(): Promise<pg.Client> {
    const client = new pg.Client({ connectionString: this.url });
    client.on('error', () => {});
    await client.connect();
    this.clients.push(client);
    return client;
  }

  /** Ends connections made by {@link client} before the cleanup (a server allows only so many). */
  async release(clients: readonly pg.Client[]): Promise<void> {
    for (const client of clients) {
      const i = this.clients.indexOf(client);
      if (i >= 0) this.clients.splice(i, 1);
      await client.end().catch(() => undefined);
    }
  }

  async cleanup(): Promise<void> {
    for (const store of this.stores.splice(0)) await store.close().catch(() => undefined);
    for (const client of this.clients.splice(0)) await client.end().catch(() => undefined);
    await this.endPools();
    try {
      await this.admin.query(`DROP SCHEMA IF EXISTS "${this.schema}" CASCADE`);
    } finally {
      await this.admin.end().catch(() => undefined);
    }
  }
}

// ------------------------------------------------------------------ records

/** A fixed clock for generated records (their `at`), so generation is deterministic. */
function fixedClock(): Clock {
  let time = Date.UTC(2026, 0, 5, 9, 0, 0);
  return { now: () => (time += 7), setTimer: () => () => {} };
}

/** Message bodies of a few hundred bytes: what teammates tell each other. */
function messageText(random: Random): string {
  return prose(random, random.int(200, 600));
}

/**
 * A team of a lead and `teammates` teammates as `TeamState` builds it: the setup records (lead,
 * spawns, moves to `active`) and a state to queue more messages on.
 */
function buildTeam(team: string, teammates: number) {
  const state = new TeamState({
    teamId: team,
    clock: fixedClock(),
    limits: { maxMembers: teammates + 1, maxPendingPerMember: 1_000_000_000 },
  });
  const setup: TeamRecord[] = state.createLead({
    id: team,
    agentType: LEAD_TYPE,
    provider: 'bench',
  });
  const ids: string[] = [];
  for (let i = 1; i <= teammates; i++) {
    const id = `${team.slice(0, 20)}W${String(i).padStart(5, '0')}`;
    setup.push(
      state.spawnMember(team, {
        id,
        name: workerName(i),
        description: 'Implements and tests one area of the code base.',
        agentType: WORKER_TYPE,
        provider: 'bench',
        context: 'fresh',
      }),
    );
    setup.push(state.setMemberPhase(id, 'active'));
    ids.push(id);
  }
  return { state, setup, ids };
}

/**
 * `count` `message.queued` records (lead -> teammates in turn, a few hundred bytes of text
 * each) after the setup records of a fresh team: the records `sendMessage` appends.
 */
function messageLog(team: string, count: number, seed: number) {
  const random = createRandom(seed);
  const ids = createUlidLike(random, () => Date.UTC(2026, 0, 5));
  const built = buildTeam(team, 4);
  const messages: MessageQueuedRecord[] = [];
  for (let i = 0; i < count; i++) {
    messages.push(
      built.state.queueMessage({
        id: ids.next(),
        senderId: team,
        targetId: built.ids[i % built.ids.length] as string,
        kind: 'message',
        delivery: 'wakeup',
        content: textContent(messageText(random)),
      }),
    );
  }
  return { setup: built.setup, messages };
}

/**
 * `count` message texts of a few hundred bytes, and the JSON of the `message.queued` records that
 * sending text `i` from the lead to teammate `i % 16 + 1` makes, built by `TeamState` alike: the
 * rows of the bare baseline.
 */
function queuedRows(team: string, count: number, random: Random) {
  const texts = Array.from({ length: count }, () => messageText(random));
  const sample = buildTeam(team, WRITERS);
  const ids = createUlidLike(random, () => Date.now());
  const json = texts.map((text, i) =>
    JSON.stringify(
      sample.state.queueMessage({
        id: ids.next(),
        senderId: team,
        targetId: sample.ids[i % WRITERS] as string,
        kind: 'message',
        delivery: 'wakeup',
        content: textContent(text),
      }),
    ),
  );
  return { texts, json };
}

/** The `perRound` items of round `round` (from 0) of `items`. */
function roundOf<T>(items: readonly T[], perRound: number): (round: number) => T[] {
  return (round) => items.slice(round * perRound, (round + 1) * perRound);
}

/** Mean UTF-8 bytes of the records' JSON. */
function meanBytes(texts: readonly string[]): number {
  let total = 0;
  for (const text of texts) total += Buffer.byteLength(text, 'utf8');
  return total / Math.max(1, texts.length);
}

// ------------------------------------------------------------------ bare baseline

/** What the subject writes into the columns besides the record, copied into the bare rows. */
interface RowExtras {
  actorId: string | null;
  fence: string | null;
}

/**
 * The ceiling: `texts.length` rows inserted by `clients.length` connections concurrently, one
 * plain `INSERT` per row, each awaited before the connection sends the next; the rows take the
 * next seq of one shared counter (so, like the log, inserts land at the right edge of the primary
 * key). With `notify`, the statement also runs `pg_notify` on that channel, as the store's append
 * does (a diagnostic, not a baseline). Returns rows per second.
 */
async function bareInserts(
  scratch: Scratch,
  clients: readonly pg.Client[],
  team: string,
  texts: readonly string[],
  extras: RowExtras,
  processId: string,
  notify?: string,
): Promise<number> {
  const insert = `INSERT INTO ${scratch.bareTable} (team_id, seq, record, actor_id, process_id, fence, batch_id)
     VALUES ($1, $2, $3, $4, $5, $6, $7)`;
  const sql =
    notify === undefined
      ? insert
      : `WITH ins AS (${insert} RETURNING seq) SELECT pg_notify($8, $9) FROM ins`;
  let next = 0;
  const start = now();
  await Promise.all(
    clients.map(async (client) => {
      for (;;) {
        const i = next++;
        if (i >= texts.length) return;
        const values = [
          team,
          i + 1,
          texts[i],
          extras.actorId,
          processId,
          extras.fence,
          randomUUID(),
        ];
        if (notify !== undefined) values.push(notify, JSON.stringify([team, i + 1, processId]));
        await client.query(sql, values);
      }
    }),
  );
  return (texts.length * 1000) / (now() - start);
}

/**
 * Optimistic seqs without the store: each connection inserts `last + 1` and, when the primary key
 * refuses it (`23505`), reads the rows after `last` (as a store catching up would) and tries
 * again. What any writer racing others for one counter gets, whatever it is built on.
 */
async function bareOptimistic(
  scratch: Scratch,
  clients: readonly pg.Client[],
  team: string,
  perClient: number,
  text: string,
  processId: string,
  tally: { conflicts: number },
): Promise<number> {
  const insert = `INSERT INTO ${scratch.bareTable} (team_id, seq, record, process_id, batch_id)
     VALUES ($1, $2, $3, $4, $5)`;
  const read = `SELECT seq, record FROM ${scratch.bareTable}
     WHERE team_id = $1 AND seq > $2 ORDER BY seq`;
  const start = now();
  await Promise.all(
    clients.map(async (client) => {
      let last = 0;
      for (let k = 0; k < perClient; ) {
        try {
          await client.query(insert, [team, last + 1, text, processId, randomUUID()]);
          last++;
          k++;
        } catch (error) {
          if ((error as { code?: unknown }).code !== '23505') throw error;
          tally.conflicts++;
          const missed = await client.query<{ seq: string }>(read, [team, last]);
          last = Number(missed.rows.at(-1)?.seq ?? last);
        }
      }
    }),
  );
  return (clients.length * perClient * 1000) / (now() - start);
}

/**
 * A team write queue without the store, at its best: each connection takes the team's turn
 * (`BEGIN`, a transaction-scoped advisory lock on the team, the rows after the last it saw: one
 * round trip), then inserts `last + 1` and commits (a second round trip), so no attempt is ever
 * refused; the lock serializes the turns. The ceiling of any design in which each process decides
 * its own records against the latest log: one record per commit, one commit at a time.
 */
async function bareTurns(
  scratch: Scratch,
  clients: readonly pg.Client[],
  team: string,
  perClient: number,
  text: string,
  processId: string,
): Promise<number> {
  const literal = (value: string) => `'${value.replaceAll("'", "''")}'`;
  const start = now();
  await Promise.all(
    clients.map(async (client) => {
      let last = 0;
      for (let k = 0; k < perClient; k++) {
        const results = (await client.query(
          `BEGIN; SELECT pg_advisory_xact_lock(hashtextextended(${literal(team)}, 0));
           SELECT seq, record FROM ${scratch.bareTable}
            WHERE team_id = ${literal(team)} AND seq > ${last} ORDER BY seq`,
        )) as unknown as pg.QueryResult<{ seq: string }>[];
        last = Number(results[2]?.rows.at(-1)?.seq ?? last) + 1;
        await client.query(
          `INSERT INTO ${scratch.bareTable} (team_id, seq, record, process_id, batch_id)
           VALUES (${literal(team)}, ${last}, ${literal(text)}, ${literal(processId)}, ${literal(randomUUID())}); COMMIT`,
        );
      }
    }),
  );
  return (clients.length * perClient * 1000) / (now() - start);
}

/** How proposals reach the sequencer in {@link bareSequencer}. */
type ProposalTransport = 'notify' | 'rows';

/** The connections and tally of {@link bareSequencer}, made once for every round. */
interface BareSequencerLine {
  /** One LISTEN connection per proposer, idle but for its answers (as each process's doorbell). */
  listeners: pg.Client[];
  /** The sequencer's connection for its statements. */
  sequencer: pg.Client;
  /** The sequencer's connection that LISTENs on proposals (`notify`). */
  hears: pg.Client;
  /** Proposals the sequencer heard and has not taken yet (`notify`). */
  heard: string[];
  wake: (() => void) | undefined;
  /** Answers awaited, by proposer. */
  waiting: Map<number, () => void>;
  /** Measured rounds, by transport: records, batches, polls that found nothing. */
  tally: Record<ProposalTransport, { records: number; batches: number; empty: number }>;
}

/** The channel proposer `i` hears its answers on, and the one proposals go to. */
function bareChannels(scratch: Scratch) {
  return { answers: (i: number) => `${scratch.channel}_a${i}`, proposals: `${scratch.channel}_p` };
}

/** Opens {@link BareSequencerLine}'s connections and the proposals' table (unlogged). */
async function openBareSequencer(scratch: Scratch, proposers: number): Promise<BareSequencerLine> {
  await scratch.admin.query(
    `CREATE UNLOGGED TABLE "${scratch.schema}".bare_proposals
       (id bigserial PRIMARY KEY, proposer integer NOT NULL, record text NOT NULL)`,
  );
  const channels = bareChannels(scratch);
  const line: BareSequencerLine = {
    listeners: [],
    sequencer: await scratch.client(),
    hears: await scratch.client(),
    heard: [],
    wake: undefined,
    waiting: new Map(),
    tally: {
      notify: { records: 0, batches: 0, empty: 0 },
      rows: { records: 0, batches: 0, empty: 0 },
    },
  };
  for (let i = 0; i < proposers; i++) {
    const listener = await scratch.client();
    await listener.query(`LISTEN "${channels.answers(i)}"`);
    listener.on('notification', () => {
      const answered = line.waiting.get(i);
      line.waiting.delete(i);
      answered?.();
    });
    line.listeners.push(listener);
  }
  await line.hears.query(`LISTEN "${channels.proposals}"`);
  line.hears.on('notification', (message) => {
    line.heard.push(message.payload ?? '');
    const wake = line.wake;
    line.wake = undefined;
    wake?.();
  });
  return line;
}

/**
 * The sequencer's transport without the store or the team runtime, at its best: each of the
 * `clients` proposes one record at a time and waits for its answer (on a LISTEN connection of its
 * own); one connection takes the proposals waiting (at most 64), inserts them as the next seqs in
 * one statement and answers them in one NOTIFY statement. `notify`: a proposal is a NOTIFY on a
 * channel the sequencer LISTENs on (what the store does), so each is a commit that notifies, at
 * which PostgreSQL signals every connection that LISTENs in the database. `rows`: a proposal is a
 * row of an unlogged table that the sequencer takes and deletes in a loop while any are there.
 */
async function bareSequencer(
  scratch: Scratch,
  clients: readonly pg.Client[],
  line: BareSequencerLine,
  transport: ProposalTransport,
  team: string,
  perClient: number,
  text: string,
  measured: boolean,
): Promise<number> {
  const channels = bareChannels(scratch);
  const total = clients.length * perClient;
  const tally = { records: 0, batches: 0, empty: 0 };
  const take = async (): Promise<{ proposer: number; record: string }[]> => {
    if (transport === 'rows') {
      const taken = await line.sequencer.query<{ id: string; proposer: number; record: string }>(
        `DELETE FROM "${scratch.schema}".bare_proposals WHERE id IN
           (SELECT id FROM "${scratch.schema}".bare_proposals ORDER BY id LIMIT 64)
         RETURNING id, proposer, record`,
      );
      if (taken.rows.length === 0) {
        tally.empty++;
        await new Promise<void>((resolve) => setImmediate(resolve));
      }
      return taken.rows.sort((a, b) => Number(a.id) - Number(b.id));
    }
    if (line.heard.length === 0) {
      await new Promise<void>((resolve) => {
        line.wake = resolve;
      });
    }
    return line.heard.splice(0, 64).map((payload) => {
      const colon = payload.indexOf(':');
      return { proposer: Number(payload.slice(0, colon)), record: payload.slice(colon + 1) };
    });
  };
  const sequencing = (async () => {
    while (tally.records < total) {
      const batch = await take();
      if (batch.length === 0) continue;
      const seqs = batch.map((_, i) => tally.records + i + 1);
      tally.records += batch.length;
      tally.batches++;
      await line.sequencer.query(
        `INSERT INTO ${scratch.bareTable} (team_id, seq, record, process_id, batch_id)
         SELECT $1, seq, record, 'sequencer', $2 FROM unnest($3::bigint[], $4::text[]) AS t(seq, record)`,
        [team, randomUUID(), seqs, batch.map((b) => b.record)],
      );
      await line.sequencer.query(
        'SELECT pg_notify(c, p) FROM unnest($1::text[], $2::text[]) AS t(c, p)',
        [batch.map((b) => channels.answers(b.proposer)), seqs.map(String)],
      );
    }
  })();
  const start = now();
  const proposing = Promise.all(
    clients.map(async (client, i) => {
      for (let k = 0; k < perClient; k++) {
        const answered = new Promise<void>((resolve) => line.waiting.set(i, resolve));
        if (transport === 'rows') {
          await client.query(
            `INSERT INTO "${scratch.schema}".bare_proposals (proposer, record) VALUES ($1, $2)`,
            [i, text],
          );
        } else {
          await client.query('SELECT pg_notify($1, $2)', [channels.proposals, `${i}:${text}`]);
        }
        await within(answered, 30_000, `the bare sequencer's answer (${transport})`);
      }
    }),
  );
  // a failed statement of the sequencer fails the round at once
  await Promise.all([proposing, sequencing]);
  const rate = (total * 1000) / (now() - start);
  if (measured) {
    const sum = line.tally[transport];
    sum.records += tally.records;
    sum.batches += tally.batches;
    sum.empty += tally.empty;
  }
  return rate;
}

/**
 * `warmups + repeats` rounds of every side, in an order that rotates and flips from round to
 * round (so a slow drift of the machine hits all sides alike); warm-up rounds not kept. Each
 * side returns a rate; the result holds each side's rates.
 */
async function alternate<K extends string>(
  repeats: number,
  warmups: number,
  sides: Record<K, (round: number) => Promise<number>>,
): Promise<Record<K, number[]>> {
  const names = Object.keys(sides) as K[];
  const out = Object.fromEntries(names.map((name) => [name, [] as number[]])) as Record<
    K,
    number[]
  >;
  for (let round = 0; round < warmups + repeats; round++) {
    const rotated = names.map((_, i) => names[(i + round) % names.length] as K);
    const order = round % 2 === 0 ? rotated : rotated.reverse();
    for (const side of order) {
      const rate = await sides[side](round);
      if (round >= warmups) out[side].push(rate);
    }
  }
  return out;
}

/** A store rate against the bare INSERT rate (medians of the rounds), held to >= 0.5. */
function throughputFigure(
  name: string,
  subjectLabel: string,
  rates: { subject: number[]; bare: number[] },
  note: string,
): Figure {
  const subject = median(rates.subject);
  const baseline = median(rates.bare);
  return figure({
    bench: BENCH,
    name,
    subject: { label: subjectLabel, value: subject, unit: 'records/s' },
    baseline: { label: 'bare INSERTs', value: baseline, unit: 'rows/s' },
    ratioOf: 'store / bare',
    ratio: subject / baseline,
    target: { op: '>=', value: 0.5 },
    note,
  });
}

interface Sizes {
  repeats: number;
  warmups: number;
  /** Appends per round of the single writer. */
  single: number;
  /** Messages each of the 16 callers sends per round (one process). */
  perCaller: number;
  /** Records each of the 16 stores appends per round. */
  perStore: number;
  /** Cross-process messages measured, and warm-ups before them. */
  messages: number;
  messageWarmups: number;
}

// ------------------------------------------------------------------ 1 writer

/**
 * One writer: `store.log.append({ records: [r] })`, one record per call, awaited one after the
 * other, against one connection inserting the same JSON into `bare_log`, one row per statement.
 */
async function singleWriter(scratch: Scratch, sizes: Sizes, say: BenchContext['log']) {
  const team = teamId('one');
  const store = await scratch.open(team);
  await scratch.createBareTable();
  const client = await scratch.client();
  const rounds = sizes.warmups + sizes.repeats;
  const { setup, messages } = messageLog(team, rounds * sizes.single, 0x51);
  await store.log.append({ records: setup });
  const texts = messages.map((record) => JSON.stringify(record));
  say(`${BENCH}: 1 writer, ${sizes.single} appends per round, ${rounds} rounds`);
  try {
    const slice = roundOf(texts, sizes.single);
    const none: RowExtras = { actorId: null, fence: null };
    const rates = await alternate(sizes.repeats, sizes.warmups, {
      subject: async (round) => {
        const records = roundOf(messages, sizes.single)(round);
        const start = now();
        for (const record of records) await store.log.append({ records: [record] });
        return (records.length * 1000) / (now() - start);
      },
      bare: (round) =>
        bareInserts(scratch, [client], `${team}-b${round}`, slice(round), none, store.processId),
      notify: (round) =>
        bareInserts(
          scratch,
          [client],
          `${team}-n${round}`,
          slice(round),
          none,
          store.processId,
          scratch.channel,
        ),
    });
    return throughputFigure(
      'append, 1 writer',
      'log.append',
      rates,
      `one message.queued record per append (mean ${Math.round(meanBytes(texts))} B of JSON), awaited sequentially, vs one INSERT of the same JSON per statement on one connection; diagnostic: bare INSERT + pg_notify in the same statement (why the store notifies after its commit instead) ${formatRate(median(rates.notify))} rows/s; median of ${sizes.repeats} rounds of ${sizes.single}`,
    );
  } finally {
    await scratch.close(store);
  }
}

// ------------------------------------------------------------------ 16 callers, one process

/**
 * Sixteen concurrent callers in one process, through the team service: `openTeam` over the store
 * (lead here, no teammate placed anywhere, so the messages stay queued and no runner adds
 * writes), 16 loops each sending its own teammate messages. The commit pipeline batches what
 * arrives while an append is in flight into the next append. Records per second from the log,
 * against 16 connections inserting as many rows concurrently.
 */
async function oneProcessCallers(scratch: Scratch, sizes: Sizes, say: BenchContext['log']) {
  const team = teamId('svc');
  const store = await scratch.open(team, { runs: { lead: true, agentTypes: [] } });
  const log = countingLog(store.log);
  const errors = errorCollector();
  const service = await openTeam({
    teamId: team,
    log,
    transcripts: store.transcripts,
    format: xmlFormat,
    agents: benchAgents(createScriptedModel({ scripts: { lead: () => ({ text: 'OK.' }) } })),
    lead: { agentType: LEAD_TYPE },
    events: errors,
    idleClaim: false,
    limits: { maxMembers: WRITERS + 1, maxPendingPerMember: 1_000_000_000 },
  });
  const clients = await Promise.all(Array.from({ length: WRITERS }, () => scratch.client()));
  try {
    for (let i = 1; i <= WRITERS; i++) {
      await service.spawnTeammate(service.lead, {
        name: workerName(i),
        description: 'Implements and tests one area of the code base.',
        prompt: 'Wait for instructions from the lead.',
        agentType: WORKER_TYPE,
      });
    }
    const rounds = sizes.warmups + sizes.repeats;
    const perRound = WRITERS * sizes.perCaller;
    const members = service.listMembers(service.lead).filter((m) => !m.isLead);
    const { texts, json: bareTexts } = queuedRows(team, rounds * perRound, createRandom(0xa16));
    const slice = roundOf(bareTexts, perRound);
    const token = await scratch.admin.query<{ token: string }>(
      `SELECT token::text AS token FROM "${scratch.schema}".placements WHERE team_id = $1 AND member_id = $2`,
      [team, team],
    );
    const extras: RowExtras = { actorId: team, fence: token.rows[0]?.token ?? null };
    let appends = 0;
    let records = 0;
    say(
      `${BENCH}: 16 callers through the team service, ${sizes.perCaller} messages each per round, ${rounds} rounds`,
    );
    const rates = await alternate(sizes.repeats, sizes.warmups, {
      subject: async (round) => {
        const base = round * perRound;
        const before = { seq: store.log.lastSeq(), appends: log.appends };
        log.sizing = round >= sizes.warmups;
        const start = now();
        await Promise.all(
          members.slice(0, WRITERS).map(async (member, w) => {
            for (let k = 0; k < sizes.perCaller; k++) {
              await service.sendMessage(service.lead, {
                to: member.name,
                text: texts[base + k * WRITERS + w] as string,
              });
            }
          }),
        );
        const ms = now() - start;
        log.sizing = false;
        const written = store.log.lastSeq() - before.seq;
        if (round >= sizes.warmups) {
          appends += log.appends - before.appends;
          records += written;
        }
        return (written * 1000) / ms;
      },
      bare: (round) =>
        bareInserts(scratch, clients, `${team}-b${round}`, slice(round), extras, store.processId),
    });
    errors.check('16 callers through the team service');
    return throughputFigure(
      'append, 16 callers in one process (team service)',
      'sendMessage',
      rates,
      `16 concurrent sendMessage loops (lead -> own teammate, mean ${Math.round(meanBytes(bareTexts))} B records); the commit pipeline batched ${(records / Math.max(1, appends)).toFixed(1)} records per append (${commonSizes(log.sizes)}); vs 16 connections, one INSERT per row; median of ${sizes.repeats} rounds of ${perRound}`,
    );
  } finally {
    await service.dispose();
    await scratch.close(store);
  }
}

/** The three most frequent append sizes, e.g. `420 appends of 15 records, 419 of 1`. */
function commonSizes(sizes: ReadonlyMap<number, number>): string {
  return [...sizes]
    .sort((a, b) => b[1] - a[1] || b[0] - a[0])
    .slice(0, 3)
    .map(([size, count], i) =>
      i === 0 ? `${count} appends of ${size} records` : `${count} of ${size}`,
    )
    .join(', ');
}

// ------------------------------------------------------------------ 16 stores

/**
 * Sixteen stores with pools of their own, as sixteen processes would have, appending to one team
 * log with optimistic seqs: read `lastSeq()`, append `seq + 1`; on `SEQ_CONFLICT` read the rows
 * missed (which advances `lastSeq()`) and try again. Against the same 16-connection baseline.
 */
async function sixteenStores(scratch: Scratch, sizes: Sizes, say: BenchContext['log']) {
  const team = teamId('many');
  const stores: PostgresTeamStore[] = [];
  // Pools like the one the store makes for itself, but ours, so their checkouts can be counted:
  // the store takes a connection for every statement it runs.
  const statements = { count: 0 };
  for (let i = 0; i < WRITERS; i++) {
    const pool = scratch.pool();
    pool.on('acquire', () => statements.count++);
    stores.push(await scratch.open(team, { pool }));
  }
  const clients = await Promise.all(Array.from({ length: WRITERS }, () => scratch.client()));
  const line = await openBareSequencer(scratch, WRITERS);
  try {
    const built = buildTeam(team, WRITERS);
    await (stores[0] as PostgresTeamStore).log.append({ records: built.setup });
    const random = createRandom(0xb16);
    const ids = createUlidLike(random, () => Date.now());
    // Store i sends teammate i messages; each attempt is this template with the seq it tries.
    const templates = built.ids.map((target) =>
      built.state.queueMessage({
        id: ids.next(),
        senderId: team,
        targetId: target,
        kind: 'message',
        delivery: 'wakeup',
        content: textContent(messageText(random)),
      }),
    );
    const rounds = sizes.warmups + sizes.repeats;
    const perRound = WRITERS * sizes.perStore;
    const bareTexts = Array.from({ length: rounds * perRound }, (_, i) =>
      JSON.stringify(templates[i % WRITERS]),
    );
    let conflicts = 0;
    let appends = 0;
    let reads = 0;
    let used = 0;
    const optimistic = { conflicts: 0 };
    say(
      `${BENCH}: 16 stores, optimistic seqs, ${sizes.perStore} records each per round, ${rounds} rounds`,
    );
    const processId = (stores[0] as PostgresTeamStore).processId;
    const slice = roundOf(bareTexts, perRound);
    const none: RowExtras = { actorId: null, fence: null };
    let optimisticRows = 0;
    const rates = await alternate(sizes.repeats, sizes.warmups, {
      subject: async (round) => {
        let roundConflicts = 0;
        let roundReads = 0;
        const statementsBefore = statements.count;
        const start = now();
        await Promise.all(
          stores.map(async (store, s) => {
            const template = templates[s] as MessageQueuedRecord;
            for (let k = 0; k < sizes.perStore; ) {
              const seq = store.log.lastSeq() + 1;
              const record: MessageQueuedRecord = {
                ...template,
                seq,
                at: Date.now(),
                message: { ...template.message, id: ids.next() },
              };
              try {
                await store.log.append({ records: [record] });
                k++;
              } catch (error) {
                if (!TeamError.hasCode(error, 'SEQ_CONFLICT')) throw error;
                roundConflicts++;
                for await (const missed of store.log.read({ fromSeq: seq })) {
                  if (missed.seq >= seq) roundReads++;
                }
              }
            }
          }),
        );
        const ms = now() - start;
        if (round >= sizes.warmups) {
          conflicts += roundConflicts;
          reads += roundReads;
          appends += perRound;
          used += statements.count - statementsBefore;
        }
        return (perRound * 1000) / ms;
      },
      bare: (round) =>
        bareInserts(scratch, clients, `${team}-b${round}`, slice(round), none, processId),
      optimistic: async (round) => {
        const before = optimistic.conflicts;
        const rate = await bareOptimistic(
          scratch,
          clients,
          `${team}-o${round}`,
          sizes.perStore,
          bareTexts[0] as string,
          processId,
          optimistic,
        );
        if (round >= sizes.warmups) optimisticRows += perRound;
        else optimistic.conflicts = before;
        return rate;
      },
      notify: (round) =>
        bareInserts(
          scratch,
          clients,
          `${team}-n${round}`,
          slice(round),
          none,
          processId,
          scratch.channel,
        ),
      turns: (round) =>
        bareTurns(
          scratch,
          clients,
          `${team}-t${round}`,
          sizes.perStore,
          bareTexts[0] as string,
          processId,
        ),
      serial: (round) =>
        bareInserts(
          scratch,
          [clients[0] as pg.Client],
          `${team}-s${round}`,
          slice(round),
          none,
          processId,
        ),
      proposedByNotify: (round) =>
        bareSequencer(
          scratch,
          clients,
          line,
          'notify',
          `${team}-pn${round}`,
          sizes.perStore,
          bareTexts[0] as string,
          round >= sizes.warmups,
        ),
      proposedAsRows: (round) =>
        bareSequencer(
          scratch,
          clients,
          line,
          'rows',
          `${team}-pr${round}`,
          sizes.perStore,
          bareTexts[0] as string,
          round >= sizes.warmups,
        ),
    });
    const perAppend = conflicts / Math.max(1, appends);
    const perStatement = (used - appends) / Math.max(1, conflicts);
    return {
      figure: figure({
        bench: BENCH,
        name: 'append, 16 stores racing with optimistic seqs, no sequencer (diagnostic)',
        subject: { label: '16 stores', value: median(rates.subject), unit: 'records/s' },
        baseline: { label: 'bare INSERTs', value: median(rates.bare), unit: 'rows/s' },
        ratioOf: 'store / bare',
        ratio: median(rates.subject) / median(rates.bare),
        note: `what the sequencer replaces: 16 stores appending to one team log directly (bare log.append, no team runtime, so no process sequences). Each store: lastSeq()+1, append one record (mean ${Math.round(meanBytes(bareTexts))} B), on SEQ_CONFLICT read the missed rows and retry; ${perAppend.toFixed(2)} conflicts per append, ${(reads / Math.max(1, appends)).toFixed(1)} rows read back per append; vs 16 connections, one INSERT per row; median of ${sizes.repeats} rounds of ${perRound}`,
      }),
      conflicts: figure({
        bench: BENCH,
        name: 'conflicts per append, 16 stores',
        subject: { label: 'SEQ_CONFLICT', value: perAppend, unit: 'per append' },
        baseline: {
          label: 'bare optimistic',
          value: optimistic.conflicts / Math.max(1, optimisticRows),
          unit: 'per row',
        },
        note: `${conflicts} refused attempts for ${appends} records (measured rounds); ${(used / Math.max(1, appends)).toFixed(1)} statements per record appended, ${perStatement.toFixed(2)} per refusal beyond the one append (the failed INSERT, the store's read-back of the seq's batch_id, the caller's read of the rows it missed); bare optimistic: 16 connections inserting last+1 and reading the rows after last on a duplicate key`,
      }),
      optimistic: figure({
        bench: BENCH,
        name: '16 stores vs bare optimistic INSERTs',
        subject: { label: '16 stores', value: median(rates.subject), unit: 'records/s' },
        baseline: { label: 'bare optimistic', value: median(rates.optimistic), unit: 'rows/s' },
        ratioOf: 'store / bare optimistic',
        ratio: median(rates.subject) / median(rates.optimistic),
        note: 'how much of the gap to bare INSERTs is racing for one counter (any optimistic writer pays it) and how much is the store',
      }),
      turns: figure({
        bench: BENCH,
        name: 'bare turn-taking, 16 connections (diagnostic)',
        subject: { label: 'bare turns', value: median(rates.turns), unit: 'rows/s' },
        baseline: { label: 'bare INSERTs', value: median(rates.bare), unit: 'rows/s' },
        ratioOf: 'turns / bare',
        ratio: median(rates.turns) / median(rates.bare),
        note: `a team write queue at its best, without the store: each of 16 connections takes the team's turn (BEGIN, advisory lock on the team, the rows after the last it saw), inserts the next seq and commits, never refused; one connection inserting the same rows alone, one after the other: ${formatRate(median(rates.serial))} rows/s (${(median(rates.serial) / median(rates.bare)).toFixed(2)}x). Writers that each decide their own records against the log commit one record at a time whichever way they queue: this row and the lone writer bound them, far below 16 connections whose commits share WAL flushes`,
      }),
      notify: figure({
        bench: BENCH,
        name: 'NOTIFY in the append, 16 connections (diagnostic)',
        subject: { label: 'INSERT+pg_notify', value: median(rates.notify), unit: 'rows/s' },
        baseline: { label: 'bare INSERTs', value: median(rates.bare), unit: 'rows/s' },
        ratioOf: 'with / without NOTIFY',
        ratio: median(rates.notify) / median(rates.bare),
        note: `the bare rows again, 16 connections, each statement also calling pg_notify on the store's channel (16 doorbells listening), as an append that notified inside its own transaction would; PostgreSQL serializes the commits of notifying transactions (one lock for the whole cluster, held through the commit's WAL flush): why the store sends its notice after the commit`,
      }),
      transports: (['notify', 'rows'] as const).map((transport) => {
        const rate = median(transport === 'notify' ? rates.proposedByNotify : rates.proposedAsRows);
        const sum = line.tally[transport];
        return figure({
          bench: BENCH,
          name:
            transport === 'notify'
              ? 'bare sequencer, proposals by NOTIFY, 16 proposers (diagnostic)'
              : 'bare sequencer, proposals as rows it drains, 16 proposers (diagnostic)',
          subject: { label: 'bare sequencer', value: rate, unit: 'records/s' },
          baseline: { label: 'bare INSERTs', value: median(rates.bare), unit: 'rows/s' },
          ratioOf: 'sequenced / bare',
          ratio: rate / median(rates.bare),
          note: `the sequencer's transport without the store or any team runtime (no process reads or folds a record): 16 connections each propose one record at a time and wait for its answer on a LISTEN connection of their own (16 idle listeners, as the processes' doorbells are); one connection takes up to 64 waiting proposals, inserts them as the next seqs in one statement and answers them in one NOTIFY statement; ${
            transport === 'notify'
              ? 'a proposal is a NOTIFY on a channel the sequencer LISTENs on, as the store sends it: a commit that notifies, at which PostgreSQL signals every connection LISTENing in the database'
              : `a proposal is a row of an unlogged table, which the sequencer takes and deletes in a loop while any are there (${sum.empty} of its polls found none)`
          }; ${(sum.records / Math.max(1, sum.batches)).toFixed(1)} records per batch; median of ${sizes.repeats} rounds of ${perRound}`,
        });
      }),
    };
  } finally {
    for (const store of stores) await scratch.close(store);
    await scratch.endPools();
    await scratch.release([...line.listeners, line.sequencer, line.hears]);
  }
}

// ------------------------------------------------------------------ 16 processes, sequencer

type Writer = ForkedProcess<ToWriter, FromWriter>;

/** Per-round sums over the 16 processes' {@link WriterRound}s of the measured rounds. */
function writerTotals() {
  const totals = {
    appends: 0,
    statements: 0,
    records: 0,
    /** Rounds measured, and their wall ms from the sends to every process having read the last record. */
    rounds: 0,
    wallMs: 0,
    cpuMs: 0,
    systemMs: 0,
    /** CPU of the process that sequenced, and the busiest event loop seen in a round. */
    sequencerCpuMs: 0,
    busiest: 0,
    /** The machine's CPU time (all its cores) over the sends, and the part of it not idle. */
    machineMs: 0,
    machineBusyMs: 0,
    served: 0,
    sizes: new Map<number, number>(),
    outcomes: { committed: 0, refused: 0, fenced: 0, unanswered: 0, unsent: 0 },
    add(
      rounds: readonly WriterRound[],
      records: number,
      wallMs: number,
      machine: { totalMs: number; busyMs: number },
    ) {
      totals.rounds++;
      totals.machineMs += machine.totalMs;
      totals.machineBusyMs += machine.busyMs;
      totals.records += records;
      totals.wallMs += wallMs;
      for (const round of rounds) {
        totals.appends += round.appends;
        totals.statements += round.statements;
        totals.cpuMs += round.cpuMs;
        totals.systemMs += round.systemMs;
        if (round.leading) totals.sequencerCpuMs += round.cpuMs;
        totals.busiest = Math.max(totals.busiest, round.busy);
        totals.served += round.served;
        for (const [size, count] of round.sizes) {
          totals.sizes.set(size, (totals.sizes.get(size) ?? 0) + count);
        }
        for (const key of Object.keys(totals.outcomes) as (keyof typeof totals.outcomes)[]) {
          totals.outcomes[key] += round.outcomes[key];
        }
      }
    },
  };
  return totals;
}

/**
 * The CPU time of every core of the machine so far (ms), or since `since`: all its processes,
 * PostgreSQL's included.
 */
function machineTimes(since?: { totalMs: number; busyMs: number }) {
  let totalMs = 0;
  let idleMs = 0;
  for (const cpu of cpus()) {
    const { user, nice, sys, idle, irq } = cpu.times;
    totalMs += user + nice + sys + idle + irq;
    idleMs += idle;
  }
  const busyMs = totalMs - idleMs;
  return since === undefined
    ? { totalMs, busyMs }
    : { totalMs: totalMs - since.totalMs, busyMs: busyMs - since.busyMs };
}

/**
 * Sixteen processes of one team, each a forked node process with its own store (pool, doorbell)
 * and team service (`openTeam`, folding every record of the team). Process 0 runs the lead; the
 * 15 others run no member (a placement that runs nothing, so their writes are not fenced) and
 * only write. Each round, every process sends its own teammate messages, one after the other; the
 * process holding the team's sequencer lock commits its own and the others' proposals in batched
 * appends, the others propose and read the records back. Records per second from the first send
 * to the last process's last send answered, against 16 connections (in this process) inserting
 * as many rows concurrently. The processes share this machine's cores with each other and with
 * PostgreSQL.
 */
async function sixteenProcesses(scratch: Scratch, sizes: Sizes, say: BenchContext['log']) {
  const team = teamId('seq');
  const profile = process.env[POSTGRES_WRITER_PROFILE_ENV];
  const execArgv = profile === undefined ? [] : ['--cpu-prof', '--cpu-prof-dir', profile];
  const writers: Writer[] = Array.from(
    { length: WRITERS },
    (_, i) =>
      new ForkedProcess<ToWriter, FromWriter>(`team process ${i}`, POSTGRES_WRITER_ENV, execArgv),
  );
  try {
    const clients = await Promise.all(Array.from({ length: WRITERS }, () => scratch.client()));
    const rounds = sizes.warmups + sizes.repeats;
    const perRound = WRITERS * sizes.perStore;
    const rows = queuedRows(team, rounds * perRound, createRandom(0x5e9));
    const open = (i: number): Extract<ToWriter, { type: 'open' }> => ({
      type: 'open',
      connectionString: scratch.url,
      schema: scratch.schema,
      teamId: team,
      lead: i === 0,
      spawn: i === 0 ? Array.from({ length: WRITERS }, (_, w) => workerName(w + 1)) : [],
      maxMembers: WRITERS + 1,
      to: workerName(i + 1),
      // process i sends every WRITERS-th text, as the 16 callers of one process do
      texts: rows.texts.filter((_, t) => t % WRITERS === i),
      perRound: sizes.perStore,
    });
    say(`${BENCH}: forking 16 team processes; process 0 opens the team and spawns 16 teammates`);
    const [first, ...others] = writers as [Writer, ...Writer[]];
    const opened = [await first.ask(open(0), 'ready', 60_000, 'opening the team')];
    opened.push(
      ...(await Promise.all(
        others.map((w, i) => w.ask(open(i + 1), 'ready', 60_000, 'opening the team')),
      )),
    );
    const short = opened.findIndex((r) => r.members !== WRITERS + 1);
    if (short >= 0) {
      throw new Error(
        `team process ${short} read ${opened[short]?.members} members, not ${WRITERS + 1}`,
      );
    }
    // every process has had a proposal committed by the sequencer (so it heard it), or is it
    const probes = await Promise.all(
      writers.map((w) => w.ask({ type: 'probe' }, 'probed', 30_000, 'hearing the sequencer')),
    );
    const sequencers = probes.flatMap((p, i) => (p.leading ? [i] : []));
    if (sequencers.length !== 1) {
      throw new Error(`expected one sequencing process, found ${sequencers.length}`);
    }
    const probeAttempts = probes.reduce((sum, p) => sum + p.attempts, 0);
    const settleAll = async (seq: number) =>
      Promise.all(
        writers.map((w) =>
          w.ask({ type: 'settle', seq }, 'settled', 60_000, `reading up to ${seq}`),
        ),
      );
    // the log's last seq before the rounds, as every process has read it
    let lastSeq = Math.max(...(await settleAll(0)).map((s) => s.seq));
    const totals = writerTotals();
    const none: RowExtras = { actorId: null, fence: null };
    const slice = roundOf(rows.json, perRound);
    const processId = opened[0]?.processId ?? 'bench';
    say(
      `${BENCH}: 16 processes through the sequencer (process ${sequencers[0]}), ${sizes.perStore} messages each per round, ${rounds} rounds`,
    );
    const rates = await alternate(sizes.repeats, sizes.warmups, {
      subject: async (round) => {
        const sizing = round >= sizes.warmups;
        const machine = machineTimes();
        const start = now();
        const sent = await Promise.all(
          writers.map((w) =>
            w.ask({ type: 'send', round, sizing }, 'sent', 120_000, `round ${round}`),
          ),
        );
        const ms = now() - start;
        const busy = machineTimes(machine);
        const end = Math.max(...sent.map((s) => s.seq));
        const settled = await settleAll(end);
        const written = end - lastSeq;
        lastSeq = end;
        if (written !== perRound) {
          throw new Error(`round ${round} wrote ${written} records, not ${perRound}`);
        }
        if (sizing) {
          const reports = settled.flatMap((s) => (s.round === undefined ? [] : [s.round]));
          if (reports.length !== WRITERS)
            throw new Error(`round ${round}: a process sent no report`);
          totals.add(reports, written, now() - start, busy);
        }
        return (written * 1000) / ms;
      },
      bare: (round) =>
        bareInserts(scratch, clients, `${team}-b${round}`, slice(round), none, processId),
    });
    // an error a process reported while no wait was pending (during the last bare round)
    const failures = writers.flatMap((w) => w.errors.map((e) => `${w.name}: ${e}`));
    if (failures.length > 0) throw new Error(`team processes reported: ${failures.join('; ')}`);
    const outcomes = Object.entries(totals.outcomes)
      .map(([key, value]) => `${value} ${key}`)
      .join(', ');
    const perRecord = (ms: number) => (ms / Math.max(1, totals.records)).toFixed(2);
    const cores = totals.cpuMs / Math.max(1, totals.wallMs);
    return throughputFigure(
      'append, 16 processes (team service each), through the sequencer',
      '16 processes',
      rates,
      `16 forked node processes on this machine's ${availableParallelism()} cores (shared with PostgreSQL, the bench's own process and any other work), each a store with its own pool and doorbell and a team service folding every record; process 0 runs the lead, the 15 others run nothing and only write; each sends its own teammate messages one after the other (mean ${Math.round(meanBytes(rows.json))} B records); process ${sequencers[0]} held the sequencer lock (it served ${totals.served} proposals); the others' proposals: ${outcomes}; ${(totals.records / Math.max(1, totals.appends)).toFixed(1)} records per append over all processes (${commonSizes(totals.sizes)}), ${(totals.statements / Math.max(1, totals.records)).toFixed(1)} statements per record over all stores (appends and reads back, not the NOTIFYs); CPU per record summed over the 16 processes ${perRecord(totals.cpuMs)} ms (${Math.round((totals.systemMs / Math.max(1, totals.cpuMs)) * 100)}% of it in the kernel; the sequencer's ${perRecord(totals.sequencerCpuMs)} ms), ${cores.toFixed(2)} cores busy from the sends to every process having read the round, busiest event loop ${Math.round(totals.busiest * 100)}%; the machine's cores were ${Math.round((totals.machineBusyMs / Math.max(1, totals.machineMs)) * 100)}% busy during the sends (every process of the machine); every process heard the sequencer first (${probeAttempts} probe messages); vs 16 connections, one INSERT per row; median of ${sizes.repeats} rounds of ${perRound}`,
    );
  } finally {
    await Promise.all(writers.map((w) => w.stop({ type: 'close' }).catch(() => undefined)));
  }
}

// ------------------------------------------------------------------ cross-process delivery

/** The forked teammate process, with what it reported. */
class TeammateProcess {
  readonly child: ChildProcess;
  readonly starts = new Map<string, number>();
  /** When `message.queued` records reached the service there, by message id. */
  readonly queued = new Map<string, number>();
  /** When the doorbell rang there, in order. */
  readonly rings: number[] = [];
  readonly errors: string[] = [];
  private readonly waiters: {
    test: (m: FromTeammate) => boolean;
    resolve: (m: FromTeammate) => void;
  }[] = [];
  private readonly exited: Promise<number | null>;

  constructor() {
    this.child = fork(fileURLToPath(import.meta.url), [], {
      env: { ...process.env, [POSTGRES_TEAMMATE_ENV]: '1' },
      execArgv: [],
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    });
    this.exited = new Promise((resolve) => this.child.once('exit', (code) => resolve(code)));
    this.child.on('message', (raw) => {
      const message = raw as FromTeammate;
      if (message.type === 'turn.start' && message.messageId !== undefined) {
        this.starts.set(message.messageId, message.at);
      }
      if (message.type === 'queued') this.queued.set(message.messageId, message.at);
      if (message.type === 'ring') this.rings.push(message.at);
      if (message.type === 'error') this.errors.push(message.message);
      for (let i = 0; i < this.waiters.length; i++) {
        const waiter = this.waiters[i] as (typeof this.waiters)[number];
        if (waiter.test(message)) {
          this.waiters.splice(i--, 1);
          waiter.resolve(message);
        }
      }
    });
  }

  send(message: ToTeammate): void {
    this.child.send(message);
  }

  /** The next message passing `test` (or an error report, which rejects). */
  next<T extends FromTeammate['type']>(
    type: T,
    test: (m: Extract<FromTeammate, { type: T }>) => boolean = () => true,
  ): Promise<Extract<FromTeammate, { type: T }>> {
    return new Promise((resolve, reject) => {
      const failed = (m: FromTeammate) => m.type === 'error';
      this.waiters.push({
        test: (m) =>
          failed(m) || (m.type === type && test(m as Extract<FromTeammate, { type: T }>)),
        resolve: (m) =>
          m.type === 'error' && type !== 'error'
            ? reject(new Error(`the teammate process reported: ${m.message}`))
            : resolve(m as Extract<FromTeammate, { type: T }>),
      });
    });
  }

  /** When the teammate's turn for `messageId` started (child's clock). */
  async turnStart(messageId: string, timeoutMs: number): Promise<number> {
    const known = this.starts.get(messageId);
    if (known !== undefined) return known;
    const message = await within(
      this.next('turn.start', (m) => m.messageId === messageId),
      timeoutMs,
      `the turn.start of message ${messageId} in the other process`,
    );
    return message.at;
  }

  /** The first ring at or after `at`. */
  ringAfter(at: number): number | undefined {
    return this.rings.find((ring) => ring >= at);
  }

  /** Asks the child to close its team and store, and waits for it to exit (kills it if it hangs). */
  async stop(): Promise<void> {
    if (this.child.exitCode !== null || this.child.signalCode !== null) return;
    if (this.child.connected) this.send({ type: 'close' });
    const timer = setTimeout(() => this.child.kill('SIGKILL'), 15_000);
    await this.exited;
    clearTimeout(timer);
  }
}

/** Records the parent's service publishes, waited on by predicate. */
function recordWatch(): EventSink & {
  next(test: (r: TeamRecord) => boolean): Promise<TeamRecord>;
} {
  const waiters: { test: (r: TeamRecord) => boolean; resolve: (r: TeamRecord) => void }[] = [];
  return {
    publish(_agent, event) {
      if (event.type !== 'record') return;
      for (let i = 0; i < waiters.length; i++) {
        const waiter = waiters[i] as (typeof waiters)[number];
        if (waiter.test(event.record)) {
          waiters.splice(i--, 1);
          waiter.resolve(event.record);
        }
      }
    },
    next(test) {
      return new Promise((resolve) => waiters.push({ test, resolve }));
    },
  };
}

/**
 * The bare path a message between processes cannot beat: one connection runs the INSERT of a
 * row and a `pg_notify` in one statement, another connection LISTENing receives it. From before
 * the statement to the notification's arrival, in ms.
 */
async function bareNotify(
  scratch: Scratch,
  insert: pg.Client,
  listener: pg.Client,
  channel: string,
  team: string,
  seq: number,
  text: string,
): Promise<number> {
  const received = new Promise<number>((resolve) => {
    const on = (message: pg.Notification) => {
      if (message.channel !== channel) return;
      listener.removeListener('notification', on);
      resolve(now());
    };
    listener.on('notification', on);
  });
  const start = now();
  await insert.query(
    `WITH ins AS (
       INSERT INTO ${scratch.bareTable} (team_id, seq, record, process_id, batch_id)
       VALUES ($1, $2, $3, $4, $5) RETURNING seq
     )
     SELECT pg_notify($6, $7) FROM ins`,
    [team, seq, text, 'bare', randomUUID(), channel, JSON.stringify([team, seq, 'bare'])],
  );
  return (await within(received, 10_000, 'a bare notification')) - start;
}

/**
 * Cross-process delivery: the lead runs here (`runs: { lead: true, agentTypes: [] }`), one
 * teammate in a forked process (`runs: { lead: false }`). Messages one at a time: from before
 * `sendMessage` here to the teammate's `turn.start` there, both stamped with
 * `performance.timeOrigin + performance.now()`; the next is sent once the turn ended (its idle
 * notification reached the lead here) and the lead is idle again.
 */
async function crossProcess(scratch: Scratch, sizes: Sizes, say: BenchContext['log']) {
  const team = teamId('xproc');
  const store = await scratch.open(team, { runs: { lead: true, agentTypes: [] } });
  const watch = recordWatch();
  const errors = errorCollector();
  const service = await openTeam({
    teamId: team,
    log: store.log,
    transcripts: store.transcripts,
    format: xmlFormat,
    agents: benchAgents(createScriptedModel({ scripts: { lead: () => ({ text: 'OK.' }) } })),
    lead: { agentType: LEAD_TYPE },
    events: {
      publish(agent, event) {
        watch.publish(agent, event);
        errors.publish(agent, event);
      },
    },
    idleClaim: false,
  });
  const child = new TeammateProcess();
  try {
    const insert = await scratch.client();
    const listener = await scratch.client();
    const channel = `bench_notify_${scratch.schema}`.slice(0, 63);
    await listener.query(`LISTEN "${channel}"`);
    const name = workerName(1);
    child.send({
      type: 'open',
      connectionString: scratch.url,
      schema: scratch.schema,
      teamId: team,
      teammates: [name],
    });
    await within(child.next('ready'), 30_000, 'the teammate process opening the team');

    // How far apart the two clocks read (should be ~0 on one machine): half-RTT pings.
    const offsets: number[] = [];
    for (let id = 0; id < 20; id++) {
      const sent = wallNow();
      child.send({ type: 'ping', id });
      const pong = await within(
        child.next('pong', (m) => m.id === id),
        5000,
        'a pong',
      );
      const back = wallNow();
      offsets.push(pong.at - (sent + back) / 2);
    }

    const idleFrom = (memberId: string) =>
      watch.next(
        (r) =>
          r.type === 'message.queued' &&
          r.message.kind === 'idle_notification' &&
          r.message.senderId === memberId,
      );
    say(`${BENCH}: spawning ${name}, placed in the other process`);
    const spawnIdle = watch.next(
      (r) => r.type === 'message.queued' && r.message.kind === 'idle_notification',
    );
    const spawned = await service.spawnTeammate(service.lead, {
      name,
      description: 'Answers every message at once.',
      prompt: 'Wait for messages from the lead.',
      agentType: WORKER_TYPE,
    });
    await within(spawnIdle, 60_000, `${name} handling its spawn prompt in the other process`);
    await within(service.idle(), 30_000, 'the lead reading the idle notification');
    if (child.errors.length > 0) throw new Error(`teammate process: ${child.errors.join('; ')}`);

    const random = createRandom(0xde1);
    const total = sizes.messageWarmups + sizes.messages;
    say(`${BENCH}: ${total} messages across processes, one at a time`);
    const latencies: number[] = [];
    const bare: number[] = [];
    /** Per message, ms from before sendMessage to each step: durable here, rung there, read there. */
    const steps = { durable: [] as number[], rung: [] as number[], read: [] as number[] };
    for (let i = 0; i < total; i++) {
      const idle = idleFrom(spawned.memberId);
      const text = `Message ${i}: ${messageText(random)}`;
      const start = wallNow();
      const sent = await service.sendMessage(service.lead, { to: name, text });
      const durableAt = wallNow();
      const startedAt = await child.turnStart(sent.messageId, 30_000);
      await within(idle, 30_000, `the turn of ${name} for message ${i} ending`);
      await within(service.idle(), 30_000, 'the lead reading the idle notification');
      const viaBare = await bareNotify(
        scratch,
        insert,
        listener,
        channel,
        `${team}-n`,
        i + 1,
        text,
      );
      if (i >= sizes.messageWarmups) {
        latencies.push(startedAt - start);
        bare.push(viaBare);
        steps.durable.push(durableAt - start);
        const rung = child.ringAfter(start);
        if (rung !== undefined) steps.rung.push(rung - start);
        const read = child.queued.get(sent.messageId);
        if (read !== undefined) steps.read.push(read - start);
      }
    }
    errors.check('cross-process delivery');
    if (child.errors.length > 0) throw new Error(`teammate process: ${child.errors.join('; ')}`);

    const p50 = percentile(latencies, 0.5);
    const p99 = percentile(latencies, 0.99);
    const max = Math.max(...latencies);
    const bareP50 = percentile(bare, 0.5);
    const bareP99 = percentile(bare, 0.99);
    const offset = median(offsets);
    const path = `median ms after the send: durable here ${median(steps.durable).toFixed(2)}, doorbell rang there ${median(steps.rung).toFixed(2)}, record read there ${median(steps.read).toFixed(2)}, turn.start ${p50.toFixed(2)}`;
    const common = `${sizes.messages} messages after ${sizes.messageWarmups} warm-ups, one at a time; clocks of the two processes agree within ${Math.abs(offset).toFixed(2)} ms (median of 20 ping halves)`;
    return [
      figure({
        bench: BENCH,
        name: 'cross-process delivery p50 (send -> turn.start)',
        subject: { label: 'p50', value: p50, unit: 'ms' },
        baseline: { label: 'budget', value: 10, unit: 'ms' },
        ratioOf: 'p50 / 10 ms',
        ratio: p50 / 10,
        target: { op: '<=', value: 1 },
        note: `sendMessage in the lead's process -> turn.start of the teammate in a forked process; bare INSERT+NOTIFY -> LISTEN on another connection, same run: p50 ${bareP50.toFixed(2)} ms, p99 ${bareP99.toFixed(2)} ms; ${path}; ${common}`,
      }),
      figure({
        bench: BENCH,
        name: 'cross-process delivery p99 (send -> turn.start)',
        subject: { label: 'p99', value: p99, unit: 'ms' },
        baseline: { label: 'bare INSERT+NOTIFY p99', value: bareP99, unit: 'ms' },
        ratioOf: 'p99 / bare p99',
        ratio: p99 / bareP99,
        note: `max ${max.toFixed(2)} ms (bare max ${Math.max(...bare).toFixed(2)} ms); p50 over bare p50: ${(p50 / bareP50).toFixed(1)}x`,
      }),
    ];
  } finally {
    await child.stop().catch(() => undefined);
    await service.dispose();
    await scratch.close(store);
  }
}

// ------------------------------------------------------------------ the group

/**
 * The PostgreSQL store (`@teamwire/postgres`): append throughput against bare INSERTs of the same
 * rows in the same run (1 writer; 16 callers in one process through the team service; 16 stores
 * racing with optimistic seqs), and the latency of a message from one process to a teammate's
 * turn in another. Runs in a schema of its own, dropped at the end; skipped when the database
 * cannot be reached (a failure with CI=true).
 */
export const postgresBench: Bench = {
  name: BENCH,
  title: 'PostgreSQL store: appends vs bare INSERTs, cross-process delivery latency',
  async run({ quick, log: say }) {
    const url = pgUrl();
    const why = await unreachable(url);
    if (why !== undefined) {
      const where = `PostgreSQL not reachable at ${serverOf(url)} (${why})`;
      if (process.env.CI === 'true') {
        throw new Error(`${where}; CI needs it: start PostgreSQL or set TEAMWIRE_PG_URL`);
      }
      say(`skipped: ${where}; set TEAMWIRE_PG_URL to run the postgres benchmarks`);
      return [];
    }
    const sizes: Sizes = quick
      ? {
          repeats: 3,
          warmups: 1,
          single: 100,
          perCaller: 10,
          perStore: 5,
          messages: 30,
          messageWarmups: 3,
        }
      : {
          repeats: 7,
          warmups: 1,
          single: 800,
          perCaller: 60,
          perStore: 25,
          messages: 200,
          messageWarmups: 10,
        };
    const scratch = new Scratch(url);
    say(`${BENCH}: schema ${scratch.schema} at ${serverOf(url)}`);
    const figures: Figure[] = [];
    try {
      figures.push(await singleWriter(scratch, sizes, say));
      figures.push(await oneProcessCallers(scratch, sizes, say));
      const many = await sixteenStores(scratch, sizes, say);
      figures.push(await sixteenProcesses(scratch, sizes, say));
      figures.push(many.figure, many.conflicts, many.optimistic, many.turns, many.notify);
      figures.push(...many.transports);
      figures.push(...(await crossProcess(scratch, sizes, say)));
    } finally {
      await scratch.cleanup();
    }
    return figures;
  },
};
