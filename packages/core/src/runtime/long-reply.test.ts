import { describe, expect, it } from 'vitest';
import type { ChatMessage } from '../chat.js';
import { contentText, textContent } from '../content.js';
import type { WireFormat } from '../ports/wire-format.js';
import type { QueuedMessage } from '../records.js';
import { DEFAULT_TEAM_LIMITS } from '../state/index.js';
import { createSimpleFormat, createSimplePolicy } from '../testing/simple-format.js';
import type { Harness, HarnessOptions } from './test-harness.js';
import { notedLead, openHarness } from './test-harness.js';

const LIMIT = DEFAULT_TEAM_LIMITS.maxMessageBytes; // 64 KiB

const utf8 = (value: unknown) => Buffer.byteLength(JSON.stringify(value), 'utf8');

/** The idle notifications the lead's transcript holds, as the lead model sees them. */
function idleNotices(h: Harness): ChatMessage[] {
  const ids = new Set(
    h.log
      .records()
      .flatMap((r) =>
        r.type === 'message.queued' && r.message.kind === 'idle_notification' ? [r.message.id] : [],
      ),
  );
  return h.transcripts
    .raw(h.memberId('lead'))
    .map((entry) => entry.message)
    .filter((m) => m.source?.kind === 'team-message' && ids.has(m.source.messageId));
}

function queuedIdle(h: Harness): QueuedMessage[] {
  return h.log
    .records()
    .flatMap((r) =>
      r.type === 'message.queued' && r.message.kind === 'idle_notification' ? [r.message] : [],
    );
}

/** Bob claims task-1, then ends his turn with `reply`. */
async function bobReplies(reply: string, options: Partial<HarnessOptions> = {}) {
  const h = await openHarness({
    scripts: {
      lead: notedLead,
      bob: [
        { toolCalls: [{ name: 'task_update', input: { taskId: 'task-1', action: 'claim' } }] },
        { text: reply },
      ],
    },
    idleClaim: false,
    ...options,
  });
  await h.service.createTask(h.service.lead, { subject: 'Report', description: 'Write it all.' });
  await h.service.spawnTeammate(h.service.lead, {
    name: 'bob',
    description: 'bob writes',
    prompt: 'Write the report.',
    agentType: 'worker',
  });
  await h.service.idle();
  return h;
}

function expectBobStillWorking(h: Harness) {
  expect(h.sink.errors()).toEqual([]);
  const bob = h.service.listMembers(h.service.lead).find((m) => m.name === 'bob');
  expect(bob).toMatchObject({ phase: 'active', status: 'idle' });
  expect(bob?.failure).toBeUndefined();
  expect(h.service.getTask(h.service.lead, { taskId: 'task-1' })).toMatchObject({
    status: 'in_progress',
  });
}

