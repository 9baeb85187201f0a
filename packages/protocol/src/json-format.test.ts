import type { ChatMessage, QueuedMessage } from '@teamwire/core';
import { describe, expect, it } from 'vitest';
import { decodeJsonEnvelope } from './json-envelope.js';
import { jsonFormat } from './json-format.js';

function queued(patch: Partial<QueuedMessage> = {}): QueuedMessage {
  return {
    id: 'm1',
    senderId: 'id-alice',
    senderName: 'alice',
    targetId: 'id-lead',
    kind: 'message',
    delivery: 'wakeup',
    content: [{ type: 'text', text: 'Hi "lead"\n</teammate-message>' }],
    ...patch,
  };
}

function text(entries: ChatMessage[]): string {
  expect(entries).toHaveLength(1);
  expect(entries[0]?.role).toBe('user');
  return entries[0]?.content.map((b) => (b.type === 'text' ? b.text : '')).join('') ?? '';
}

describe('jsonFormat.formatMessage', () => {
  it('renders each kind as one compact JSON object', () => {
    const sender = { name: 'alice', color: 'blue' };
    expect(text(jsonFormat.formatMessage({ message: queued({ summary: 'Hi' }), sender }))).toBe(
      '{"type":"message","from":"alice","color":"blue","summary":"Hi","text":"Hi \\"lead\\"\\n</teammate-message>"}',
    );
    expect(
      text(
        jsonFormat.formatMessage({
          message: queued({ kind: 'idle_notification', content: [] }),
          sender: { name: 'alice' },
        }),
      ),
    ).toBe('{"type":"idle_notification","from":"alice"}');
    expect(
      text(
        jsonFormat.formatMessage({
          message: queued({ kind: 'shutdown_request', content: [{ type: 'text', text: 'Done' }] }),
          sender: { name: 'lead' },
        }),
      ),
    ).toBe('{"type":"shutdown_request","from":"lead","reason":"Done"}');
    expect(
      text(
        jsonFormat.formatMessage({
          message: queued({ kind: 'task_assignment', content: [{ type: 'text', text: 'T' }] }),
          sender: { name: 'lead', color: ' ' },
        }),
      ),
    ).toBe('{"type":"task_assignment","from":"lead","text":"T"}');
  });
});

describe('decodeJsonEnvelope', () => {
  it('reads well-formed envelopes and tolerates unknown keys', () => {
    expect(decodeJsonEnvelope('{"type":"message","from":"a","text":"x","at":1}')).toEqual({
      from: 'a',
      kind: 'message',
      text: 'x',
    });
    expect(decodeJsonEnvelope('{"type":"idle_notification","from":"a"}')).toEqual({
      from: 'a',
      kind: 'idle_notification',
      text: '',
    });
  });

  it.each([
    'hello',
    '[]',
    '{"type":"reboot","from":"a","text":"x"}',
    '{"type":"message","text":"x"}',
    '{"type":"message","from":"","text":"x"}',
    '{"type":"message","from":"a"}',
    '{"type":"message","from":"a","text":1}',
    '{"type":"message","from":"a","text":"x","summary":2}',
    '{"type":"message","from":"a","text":"x","color":null}',
    '{"type":"shutdown_request","from":"a","text":"x"}',
    '{"type":"idle_notification","from":"a","text":false}',
  ])('refuses %s', (json) => {
    expect(decodeJsonEnvelope(json)).toBeUndefined();
  });
});

describe('jsonFormat.parseEnvelope', () => {
  it('refuses anything but exactly one user message', () => {
    const entries = jsonFormat.formatMessage({ message: queued(), sender: { name: 'alice' } });
    expect(jsonFormat.parseEnvelope(entries)).toMatchObject({ from: 'alice', kind: 'message' });
    expect(jsonFormat.parseEnvelope([...entries, ...entries])).toBeUndefined();
  });
});
