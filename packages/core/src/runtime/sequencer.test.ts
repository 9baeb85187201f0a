import { describe, expect, it } from 'vitest';
import { TeamError } from '../errors.js';
import { noopEventSink } from '../ports/events.js';
import type {
  IncomingProposal,
  Proposal,
  ProposalAnswer,
  TeamLog,
  TeamLogAppendOptions,
} from '../ports/team-log.js';
import type { TeamRecord } from '../records.js';
import { TeamState } from '../state/team-state.js';
import { createTestTeam, TEAM_ID } from '../state/test-fixtures.js';
import { createManualClock } from '../testing/manual-clock.js';
import { CommitPipeline } from './commit-pipeline.js';
import { isRebasable, rebaseRecords } from './rebase.js';

/**
 * One shared log in memory, as a database would hold it: it refuses a taken seq and a proposal id
 * it already holds (`SEQ_CONFLICT`), and a part whose member is fenced (`FENCED`, `details.part`).
 */
class FakeSharedLog {
  readonly records: TeamRecord[] = [];
  readonly proposalIds = new Set<string>();
  /** Members whose writes are refused, as a moved placement would refuse them. */
  readonly fenced = new Set<string>();
  readonly bells = new Set<() => void>();
  appends = 0;

  constructor(initial: readonly TeamRecord[]) {
    this.records.push(...initial);
  }

  append(options: TeamLogAppendOptions): void | Promise<void> {
    const first = options.records[0] as TeamRecord;
    if (first.seq !== this.records.length + 1) {
      throw new TeamError('SEQ_CONFLICT', `seq ${first.seq} is taken`);
    }
    const parts = options.parts ?? [{ count: options.records.length, actorId: options.actorId }];
    const shared = new Set<string>();
    for (const [part, each] of parts.entries()) {
      const own = each.proposal?.id ?? each.proposalId;
      // parts of one append may share an id (one proposal's commands); never with another append
      if (own !== undefined && shared.has(own) && parts[part - 1]?.proposalId !== own) {
        throw new Error(`proposal ${own} is named by parts that are not consecutive`);
      }
      if (own !== undefined) shared.add(own);
      if (each.actorId !== undefined && this.fenced.has(each.actorId)) {
        throw new TeamError('FENCED', `${each.actorId} is fenced`, {
          details: { memberId: each.actorId, part },
        });
      }
      const id = each.proposal?.id ?? each.proposalId;
      if (id !== undefined && this.proposalIds.has(id)) {
        throw new TeamError('SEQ_CONFLICT', `proposal ${id} is already written`, {
          details: { proposalIds: [id] },
        });
      }
    }
    for (const each of parts) {
      const id = each.proposal?.id ?? each.proposalId;
      if (id !== undefined) this.proposalIds.add(id);
    }
    this.records.push(...options.records.map((record) => structuredClone(record)));
    this.appends++;
    for (const bell of this.bells) queueMicrotask(bell);
  }
}

/**
 * How the fake transport treats a proposal sent to the sequencer: delivers it, loses it, or
 * answers `fenced` itself without delivering it (as a forged answer would).
 */
type Delivery = 'deliver' | 'lose' | 'forge-fenced';

/** The processes of one team: their sequencer transport, and which one leads. */
class FakeTeam {
  readonly log: FakeSharedLog;
  leader: FakeProcess | undefined;
  delivery: Delivery = 'deliver';
  /** Proposals the transport lost (the sequencer may still get them late). */
  readonly lost: IncomingProposal[] = [];

  constructor(initial: readonly TeamRecord[]) {
    this.log = new FakeSharedLog(initial);
  }

  join(name: string, limits?: { maxPendingPerMember?: number }): FakeProcess {
    const process = new FakeProcess(this, name, limits);
    return process;
  }
}

class FakeProcess {
  readonly state: TeamState;
  readonly pipeline: CommitPipeline;
  handler: ((proposal: IncomingProposal) => void) | undefined;
  readonly answers: ProposalAnswer['outcome'][] = [];

