import { describe, expect, it } from 'vitest';
import type { ContentBlock } from '../content.js';
import { textContent } from '../content.js';
import type { TeamErrorCode } from '../errors.js';
import type { MessageKind } from '../records.js';
import { seeded } from '../testing/random-team.js';
import type { QueueMessageInput } from './team-state.js';
import type { TestTeam } from './test-fixtures.js';
import { catchTeamError, createTestTeam, snapshot, TEAM_ID } from './test-fixtures.js';

const LEAD = TEAM_ID;

function setup(limits?: { maxPendingPerMember?: number; maxMessageBytes?: number }) {
  const team = createTestTeam({ limits });
  const alice = team.spawn('alice');
  const bob = team.spawn('bob');
  let n = 0;
  const send = (input: Partial<QueueMessageInput> & { senderId: string; targetId: string }) =>
    team.run((s) =>
      s.queueMessage({
        id: `msg-${++n}`,
        kind: 'message',
        delivery: 'wakeup',
        content: textContent(`hello ${n}`),
        ...input,
      }),
    );
  return { team, alice, bob, send };
}

function expectRefused(team: TestTeam, fn: () => unknown, code: TeamErrorCode) {
  const before = snapshot(team.state);
  const error = catchTeamError(fn);
  expect(error.code).toBe(code);
  expect(snapshot(team.state)).toEqual(before);
  return error;
}

const base = { kind: 'message' as const, delivery: 'quiet' as const, content: textContent('x') };

