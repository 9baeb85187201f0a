import { createHash } from 'node:crypto';
import type {
  IncomingProposal,
  Proposal,
  ProposalAnswer,
  TeamRecord,
  TeamSequencer,
} from '@teamwire/core';
import {
  isRebasable,
  parseAppendedRecord,
  SEQUENCER_ANSWER_TIMEOUT_MS,
  SEQUENCER_BATCH_RECORDS_MAX,
  SEQUENCER_PROPOSAL_BYTES_MAX,
  TeamError,
} from '@teamwire/core';
import type pg from 'pg';
import { execute, statementName } from './connection.js';
import type { Doorbell, SequencerChannels } from './doorbell.js';
import { MAX_ID_LENGTH } from './limits.js';
import type { PostgresPlacement } from './placement.js';

/**
 * The version of the sequencer's wire format (proposal rows, wakes, answers, hellos); see the
 * README.
 */
export const SEQUENCER_FORMAT_VERSION = 3;

/** The wake a proposer NOTIFYs on the proposals' channel: it carries nothing but "look". */
const WAKE_PAYLOAD = JSON.stringify({ v: SEQUENCER_FORMAT_VERSION, k: 'w' });

/** How many proposal rows the sequencer takes out of the table per statement. */
const DRAIN_ROWS = 64;

const UUID_PATTERN = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const TOKEN_PATTERN = /^[0-9]{1,19}$/;
const CODE_PATTERN = /^[A-Z][A-Z0-9_]{0,63}$/;
const OUTCOMES = new Set(['committed', 'refused', 'fenced', 'unanswered', 'unsent']);

/** Refuses a proposal id that is not a lower-case UUID (what the log's `proposal_id` holds). */
export function checkProposalId(id: unknown): asserts id is string {
  if (typeof id !== 'string' || !UUID_PATTERN.test(id)) {
    throw new TeamError(
      'INVALID_ARGUMENT',
      `a proposal id must be a lower-case UUID, got ${JSON.stringify(id)?.slice(0, 80)}`,
      { details: { proposalId: typeof id === 'string' ? id.slice(0, 80) : id } },
    );
  }
}

/** `prefix` and 40 hex digits of the SHA-256 of `parts`: within the 63 bytes of an identifier. */
function channelName(prefix: string, parts: readonly string[]): string {
  const digest = createHash('sha256').update(parts.join('\u0000')).digest('hex');
  return `${prefix}${digest.slice(0, 40)}`;
}

/**
 * The LISTEN/NOTIFY channels of a team's sequencer, for process `processId`: the team's (the
 * sequencer's hellos, which every process hears), the proposals' (which only the sequencer
 * LISTENs on) and one per process for the answers to its proposals. So a proposal reaches the
 * sequencer alone and an answer its proposer alone, not every process of the team.
 */
export function sequencerChannelsOf(
  schema: string,
  teamId: string,
  processId: string,
): SequencerChannels {
  const answersOf = (to: string) => channelName('teamwire_sqa_', [schema, teamId, to]);
  return {
    team: channelName('teamwire_seq_', [schema, teamId]),
    proposals: channelName('teamwire_sqp_', [schema, teamId]),
    answers: answersOf(processId),
    answersOf,
  };
}

/** The key of the session advisory lock its sequencer holds, the same in every process. */
function lockKey(schema: string, teamId: string): string {
  return `teamwire:sequencer:${schema}:${teamId}`;
}

/** Whose claim fences a proposal received from another process (see the log's parts). */
const fences = new WeakMap<IncomingProposal, { processId: string; token: string | null }>();

/** The proposer's process and fence token of a proposal this store received, if it did. */
export function proposalFence(
  proposal: IncomingProposal,
): { processId: string; token: string | null } | undefined {
  return fences.get(proposal);
}

/** What a store's sequencer counted (see {@link PostgresSequencer.stats}). */
export interface SequencerStats {
  /** This process's proposals by answer, its own fallbacks (`unanswered`, `unsent`) included. */
  readonly outcomes: Record<ProposalAnswer['outcome'], number>;
  /** Proposals of other processes handed to this process's pipeline while it sequenced. */
  served: number;
  /**
   * What this process received that was not valid, dropped: payloads on the sequencer channels
   * and proposal rows (one that does not validate, or that waited longer than its proposer
   * waits for an answer).
   */
  dropped: number;
  /**
   * What this process received, by kind (a proposal counted before it is validated). A process
   * hears hellos and the answers to its own proposals and, while it sequences, wakes, and it
   * takes proposals out of the team's proposals table.
   */
  readonly received: {
    /** Hellos of a sequencer (on the team's channel). */
    hello: number;
    /** Wakes of proposers (on the proposals' channel, heard only while this process sequences). */
    wake: number;
    /** Proposal rows this process took out of the table while it sequenced. */
    proposal: number;
    /** Payloads of answers to this process's proposals (on its own channel). */
    answer: number;
  };
}

