import {
  contentText,
  MessageKind,
  type MessageSource,
  type ParsedEnvelope,
  type QueuedMessage,
  TeamError,
} from '@teamwire/core';

// Core's list of kinds, the one definition every package reads.
const MESSAGE_KINDS: ReadonlySet<string> = new Set<string>(MessageKind.options);

/**
 * A parsed envelope (`ParsedEnvelope` of `@teamwire/core`) with the approval id the envelope
 * shows: every format of this package renders a message's `approvalId` (set on
 * `approval_request` and `approval_decision` messages) and reads it back, so the model can pass
 * it to the tool that decides an approval.
 */
export interface ParsedTeamEnvelope extends ParsedEnvelope {
  /** The approval the message concerns, when the envelope names one. */
  approvalId?: string;
}

/** True for `undefined`, the empty string and whitespace-only strings. */
export function isBlank(value: string | undefined): value is undefined {
  return value === undefined || value.trim() === '';
}

/** True when `value` names one of core's message kinds. */
export function isMessageKind(value: unknown): value is MessageKind {
  return typeof value === 'string' && MESSAGE_KINDS.has(value);
}

/** A plain (non-array, non-null) object, as read from untrusted JSON. */
export function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** The source every rendered entry carries, so the runner can de-duplicate by message id. */
export function teamMessageSource(message: QueuedMessage): MessageSource {
  return {
    kind: 'team-message',
    messageId: message.id,
    senderId: message.senderId,
    senderName: message.senderName,
  };
}

/** The text of a queued message: its text blocks joined (other blocks are not mail). */
export function messageText(message: QueuedMessage): string {
  return contentText(message.content);
}

/** Refuses a blank sender name: an envelope without a sender would be unattributable. */
export function requireSenderName(name: string): void {
  if (isBlank(name)) {
    throw new TeamError('ENVELOPE_INVALID', 'a team message needs a non-blank sender name');
  }
}

/** Parses JSON without throwing: `undefined` for text that is not JSON. */
export function tryParseJson(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}
