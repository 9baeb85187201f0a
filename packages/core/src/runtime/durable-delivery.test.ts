import { describe, expect, it } from 'vitest';
import { contentText } from '../content.js';
import { TeamError } from '../errors.js';
import { LEAD_RETRY_INITIAL_MS, LEAD_RETRY_MAX_MS } from '../limits.js';
import type { TeamLog } from '../ports/team-log.js';
import type { TranscriptStore } from '../ports/transcript-store.js';
import { foldTeam } from '../state/fold.js';
import type { MemoryTranscriptStore } from '../testing/memory-stores.js';
import type { AgentScript } from '../testing/scripted-model.js';
import {
  deferred,
  type Harness,
  messageIdsIn,
  notedLead,
  openHarness,
  spawnIdle,
  TEAM_ID,
} from './test-harness.js';

describe('delivery waits for durability', () => {
  it('never splices a message whose message.queued append has not resolved', async () => {
    const modelGate = deferred();
    const appendGate = deferred();
    const inTurn = deferred();
    const stepAfter = deferred();
    const h = await openHarness({
      scripts: {
        lead: notedLead,
        bob: ({ call }) => {
          if (call === 1) return { text: 'ready' };
          if (call === 2) {
            inTurn.resolve();
            return { toolCalls: [{ name: 'list_members', input: {} }], gate: modelGate.promise };
          }
          if (call === 3) stepAfter.resolve();
          return { text: `turn step ${call}` };
        },
      },
      // holds the append of the message whose text is "held" until the test releases it
      wrap: ({ log, transcripts }) => {
        const held: TeamLog = {
          ...log,
          append: async (options) => {
            const holds = options.records.some(
              (r) => r.type === 'message.queued' && contentText(r.message.content) === 'held',
            );
            if (holds) await appendGate.promise;
            return log.append(options);
          },
          read: (options) => log.read(options),
          subscribe: (options) => log.subscribe(options),
          lastSeq: () => log.lastSeq(),
          close: () => log.close(),
        };
        return { log: held, transcripts };
      },
    });
    await spawnIdle(h, 'bob');
    await h.service.sendMessage(h.service.lead, { to: 'bob', text: 'start' });
    await inTurn.promise;
    // bob is inside its turn, its model call held open; now a message is queued but not durable
    const sending = h.service.sendMessage(h.service.lead, { to: 'bob', text: 'held' });
    modelGate.resolve();
    // the step after list_members must not see "held"
    await stepAfter.promise;
    const seen = () =>
      h.model
        .requests('bob')
        .map((r) => r.messages.some((m) => contentText(m.content).includes('held')));
    expect(seen()).toEqual([false, false, false]);
    appendGate.resolve();
    await sending;
    await h.service.idle();
    // once durable it is delivered, once, in a turn of its own
    expect(seen()).toEqual([false, false, false, true]);
    expect(h.transcript('bob').filter((line) => line.includes('held'))).toHaveLength(1);
  });
});

/**
 * Stores that, like the PostgreSQL one, refuse a team message a transcript already holds, and
 * that make the first append of mail saying "lost" durable but answer it with a failure.
 */
function losingStores({ log, transcripts }: { log: TeamLog; transcripts: MemoryTranscriptStore }) {
  let lost = false;
  const store: TranscriptStore = {
    specificationVersion: 'v1',
    async append(options) {
      const held = new Set(messageIdsIn(transcripts.raw(options.memberId)));
      const taken = messageIdsIn(options.entries).find((id) => held.has(id));
      if (taken !== undefined) {
        throw new TeamError('MESSAGE_STATE', `message ${taken} is already in the transcript`);
      }
      await transcripts.append(options);
      const mail = options.entries.filter((e) => e.message.source?.kind === 'team-message');
      if (!lost && mail.some((e) => contentText(e.message.content).includes('lost'))) {
        lost = true;
        throw new TeamError('STORAGE_IO', 'the connection was cut before the answer');
      }
    },
    load: (options) => transcripts.load(options),
    close: () => transcripts.close(),
  };
  return { log, transcripts: store, wasLost: () => lost };
}

/** A harness over {@link losingStores}, with them. */
async function openLosing(scripts: Record<string, AgentScript>) {
  let stores: ReturnType<typeof losingStores> | undefined;
  const h = await openHarness({
    scripts,
    wrap: (memory) => {
      stores = losingStores(memory);
      return stores;
    },
  });
  return { h, wasLost: () => stores?.wasLost() };
}

/** The text of every message `name`'s model was sent in its last request. */
function lastRead(h: Harness, name: string): string {
  const last = h.model.requests(name).at(-1);
  return last?.messages.map((m) => contentText(m.content)).join('\n') ?? '';
}