describe('queueMessage', () => {
  it('writes a message.queued record with the sender name filled in from the roster', () => {
    const { team, alice } = setup();
    team.task('Take me');
    const record = team.run((s) =>
      s.queueMessage({
        id: 'm1',
        senderId: LEAD,
        targetId: alice,
        kind: 'task_assignment',
        delivery: 'quiet',
        content: textContent('take task-1'),
        summary: 'assignment',
        taskId: 'task-1',
      }),
    );
    expect(record).toMatchObject({
      type: 'message.queued',
      seq: team.state.lastSeq,
      message: {
        id: 'm1',
        senderId: LEAD,
        senderName: 'lead',
        targetId: alice,
        kind: 'task_assignment',
        delivery: 'quiet',
        content: [{ type: 'text', text: 'take task-1' }],
        summary: 'assignment',
        taskId: 'task-1',
      },
    });
    expect(record.message).not.toHaveProperty('summary', undefined);
    expect(team.state.isPending('m1')).toBe(true);
    expect(team.state.wasQueued('m1')).toBe(true);
  });

  it('leaves optional fields out when not given', () => {
    const { alice, send } = setup();
    const { message } = send({ senderId: LEAD, targetId: alice });
    expect(Object.keys(message).sort()).toEqual(
      ['content', 'delivery', 'id', 'kind', 'senderId', 'senderName', 'targetId'].sort(),
    );
  });

  it('keeps unknown content blocks whole', () => {
    const { alice, send } = setup();
    const content = [
      { type: 'text', text: 'see' },
      { type: 'image', source: { kind: 'url', url: 'https://x/y.png' }, alt: 'y' },
    ] as ContentBlock[];
    const { message } = send({ senderId: LEAD, targetId: alice, content });
    expect(message.content).toEqual(content);
  });

  it('lets a provisioning member send and receive', () => {
    const { team, alice } = setup();
    const carol = team.spawn('carol', { activate: false });
    team.run((s) => s.queueMessage({ ...base, id: 'a', senderId: carol, targetId: alice }));
    team.run((s) => s.queueMessage({ ...base, id: 'b', senderId: alice, targetId: carol }));
    expect(team.state.pendingCount(carol)).toBe(1);
  });

  it('refuses an unknown or non-live sender with NOT_A_MEMBER', () => {
    const { team, alice, bob } = setup();
    expectRefused(
      team,
      () => team.state.queueMessage({ ...base, id: 'x', senderId: 'ghost', targetId: alice }),
      'NOT_A_MEMBER',
    );
    team.run((s) => s.setMemberPhase(bob, 'retired'));
    expectRefused(
      team,
      () => team.state.queueMessage({ ...base, id: 'x', senderId: bob, targetId: alice }),
      'NOT_A_MEMBER',
    );
  });

  it('refuses an unknown target with UNKNOWN_TARGET', () => {
    const { team } = setup();
    expectRefused(
      team,
      () => team.state.queueMessage({ ...base, id: 'x', senderId: LEAD, targetId: 'ghost' }),
      'UNKNOWN_TARGET',
    );
  });

  it('refuses a message to oneself with SELF_MESSAGE', () => {
    const { team, alice } = setup();
    expectRefused(
      team,
      () => team.state.queueMessage({ ...base, id: 'x', senderId: alice, targetId: alice }),
      'SELF_MESSAGE',
    );
  });

  it('refuses a retired or failed target with INVALID_PHASE', () => {
    const { team, alice } = setup();
    const carol = team.spawn('carol', { activate: false });
    team.run((s) => s.setMemberPhase(alice, 'retired'));
    team.run((s) => s.setMemberPhase(carol, 'failed', 'no model'));
    for (const targetId of [alice, carol]) {
      expectRefused(
        team,
        () => team.state.queueMessage({ ...base, id: 'x', senderId: LEAD, targetId }),
        'INVALID_PHASE',
      );
    }
  });

  it('bounds UTF-8 bytes of the JSON content with MESSAGE_TOO_LARGE', () => {
    const overhead = JSON.stringify(textContent('')).length;
    // 'é' is 2 bytes, '😀' 4 bytes in UTF-8
    const { team, alice } = setup({ maxMessageBytes: overhead + 6 });
    team.run((s) =>
      s.queueMessage({
        ...base,
        id: 'fits',
        senderId: LEAD,
        targetId: alice,
        content: textContent('é😀'),
      }),
    );
    const error = expectRefused(
      team,
      () =>
        team.state.queueMessage({
          ...base,
          id: 'big',
          senderId: LEAD,
          targetId: alice,
          content: textContent('éé😀'),
        }),
      'MESSAGE_TOO_LARGE',
    );
    expect(error.details).toEqual({ bytes: overhead + 8, limit: overhead + 6 });
  });

  it('bounds undelivered messages per target with MAILBOX_FULL, never control kinds', () => {
    const { team, alice, bob, send } = setup({ maxPendingPerMember: 2 });
    send({ senderId: LEAD, targetId: alice });
    send({ senderId: bob, targetId: alice, kind: 'task_assignment' });
    for (const kind of ['message', 'task_assignment'] as MessageKind[]) {
      expectRefused(
        team,
        () => team.state.queueMessage({ ...base, kind, id: 'x', senderId: bob, targetId: alice }),
        'MAILBOX_FULL',
      );
    }
    send({ senderId: LEAD, targetId: alice, kind: 'shutdown_request' });
    send({ senderId: bob, targetId: alice, kind: 'idle_notification' });
    expect(team.state.pendingCount(alice)).toBe(4);
    // another target has its own bound
    send({ senderId: LEAD, targetId: bob });
    // delivering one frees a slot
    team.run((s) => s.markDelivered({ messageId: 'msg-1' }));
    send({ senderId: LEAD, targetId: alice });
  });

  it('refuses a duplicate id with MESSAGE_STATE, even after delivery', () => {
    const { team, alice, bob } = setup();
    team.run((s) => s.queueMessage({ ...base, id: 'dup', senderId: LEAD, targetId: alice }));
    expectRefused(
      team,
      () => team.state.queueMessage({ ...base, id: 'dup', senderId: bob, targetId: alice }),
      'MESSAGE_STATE',
    );
    team.run((s) => s.markDelivered({ messageId: 'dup' }));
    expectRefused(
      team,
      () => team.state.queueMessage({ ...base, id: 'dup', senderId: LEAD, targetId: alice }),
      'MESSAGE_STATE',
    );
  });

  it('refuses malformed content with INVALID_ARGUMENT', () => {
    const { team, alice } = setup();
    expectRefused(
      team,
      () =>
        team.state.queueMessage({
          ...base,
          id: 'x',
          senderId: LEAD,
          targetId: alice,
          content: [{ type: 'text', text: 5 }] as unknown as ContentBlock[],
        }),
      'INVALID_ARGUMENT',
    );
    expectRefused(
      team,
      () =>
        team.state.queueMessage({
          ...base,
          id: 'x',
          senderId: LEAD,
          targetId: alice,
          kind: 'gossip' as MessageKind,
        }),
      'INVALID_ARGUMENT',
    );
  });

  it('detaches the stored message from the caller input', () => {
    const { team, alice } = setup();
    const content = textContent('original');
    team.run((s) => s.queueMessage({ ...base, id: 'm', senderId: LEAD, targetId: alice, content }));
    (content[0] as { text: string }).text = 'mutated';
    expect(team.state.pending(alice)[0]?.content).toEqual(textContent('original'));
  });
});

