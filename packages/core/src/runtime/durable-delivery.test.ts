import { describe, expect, it } from 'vitest';
import { contentText } from '../content.js';
import type { TeamLog } from '../ports/team-log.js';
import { deferred, notedLead, openHarness, spawnIdle } from './test-harness.js';

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