/** One answer on the wire: `[proposalId, toProcessId, outcome, first|code?, last?]`. */
type WireAnswer = [string, string, ProposalAnswer['outcome'], (number | string)?, number?];

/**
 * Encodes answers (to one process) in as few payloads as fit {@link SEQUENCER_PROPOSAL_BYTES_MAX}
 * each.
 */
function answerPayloads(answers: readonly WireAnswer[]): string[] {
  const payloads: string[] = [];
  let batch: WireAnswer[] = [];
  const encode = (list: WireAnswer[]) =>
    JSON.stringify({ v: SEQUENCER_FORMAT_VERSION, k: 'a', answers: list });
  for (const answer of answers) {
    batch.push(answer);
    if (Buffer.byteLength(encode(batch), 'utf8') > SEQUENCER_PROPOSAL_BYTES_MAX) {
      batch.pop();
      if (batch.length > 0) payloads.push(encode(batch));
      batch = [answer];
    }
  }
  if (batch.length > 0) payloads.push(encode(batch));
  return payloads;
}

/**
 * The {@link TeamSequencer} of a PostgreSQL store. The process that serves (its commit pipeline
 * called {@link serve}) and holds the team's session advisory lock on its LISTEN connection is the
 * sequencer; the lock goes with the connection, so when that process dies or loses its network
 * another one takes it at its next look (every `pollMs`). The sequencer says so on the team's
 * sequencer channel at every look; a process that heard it recently proposes, one that did not
 * (or whose last proposal went unanswered) appends itself. A proposal is a row of the team's
 * proposals table, inserted with a wake on the proposals' channel in one statement; the sequencer
 * takes the rows out when woken and at every look. Every row and payload received is bounded and
 * validated; anything else is dropped (its proposer then times out and appends).
 */
export class PostgresSequencer implements TeamSequencer {
  readonly #doorbell: Doorbell;
  readonly #pool: pg.Pool;
  readonly #channels: SequencerChannels;
  /** The proposer's statement (a row and its wake) and the sequencer's (taking rows out). */
  readonly #proposeSql: string;
  readonly #proposeName: string;
  readonly #drainSql: string;
  readonly #drainName: string;
  readonly #placement: PostgresPlacement;
  readonly #teamId: string;
  readonly #processId: string;
  readonly #key: string;
  readonly #pollMs: number;
  readonly #unlisten: () => void;
  readonly #unring: () => void;
  #handler: ((proposal: IncomingProposal) => void) | undefined;
  /** Until when (ms since the epoch) a sequencer is believed to be there. */
  #heardUntil = 0;
  readonly #waiting = new Map<
    string,
    { resolve: (answer: ProposalAnswer) => void; timer: ReturnType<typeof setTimeout> }
  >();
  #outbox: WireAnswer[] = [];
  #flushing = false;
  #closed = false;
  /** Whether a drain of the proposals table runs, and whether it must run once more after. */
  #draining = false;
  #drainAgain = false;
  /**
   * What this process did as a proposer (`outcomes`: its proposals' answers, its own fallbacks
   * included) and as the sequencer (`served`: proposals handed to its pipeline), and `dropped`
   * payloads received that were not valid. Counters that only grow.
   */
  readonly stats: SequencerStats = {
    outcomes: { committed: 0, refused: 0, fenced: 0, unanswered: 0, unsent: 0 },
    served: 0,
    dropped: 0,
    received: { hello: 0, wake: 0, proposal: 0, answer: 0 },
  };