describe('pending mail and delivery', () => {
  it('keeps pending per target and overall in queue order, minus delivered', () => {
    const { team, alice, bob, send } = setup();
    send({ senderId: LEAD, targetId: alice }); // msg-1
    send({ senderId: LEAD, targetId: bob }); // msg-2
    send({ senderId: bob, targetId: alice }); // msg-3
    send({ senderId: alice, targetId: LEAD }); // msg-4
    expect(team.state.pending(alice).map((m) => m.id)).toEqual(['msg-1', 'msg-3']);
    expect(team.state.pendingMail().map((m) => m.id)).toEqual(['msg-1', 'msg-2', 'msg-3', 'msg-4']);
    const delivered = team.run((s) => s.markDelivered({ messageId: 'msg-3' }));
    expect(delivered).toMatchObject({
      type: 'message.delivered',
      messageId: 'msg-3',
      targetId: alice,
      seq: team.state.lastSeq,
    });
    expect(team.state.pending(alice).map((m) => m.id)).toEqual(['msg-1']);
    expect(team.state.pendingCount(alice)).toBe(1);
    expect(team.state.pendingMail().map((m) => m.id)).toEqual(['msg-1', 'msg-2', 'msg-4']);
    expect(team.state.isPending('msg-3')).toBe(false);
    expect(team.state.wasQueued('msg-3')).toBe(true);
    expect(team.state.wasQueued('msg-9')).toBe(false);
    expect(team.state.pending('nobody')).toEqual([]);
    expect(team.state.pendingCount('nobody')).toBe(0);
  });

  it('returns the same frozen array until the inbox changes', () => {
    const { team, alice, send } = setup();
    send({ senderId: LEAD, targetId: alice });
    const first = team.state.pending(alice);
    expect(Object.isFrozen(first)).toBe(true);
    expect(team.state.pending(alice)).toBe(first);
    send({ senderId: LEAD, targetId: alice });
    const second = team.state.pending(alice);
    expect(second).not.toBe(first);
    expect(first).toHaveLength(1);
    expect(second).toHaveLength(2);
  });

  it('refuses delivering a message never queued or already delivered with MESSAGE_STATE', () => {
    const { team, alice, send } = setup();
    expectRefused(team, () => team.state.markDelivered({ messageId: 'nope' }), 'MESSAGE_STATE');
    send({ senderId: LEAD, targetId: alice });
    team.run((s) => s.markDelivered({ messageId: 'msg-1' }));
    const error = expectRefused(
      team,
      () => team.state.markDelivered({ messageId: 'msg-1' }),
      'MESSAGE_STATE',
    );
    expect(error.message).toContain('already delivered');
  });

  it('still delivers mail that was pending when its target retired', () => {
    const { team, alice, send } = setup();
    send({ senderId: LEAD, targetId: alice });
    team.run((s) => s.setMemberPhase(alice, 'retired'));
    expect(team.state.pendingCount(alice)).toBe(1);
    team.run((s) => s.markDelivered({ messageId: 'msg-1' }));
    expect(team.state.pendingCount(alice)).toBe(0);
  });
});