describe('a transcript write whose answer was lost', () => {
  it('to a teammate: the mail is in its transcript once, read by its model, and delivered', async () => {
    const { h, wasLost } = await openLosing({
      lead: notedLead,
      bob: ({ call }) => ({ text: `bob turn ${call}` }),
    });
    await spawnIdle(h, 'bob');
    const callsBefore = h.model.requests('bob').length;
    await h.service.sendMessage(h.service.lead, { to: 'bob', text: 'lost' });
    await h.service.idle();
    expect(wasLost()).toBe(true);
    await h.service.sendMessage(h.service.lead, { to: 'bob', text: 'next' });
    await h.service.idle();

    const lines = h.transcript('bob');
    expect(lines.filter((line) => line.includes('lost'))).toHaveLength(1);
    expect(lines.filter((line) => line.includes('next'))).toHaveLength(1);
    expect(foldTeam(h.log.records(), { teamId: TEAM_ID }).pendingMail).toEqual([]);
    expect(h.sink.errors().map((e) => e.code)).toEqual(['STORAGE_IO']);
    expect(lastRead(h, 'bob')).toContain('lost');
    expect(lastRead(h, 'bob')).toContain('next');
    expect(h.model.requests('bob').length - callsBefore).toBeLessThanOrEqual(2);
  });

  it('to the lead: it retries after a wait, delivers the mail once and reads it', async () => {
    const { h, wasLost } = await openLosing({
      lead: notedLead,
      bob: ({ call }) => ({ text: call === 1 ? 'ready' : 'lost' }),
    });
    await spawnIdle(h, 'bob');
    const leadCalls = h.model.requests('lead').length;
    // bob's reply "lost" reaches the lead as an idle notice; the lead's delivery of it is lost
    await h.service.sendMessage(h.service.lead, { to: 'bob', text: 'go' });
    await h.sink.waitFor((_, event) => event.type === 'error' && event.code === 'STORAGE_IO');
    expect(wasLost()).toBe(true);
    // the lead waits before it tries its mail again, then goes on by itself
    h.clock.advance(LEAD_RETRY_INITIAL_MS);
    await h.service.idle();

    const lines = h.transcript('lead');
    expect(lines.filter((line) => line.includes('lost'))).toHaveLength(1);
    expect(foldTeam(h.log.records(), { teamId: TEAM_ID }).pendingMail).toEqual([]);
    expect(h.sink.errors().map((e) => e.code)).toEqual(['STORAGE_IO']);
    expect(lastRead(h, 'lead')).toContain('lost');
    expect(h.model.requests('lead').length - leadCalls).toBe(1);
  });
});

describe('a lead whose mail keeps failing', () => {
  it('tries again after waits that double, never in a tight loop, and goes on once the store does', async () => {
    let down = true;
    let tries = 0;
    const h = await openHarness({
      scripts: { lead: notedLead, bob: ({ call }) => ({ text: call === 1 ? 'ready' : 'down' }) },
      // the lead's transcript refuses every write of mail saying "down" while `down` holds; a
      // write tried more often than the test allows never settles, so a spinning lead stops
      wrap: ({ log, transcripts }) => ({
        log,
        transcripts: {
          specificationVersion: 'v1',
          async append(options) {
            const mail = options.entries.filter((e) => e.message.source?.kind === 'team-message');
            const carries = mail.some((e) => contentText(e.message.content).includes('down'));
            if (carries && ++tries > 8) return new Promise<void>(() => {});
            if (down && carries) throw new TeamError('STORAGE_IO', 'the database is down');
            await transcripts.append(options);
          },
          load: (options) => transcripts.load(options),
          close: () => transcripts.close(),
        },
      }),
    });
    await spawnIdle(h, 'bob');
    const leadCalls = h.model.requests('lead').length;
    // The n-th failure, then one turn of the event loop: the memory stores answer in microtasks,
    // so a lead that tried again at once would never let it come, and would fail again meanwhile.
    const failures = async (n: number) => {
      await h.sink.waitFor((_, event) => event.type === 'error' && event.code === 'STORAGE_IO', n);
      await new Promise((resolve) => setImmediate(resolve));
      expect(h.sink.errors()).toHaveLength(n);
    };
    await h.service.sendMessage(h.service.lead, { to: 'bob', text: 'go' });
    await failures(1);
    let wait = LEAD_RETRY_INITIAL_MS;
    for (let n = 2; n <= 4; n++) {
      h.clock.advance(wait);
      await failures(n);
      wait *= 2;
    }
    expect(h.model.requests('lead').length).toBe(leadCalls);

    down = false;
    h.clock.advance(wait);
    await h.service.idle();
    expect(h.transcript('lead').filter((line) => line.includes('down'))).toHaveLength(1);
    expect(lastRead(h, 'lead')).toContain('down');
    expect(h.model.requests('lead').length - leadCalls).toBe(1);
    expect(foldTeam(h.log.records(), { teamId: TEAM_ID }).pendingMail).toEqual([]);
  });
});