  constructor(
    readonly team: FakeTeam,
    readonly name: string,
    limits?: { maxPendingPerMember?: number },
  ) {
    this.state = TeamState.fromRecords(team.log.records, {
      teamId: TEAM_ID,
      clock: createManualClock(),
      limits,
    });
    const shared = team.log;
    const log: TeamLog = {
      specificationVersion: 'v1',
      teamId: TEAM_ID,
      append: async (options) => {
        await Promise.resolve();
        await shared.append(options);
      },
      read: (options) => readFrom(shared.records, options?.fromSeq ?? 1),
      subscribe: () => () => {},
      lastSeq: () => shared.records.length,
      close: async () => {},
      shared: {
        onAppended: (listener) => {
          shared.bells.add(listener);
          return () => shared.bells.delete(listener);
        },
        sequencer: {
          leading: () => team.leader === this,
          propose: (proposal) => this.send(proposal),
          serve: (handler) => {
            this.handler = handler;
            return () => {
              this.handler = undefined;
            };
          },
        },
      },
    };
    this.pipeline = new CommitPipeline({ log, state: this.state, events: noopEventSink });
  }

  /** The transport: a copy of the proposal reaches the leader's pipeline, its answer comes back. */
  private async send(proposal: Proposal): Promise<ProposalAnswer> {
    const answer = await new Promise<ProposalAnswer>((resolve) => {
      const leader = this.team.leader;
      if (leader === undefined || leader === this || leader.handler === undefined) {
        resolve({ outcome: 'unsent' });
        return;
      }
      let answered = false;
      const incoming: IncomingProposal = {
        id: proposal.id,
        actorId: proposal.actorId,
        records: structuredClone(proposal.records),
        answer: (answer) => {
          if (answered) return;
          answered = true;
          if (this.team.delivery === 'deliver') resolve(answer);
        },
      };
      if (this.team.delivery === 'lose') {
        this.team.lost.push(incoming);
        resolve({ outcome: 'unanswered' });
        return;
      }
      if (this.team.delivery === 'forge-fenced') {
        resolve({ outcome: 'fenced' });
        return;
      }
      leader.handler(incoming);
    });
    this.answers.push(answer.outcome);
    return answer;
  }

  send1(to: string, id: string, actorId = TEAM_ID): Promise<readonly TeamRecord[]> {
    return this.pipeline.commit(
      this.name,
      () => [
        this.state.queueMessage({
          id,
          senderId: actorId,
          targetId: to,
          kind: 'message',
          delivery: 'wakeup',
          content: [{ type: 'text', text: `message ${id}` }],
        }),
      ],
      { actorId },
    );
  }
}

async function* readFrom(records: readonly TeamRecord[], fromSeq: number) {
  await Promise.resolve();
  for (const record of records.slice(Math.max(0, fromSeq - 1))) yield structuredClone(record);
}

/** A team of a lead and three teammates, as every process starts from it. */
function startingLog() {
  const team = createTestTeam();
  const ids = [team.spawn('alice'), team.spawn('bob'), team.spawn('carol')];
  return { records: team.log, ids };
}

function queuedIds(records: readonly TeamRecord[]): string[] {
  return records.flatMap((record) => (record.type === 'message.queued' ? [record.message.id] : []));
}

async function settledAll(...processes: FakeProcess[]): Promise<void> {
  for (let round = 0; round < 3; round++) {
    for (const process of processes) {
      process.pipeline.requestCatchUp();
      await process.pipeline.settled();
    }
  }
}

/** A team of a sequencer (`leader`) and one proposer (`a`) whose proposals the sequencer never gets. */
function losingTeam() {
  const { records, ids } = startingLog();
  const team = new FakeTeam(records);
  const leader = team.join('leader');
  const a = team.join('a');
  team.leader = leader;
  team.delivery = 'lose';
  return { team, leader, a, ids };
}

