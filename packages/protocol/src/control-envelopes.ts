import { formatIdleNotice } from '@teamwire/core';
import { isBlank, isRecord, tryParseJson } from './shared.js';

/**
 * The JSON body of an idle notification: a teammate finished its turn. `text` is its last text,
 * left out when the turn ended with none.
 *
 * These helpers read and write the envelope's bytes only. Whether a message *is* an idle
 * notification is decided by the runtime's message `kind`, never by recognising this JSON in
 * free text.
 */
export interface IdleNotification {
  /** Names the body's kind inside its JSON. */
  type: 'idle_notification';
  /** The teammate that went idle. */
  from: string;
  /** Its last text; absent when the turn ended without text. */
  text?: string;
}

/**
 * The JSON body of a shutdown request. Like {@link IdleNotification}, only its bytes live here;
 * a peer's text that looks like one is just text.
 */
export interface ShutdownRequest {
  /** Names the body's kind inside its JSON. */
  type: 'shutdown_request';
  /** Why the lead asks the teammate to stop ('' when it gave no reason). */
  reason: string;
}

/** Encodes `{"type":"idle_notification","from":..,"text"?:..}` with keys in that order. */
export function encodeIdleNotification(options: {
  from: string;
  text?: string | undefined;
}): string {
  const value: IdleNotification = { type: 'idle_notification', from: options.from };
  if (options.text !== undefined) value.text = options.text;
  return JSON.stringify(value);
}

/** True for a well-formed idle notification object (extra keys are tolerated). */
export function isIdleNotification(value: unknown): value is IdleNotification {
  return (
    isRecord(value) &&
    value.type === 'idle_notification' &&
    typeof value.from === 'string' &&
    !isBlank(value.from) &&
    (value.text === undefined || typeof value.text === 'string')
  );
}

/** Parses an idle notification's JSON text; `undefined` unless it is exactly one. */
export function parseIdleNotification(json: string): IdleNotification | undefined {
  const value = tryParseJson(json);
  if (!isIdleNotification(value)) return undefined;
  const parsed: IdleNotification = { type: 'idle_notification', from: value.from };
  if (value.text !== undefined) parsed.text = value.text;
  return parsed;
}

/**
 * What the lead reads for an idle notification: the teammate's text, or the line
 * `<from> is idle and ready for the next instruction.` when the turn ended without text.
 */
export function idleNotificationText(notification: IdleNotification): string {
  return formatIdleNotice({ from: notification.from, text: notification.text });
}

/** Encodes `{"type":"shutdown_request","reason":..}`. */
export function encodeShutdownRequest(options: { reason: string }): string {
  const value: ShutdownRequest = { type: 'shutdown_request', reason: options.reason };
  return JSON.stringify(value);
}

/** True for a well-formed shutdown request object (extra keys are tolerated). */
export function isShutdownRequest(value: unknown): value is ShutdownRequest {
  return isRecord(value) && value.type === 'shutdown_request' && typeof value.reason === 'string';
}

/** Parses a shutdown request's JSON text; `undefined` unless it is exactly one. */
export function parseShutdownRequest(json: string): ShutdownRequest | undefined {
  const value = tryParseJson(json);
  return isShutdownRequest(value) ? { type: 'shutdown_request', reason: value.reason } : undefined;
}

/** The line shown for a shutdown request without a reason. */
export const SHUTDOWN_FALLBACK_TEXT = 'Shutdown requested.';

/** What a reader sees for a shutdown request: its reason, or a fallback line when blank. */
export function shutdownRequestText(request: ShutdownRequest): string {
  return isBlank(request.reason) ? SHUTDOWN_FALLBACK_TEXT : request.reason;
}
