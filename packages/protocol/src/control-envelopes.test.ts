import { describe, expect, it } from 'vitest';
import {
  encodeIdleNotification,
  encodeShutdownRequest,
  idleNotificationText,
  isIdleNotification,
  isShutdownRequest,
  parseIdleNotification,
  parseShutdownRequest,
  SHUTDOWN_FALLBACK_TEXT,
  shutdownRequestText,
} from './control-envelopes.js';

describe('idle notification envelope', () => {
  it('encodes with a fixed key order and leaves out a missing text', () => {
    expect(encodeIdleNotification({ from: 'alice', text: 'Done: "a" & b' })).toBe(
      '{"type":"idle_notification","from":"alice","text":"Done: \\"a\\" & b"}',
    );
    expect(encodeIdleNotification({ from: 'alice' })).toBe(
      '{"type":"idle_notification","from":"alice"}',
    );
  });

  it('parses its own output and drops unknown keys', () => {
    expect(parseIdleNotification(encodeIdleNotification({ from: 'a', text: 'x' }))).toEqual({
      type: 'idle_notification',
      from: 'a',
      text: 'x',
    });
    expect(
      parseIdleNotification('{"type":"idle_notification","from":"a","idleReason":"available"}'),
    ).toEqual({ type: 'idle_notification', from: 'a' });
  });

  it.each([
    'not json',
    'null',
    '[]',
    '{"type":"idle_notification"}',
    '{"type":"idle_notification","from":" "}',
    '{"type":"idle_notification","from":"a","text":1}',
    '{"type":"shutdown_request","reason":"x"}',
  ])('refuses %s', (json) => {
    expect(parseIdleNotification(json)).toBeUndefined();
  });

  it('checks objects, not strings', () => {
    expect(isIdleNotification({ type: 'idle_notification', from: 'a' })).toBe(true);
    expect(isIdleNotification({ type: 'idle_notification', from: 'a', text: null })).toBe(false);
    expect(isIdleNotification('{"type":"idle_notification","from":"a"}')).toBe(false);
  });

  it('shows the text, or the fallback line for a turn that ended without text', () => {
    expect(
      idleNotificationText({ type: 'idle_notification', from: 'bob', text: 'PR is up.' }),
    ).toBe('PR is up.');
    expect(idleNotificationText({ type: 'idle_notification', from: 'bob' })).toBe(
      'bob is idle and ready for the next instruction.',
    );
    expect(idleNotificationText({ type: 'idle_notification', from: 'bob', text: ' \n' })).toBe(
      'bob is idle and ready for the next instruction.',
    );
  });
});

describe('shutdown request envelope', () => {
  it('encodes, parses and checks', () => {
    const json = encodeShutdownRequest({ reason: 'Work is done.' });
    expect(json).toBe('{"type":"shutdown_request","reason":"Work is done."}');
    expect(parseShutdownRequest(json)).toEqual({
      type: 'shutdown_request',
      reason: 'Work is done.',
    });
    expect(isShutdownRequest(JSON.parse(json))).toBe(true);
    expect(parseShutdownRequest('{"type":"shutdown_request"}')).toBeUndefined();
    expect(parseShutdownRequest('{"type":"idle_notification","from":"a"}')).toBeUndefined();
    expect(parseShutdownRequest('{')).toBeUndefined();
  });

  it('shows the reason, or a fallback line when it is blank', () => {
    expect(shutdownRequestText({ type: 'shutdown_request', reason: 'Done.' })).toBe('Done.');
    expect(shutdownRequestText({ type: 'shutdown_request', reason: '' })).toBe(
      SHUTDOWN_FALLBACK_TEXT,
    );
  });
});
