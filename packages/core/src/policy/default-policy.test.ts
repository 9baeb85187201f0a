import * as fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { MessageKind, type QueuedMessage, type Task } from '../records.js';
import { defaultTeamPolicy } from './default-policy.js';
import { idleFallbackLine } from './texts.js';

const LEAD_ID = 'member-lead';

function pendingMessage(index: number, kind: MessageKind, fromLead: boolean): QueuedMessage {
  return {
    id: `m-${index}`,
    senderId: fromLead ? LEAD_ID : `peer-${index % 5}`,
    senderName: fromLead ? 'lead' : `peer-${index % 5}`,
    targetId: 'target',
    kind,
    delivery: 'wakeup',
    content: [{ type: 'text', text: `message ${index}` }],
  };
}

/** The policy's order, stated as plainly as possible. */
function referencePick(pending: readonly QueuedMessage[]): QueuedMessage | undefined {
  return (
    pending.find((m) => m.kind === 'shutdown_request') ??
    pending.find((m) => m.senderId === LEAD_ID) ??
    pending[0]
  );
}

function mentions(text: string, word: string): boolean {
  const escaped = word.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  return new RegExp(`(^|[^\\w-])${escaped}($|[^\\w-])`).test(text);
}

const name = fc.stringMatching(/^[a-z0-9]{1,8}(-[a-z0-9]{1,8}){0,2}$/);
const task = (n: fc.Arbitrary<number>) =>
  fc
    .record({
      n,
      subject: fc.string({ minLength: 1, maxLength: 40 }).filter((s) => !/[\r\n]/.test(s)),
      description: fc.string({ minLength: 1, maxLength: 80 }),
      status: fc.constantFrom('pending' as const, 'in_progress' as const),
    })
    .map(
      (r): Task => ({
        id: `task-${r.n}`,
        revision: 1,
        subject: r.subject.trim() === '' ? 'x' : r.subject.trim(),
        description: r.description,
        status: r.status,
        creatorId: LEAD_ID,
        blockedBy: [],
        writeScopes: [],
      }),
    );

describe('defaultTeamPolicy', () => {
  it('is a v1 policy', () => {
    expect(defaultTeamPolicy.specificationVersion).toBe('v1');
    expect(Object.isFrozen(defaultTeamPolicy)).toBe(true);
  });

  it('picks shutdown before lead before peer, FIFO within a tier (against a reference)', () => {
    const item = fc.record({
      kind: fc.constantFrom(...MessageKind.options),
      fromLead: fc.boolean(),
    });
    fc.assert(
      fc.property(fc.array(item, { maxLength: 40 }), (items) => {
        const pending = items.map((it, i) => pendingMessage(i, it.kind, it.fromLead));
        const snapshot = JSON.stringify(pending);
        const picked = defaultTeamPolicy.pickNext({ pending, leadId: LEAD_ID });
        expect(picked?.id).toBe(referencePick(pending)?.id);
        expect(JSON.stringify(pending)).toBe(snapshot);
      }),
      { numRuns: 1000 },
    );
  });

  it('picks a shutdown or a lead message queued behind a flood of peer messages', () => {
    const flood = Array.from({ length: 10_000 }, (_, i) => pendingMessage(i, 'message', false));
    const lead = pendingMessage(10_000, 'message', true);
    const shutdown = pendingMessage(10_001, 'shutdown_request', true);
    const pick = (pending: QueuedMessage[]) =>
      defaultTeamPolicy.pickNext({ pending, leadId: LEAD_ID });
    expect(pick([...flood, lead])?.id).toBe(lead.id);
    expect(pick([...flood, lead, ...flood, shutdown])?.id).toBe(shutdown.id);
    expect(pick(flood)?.id).toBe('m-0');
    expect(pick([])).toBeUndefined();
  });

  it('idle notice: the teammate’s text, or the fallback line when it has none', () => {
    fc.assert(
      fc.property(name, fc.option(fc.string(), { nil: undefined }), (from, text) => {
        const notice = defaultTeamPolicy.formatIdleNotice({ from, text });
        if (text === undefined || text.trim() === '') expect(notice).toBe(idleFallbackLine(from));
        else expect(notice).toBe(text);
      }),
    );
  });

  it('claim prompt: the task in full and the whole open list', () => {
    const board = fc
      .uniqueArray(task(fc.integer({ min: 1, max: 40 })), {
        selector: (t) => t.id,
        minLength: 1,
        maxLength: 20,
      })
      .chain((tasks) =>
        fc.record({
          tasks: fc.constant(tasks),
          claimed: fc.integer({ min: 0, max: tasks.length - 1 }),
        }),
      );
    fc.assert(
      fc.property(board, ({ tasks, claimed }) => {
        const mine: Task = { ...(tasks[claimed] as Task), status: 'in_progress', ownerId: 'm-1' };
        const openTasks = tasks.map((t) => (t.id === mine.id ? mine : t));
        const prompt = defaultTeamPolicy.formatTaskClaimPrompt({ task: mine, openTasks });
        expect(prompt).toContain(mine.subject);
        expect(prompt).toContain(mine.description);
        for (const open of openTasks) expect(mentions(prompt, open.id)).toBe(true);
      }),
    );
  });

  it('assignment notice: the task, its subject and who assigned it', () => {
    fc.assert(
      fc.property(task(fc.integer({ min: 1, max: 999 })), name, (t, by) => {
        const notice = defaultTeamPolicy.formatAssignmentNotice({ task: t, assignedBy: by });
        expect(mentions(notice, t.id)).toBe(true);
        expect(notice).toContain(t.subject);
        expect(mentions(notice, by)).toBe(true);
      }),
    );
  });
});