describe('mail a transcript holds where reading it back does not show it', () => {
  it('is taken as held when the store refuses it, and the turn runs: no error, no second write', async () => {
    const hidden = new Set<string>();
    const h = await openHarness({
      scripts: { lead: notedLead, bob: ({ call }) => ({ text: `bob turn ${call}` }) },
      // As another process that ran bob left it: mail saying "elsewhere" is in bob's transcript
      // already, in entries a compaction has replaced since, so reading the transcript back does
      // not show it, while this process still has the message pending. The store refuses it as
      // held and names it, as the PostgreSQL store does.
      wrap: ({ log, transcripts }) => ({
        log,
        transcripts: {
          specificationVersion: 'v1',
          async append(options) {
            const elsewhere = options.entries.filter(
              (e) =>
                e.message.source?.kind === 'team-message' &&
                contentText(e.message.content).includes('elsewhere'),
            );
            if (hidden.size === 0 && elsewhere.length > 0) {
              await transcripts.append({ memberId: options.memberId, entries: elsewhere });
              for (const id of messageIdsIn(elsewhere)) hidden.add(id);
            }
            const held = new Set(messageIdsIn(transcripts.raw(options.memberId)));
            const taken = messageIdsIn(options.entries).find((id) => held.has(id));
            if (taken !== undefined) {
              throw new TeamError(
                'MESSAGE_STATE',
                `message ${taken} is already in the transcript`,
                {
                  details: { messageId: taken, memberId: options.memberId },
                },
              );
            }
            await transcripts.append(options);
          },
          load: async (options) =>
            (await transcripts.load(options)).filter((e) =>
              messageIdsIn([e]).every((id) => !hidden.has(id)),
            ),
          close: () => transcripts.close(),
        },
      }),
    });
    await spawnIdle(h, 'bob');
    const calls = h.model.requests('bob').length;
    await h.service.sendMessage(h.service.lead, { to: 'bob', text: 'elsewhere' });
    await h.service.idle();

    expect(hidden.size).toBe(1);
    expect(h.sink.errors()).toEqual([]);
    expect(h.transcript('bob').filter((line) => line.includes('elsewhere'))).toHaveLength(1);
    expect(foldTeam(h.log.records(), { teamId: TEAM_ID }).pendingMail).toEqual([]);
    // the turn the mail was picked for still runs, once
    expect(h.model.requests('bob').length - calls).toBe(1);
  });
});

describe('a lead turn whose model call failed', () => {
  it('is finished after the retry wait, once, though its mail was delivered', async () => {
    let failing = true;
    const h = await openHarness({
      scripts: {
        // the lead's turn on bob's "finished" fails at its model call while `failing` holds
        lead: ({ request }) => {
          const last = request.messages.at(-1);
          if (failing && contentText(last?.content ?? []).includes('finished')) {
            failing = false;
            return { error: new TeamError('MODEL_UNAVAILABLE', 'the provider is overloaded') };
          }
          return { text: 'Noted.' };
        },
        bob: ({ call }) => ({ text: call === 1 ? 'ready' : 'finished' }),
      },
    });
    await spawnIdle(h, 'bob');
    const leadCalls = h.model.requests('lead').length;
    await h.service.sendMessage(h.service.lead, { to: 'bob', text: 'go' });
    await h.sink.waitFor(
      (agent, event) =>
        agent === 'lead' && event.type === 'turn.end' && event.stopReason === 'error',
    );
    // the notice is delivered: no mail is left to start the lead's turn again
    expect(foldTeam(h.log.records(), { teamId: TEAM_ID }).pendingMail).toEqual([]);
    expect(h.model.requests('lead').length - leadCalls).toBe(1);
    // the team is not idle while the lead, parked, owes that turn: idle() resolves once it is taken
    await h.sink.waitUntil((events) => {
      const failed = events.findIndex(
        (e) => e.agent === 'lead' && e.event.type === 'turn.end' && e.event.stopReason === 'error',
      );
      return events
        .slice(failed + 1)
        .some((e) => e.agent === 'lead' && e.event.type === 'status' && e.event.status === 'idle');
    });
    const callsWhenIdle = h.service.idle().then(() => h.model.requests('lead').length - leadCalls);
    h.clock.advance(LEAD_RETRY_INITIAL_MS);
    expect(await callsWhenIdle).toBe(2);
    expect(h.model.requests('lead').length - leadCalls).toBe(2);
    expect(lastRead(h, 'lead')).toContain('finished');
    expect(h.transcript('lead').at(-1)).toBe('assistant: Noted.');
    expect(h.sink.errors().map((e) => e.code)).toEqual(['MODEL_UNAVAILABLE']);
    // finished once: a later wait does not run it again
    h.clock.advance(LEAD_RETRY_MAX_MS);
    await h.service.idle();
    expect(h.model.requests('lead').length - leadCalls).toBe(2);
  });
});
