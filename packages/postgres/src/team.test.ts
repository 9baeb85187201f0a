import type { AgentEvent, AgentRef, TeamRecord, TeamService } from '@teamwire/core';
import {
  createAgentRegistry,
  createEventHub,
  defineTool,
  foldTeam,
  openTeam,
} from '@teamwire/core';
import type { AgentScript } from '@teamwire/core/testing';
import {
  createScriptedModel,
  createSimpleFormat,
  createSimplePolicy,
} from '@teamwire/core/testing';
import { afterEach, beforeEach, expect, it } from 'vitest';
import { z } from 'zod';
import type { PlacementRuns } from './placement.js';
import type { OpenPostgresTeamStoreOptions, PostgresTeamStore } from './store.js';
import { describePg, eventually, Scratch } from './test-support.js';

/*
 * Whole teams over real PostgreSQL: several "processes" (each a store with its own pool and its
 * own team service, as separate processes would have) run one team. The store tests check the
 * store alone; these check the runtime and the store together.
 */

const TEAM = '01JTEAMINTEGRATION00000000';

interface Proc {
  store: PostgresTeamStore;
  service: TeamService;
  events: { agent: string; event: AgentEvent }[];
}

describePg('one team in several processes on PostgreSQL', () => {
  let scratch: Scratch;
  const refs = new Map<string, AgentRef>();
  const procs: Proc[] = [];
  const whoami = defineTool({
    name: 'whoami',
    description: 'Says who you are.',
    inputSchema: z.object({}),
    async execute(_input, { agent }) {
      refs.set(agent.name, agent);
      return agent.name;
    },
  });

  beforeEach(() => {
    scratch = new Scratch();
    refs.clear();
    procs.length = 0;
  });
  afterEach(async () => {
    for (const proc of procs) await proc.service.dispose().catch(() => undefined);
    await scratch.cleanup();
  });

  async function open(
    runs: PlacementRuns,
    scripts: Record<string, AgentScript>,
    sink?: (agent: string, event: AgentEvent) => void,
    options: Partial<OpenPostgresTeamStoreOptions> = {},
  ): Promise<Proc> {
    const store = await scratch.open(TEAM, { runs, leaseMs: 2000, ...options });
    const model = createScriptedModel({ scripts });
    const events: Proc['events'] = [];
    const service = await openTeam({
      teamId: TEAM,
      log: store.log,
      transcripts: store.transcripts,
      format: createSimpleFormat(),
      policy: createSimplePolicy(),
      agents: createAgentRegistry([
        { type: 'lead', systemPrompt: 'You lead.', model },
        { type: 'worker', systemPrompt: 'You work.', model, tools: [whoami] },
      ]),
      lead: { agentType: 'lead' },
      events: {
        publish(agent, event) {
          events.push({ agent, event });
          sink?.(agent, event);
        },
      },
      idleClaim: false,
    });
    const proc = { store, service, events };
    procs.push(proc);
    return proc;
  }

  const turns = (proc: Proc, agent: string) =>
    proc.events.filter((e) => e.agent === agent && e.event.type === 'turn.end').length;

  async function records(): Promise<TeamRecord[]> {
    const rows = await scratch.sql<{ record: string }>(
      `SELECT record FROM "${scratch.schema}".team_log WHERE team_id = $1 ORDER BY seq`,
      [TEAM],
    );
    return rows.rows.map((row) => JSON.parse(row.record) as TeamRecord);
  }

  const worker: AgentScript = ({ call }) =>
    call === 1 ? { toolCalls: [{ name: 'whoami' }] } : { text: `done ${call}` };

  it('runs teammates where they are placed; a claim race between processes gives one owner', async () => {
    const scripts = { lead: () => ({ text: 'Noted.' }), alice: worker, bob: worker };
    const a = await open({ lead: true, agentTypes: [] }, scripts);
    const b = await open({ lead: false }, scripts);
    const c = await open({ lead: false }, scripts);
    for (const name of ['alice', 'bob']) {
      await a.service.spawnTeammate(a.service.lead, {
        name,
        description: 'helps',
        prompt: `Hi ${name}.`,
        agentType: 'worker',
      });
      await eventually(() => turns(b, name) + turns(c, name) === 1, `${name}'s first turn`);
    }
    // no teammate ran in the lead's process, and one ran in each worker process
    expect(turns(a, 'alice') + turns(a, 'bob')).toBe(0);
    expect(turns(b, 'alice') + turns(b, 'bob')).toBe(1);
    const task = await a.service.createTask(a.service.lead, { subject: 's', description: 'd' });
    const alice = refs.get('alice') as AgentRef;
    const bob = refs.get('bob') as AgentRef;
    const where = (ref: AgentRef) => (b.store.placement.runsHere(ref.memberId) ? b : c);
    await eventually(
      () =>
        where(alice).service.listTasks(alice).tasks.length === 1 &&
        where(bob).service.listTasks(bob).tasks.length === 1,
      'both processes to see the task',
    );
    const claims = await Promise.allSettled([
      where(alice).service.updateTask(alice, { taskId: task.id, action: { type: 'claim' } }),
      where(bob).service.updateTask(bob, { taskId: task.id, action: { type: 'claim' } }),
    ]);
    const won = claims.filter((r) => r.status === 'fulfilled');
    const lost = claims.filter((r): r is PromiseRejectedResult => r.status === 'rejected');
    expect(won).toHaveLength(1);
    expect(lost.map((r) => (r.reason as { code?: string }).code)).toEqual(['TASK_OWNED']);
    const folded = foldTeam(await records(), { teamId: TEAM });
    const owner = folded.tasks.find((t) => t.id === task.id)?.ownerId;
    expect([alice.memberId, bob.memberId]).toContain(owner);
  });

  it('moves a teammate to another process when its process closes; mail still reaches it once', async () => {
    const scripts = { lead: () => ({ text: 'Noted.' }), alice: worker };
    const a = await open({ lead: true, agentTypes: [] }, scripts);
    const b = await open({ lead: false }, scripts);
    await a.service.spawnTeammate(a.service.lead, {
      name: 'alice',
      description: 'helps',
      prompt: 'Hi alice.',
      agentType: 'worker',
    });
    await eventually(() => turns(b, 'alice') === 1, "alice's first turn in b");
    const c = await open({ lead: false }, scripts);
    await b.service.dispose();
    await b.store.close();
    const alice = refs.get('alice') as AgentRef;
    await eventually(() => c.store.placement.runsHere(alice.memberId), 'c to take alice over');
    const sent = await a.service.sendMessage(a.service.lead, { to: 'alice', text: 'again' });
    await eventually(() => turns(c, 'alice') === 1, "alice's turn in c");
    const rows = await scratch.sql<{ n: number }>(
      `SELECT count(*)::int AS n FROM "${scratch.schema}".transcript
        WHERE team_id = $1 AND member_id = $2 AND message_id = $3`,
      [TEAM, alice.memberId, sent.messageId],
    );
    expect(rows.rows[0]?.n).toBe(1);
    const log = await records();
    expect(
      log.filter((r) => r.type === 'message.delivered' && r.messageId === sent.messageId),
    ).toHaveLength(1);
  });

  it('an observer process that runs nothing gets every durable record through its hub, in order', async () => {
    const scripts = { lead: () => ({ text: 'Noted.' }), alice: worker };
    const a = await open({ lead: true, agentTypes: [] }, scripts);
    await open({ lead: false }, scripts);
    const hub = createEventHub({ teamId: TEAM });
    const observer = await open({ lead: false, agentTypes: [] }, scripts, (agent, event) =>
      hub.publish(agent, event),
    );
    const from = (await records()).length;
    const seen: number[] = [];
    const subscription = hub.subscribe({});
    const reading = (async () => {
      for await (const item of subscription) {
        if (item.type === 'event' && item.event.type === 'record') seen.push(item.event.record.seq);
      }
    })();
    await a.service.spawnTeammate(a.service.lead, {
      name: 'alice',
      description: 'helps',
      prompt: 'Hi alice.',
      agentType: 'worker',
    });
    // the team goes on writing meanwhile: compare with one snapshot of the log the observer reached
    let snapshot: TeamRecord[] = [];
    await eventually(async () => {
      snapshot = await records();
      return snapshot.length > from + 4 && seen.includes(snapshot.length);
    }, 'the observer to catch up');
    const reached = snapshot.slice(from).map((r) => r.seq);
    expect(seen.slice(0, reached.length)).toEqual(reached);
    // and nothing out of order or twice after it
    expect(seen).toEqual(seen.map((_, i) => from + 1 + i));
    expect(observer.events.some((e) => e.event.type === 'turn.start')).toBe(false);
    hub.close();
    await reading;
  });
  it('writes snapshots as the team works; a joining process opens from the newest and the records after it', async () => {
    const scripts = { lead: () => ({ text: 'Noted.' }) };
    const snapshots = { everyRecords: 10, everyBytes: 1_000_000 };
    const a = await open({ lead: true, agentTypes: [] }, scripts, undefined, { snapshots });
    for (let i = 0; i < 40; i++) {
      await a.service.createTask(a.service.lead, { subject: `task ${i}`, description: 'work' });
    }
    const table = `"${scratch.schema}".team_snapshots`;
    const newest = async () =>
      Number(
        (await scratch.sql<{ seq: string | null }>(`SELECT max(seq) AS seq FROM ${table}`)).rows[0]!
          .seq ?? 0,
      );
    await eventually(async () => (await newest()) >= 30, 'a snapshot of the recent state');
    expect(a.store.snapshots!.written).toBeGreaterThanOrEqual(2);
    const rows = await scratch.sql<{ n: number }>(`SELECT count(*)::int AS n FROM ${table}`);
    expect(rows.rows[0]!.n).toBe(2);
    const full = foldTeam(await records(), { teamId: TEAM });
    // The history before the newest snapshot's record is gone: opening must not need it.
    const at = await newest();
    await scratch.sql(`DELETE FROM "${scratch.schema}".team_log WHERE seq < $1`, [at]);
    const b = await open({ lead: false }, scripts, undefined, { snapshots });
    expect(b.store.snapshots).toMatchObject({ newestSeq: at, skipped: 0, rejected: 0 });
    const tasks = (proc: Proc) => proc.service.listTasks(proc.service.lead, { limit: 100 }).tasks;
    expect(tasks(b)).toEqual(tasks(a));
    expect(tasks(b)).toHaveLength(40);
    expect(full.tasks).toHaveLength(40);
    // and it keeps up with what the first process does next
    await a.service.createTask(a.service.lead, { subject: 'one more', description: 'work' });
    await eventually(() => tasks(b).length === 41, 'the new task in the joining process');
  });
});
