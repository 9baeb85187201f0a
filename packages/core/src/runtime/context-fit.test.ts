import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { foldTeam } from '../state/fold.js';
import { createScriptedModel, type ScriptedStepFunction } from '../testing/scripted-model.js';
import { defineTool } from './agents.js';
import { deterministicSummary } from './context-budget.js';
import {
  deferred,
  messageIdsIn,
  notedLead,
  openHarness,
  spawnIdle,
  TEAM_ID,
} from './test-harness.js';

/** Deterministic text of `bytes` bytes. */
function text(seed: number, bytes: number): string {
  return `m${seed} ${'word '.repeat(Math.ceil(bytes / 5))}`.slice(0, bytes);
}

const WINDOW = 6_000;

describe('mail fits the context it is delivered into', () => {
  it('records a burst that arrives during a tool call only as far as it fits, and delivers the rest later', async () => {
    const entered = deferred();
    const gate = deferred();
    const slow = defineTool({
      name: 'slow',
      description: 'Takes a while.',
      inputSchema: z.object({}),
      async execute() {
        entered.resolve();
        await gate.promise;
        return 'done';
      },
    });
    const bob: ScriptedStepFunction = ({ request }) => {
      const last = request.messages.at(-1);
      const said = last?.role === 'user' ? JSON.stringify(last.content) : '';
      if (said.includes('start the long job')) return { toolCalls: [{ name: 'slow', input: {} }] };
      return { text: 'ok' };
    };
    const model = createScriptedModel({ tokens: { window: WINDOW } });
    const h = await openHarness({
      model,
      scripts: { lead: notedLead, bob },
      workerTools: [slow],
      context: { windowTokens: WINDOW, policy: deterministicSummary() },
    });
    await spawnIdle(h, 'bob');
    await h.service.sendMessage(h.service.lead, { to: 'bob', text: 'start the long job' });
    await entered.promise;
    const burst = [];
    for (let i = 0; i < 8; i++) {
      burst.push(
        (await h.service.sendMessage(h.service.lead, { to: 'bob', text: text(i, 2_500) }))
          .messageId,
      );
    }
    gate.resolve();
    await h.service.idle();
    expect(h.sink.errors()).toEqual([]);
    expect(model.overflows('bob')).toBe(0);
    const held = messageIdsIn(h.transcripts.raw(h.memberId('bob')));
    for (const id of burst) expect(held.filter((x) => x === id)).toHaveLength(1);
    const team = foldTeam(h.log.records(), { teamId: TEAM_ID });
    expect(team.pendingMail).toEqual([]);
    expect(team.deadLetters).toEqual([]);
  });

  it('dead-letters a message larger than any context of its target, and tells its sender', async () => {
    const model = createScriptedModel({ tokens: { window: WINDOW } });
    const h = await openHarness({
      model,
      scripts: { lead: notedLead, bob: () => ({ text: 'ok' }) },
      context: { windowTokens: WINDOW, policy: deterministicSummary() },
    });
    await spawnIdle(h, 'bob');
    const huge = await h.service.sendMessage(h.service.lead, {
      to: 'bob',
      text: text(1, 30_000),
      summary: 'the whole log',
    });
    await h.service.idle();
    expect(h.sink.errors()).toEqual([]);
    expect(model.overflows('bob')).toBe(0);
    const team = foldTeam(h.log.records(), { teamId: TEAM_ID });
    expect(team.deadLetters.map((d) => [d.message.id, d.reason])).toEqual([
      [huge.messageId, 'EXCEEDS_CONTEXT'],
    ]);
    expect(messageIdsIn(h.transcripts.raw(h.memberId('bob')))).not.toContain(huge.messageId);
    expect(h.transcript('lead').join('\n')).toMatch(
      /Your message "the whole log" to bob was not delivered: it is too large for bob's context/,
    );
  });
});
