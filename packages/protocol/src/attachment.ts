import { type MessageKind, TeamError } from '@teamwire/core';
import {
  escapeXmlAttribute,
  escapeXmlBody,
  unescapeXmlAttribute,
  unescapeXmlBody,
} from './escape.js';
import { isBlank, isMessageKind } from './shared.js';

/** The element name of the default envelope. */
export const TEAMMATE_MESSAGE_TAG = 'teammate-message';

const OPEN = `<${TEAMMATE_MESSAGE_TAG}`;
const CLOSE = `</${TEAMMATE_MESSAGE_TAG}>`;

/** The kinds the runtime sets on control messages; plain mail (`message`) carries no kind. */
export type ControlKind = Exclude<MessageKind, 'message'>;

/** What {@link formatTeammateAttachment} renders. */
export interface TeammateAttachment {
  /** The sender's name, shown as `teammate_id`. Must not be blank. */
  from: string;
  /** The body, kept byte for byte (escaped where needed). */
  text: string;
  /** Omitted from the tag when blank. */
  color?: string | undefined;
  /** One-line preview; omitted from the tag when blank. */
  summary?: string | undefined;
  /**
   * A control kind set by the runtime, rendered as a `kind` attribute. Plain mail has none, so a
   * body can never make a message look like a control message.
   */
  kind?: ControlKind | undefined;
  /**
   * The approval the message concerns (`approval_request`, `approval_decision`), set by the
   * runtime and rendered as an `approval_id` attribute; omitted from the tag when blank.
   */
  approvalId?: string | undefined;
}

/** What {@link parseTeammateAttachment} recovers. */
export interface ParsedTeammateAttachment {
  /** The `teammate_id` attribute, unescaped. */
  from: string;
  /** The element's body, unescaped, byte for byte as it was formatted. */
  body: string;
  /** The `color` attribute, when present and not blank. */
  color?: string;
  /** The `summary` attribute, when present and not blank. */
  summary?: string;
  /** Present only when the element carries a `kind` attribute. */
  kind?: MessageKind;
  /** The `approval_id` attribute, when present and not blank. */
  approvalId?: string;
}

/**
 * Renders the default envelope:
 * `<teammate-message teammate_id="FROM" kind="K" approval_id="A" color="C" summary="S">\nTEXT\n</teammate-message>`.
 * Optional attributes are left out when blank. Attribute values and the body are escaped (see
 * `escapeXmlAttribute` / `escapeXmlBody`), so no input closes the element early or forges
 * another `teammate_id` or `kind`. Throws `ENVELOPE_INVALID` for a blank sender.
 */
export function formatTeammateAttachment(attachment: TeammateAttachment): string {
  if (isBlank(attachment.from)) {
    throw new TeamError('ENVELOPE_INVALID', 'a teammate message needs a non-blank sender name');
  }
  let tag = `${OPEN} teammate_id="${escapeXmlAttribute(attachment.from)}"`;
  if (attachment.kind !== undefined) tag += ` kind="${attachment.kind}"`;
  if (!isBlank(attachment.approvalId)) {
    tag += ` approval_id="${escapeXmlAttribute(attachment.approvalId)}"`;
  }
  if (!isBlank(attachment.color)) tag += ` color="${escapeXmlAttribute(attachment.color)}"`;
  if (!isBlank(attachment.summary)) tag += ` summary="${escapeXmlAttribute(attachment.summary)}"`;
  return `${tag}>\n${escapeXmlBody(attachment.text)}\n${CLOSE}`;
}

const ATTRIBUTE = /\s+([A-Za-z_][\w.-]*)\s*=\s*(?:"([^"]*)"|'([^']*)')/y;
const TAG_END = /\s*>/y;

/**
 * Parses one envelope back: the exact inverse of {@link formatTeammateAttachment}. Tolerant of
 * attribute order, single quotes, unknown attributes, missing optional attributes, surrounding
 * whitespace and a body written without the framing newlines. Strict (returns `undefined`) about
 * a missing or blank `teammate_id`, a repeated attribute, an unknown `kind`, anything after the
 * closing tag, and a second opening or closing tag inside the body.
 */
export function parseTeammateAttachment(input: string): ParsedTeammateAttachment | undefined {
  const s = input.trim();
  if (!s.startsWith(OPEN) || !s.endsWith(CLOSE)) return undefined;
  const attributes = new Map<string, string>();
  let at = OPEN.length;
  for (;;) {
    ATTRIBUTE.lastIndex = at;
    const match = ATTRIBUTE.exec(s);
    if (match === null) break;
    const name = match[1] as string;
    if (attributes.has(name)) return undefined;
    attributes.set(name, unescapeXmlAttribute(match[2] ?? match[3] ?? ''));
    at = ATTRIBUTE.lastIndex;
  }
  TAG_END.lastIndex = at;
  if (TAG_END.exec(s) === null) return undefined;
  const bodyStart = TAG_END.lastIndex;
  const bodyEnd = s.length - CLOSE.length;
  if (bodyEnd < bodyStart) return undefined;
  let inner = s.slice(bodyStart, bodyEnd);
  if (inner.includes(CLOSE) || inner.includes(OPEN)) return undefined;

  const from = attributes.get('teammate_id');
  if (from === undefined || isBlank(from)) return undefined;
  const kind = attributes.get('kind');
  if (kind !== undefined && !isMessageKind(kind)) return undefined;

  if (inner.startsWith('\n')) inner = inner.slice(1);
  else if (inner.startsWith('\r\n')) inner = inner.slice(2);
  if (inner.endsWith('\n')) inner = inner.slice(0, -1);

  const parsed: ParsedTeammateAttachment = { from, body: unescapeXmlBody(inner) };
  const color = attributes.get('color');
  if (!isBlank(color)) parsed.color = color;
  const summary = attributes.get('summary');
  if (!isBlank(summary)) parsed.summary = summary;
  if (kind !== undefined) parsed.kind = kind;
  const approvalId = attributes.get('approval_id');
  if (!isBlank(approvalId)) parsed.approvalId = approvalId;
  return parsed;
}