describe('a teammate whose final reply is longer than a message may be', () => {
  it.each([
    ['ASCII', 'a'.repeat(100_000)],
    ['three-byte characters', '€'.repeat(30_000)],
    ['astral characters (surrogate pairs)', '🙂'.repeat(20_000)],
    ['characters JSON escapes', '"\\\n\u0001'.repeat(12_000)],
  ])('(%s) reaches the lead cut to fit, with a marker, and is not failed', async (_, reply) => {
    expect(utf8([{ type: 'text', text: reply }])).toBeGreaterThan(LIMIT);
    const h = await bobReplies(reply);
    expectBobStillWorking(h);

    // The queued notice fits the mailbox limit and carries the start of the reply and the marker.
    const [queued] = queuedIdle(h);
    expect(queuedIdle(h)).toHaveLength(1);
    expect(utf8(queued?.content)).toBeLessThanOrEqual(LIMIT);
    const text = contentText(queued?.content ?? []);
    const cut = text.indexOf('\n… [truncated: ');
    expect(cut).toBeGreaterThan(LIMIT / 8);
    expect(reply.startsWith(text.slice(0, cut))).toBe(true);
    // Counted in code points, as every text limit counts (an emoji is one character).
    const omitted = [...reply.slice(cut)].length;
    expect(text.slice(cut)).toBe(
      `\n… [truncated: ${omitted} more characters; full reply in bob's transcript]`,
    );
    // The cut never splits a surrogate pair.
    expect(/\p{Cs}/u.test(text)).toBe(false);
    // Cut close to the limit, not far below it.
    expect(utf8(queued?.content)).toBeGreaterThan(LIMIT - 64);

    // The lead saw it, within the limit; bob's own transcript keeps the whole reply.
    const [seen] = idleNotices(h);
    // (Compared as booleans: a failure would otherwise print a 64 KiB diff.)
    const shown = contentText(seen?.content ?? []);
    expect(shown === `[idle notification from bob]\n${text}`).toBe(true);
    expect(h.transcript('bob').at(-1) === `assistant: ${reply}`).toBe(true);
  });

  it('keeps the formatted notice within the limit, whatever format and policy add', async () => {
    // A format whose escaping makes a "z" six bytes, and a policy whose idle line adds a header:
    // the reply alone fits the mailbox, the notice the lead would read does not.
    const simple = createSimpleFormat();
    const policy = {
      ...createSimplePolicy(),
      formatIdleNotice: ({ from, text }: { from: string; text?: string }) =>
        `${from} finished. Its last words:\n${text ?? ''}`,
    };
    const expanding: WireFormat = {
      ...simple,
      name: 'expanding',
      formatMessage: ({ message, sender }) =>
        simple.formatMessage({
          message: {
            ...message,
            content: textContent(contentText(message.content).replace(/z/g, '&#122;')),
          },
          sender,
        }),
    };
    const reply = 'z'.repeat(60_000);
    expect(utf8(textContent(reply))).toBeLessThan(LIMIT);
    const h = await bobReplies(reply, { format: expanding, policy });
    expectBobStillWorking(h);

    const [seen] = idleNotices(h);
    expect(utf8(seen?.content)).toBeLessThanOrEqual(LIMIT);
    expect(utf8(seen?.content)).toBeGreaterThan(LIMIT - 256);
    const text = contentText(seen?.content ?? []);
    const head = '[idle notification from bob]\nbob finished. Its last words:\n';
    const tail = /\n… \[truncated: (\d+) more characters; full reply in bob's transcript\]$/.exec(
      text,
    );
    expect(text.startsWith(head)).toBe(true);
    expect(tail).not.toBeNull();
    const kept = text.slice(head.length, tail?.index);
    expect(kept.replaceAll('&#122;', '')).toBe('');
    expect(Number(tail?.[1])).toBe(reply.length - kept.length / '&#122;'.length);
  });

  it('a failure whose message is huge still reaches the lead', async () => {
    const h = await openHarness({
      scripts: {
        lead: notedLead,
        bob: [{ error: new Error(`upstream said: ${'x'.repeat(100_000)}`) }],
      },
      idleClaim: false,
    });
    await h.service.spawnTeammate(h.service.lead, {
      name: 'bob',
      description: 'bob writes',
      prompt: 'Write the report.',
      agentType: 'worker',
    });
    await h.service.idle();
    const bob = h.service.listMembers(h.service.lead).find((m) => m.name === 'bob');
    expect(bob?.failure?.code).toBe('MODEL_UNAVAILABLE');
    const [seen] = idleNotices(h);
    expect(seen).toBeDefined();
    expect(utf8(seen?.content)).toBeLessThanOrEqual(LIMIT);
    expect(contentText(seen?.content ?? [])).toMatch(
      /^\[idle notification from bob\]\nbob stopped: MODEL_UNAVAILABLE: upstream said: x+\n… \[truncated: \d+ more characters; full error in list_members \(bob's failure\)\]$/,
    );
  });

  it('a reply that fits is passed on untouched', async () => {
    const reply = 'b'.repeat(LIMIT - 200);
    const h = await bobReplies(reply);
    expectBobStillWorking(h);
    expect(contentText(queuedIdle(h)[0]?.content ?? []) === reply).toBe(true);
  });
});
