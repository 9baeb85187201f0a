import { describe, expect, it } from 'vitest';
import { createEventHub } from '../hub/event-hub.js';
import { LIVE_COALESCE_MS } from '../limits.js';
import type { LiveChannel, TeamLog } from '../ports/team-log.js';
import { createManualClock, createSequentialIds } from '../testing/manual-clock.js';
import { createMemorySharedTeam, type MemoryRuns } from '../testing/memory-shared.js';
import { createMemoryTranscriptStore } from '../testing/memory-stores.js';
import { createScriptedModel } from '../testing/scripted-model.js';
import { createSimpleFormat, createSimplePolicy } from '../testing/simple-format.js';
import { createAgentRegistry } from './agents.js';
import { type OpenTeamOptions, openTeam } from './open-team.js';
import { createRecordingSink, TEAM_ID } from './test-harness.js';

/** A broadcast between the "processes", delivered later like a NOTIFY, the sender included. */
function createBus() {
  const listeners = new Set<(payload: string) => void>();
  const channel: LiveChannel = {
    send(payload) {
      queueMicrotask(() => {
        for (const listener of [...listeners]) listener(payload);
      });
      return true;
    },
    listen(listener) {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
  };
  return channel;
}

describe('openTeam relays live events between the processes of a shared log', () => {
  const clock = createManualClock();
  const team = createMemorySharedTeam({ teamId: TEAM_ID });
  const transcripts = createMemoryTranscriptStore();
  const model = createScriptedModel({
    scripts: { lead: () => ({ text: 'Noted.' }), alice: () => ({ text: 'alice works' }) },
  });
  const bus = createBus();

  async function open(runs: MemoryRuns, ids: string, extra: Partial<OpenTeamOptions> = {}) {
    const participant = team.join({ runs });
    const log: TeamLog = {
      ...participant.log,
      shared: { ...participant.log.shared, live: bus } as TeamLog['shared'],
    };
    const sink = createRecordingSink();
    const service = await openTeam({
      teamId: TEAM_ID,
      log,
      transcripts,
      format: createSimpleFormat(),
      policy: createSimplePolicy(),
      agents: createAgentRegistry([
        { type: 'lead', systemPrompt: 'You lead.', model },
        { type: 'worker', systemPrompt: 'You work.', model },
      ]),
      lead: { agentType: 'lead' },
      events: sink,
      clock,
      ids: createSequentialIds(ids),
      idleClaim: false,
      ...extra,
    });
    return { service, sink, participant };
  }

  it('refuses a malformed live option', async () => {
    await expect(
      open({ lead: false, agentTypes: [] }, 'x', { live: { sink: {} } as never }),
    ).rejects.toMatchObject({ code: 'INVALID_ARGUMENT', details: { option: 'live' } });
  });

  it('shows a member of another process in the hub named live.sink, never in events; stopped when it leaves', async () => {
    const hub = createEventHub({ teamId: TEAM_ID, clock });
    const a = await open({ lead: true, agentTypes: [] }, 'a', { live: { sink: hub } });
    const b = await open({ lead: false, agentTypes: ['worker'] }, 'b');
    await a.service.spawnTeammate(a.service.lead, {
      name: 'alice',
      description: 'helps',
      prompt: 'Hi alice.',
      agentType: 'worker',
    });
    await b.sink.waitFor((agent, event) => agent === 'alice' && event.type === 'turn.end');
    expect(hub.history('alice').some((item) => item.event.type === 'model.text-delta')).toBe(false);
    clock.advance(LIVE_COALESCE_MS);
    await new Promise<void>((resolve) => queueMicrotask(resolve));
    const texts = hub
      .history('alice')
      .flatMap((item) => (item.event.type === 'model.text-delta' ? [item.event.text] : []));
    expect(texts).toEqual(['alice works']);
    // the runtime's own sink of a gets only what a did, and the records
    expect(a.sink.events.filter((e) => e.agent === 'alice').map((e) => e.event.type)).toEqual(
      a.sink.events
        .filter((e) => e.agent === 'alice' && e.event.type === 'record')
        .map(() => 'record'),
    );
    // b hears nothing of its own back: its sink shows alice's text once
    expect(
      b.sink.events.filter((e) => e.agent === 'alice' && e.event.type === 'model.text-delta'),
    ).toHaveLength(1);
    // b hands alice back: no live process runs her, so a's hub shows her stopped
    expect(hub.isActive('alice')).toBe(true);
    const stopped = new Promise<void>((resolve) => {
      hub.listen(
        (item) => {
          if (item.type === 'presence' && item.agent === 'alice' && item.state === 'stopped') {
            resolve();
          }
        },
        { presence: true, events: false },
      );
    });
    await b.participant.placement.close();
    await stopped;
    expect(hub.isActive('alice')).toBe(false);
    await b.service.dispose();
    await a.service.dispose();
  });
});
