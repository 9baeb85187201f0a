import {
  createAgentRegistry,
  createEventHub,
  DEAD_LETTER_DETAIL_MAX,
  deterministicSummary,
  foldTeam,
  type HubItem,
  MEMBER_DESCRIPTION_MAX,
  openTeam,
  type TeamRecord,
  TeamState,
} from '@teamwire/core';
import {
  createManualClock,
  createMemoryTeamLog,
  createMemoryTranscriptStore,
  createScriptedModel,
  createSequentialIds,
  randomTeamRecords,
} from '@teamwire/core/testing';
import { xmlFormat } from '@teamwire/protocol';
import { describe, expect, it } from 'vitest';
import { transcriptUsage } from './snapshot.js';
import { cutRecord, MAIL_TEXT_KEEP } from './snapshot-record.js';
import {
  applyHubItem,
  applyRecord,
  type DashboardSnapshot,
  emptyState,
  fromSnapshot,
  OUTPUT_KEEP,
  selectMail,
  tokenTotals,
} from './view-model.js';

/** A team on `model` whose hub items are recorded, as the page receives them. */
async function openWatchedTeam(
  model: ReturnType<typeof createScriptedModel>,
  options: Pick<Parameters<typeof openTeam>[0], 'context'> = {},
) {
  const log = createMemoryTeamLog({ teamId: 't1' });
  const transcripts = createMemoryTranscriptStore();
  const clock = createManualClock();
  const hub = createEventHub({ teamId: 't1', log, clock, epoch: 'e1' });
  const items: HubItem[] = [];
  hub.listen((item) => items.push(item), { presence: true });
  const team = await openTeam({
    teamId: 't1',
    log,
    transcripts,
    format: xmlFormat,
    agents: createAgentRegistry([
      { type: 'lead', systemPrompt: 'Lead.', model },
      { type: 'worker', systemPrompt: 'Work.', model },
    ]),
    lead: { agentType: 'lead' },
    events: hub,
    clock,
    ids: createSequentialIds('x'),
    idleClaim: false,
    ...options,
  });
  return { team, log, hub, items, transcripts, clock };
}

/** A scripted team run: the lead plans two tasks and spawns a worker who does them. */
async function runTeam() {
  const model = createScriptedModel({
    scripts: {
      lead: ({ call }) =>
        call === 1
          ? {
              toolCalls: [
                { name: 'task_create', input: { subject: 'Parse', description: 'Write it.' } },
                {
                  name: 'task_create',
                  input: { subject: 'Print', description: 'Write it.', blockedBy: ['task-1'] },
                },
                {
                  name: 'spawn_teammate',
                  input: { name: 'ann', description: 'works', prompt: 'Do the tasks.' },
                },
              ],
            }
          : { text: 'Noted.' },
      ann: ({ call }) => {
        if (call === 1) {
          return {
            text: 'On it. ',
            toolCalls: [{ name: 'task_update', input: { taskId: 'task-1', action: 'claim' } }],
            usage: { inputTokens: 100, outputTokens: 10 },
          };
        }
        if (call === 2) {
          return {
            toolCalls: [{ name: 'task_update', input: { taskId: 'task-1', action: 'complete' } }],
            usage: { inputTokens: 120, outputTokens: 12 },
          };
        }
        return { text: 'Done with task-1.', usage: { inputTokens: 130, outputTokens: 13 } };
      },
    },
  });
  const watched = await openWatchedTeam(model);
  await watched.team.promptLead('Plan.');
  await watched.team.idle();
  return watched;
}

function snapshotOf(records: readonly TeamRecord[], extra: Partial<DashboardSnapshot> = {}) {
  return {
    version: 1,
    teamId: 't1',
    records: [...records],
    truncated: 0,
    readOnly: true,
    ...extra,
  } satisfies DashboardSnapshot;
}