  constructor(options: {
    doorbell: Doorbell;
    /** This process's sequencer channels, as its doorbell LISTENs on them. */
    channels: SequencerChannels;
    pool: pg.Pool;
    /** The team's proposals table, qualified and quoted (`Tables.proposals`). */
    proposals: string;
    placement: PostgresPlacement;
    schema: string;
    teamId: string;
    processId: string;
    pollMs: number;
  }) {
    this.#doorbell = options.doorbell;
    this.#pool = options.pool;
    const table = options.proposals;
    this.#channels = options.channels;
    // the row and its wake commit together, so a sequencer woken by it finds it
    this.#proposeSql = `WITH proposal AS (
        INSERT INTO ${table} (team_id, id, payload) VALUES ($1, $2::uuid, $3) RETURNING 1
      )
      SELECT pg_notify($4, $5) FROM proposal`;
    this.#proposeName = statementName('propose', this.#proposeSql);
    // oldest first; a payload over the bound is not even fetched: it comes back null
    this.#drainSql = `WITH taken AS (
        DELETE FROM ${table} AS p
         WHERE p.team_id = $1 AND p.id IN (
           SELECT q.id FROM ${table} AS q WHERE q.team_id = $1
            ORDER BY q.proposed_at LIMIT $2 FOR UPDATE SKIP LOCKED)
        RETURNING p.id, p.payload, p.proposed_at)
      SELECT id::text AS id,
             CASE WHEN octet_length(payload) <= $4 THEN payload END AS payload,
             proposed_at < clock_timestamp() - make_interval(secs => $3 / 1000.0) AS stale
        FROM taken ORDER BY proposed_at`;
    this.#drainName = statementName('drain', this.#drainSql);
    this.#placement = options.placement;
    this.#teamId = options.teamId;
    this.#processId = options.processId;
    this.#pollMs = options.pollMs;
    this.#key = lockKey(options.schema, options.teamId);
    this.#unlisten = this.#doorbell.listenSequencer((payload) => this.#received(payload));
    this.#unring = this.#doorbell.listen((ring) => {
      if (ring.kind === 'poll' || ring.kind === 'reconnected') void this.#look();
    });
  }

  leading(): boolean {
    return this.#handler !== undefined && !this.#closed && this.#doorbell.holdsLock();
  }

  async propose(proposal: Proposal): Promise<ProposalAnswer> {
    const answer = await this.#propose(proposal);
    this.stats.outcomes[answer.outcome]++;
    return answer;
  }

  #propose(proposal: Proposal): Promise<ProposalAnswer> {
    const unsent: ProposalAnswer = { outcome: 'unsent' };
    if (this.#closed || this.leading() || Date.now() > this.#heardUntil) {
      return Promise.resolve(unsent);
    }
    let token: string | null = null;
    if (proposal.actorId !== undefined) {
      const fence = this.#placement.fence(proposal.actorId);
      if (fence.kind === 'lost') return Promise.resolve({ outcome: 'fenced' });
      if (fence.kind === 'held') token = fence.token;
    }
    const payload = JSON.stringify({
      v: SEQUENCER_FORMAT_VERSION,
      k: 'p',
      id: proposal.id,
      from: this.#processId,
      actor: proposal.actorId ?? null,
      token,
      records: proposal.records,
    });
    if (Buffer.byteLength(payload, 'utf8') > SEQUENCER_PROPOSAL_BYTES_MAX) {
      return Promise.resolve(unsent);
    }
    // waiting before the row is written: its answer may come before the statement's reply
    const answered = new Promise<ProposalAnswer>((resolve) => {
      const timer = setTimeout(() => {
        this.#waiting.delete(proposal.id);
        // no answer: stop proposing until the sequencer is heard from again
        this.#heardUntil = 0;
        resolve({ outcome: 'unanswered' });
      }, SEQUENCER_ANSWER_TIMEOUT_MS);
      timer.unref?.();
      this.#waiting.set(proposal.id, { resolve, timer });
    });
    execute(
      this.#pool,
      this.#proposeSql,
      [this.#teamId, proposal.id, payload, this.#channels.proposals, WAKE_PAYLOAD],
      this.#proposeName,
    ).catch(() => {
      // not written (no connection, no privilege): the proposer appends itself at once
      this.#settle(proposal.id, unsent);
    });
    return answered;
  }

  /** Resolves the waiting proposal `id` with `answer`, if it still waits. */
  #settle(id: string, answer: ProposalAnswer): boolean {
    const waiting = this.#waiting.get(id);
    if (waiting === undefined) return false;
    this.#waiting.delete(id);
    clearTimeout(waiting.timer);
    waiting.resolve(answer);
    return true;
  }

  serve(handler: (proposal: IncomingProposal) => void): () => void {
    this.#handler = handler;
    void this.#look();
    return () => {
      if (this.#handler !== handler) return;
      this.#handler = undefined;
      void this.#doorbell.unlock(this.#key);
    };
  }

  /** Stops serving and answers every proposal still waiting with `unanswered`. */
  close(): void {
    this.#closed = true;
    this.#handler = undefined;
    this.#unlisten();
    this.#unring();
    for (const [, waiting] of this.#waiting) {
      clearTimeout(waiting.timer);
      waiting.resolve({ outcome: 'unanswered' });
    }
    this.#waiting.clear();
  }

  /** At every poll: a serving process tries to take the lead; the sequencer says it is there. */
  async #look(): Promise<void> {
    if (this.#closed || this.#handler === undefined) return;
    if (!this.#doorbell.holdsLock() && !(await this.#doorbell.tryLock(this.#key))) return;
    if (this.#closed || this.#handler === undefined) {
      await this.#doorbell.unlock(this.#key);
      return;
    }
    this.#doorbell.sendSequencer(
      JSON.stringify({ v: SEQUENCER_FORMAT_VERSION, k: 'h', from: this.#processId }),
      'team',
    );
    // rows proposed before this process LISTENed, or whose wake was lost with a connection
    this.#drain();
  }

  /**
   * Takes the waiting proposals out of the table, oldest first, and hands each valid one to the
   * pipeline; runs again while a wake came meanwhile or a full batch came back. A row older than
   * {@link SEQUENCER_ANSWER_TIMEOUT_MS} is dropped: its proposer stopped waiting and appends it
   * itself. A failed statement leaves the rows for the next wake or look.
   */
  #drain(): void {
    if (!this.leading()) return;
    if (this.#draining) {
      this.#drainAgain = true;
      return;
    }
    this.#draining = true;
    void (async () => {
      try {
        let more = true;
        while (more && this.leading()) {
          this.#drainAgain = false;
          const taken = await execute<{ id: string; payload: string | null; stale: boolean }>(
            this.#pool,
            this.#drainSql,
            [this.#teamId, DRAIN_ROWS, SEQUENCER_ANSWER_TIMEOUT_MS, SEQUENCER_PROPOSAL_BYTES_MAX],
            this.#drainName,
          );
          for (const row of taken.rows) this.#taken(row);
          more = this.#drainAgain || taken.rows.length >= DRAIN_ROWS;
        }
      } catch {
        // the next wake or look takes them
      } finally {
        this.#draining = false;
      }
    })();
  }

  /** A proposal row taken out of the table: validated, then handed to the pipeline. */
  #taken(row: { id: string; payload: string | null; stale: boolean }): void {
    this.stats.received.proposal++;
    if (
      row.stale ||
      typeof row.payload !== 'string' ||
      Buffer.byteLength(row.payload, 'utf8') > SEQUENCER_PROPOSAL_BYTES_MAX
    ) {
      this.stats.dropped++;
      return;
    }
    let message: Record<string, unknown>;
    try {
      const parsed: unknown = JSON.parse(row.payload);
      if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
        throw new Error('not an object');
      }
      message = parsed as Record<string, unknown>;
    } catch {
      this.stats.dropped++;
      return;
    }
    const proposal =
      message.v === SEQUENCER_FORMAT_VERSION && message.k === 'p' && message.id === row.id
        ? this.#proposal(message)
        : undefined;
    if (proposal === undefined) {
      this.stats.dropped++;
      return;
    }
    const handler = this.#handler;
    if (!this.leading() || handler === undefined) {
      // taken out of the table just as this process stopped sequencing: nobody else will take
      // it, so its proposer appends it itself now rather than after its wait
      proposal.answer({ outcome: 'unsent' });
      return;
    }
    this.stats.served++;
    handler(proposal);
  }

  #heard(): void {
    this.#heardUntil = Date.now() + 2 * this.#pollMs + SEQUENCER_ANSWER_TIMEOUT_MS;
  }

  #received(payload: string): void {
    if (this.#closed) return;
    // a wake reaches only the process LISTENing on the proposals: it drains the table
    if (payload === WAKE_PAYLOAD) {
      this.stats.received.wake++;
      this.#drain();
      return;
    }
    if (Buffer.byteLength(payload, 'utf8') > SEQUENCER_PROPOSAL_BYTES_MAX) {
      this.stats.dropped++;
      return;
    }
    let message: Record<string, unknown>;
    try {
      const parsed: unknown = JSON.parse(payload);
      if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
        throw new Error('not an object');
      }
      message = parsed as Record<string, unknown>;
      if (message.v !== SEQUENCER_FORMAT_VERSION) throw new Error('unknown version');
    } catch {
      this.stats.dropped++;
      return;
    }
    if (message.k === 'h') {
      this.stats.received.hello++;
      if (isProcessId(message.from) && message.from !== this.#processId) this.#heard();
      else if (!isProcessId(message.from)) this.stats.dropped++;
      return;
    }
    if (message.k === 'a') {
      this.stats.received.answer++;
      this.#answers(message.answers);
      return;
    }
    // a proposal comes only as a row of the team's table, never as a payload: anything else
    // (a proposal sent as a NOTIFY, which any role that may connect can send) is dropped
    this.stats.dropped++;
  }

  #answers(answers: unknown): void {
    if (!Array.isArray(answers)) {
      this.stats.dropped++;
      return;
    }
    for (const entry of answers) {
      if (!Array.isArray(entry) || entry[1] !== this.#processId) continue;
      const answer = parseAnswer(entry);
      if (answer === undefined) {
        this.stats.dropped++;
        continue;
      }
      this.#heard();
      this.#settle(entry[0] as string, answer);
    }
  }

  /** A validated proposal from another process, or undefined. */
  #proposal(message: Record<string, unknown>): IncomingProposal | undefined {
    const { id, from, actor, token, records } = message;
    if (typeof id !== 'string' || !UUID_PATTERN.test(id)) return undefined;
    if (!isProcessId(from) || from === this.#processId) return undefined;
    if (actor !== null && !isProcessId(actor)) return undefined;
    if (token !== null && (typeof token !== 'string' || !TOKEN_PATTERN.test(token))) {
      return undefined;
    }
    if (
      !Array.isArray(records) ||
      records.length === 0 ||
      records.length > SEQUENCER_BATCH_RECORDS_MAX
    ) {
      return undefined;
    }
    const copies: TeamRecord[] = [];
    try {
      for (const value of records) {
        const copy = parseAppendedRecord(value);
        if (copy.teamId !== this.#teamId) return undefined;
        const previous = copies.at(-1);
        if (previous !== undefined && copy.seq !== previous.seq + 1) return undefined;
        copies.push(copy);
      }
    } catch {
      return undefined;
    }
    if (!isRebasable(copies)) return undefined;
    let answered = false;
    const proposal: IncomingProposal = {
      id,
      actorId: actor === null ? undefined : (actor as string),
      records: copies,
      answer: (answer) => {
        if (answered) return;
        answered = true;
        this.#queueAnswer(id, from, answer);
      },
    };
    fences.set(proposal, { processId: from, token: token as string | null });
    return proposal;
  }

  #queueAnswer(id: string, to: string, answer: ProposalAnswer): void {
    const wire: WireAnswer = [id, to, answer.outcome];
    if (answer.outcome === 'committed') wire.push(answer.first, answer.last);
    else if (answer.outcome === 'refused') wire.push(answer.code);
    this.#outbox.push(wire);
    if (this.#flushing) return;
    this.#flushing = true;
    // answers settled together (one append) go out together: a payload per proposer, one
    // statement for all
    setImmediate(() => {
      this.#flushing = false;
      const byProcess = new Map<string, WireAnswer[]>();
      for (const answer of this.#outbox) {
        const list = byProcess.get(answer[1]);
        if (list === undefined) byProcess.set(answer[1], [answer]);
        else list.push(answer);
      }
      this.#outbox = [];
      for (const [processId, answers] of byProcess) {
        for (const payload of answerPayloads(answers)) {
          this.#doorbell.sendSequencer(payload, { processId });
        }
      }
    });
  }
}

function isProcessId(value: unknown): value is string {
  return typeof value === 'string' && value.length > 0 && value.length <= MAX_ID_LENGTH;
}

/** An answer entry as received, validated; undefined when malformed. */
function parseAnswer(entry: unknown[]): ProposalAnswer | undefined {
  const [id, , outcome, third, fourth] = entry;
  if (typeof id !== 'string' || !UUID_PATTERN.test(id)) return undefined;
  if (typeof outcome !== 'string' || !OUTCOMES.has(outcome)) return undefined;
  switch (outcome) {
    case 'committed':
      if (!isSeq(third) || !isSeq(fourth) || fourth < third) return undefined;
      return { outcome, first: third, last: fourth };
    case 'refused':
      if (typeof third !== 'string' || !CODE_PATTERN.test(third)) return undefined;
      return { outcome, code: third };
    default:
      return { outcome: outcome as 'fenced' | 'unanswered' | 'unsent' };
  }
}

function isSeq(value: unknown): value is number {
  return typeof value === 'number' && Number.isSafeInteger(value) && value >= 1;
}