describe('the rebase rule', () => {
  it('is only for mail: a task record is not rebasable', () => {
    const team = createTestTeam();
    const alice = team.spawn('alice');
    const message = team.run((s) =>
      s.queueMessage({
        id: 'm-1',
        senderId: TEAM_ID,
        targetId: alice,
        kind: 'message',
        delivery: 'wakeup',
        content: [{ type: 'text', text: 'hi' }],
      }),
    );
    const task = team.run((s) =>
      s.createTask(TEAM_ID, { subject: 'a task', description: 'a task in detail' }),
    );
    expect(isRebasable([message])).toBe(true);
    expect(isRebasable([message, task])).toBe(false);
    expect(isRebasable([])).toBe(false);
  });

  it('commits a message at the next seq when the command decides the same, and refuses otherwise', () => {
    const base = createTestTeam({ limits: { maxPendingPerMember: 1 } });
    const alice = base.spawn('alice');
    const bob = base.spawn('bob');
    const state = TeamState.fromRecords(base.log, {
      teamId: TEAM_ID,
      clock: createManualClock(),
      limits: { maxPendingPerMember: 1 },
    });
    state.startJournal();
    const proposed = base.run((s) =>
      s.queueMessage({
        id: 'm-1',
        senderId: TEAM_ID,
        targetId: alice,
        kind: 'message',
        delivery: 'wakeup',
        content: [{ type: 'text', text: 'one' }],
      }),
    );
    const [rebased] = rebaseRecords(state, [proposed]);
    expect(rebased).toEqual({ ...proposed, seq: state.lastSeq });
    // the mailbox is full now: the same command is refused, as in one process
    const again = { ...proposed, message: { ...proposed.message, id: 'm-2' } };
    const before = state.lastSeq;
    expect(() => rebaseRecords(state, [again])).toThrow(
      expect.objectContaining({ code: 'MAILBOX_FULL' }),
    );
    expect(state.lastSeq).toBe(before);
    // a proposal that decides differently here (another sender name) is refused
    const renamed = {
      ...proposed,
      message: { ...proposed.message, id: 'm-3', targetId: bob, senderName: 'someone' },
    };
    expect(() => rebaseRecords(state, [renamed])).toThrow(
      expect.objectContaining({ code: 'SEQ_CONFLICT' }),
    );
  });
});