describe('the dashboard view model', () => {
  it('follows a real team from its hub stream: roster, tasks, mail, tool, output and tokens', async () => {
    const { team, items } = await runTeam();
    const state = emptyState('t1');
    for (const item of items) expect(applyHubItem(state, item)).toBe('ok');

    const truth = team.listMembers(team.lead);
    expect([...state.members.values()].map((m) => [m.name, m.status])).toEqual(
      truth.map((m) => [m.name, m.status]),
    );
    expect(
      [...state.tasks.values()].map((t) => [t.id, t.status, t.owner ?? null, t.blockedBy, t.ready]),
    ).toEqual([
      ['task-1', 'completed', 'ann', [], false],
      ['task-2', 'pending', null, ['task-1'], true],
    ]);
    const ann = [...state.members.values()].find((m) => m.name === 'ann');
    expect(ann).toMatchObject({
      turns: 1,
      inputTokens: 350,
      outputTokens: 35,
      currentTool: undefined,
    });
    // two model answers of one turn: each on its own line
    expect(ann?.output).toBe('On it.\nDone with task-1.\n');
    // the lead's prompt to ann, delivered; ann's idle notice to the lead, delivered
    expect(state.mail.map((m) => [m.from, m.to, m.kind, m.delivered])).toEqual([
      ['lead', 'ann', 'message', true],
      ['ann', 'lead', 'idle_notification', true],
    ]);
    expect(selectMail(state, { kind: 'idle_notification' }).map((m) => m.from)).toEqual(['ann']);
    expect(selectMail(state, { member: 'lead', kind: 'message' })).toHaveLength(1);
    const totals = tokenTotals(state);
    expect(totals.rows.find((r) => r.name === 'ann')).toEqual({
      name: 'ann',
      inputTokens: 350,
      outputTokens: 35,
      compactions: 0,
    });
    expect(totals.inputTokens).toBe(totals.rows.reduce((n, r) => n + r.inputTokens, 0));
    expect(totals.inputTokens).toBeGreaterThan(350); // the lead's calls count too
    await team.dispose();
  });

  it("counts context compactions per member from the hub stream, with the last one's tokens", async () => {
    const model = createScriptedModel({
      tokens: { window: 4000 },
      scripts: {
        lead: () => ({ text: 'Noted.' }),
        ann: ({ call }) => ({ text: `Answer ${call}: ${'so it goes; '.repeat(40)}` }),
      },
    });
    const { team, items } = await openWatchedTeam(model, {
      context: { windowTokens: 4000, policy: deterministicSummary() },
    });
    await team.spawnTeammate(team.lead, {
      name: 'ann',
      description: 'answers',
      prompt: 'Hi ann.',
      agentType: 'worker',
    });
    for (let i = 0; i < 12; i++) {
      await team.sendMessage(team.lead, {
        to: 'ann',
        text: `note ${i}: ${'more words '.repeat(30)}`,
      });
      await team.idle();
    }
    const compacted = items.flatMap((item) =>
      item.type === 'event' && item.agent === 'ann' && item.event.type === 'context.compacted'
        ? [item.event]
        : [],
    );
    expect(compacted.length).toBeGreaterThan(1);
    const state = emptyState('t1');
    for (const item of items) applyHubItem(state, item);
    const ann = [...state.members.values()].find((m) => m.name === 'ann');
    const last = compacted.at(-1);
    expect(ann).toMatchObject({
      compactions: compacted.length,
      compacting: false,
      lastCompaction: {
        tokensBefore: last?.tokensBefore,
        tokensAfter: last?.tokensAfter,
        durationMs: last?.durationMs,
      },
    });
    expect(tokenTotals(state).rows.find((r) => r.name === 'ann')?.compactions).toBe(
      compacted.length,
    );
    await team.dispose();
  });

  it('marks tasks ready as core does, on random team histories', () => {
    const seen = new Set<boolean>();
    for (let seed = 1; seed <= 6; seed++) {
      const records = randomTeamRecords('t1', 300, seed);
      const state = fromSnapshot(snapshotOf(records));
      const truth = TeamState.fromRecords(records, { teamId: 't1' }).listTasks({
        status: ['pending', 'in_progress', 'completed', 'deleted'],
      });
      expect([...state.tasks.values()].map((t) => [t.id, t.ready])).toEqual(
        truth.map((t) => [t.id, t.ready]),
      );
      for (const task of truth) seen.add(task.ready);
    }
    expect([...seen].sort()).toEqual([false, true]);
  });

  it('does not mark a pending task ready while it has an owner', () => {
    const records = randomTeamRecords('t1', 300, 1);
    const state = fromSnapshot(snapshotOf(records));
    const ready = [...state.tasks.values()].find((t) => t.ready);
    expect(ready).toBeDefined();
    const last = records
      .filter((r): r is Extract<TeamRecord, { type: 'task' }> => r.type === 'task')
      .findLast((r) => r.task.id === ready?.id);
    const owned = {
      ...(last as Extract<TeamRecord, { type: 'task' }>),
      seq: state.lastRecordSeq + 1,
      task: { ...last?.task, ownerId: 'someone', revision: (last?.task.revision ?? 0) + 1 },
    } as TeamRecord;
    applyRecord(state, owned);
    expect(state.tasks.get(ready?.id as string)).toMatchObject({
      status: 'pending',
      ownerId: 'someone',
      ready: false,
    });
  });

  it('gives the same view from a snapshot followed by a stream that repeats its records', async () => {
    const { team, log, items } = await runTeam();
    const all = [...log.records()];
    const half = Math.floor(all.length / 2);
    const streamed = emptyState('t1');
    for (const record of all) applyRecord(streamed, record);
    const resumed = fromSnapshot(snapshotOf(all.slice(0, half)));
    // the stream replays every record again, the snapshot's included
    for (const item of items) applyHubItem(resumed, item);
    const shape = (s: typeof streamed) => ({
      members: [...s.members.values()].map((m) => [m.name, m.phase]),
      tasks: [...s.tasks.values()],
      mail: s.mail,
      lastRecordSeq: s.lastRecordSeq,
    });
    expect(shape(resumed)).toEqual(shape(streamed));
    // and applying a record twice changes nothing
    const before = JSON.stringify(shape(resumed));
    expect(applyRecord(resumed, all[half] as TeamRecord)).toBe(false);
    expect(JSON.stringify(shape(resumed))).toBe(before);
    await team.dispose();
  });

  it('shows a message or a description the snapshot cut as the whole record shows it, with what is left out', async () => {
    const model = createScriptedModel({ scripts: { lead: () => ({ text: 'ok' }) } });
    const { team, log } = await openWatchedTeam(model);
    const description = 'd'.repeat(MEMBER_DESCRIPTION_MAX);
    await team.spawnTeammate(team.lead, {
      name: 'ann',
      description,
      prompt: 'Wait.',
      agentType: 'worker',
    });
    // a pair of surrogates straddles the cut: neither view splits it
    const text = `${'a'.repeat(MAIL_TEXT_KEEP - 1)}😀${'b'.repeat(3000)}`;
    await team.sendMessage(team.lead, { to: 'ann', text: 'short' });
    await team.sendMessage(team.lead, { to: 'ann', text });
    await team.idle();
    const records = [...log.records()];
    const whole = emptyState('t1');
    for (const record of records) applyRecord(whole, record);
    const cut = fromSnapshot(snapshotOf(records.map(cutRecord)));
    expect(records.map(cutRecord)).not.toEqual(records); // something was cut
    const view = (state: typeof whole) => ({
      members: [...state.members.values()].map((m) => [m.name, m.description, m.descriptionMore]),
      mail: state.mail.map((m) => [m.from, m.to, m.text, m.more]),
    });
    expect(view(cut)).toEqual(view(whole));
    expect(view(whole).members).toContainEqual([
      'ann',
      description.slice(0, MAIL_TEXT_KEEP),
      MEMBER_DESCRIPTION_MAX - MAIL_TEXT_KEEP,
    ]);
    expect(view(whole).mail.filter((m) => m[0] === 'lead')).toEqual([
      ['lead', 'ann', 'Wait.', 0],
      ['lead', 'ann', 'short', 0],
      ['lead', 'ann', text.slice(0, MAIL_TEXT_KEEP - 1), text.length - (MAIL_TEXT_KEEP - 1)],
    ]);
    await team.dispose();
  });

  it('keeps mail that ends without delivery as a dead letter with its reason, as core folds the log', async () => {
    const model = createScriptedModel({
      scripts: { lead: () => ({ text: 'Noted.' }), ann: ({ call }) => ({ text: `reply ${call}` }) },
    });
    const { team, log, items } = await openWatchedTeam(model);
    await team.spawnTeammate(team.lead, {
      name: 'ann',
      description: 'works',
      prompt: 'Wait.',
      agentType: 'worker',
    });
    await team.idle();
    // a quiet message waits for ann's next turn, which never comes: ann retires first
    await team.sendMessage(team.lead, { to: 'ann', text: 'For later.', delivery: 'quiet' });
    await team.sendMessage(team.lead, { to: 'ann', text: 'Also later.', delivery: 'quiet' });
    await team.shutdown(team.lead, { target: 'ann' });
    await team.idle();
    const truth = foldTeam(log.records(), { teamId: 't1' });
    expect(truth.deadLetters.length).toBeGreaterThan(1);

    const live = emptyState('t1');
    for (const item of items) expect(applyHubItem(live, item)).toBe('ok');
    const records = [...log.records()];
    const loaded = fromSnapshot(snapshotOf(records.map(cutRecord)));
    const annId = truth.roster.find((m) => m.name === 'ann')?.id as string;
    for (const state of [live, loaded]) {
      // each dead letter is marked on its message, with core's reason and detail
      expect(
        state.mail.flatMap((m) =>
          m.deadLetter === undefined
            ? []
            : [[m.id, m.deadLetter.reason, m.deadLetter.detail, m.deadLetter.at]],
        ),
      ).toEqual(truth.deadLetters.map((d) => [d.message.id, d.reason, d.detail, d.at]));
      // it is no longer pending, and never shown delivered
      expect(selectMail(state, { delivery: 'pending' }).map((m) => m.id)).toEqual(
        truth.pendingMail.map((m) => m.id),
      );
      expect(selectMail(state, { delivery: 'dead-letter' }).map((m) => m.id)).toEqual(
        truth.deadLetters.map((d) => d.message.id),
      );
      expect(state.mail.filter((m) => m.deadLetter !== undefined && m.delivered)).toEqual([]);
      // and counted for its target
      expect(state.members.get(annId)?.deadLetters).toBe(
        truth.deadLetters.filter((d) => d.message.targetId === annId).length,
      );
      expect(state.members.get('t1')?.deadLetters).toBe(
        truth.deadLetters.filter((d) => d.message.targetId === 't1').length,
      );
    }
    await team.dispose();
  });

  it("shows a dead letter's detail the snapshot cut as the whole record shows it", () => {
    const clock = createManualClock();
    const state = new TeamState({ teamId: 't1', clock });
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
      state.queueMessage({
        id: 'big',
        senderId: 't1',
        targetId: 'ann-id',
        kind: 'message',
        delivery: 'wakeup',
        content: [{ type: 'text', text: 'A long read.' }],
      }),
    ];
    // a pair of surrogates straddles the cut: neither view splits it
    const detail = `${'d'.repeat(MAIL_TEXT_KEEP - 1)}😀${'e'.repeat(DEAD_LETTER_DETAIL_MAX)}`;
    records.push(state.deadLetter({ messageId: 'big', reason: 'EXCEEDS_CONTEXT', detail }));
    const written = (records.at(-1) as TeamRecord & { detail: string }).detail;
    expect(written.length).toBeGreaterThan(MAIL_TEXT_KEEP);

    const cutRecords = records.map(cutRecord);
    expect(cutRecords.at(-1)).toMatchObject({ cut: { 'deadLetter.detail': written.length } });
    expect(JSON.stringify(cutRecords.at(-1)).length).toBeLessThan(MAIL_TEXT_KEEP + 400);
    const whole = emptyState('t1');
    for (const record of records) applyRecord(whole, record);
    const cut = fromSnapshot(snapshotOf(cutRecords));
    const view = (s: typeof whole) => s.mail.map((m) => [m.id, m.delivered, m.deadLetter]);
    expect(view(cut)).toEqual(view(whole));
    expect(view(whole)).toEqual([
      [
        'big',
        false,
        {
          reason: 'EXCEEDS_CONTEXT',
          detail: written.slice(0, MAIL_TEXT_KEEP - 1),
          detailMore: written.length - (MAIL_TEXT_KEEP - 1),
          at: records.at(-1)?.at,
        },
      ],
    ]);
  });

  it('asks for a reload on a reset, counts gaps, and keeps output bounded', async () => {
    const { team, log } = await runTeam();
    const state = fromSnapshot(
      snapshotOf([...log.records()], { statuses: { ann: 'idle' }, epoch: 'e1' }),
    );
    expect([...state.members.values()].find((m) => m.name === 'ann')?.status).toBe('idle');
    expect(applyHubItem(state, { type: 'reset', reason: 'hub-restarted' })).toBe('reload');
    applyHubItem(state, { type: 'gap', reason: 'overflow', lost: 7 });
    expect(state.missed).toBe(7);
    const big = 'x'.repeat(OUTPUT_KEEP);
    for (const text of [big, 'tail']) {
      applyHubItem(state, {
        type: 'event',
        seq: 1,
        at: 0,
        teamId: 't1',
        agent: 'ann',
        event: { type: 'model.text-delta', text },
      });
    }
    const ann = [...state.members.values()].find((m) => m.name === 'ann');
    expect(ann?.output).toHaveLength(OUTPUT_KEEP);
    expect(ann?.output.endsWith('tail')).toBe(true);
    // presence marks who runs now
    applyHubItem(state, { type: 'presence.snapshot', teamId: 't1', active: [] });
    applyHubItem(state, {
      type: 'presence',
      seq: 2,
      at: 0,
      teamId: 't1',
      agent: 'ann',
      state: 'started',
    });
    expect(ann?.active).toBe(true);
    await team.dispose();
  });

  it('keeps the text of consecutive model answers and turns apart', () => {
    const state = fromSnapshot(
      snapshotOf([
        {
          seq: 1,
          at: 1,
          teamId: 't1',
          schemaVersion: 1,
          type: 'member',
          member: {
            id: 'ann-id',
            name: 'ann',
            description: 'works',
            agentType: 'worker',
            provider: 'scripted',
            context: 'fresh',
            phase: 'active',
          },
        },
      ]),
    );
    let seq = 0;
    const send = (event: Extract<HubItem, { type: 'event' }>['event']) =>
      applyHubItem(state, { type: 'event', seq: ++seq, at: 10, teamId: 't1', agent: 'ann', event });
    const ann = () => [...state.members.values()].find((m) => m.name === 'ann');
    const step = {
      type: 'model.step',
      step: 1,
      usage: { inputTokens: 1, outputTokens: 1 },
    } as const;
    send({ type: 'turn.start', reason: 'host' });
    send({ type: 'model.text-delta', text: 'Claiming task-1.' });
    send(step);
    send({ type: 'model.text-delta', text: 'Done' });
    send({ type: 'model.text-delta', text: ' with it.' });
    send(step);
    expect(ann()?.output).toBe('Claiming task-1.\nDone with it.\n');
    // a turn ends; the next one's start is not seen (the hub lost it): its text still stands apart
    send({ type: 'turn.end', stopReason: 'end_turn', steps: 2, text: '' });
    send({ type: 'model.text-delta', text: 'Next turn.' });
    expect(ann()?.output.split('\n')).toEqual(['Claiming task-1.', 'Done with it.', 'Next turn.']);
    // a seen turn start begins the output afresh
    send({ type: 'turn.start', reason: 'host' });
    send({ type: 'model.text-delta', text: 'Fresh.' });
    expect(ann()?.output).toBe('Fresh.');
  });

  it('shows a read-only page the turns and tokens of the transcripts, counted once', async () => {
    const { team, log, items, transcripts, hub, clock } = await runTeam();
    const live = emptyState('t1');
    for (const item of items) applyHubItem(live, item);
    const figures = (state: typeof live) =>
      [...state.members.values()].map((m) => [m.name, m.turns, m.inputTokens, m.outputTokens]);
    expect(
      figures(live).every(([, turns, input]) => (turns as number) > 0 && (input as number) > 0),
    ).toBe(true);
    const roster = [...live.members.values()].map((m) => ({ id: m.id, name: m.name }));
    const usage = await transcriptUsage(transcripts, roster);

    // a page that follows the log: the snapshot, then only records from its hub
    const followed = fromSnapshot(snapshotOf([...log.records()], { usage }));
    for (const item of items) {
      if (item.type === 'event' && item.event.type === 'record') applyHubItem(followed, item);
    }
    expect(figures(followed)).toEqual(figures(live));

    // a page whose hub replays the same model events on top counts them once
    const both = fromSnapshot(snapshotOf([...log.records()], { usage }));
    for (const item of items) applyHubItem(both, item);
    expect(figures(both)).toEqual(figures(live));
    // and counts what comes after the transcripts were read
    clock.advance(1000);
    const later: HubItem[] = [];
    const stop = hub.listen((item) => later.push(item));
    await team.promptLead('Once more.');
    await team.idle();
    stop();
    for (const item of later) {
      applyHubItem(both, item);
      applyHubItem(live, item);
    }
    expect(figures(both)).toEqual(figures(live));
    const lead = [...both.members.values()].find((m) => m.name === 'lead');
    expect(lead?.turns).toBe((usage.lead?.turns ?? 0) + 1);
    await team.dispose();
  });
});