/** A pending message of the lead's to `targetId`, for the Mailbox's own tests. */
const message = (id: string, targetId = 'x') => ({
  id,
  senderId: 'lead',
  senderName: 'lead',
  targetId,
  kind: 'message' as const,
  delivery: 'wakeup' as const,
  content: textContent(id),
});

describe('Mailbox undo', () => {
  it('puts an undone delivery back in its queue position, in its inbox and overall', async () => {
    const { Mailbox } = await import('./mailbox.js');
    const mailbox = new Mailbox();
    const [a, b, c] = [message('a', 'x'), message('b', 'y'), message('c', 'x')];
    for (const m of [a, b, c]) mailbox.enqueue(m);
    const position = mailbox.positionOf('a') as number;
    mailbox.deliver('a');
    expect(mailbox.pending('x').map((m) => m.id)).toEqual(['c']);
    mailbox.undeliver(a, position);
    expect(mailbox.pending('x').map((m) => m.id)).toEqual(['a', 'c']);
    expect(mailbox.pendingAll().map((m) => m.id)).toEqual(['a', 'b', 'c']);
    expect(mailbox.boundedCount('x')).toBe(2);
    mailbox.unqueue(c);
    expect(mailbox.wasQueued('c')).toBe(false);
    expect(mailbox.pendingAll().map((m) => m.id)).toEqual(['a', 'b']);
    expect(mailbox.boundedCount('x')).toBe(1);
  });
});

describe('Mailbox ids', () => {
  it('knows every queued id, queued in increasing order or not, before and after delivery', async () => {
    const { Mailbox } = await import('./mailbox.js');
    const mailbox = new Mailbox();
    const queued = ['m05', 'm09', 'm03', 'm07', 'm10', 'm01'];
    for (const id of queued) mailbox.enqueue(message(id));
    const never = ['m00', 'm02', 'm04', 'm06', 'm08', 'm11'];
    const check = () => {
      for (const id of queued) expect(mailbox.checkNew(id)?.code, id).toBe('MESSAGE_STATE');
      for (const id of never) expect(mailbox.checkNew(id), id).toBeUndefined();
    };
    check();
    for (const id of ['m03', 'm09', 'm10']) mailbox.deliver(id);
    expect(mailbox.deliveredText()).toEqual({ text: 'm03\nm09\nm10', last: 'm10' });
    check();
    // queued after the history took m10: below it, and above what is still pending
    mailbox.enqueue(message('m08'));
    queued.push('m08');
    never.splice(never.indexOf('m08'), 1);
    check();
    for (const id of ['m01', 'm05']) mailbox.deliver(id);
    expect(mailbox.deliveredText()).toEqual({ text: 'm01\nm03\nm05\nm09\nm10', last: 'm10' });
    check();
    expect(mailbox.pendingAll().map((m) => m.id)).toEqual(['m07', 'm08']);
    mailbox.unqueue(message('m08'));
    expect(mailbox.wasQueued('m08')).toBe(false);
    mailbox.enqueue(message('m12'));
    mailbox.unqueue(message('m12'));
    expect(mailbox.wasQueued('m12')).toBe(false);
    expect(mailbox.wasQueued('m07')).toBe(true);
  });

  it('knows ids queued far out of order among many, and gives them back sorted once delivered', async () => {
    const { Mailbox } = await import('./mailbox.js');
    const mailbox = new Mailbox();
    const ids = Array.from({ length: 100 }, (_, i) => `n${100 + i}`);
    for (const id of ids) mailbox.enqueue(message(id));
    // 'n1205' sorts 79 ids from the end, 'n1905' 8: both are queued once, whichever way kept
    for (const id of ['n1205', 'n1905']) {
      expect(mailbox.checkNew(id)).toBeUndefined();
      mailbox.enqueue(message(id));
      expect(mailbox.checkNew(id)?.code).toBe('MESSAGE_STATE');
    }
    for (const id of ['n1204', 'n1206', 'n1904', 'n1906', 'n099', 'n200']) {
      expect(mailbox.checkNew(id), id).toBeUndefined();
    }
    for (const id of ids) expect(mailbox.checkNew(id)?.code, id).toBe('MESSAGE_STATE');
    for (const id of ['n120', 'n1205', 'n1905', 'n199']) mailbox.deliver(id);
    expect(mailbox.deliveredText()).toEqual({ text: 'n120\nn1205\nn1905\nn199', last: 'n199' });
    for (const id of ['n120', 'n1205', 'n1905', 'n199']) {
      expect(mailbox.checkNew(id)?.code, id).toBe('MESSAGE_STATE');
    }
    mailbox.enqueue(message('n1300'));
    mailbox.unqueue(message('n1300'));
    expect(mailbox.wasQueued('n1300')).toBe(false);
    mailbox.enqueue(message('n1895'));
    mailbox.unqueue(message('n1895'));
    expect(mailbox.wasQueued('n1895')).toBe(false);
    expect(mailbox.pendingAll()).toHaveLength(98);
  });
});