describe('a team sequenced by one process', () => {
  it('commits interleaved proposals of several processes once each, in batches', async () => {
    const { records, ids } = startingLog();
    const team = new FakeTeam(records);
    const leader = team.join('leader');
    const a = team.join('a');
    const b = team.join('b');
    team.leader = leader;
    const sends: Promise<readonly TeamRecord[]>[] = [];
    for (let i = 0; i < 5; i++) {
      sends.push(a.send1(ids[0] as string, `a-${i}`));
      sends.push(b.send1(ids[1] as string, `b-${i}`));
      sends.push(leader.send1(ids[2] as string, `l-${i}`));
    }
    const durable = await Promise.all(sends);
    await settledAll(leader, a, b);
    const written = queuedIds(team.log.records);
    expect(written.toSorted()).toEqual(
      ['a', 'b', 'l'].flatMap((p) => [0, 1, 2, 3, 4].map((i) => `${p}-${i}`)).toSorted(),
    );
    // each command resolved with its record as the log holds it
    for (const [record] of durable) {
      expect(team.log.records[(record as TeamRecord).seq - 1]).toEqual(record);
    }
    // proposals went through the sequencer (none was appended by its proposer)
    expect(a.answers.every((outcome) => outcome === 'committed')).toBe(true);
    expect(b.answers.length).toBeGreaterThan(0);
    expect(team.log.appends).toBeLessThan(15);
    for (const process of [a, b]) {
      expect(process.state.lastSeq).toBe(team.log.records.length);
      expect(process.state.pending(ids[0] as string).map((m) => m.id)).toEqual(
        leader.state.pending(ids[0] as string).map((m) => m.id),
      );
    }
  });

  it('refuses a proposal the newer state decides otherwise; the proposer decides again, limits held', async () => {
    const { records, ids } = startingLog();
    const limits = { maxPendingPerMember: 1 };
    const team = new FakeTeam(records);
    const leader = team.join('leader', limits);
    const a = team.join('a', limits);
    team.leader = leader;
    const alice = ids[0] as string;
    // both decide against an empty mailbox of alice; the leader's own send lands first
    const first = leader.send1(alice, 'from-leader');
    const second = a.send1(alice, 'from-a');
    await expect(first).resolves.toHaveLength(1);
    await expect(second).rejects.toMatchObject({ code: 'MAILBOX_FULL' });
    await settledAll(leader, a);
    expect(a.answers).toContain('refused');
    expect(queuedIds(team.log.records)).toEqual(['from-leader']);
    expect(a.state.pending(alice).map((m) => m.id)).toEqual(['from-leader']);
  });

  it('fences one proposal without holding back the others in its batch', async () => {
    const { records, ids } = startingLog();
    const team = new FakeTeam(records);
    const leader = team.join('leader');
    const a = team.join('a');
    const b = team.join('b');
    team.leader = leader;
    const [alice, bob, carol] = ids as [string, string, string];
    team.log.fenced.add(alice);
    const fenced = a.send1(carol, 'as-alice', alice);
    const fine = b.send1(carol, 'as-bob', bob);
    await expect(fenced).rejects.toMatchObject({ code: 'FENCED' });
    await expect(fine).resolves.toHaveLength(1);
    await settledAll(leader, a, b);
    expect(a.answers).toContain('fenced');
    expect(queuedIds(team.log.records)).toEqual(['as-bob']);
  });

  it('does not take a fenced answer on trust: it appends itself, and only the log fences it', async () => {
    const { records, ids } = startingLog();
    const team = new FakeTeam(records);
    const leader = team.join('leader');
    const a = team.join('a');
    team.leader = leader;
    team.delivery = 'forge-fenced';
    const [alice, bob, carol] = ids as [string, string, string];
    // alice still runs in a: the answer is wrong, and the send goes through once
    await expect(a.send1(carol, 'still-alice', alice)).resolves.toHaveLength(1);
    expect(a.answers).toEqual(['fenced']);
    expect(queuedIds(team.log.records)).toEqual(['still-alice']);
    // a member that did move: the proposer's own append is fenced
    team.log.fenced.add(bob);
    await expect(a.send1(carol, 'as-bob', bob)).rejects.toMatchObject({ code: 'FENCED' });
    await settledAll(leader, a);
    expect(queuedIds(team.log.records)).toEqual(['still-alice']);
  });

  it('appends itself when the sequencer does not answer, and the late sequencer writes nothing twice', async () => {
    const { team, leader, a, ids } = losingTeam();
    const sent = await a.send1(ids[0] as string, 'lost-once');
    expect(a.answers).toEqual(['unanswered']);
    expect(queuedIds(team.log.records)).toEqual(['lost-once']);
    // the sequencer gets the proposal late, after its proposer wrote it itself
    const late = team.lost.shift() as IncomingProposal;
    const outcome = new Promise<ProposalAnswer>((resolve) => {
      const answer = late.answer;
      (late as { answer: IncomingProposal['answer'] }).answer = (given) => {
        answer(given);
        resolve(given);
      };
    });
    leader.handler?.(late);
    await expect(outcome).resolves.toMatchObject({ outcome: 'refused' });
    await settledAll(leader, a);
    expect(queuedIds(team.log.records)).toEqual(['lost-once']);
    expect(team.log.records[(sent[0] as TeamRecord).seq - 1]).toEqual(sent[0]);
  });

  it('appends the commands of one unanswered proposal itself, each once, and keeps writing', async () => {
    const { team, leader, a, ids } = losingTeam();
    const sent = await Promise.all([
      a.send1(ids[0] as string, 'together-1'),
      a.send1(ids[1] as string, 'together-2'),
    ]);
    // one proposal carried both; its proposer then wrote both under its id
    expect(a.answers).toEqual(['unanswered']);
    expect(team.log.proposalIds.size).toBe(1);
    expect(queuedIds(team.log.records)).toEqual(['together-1', 'together-2']);
    team.delivery = 'deliver';
    await a.send1(ids[2] as string, 'after');
    await settledAll(leader, a);
    expect(queuedIds(team.log.records)).toEqual(['together-1', 'together-2', 'after']);
    expect(sent.map((each) => (each[0] as TeamRecord).seq)).toEqual([
      team.log.records.length - 2,
      team.log.records.length - 1,
    ]);
  });

  it('writes a proposal once when the sequencer commits it after its proposer gave up waiting', async () => {
    const { team, leader, a, ids } = losingTeam();
    // the sequencer commits the lost proposal before its proposer's own append lands
    const originalAppend = team.log.append.bind(team.log);
    let raced = false;
    team.log.append = async (options) => {
      if (!raced && options.parts?.some((part) => part.proposalId !== undefined)) {
        raced = true;
        leader.handler?.(team.lost.shift() as IncomingProposal);
        await leader.pipeline.settled();
      }
      originalAppend(options);
    };
    const sent = await a.send1(ids[0] as string, 'raced');
    await settledAll(leader, a);
    expect(raced).toBe(true);
    expect(queuedIds(team.log.records)).toEqual(['raced']);
    expect(team.log.records[(sent[0] as TeamRecord).seq - 1]).toEqual(sent[0]);
  });
});
