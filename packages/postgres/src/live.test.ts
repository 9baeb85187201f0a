import type { AgentRef, EventHub, HubItem, LiveDropReason, TeamService } from '@teamwire/core';
import {
  createAgentRegistry,
  createEventHub,
  defineTool,
  LIVE_FORMAT_VERSION,
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
import { LIVE_SEALED_BATCH_BYTES_MAX, liveChannelOf, openLive, sealLive } from './live.js';
import type { PlacementRuns } from './placement.js';
import type { PostgresTeamStore } from './store.js';
import { describePg, eventually, Scratch } from './test-support.js';

const TEAM = '01JTEAMLIVE000000000000000';

describePg('live events across processes on PostgreSQL', () => {
  let scratch: Scratch;

  beforeEach(() => {
    scratch = new Scratch();
  });
  afterEach(async () => {
    await scratch.cleanup();
  });

  it('carries a payload to the team’s other processes only: not back to the sender, not to another team', async () => {
    const a = await scratch.open(TEAM);
    const b = await scratch.open(TEAM);
    const other = await scratch.open('01JOTHERTEAM00000000000000');
    const got = { a: [] as string[], b: [] as string[], other: [] as string[] };
    a.log.shared?.live?.listen((payload) => got.a.push(payload));
    b.log.shared?.live?.listen((payload) => got.b.push(payload));
    other.log.shared?.live?.listen((payload) => got.other.push(payload));
    expect(a.log.shared?.live?.send('first')).toBe(true);
    expect(a.log.shared?.live?.send('second')).toBe(true);
    await eventually(() => got.b.length === 2, 'b to hear both');
    // a marker sent after them by b reaches a, so a had its chance to hear its own
    b.log.shared?.live?.send('marker');
    await eventually(() => got.a.length === 1, 'a to hear the marker');
    expect(got).toEqual({ a: ['marker'], b: ['first', 'second'], other: [] });
  });

  const refs = new Map<string, AgentRef>();
  const whoami = defineTool({
    name: 'whoami',
    description: 'Says who you are.',
    inputSchema: z.object({}),
    async execute(_input, { agent }) {
      refs.set(agent.name, agent);
      return agent.name;
    },
  });
  const services: TeamService[] = [];
  const hubs: EventHub[] = [];
  afterEach(async () => {
    for (const service of services.splice(0)) await service.dispose().catch(() => undefined);
    for (const hub of hubs.splice(0)) hub.close();
    refs.clear();
  });

  const worker: AgentScript = ({ call }) =>
    call === 1 ? { toolCalls: [{ name: 'whoami' }] } : { text: `alice says ${call}` };
  const scripts: Record<string, AgentScript> = { lead: () => ({ text: 'Noted.' }), alice: worker };

  async function open(runs: PlacementRuns, onDropped?: (reason: LiveDropReason) => void) {
    const store: PostgresTeamStore = await scratch.open(TEAM, { runs, leaseMs: 2000 });
    const model = createScriptedModel({ scripts });
    const hub = createEventHub({ teamId: TEAM });
    hubs.push(hub);
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
      events: hub,
      idleClaim: false,
      live: { sink: hub, onDropped },
    });
    services.push(service);
    return { store, service, hub };
  }

  const texts = (hub: EventHub, agent: string) =>
    hub
      .history(agent)
      .flatMap((item) => (item.event.type === 'model.text-delta' ? [item.event.text] : []))
      .join('');

  it('an observer process sees the streamed output and presence of a member another process runs, once, and never a record twice', async () => {
    const a = await open({ lead: true, agentTypes: [] });
    const b = await open({ lead: false });
    const observer = await open({ lead: false, agentTypes: [] });
    const items: HubItem[] = [];
    observer.hub.listen((item) => items.push(item), { presence: true });
    await a.service.spawnTeammate(a.service.lead, {
      name: 'alice',
      description: 'helps',
      prompt: 'Hi alice.',
      agentType: 'worker',
    });
    await eventually(() => texts(observer.hub, 'alice') === 'alice says 2', "alice's text");
    // exactly what b's own hub shows of alice's turn, in the same order
    const kinds = (hub: EventHub) =>
      hub
        .history('alice')
        .map((item) => item.event.type)
        .filter((type) => type.startsWith('turn.') || type.startsWith('tool.'));
    await eventually(() => kinds(observer.hub).includes('turn.end'), 'the turn to end');
    expect(kinds(observer.hub)).toEqual(kinds(b.hub));
    // records arrive once, from the log: the relay never carries them
    const recordSeqs = items.flatMap((item) =>
      item.type === 'event' && item.event.type === 'record' ? [item.event.record.seq] : [],
    );
    expect(new Set(recordSeqs).size).toBe(recordSeqs.length);
    expect(observer.hub.knownAgents().some((agent) => agent.name === 'alice')).toBe(true);
    // b, which runs alice, hears nothing of its own back
    expect(texts(b.hub, 'alice')).toBe('alice says 2');
  });

  it('shows a member stopped when its process hands it back, and live again on the process that takes it over', async () => {
    const a = await open({ lead: true, agentTypes: [] });
    const b = await open({ lead: false });
    const observer = await open({ lead: false, agentTypes: [] });
    await a.service.spawnTeammate(a.service.lead, {
      name: 'alice',
      description: 'helps',
      prompt: 'Hi alice.',
      agentType: 'worker',
    });
    await eventually(() => texts(observer.hub, 'alice') === 'alice says 2', "alice's text");
    expect(observer.hub.isActive('alice')).toBe(true);
    const presence: string[] = [];
    observer.hub.listen(
      (item) => {
        if (item.type === 'presence' && item.agent === 'alice') presence.push(item.state);
      },
      { presence: true, events: false },
    );
    const c = await open({ lead: false });
    const service = services.splice(services.indexOf(b.service), 1)[0] as TeamService;
    await service.dispose();
    await b.store.close();
    await eventually(() => presence.includes('stopped'), 'alice stopped in the observer');
    const alice = a.service.listMembers(a.service.lead).find((m) => m.name === 'alice');
    await eventually(
      () => c.store.placement.runsHere(alice?.memberId ?? ''),
      'c to take alice over',
    );
    await a.service.sendMessage(a.service.lead, { to: 'alice', text: 'again' });
    await eventually(
      () => presence.lastIndexOf('started') > presence.indexOf('stopped'),
      'alice live again in the observer',
    );
    // c's model counts its calls afresh: her second run says the same again
    await eventually(
      () => texts(observer.hub, 'alice') === 'alice says 2alice says 2',
      'her text from c',
    );
  });

  /** The team's live key, as a process of the team reads it. */
  async function teamKey(): Promise<Buffer> {
    const found = await scratch.sql<{ live_key: Buffer }>(
      `SELECT live_key FROM "${scratch.schema}".team_keys WHERE team_id = $1`,
      [TEAM],
    );
    return found.rows[0]?.live_key as Buffer;
  }

  it('drops and counts a malformed, unsealed or foreign payload on the team’s channel; the team goes on', async () => {
    const drops: LiveDropReason[] = [];
    const a = await open({ lead: true, agentTypes: [] });
    const observer = await open({ lead: false, agentTypes: [] }, (reason) => drops.push(reason));
    const channel = liveChannelOf(scratch.schema, TEAM);
    const notify = (payload: string) => scratch.sql('SELECT pg_notify($1, $2)', [channel, payload]);
    const key = await teamKey();
    const eve = JSON.stringify({
      v: LIVE_FORMAT_VERSION,
      t: TEAM,
      o: 'x',
      e: [['eve', { type: 'model.text-delta', text: 'forged' }]],
    });
    // a valid batch, but not sealed (what any role that may connect can NOTIFY)
    await notify(eve);
    // sealed with another key, or for another channel
    await notify(sealLive(Buffer.alloc(32, 7), channel, eve));
    await notify(sealLive(key, liveChannelOf(scratch.schema, 'another-team'), eve));
    // sealed by the team, but not a valid batch
    await notify(sealLive(key, channel, '{not json'));
    await notify(
      sealLive(
        key,
        channel,
        JSON.stringify({ v: LIVE_FORMAT_VERSION + 1, t: TEAM, o: 'x', e: [] }),
      ),
    );
    await notify(
      sealLive(
        key,
        channel,
        JSON.stringify({ v: LIVE_FORMAT_VERSION, t: TEAM, o: 'x', e: [['eve', { type: 'nope' }]] }),
      ),
    );
    await eventually(() => drops.length === 6, 'the six drops');
    expect(drops).toEqual([
      'malformed-batch',
      'malformed-batch',
      'malformed-batch',
      'malformed-batch',
      'unsupported-version',
      'malformed-event',
    ]);
    expect(observer.hub.knownAgents().some((agent) => agent.name === 'eve')).toBe(false);
    const outcome = await a.service.promptLead('go on');
    expect(outcome.text).toBe('Noted.');
  });

  it('seals every batch with the team’s key: a listener outside the team reads none of it', async () => {
    const a = await open({ lead: true, agentTypes: [] });
    const b = await open({ lead: false });
    const observer = await open({ lead: false, agentTypes: [] });
    // a connection of its own LISTENing on the team's channel, as any role may
    const outsider = scratch.pool();
    const client = await outsider.connect();
    const heard: string[] = [];
    client.on('notification', (note) => heard.push(note.payload ?? ''));
    await client.query(`LISTEN "${liveChannelOf(scratch.schema, TEAM)}"`);
    try {
      await a.service.spawnTeammate(a.service.lead, {
        name: 'alice',
        description: 'helps',
        prompt: 'Hi alice.',
        agentType: 'worker',
      });
      await eventually(() => texts(observer.hub, 'alice') === 'alice says 2', 'alice’s text');
      expect(b.store.placement.runsHere(refs.get('alice')?.memberId ?? '')).toBe(true);
      // what went over the wire: sealed, no text of alice's in it; the team's key opens it
      const key = await teamKey();
      const channel = liveChannelOf(scratch.schema, TEAM);
      // the outsider's connection hears the same NOTIFYs, on its own time
      await eventually(
        () => heard.some((payload) => openLive(key, channel, payload)?.includes('alice says 2')),
        'the outsider to hear the batch with alice’s text',
      );
      expect(heard.length).toBeGreaterThan(0);
      for (const payload of heard) {
        expect(payload).not.toContain('alice says');
        expect(payload.length).toBeLessThan(8000);
      }
      const opened = heard.map((payload) => openLive(key, channel, payload));
      expect(opened.every((batch) => batch !== undefined)).toBe(true);
      expect(opened.join('')).toContain('alice says 2');
    } finally {
      client.release();
    }
  });

  it('keeps a sealed batch of the largest size within a NOTIFY', () => {
    const key = Buffer.alloc(32, 1);
    const channel = liveChannelOf('teamwire', TEAM);
    // multi-byte text: the bound is in UTF-8 bytes
    const batch = 'é'.repeat(LIVE_SEALED_BATCH_BYTES_MAX / 2);
    const sealed = sealLive(key, channel, batch);
    expect(Buffer.byteLength(sealed, 'utf8')).toBeLessThanOrEqual(7999);
    expect(openLive(key, channel, sealed)).toBe(batch);
    expect(openLive(key, channel, `${sealed.slice(0, -4)}AAA=`)).toBeUndefined();
  });
});