describe('Mailbox ids against a set', () => {
  it('answers every id as a set of every id queued would, under queueing, delivery, merges and undo', async () => {
    const { Mailbox } = await import('./mailbox.js');
    for (let seed = 1; seed <= 40; seed++) {
      const next = seeded(seed);
      const mailbox = new Mailbox();
      const queued = new Set<string>();
      const pending = new Set<string>();
      /** Ids queued since the last delivery, latest last: what `unqueue` may undo. */
      const undoable: string[] = [];
      // four writers whose ids grow with their own clocks, interleaved as several processes' are
      const clocks = [0, 0, 0, 0];
      for (let step = 0; step < 3000; step++) {
        const roll = next();
        const where = `seed ${seed}, step ${step}`;
        if (roll < 0.5) {
          const writer = Math.floor(next() * clocks.length);
          clocks[writer] = (clocks[writer] as number) + Math.floor(next() * 3);
          const fresh = `${String(clocks[writer]).padStart(6, '0')}-${writer}-${Math.floor(next() * 1000)}`;
          const known = [...queued];
          const id =
            next() < 0.05 && known.length > 0
              ? (known[Math.floor(next() * known.length)] as string)
              : fresh;
          expect(mailbox.checkNew(id) === undefined, `${where}: ${id} is new`).toBe(
            !queued.has(id),
          );
          if (queued.has(id)) continue;
          mailbox.enqueue(message(id));
          queued.add(id);
          pending.add(id);
          undoable.push(id);
        } else if (roll < 0.8 && pending.size > 0) {
          const id = [...pending][Math.floor(next() * pending.size)] as string;
          mailbox.deliver(id);
          pending.delete(id);
          undoable.length = 0;
        } else if (roll < 0.85) {
          mailbox.deliveredText();
        } else if (roll < 0.95 && undoable.length > 0) {
          const id = undoable.pop() as string;
          mailbox.unqueue(message(id));
          queued.delete(id);
          pending.delete(id);
          expect(mailbox.wasQueued(id), `${where}: ${id} undone`).toBe(false);
        }
      }
      for (const id of queued) expect(mailbox.wasQueued(id), `seed ${seed}: ${id}`).toBe(true);
      const { text } = mailbox.deliveredText();
      const delivered = [...queued].filter((id) => !pending.has(id)).sort();
      expect(text === '' ? [] : text.split('\n'), `seed ${seed}`).toEqual(delivered);
    }
  });
});
