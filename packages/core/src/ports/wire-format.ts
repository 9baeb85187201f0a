import type { ChatMessage } from '../chat.js';
import type { MessageKind, QueuedMessage } from '../records.js';

/** Who sent a message, as a wire format shows it to the model. */
export interface EnvelopeSender {
  /** The sender's roster name. Never blank. */
  name: string;
  /** The sender's display color, when it has one. */
  color?: string;
}

/** What {@link WireFormat.parseEnvelope} recovers from formatted entries. */
export interface ParsedEnvelope {
  /** The sender's name as the envelope shows it. */
  from: string;
  /** The message kind as the envelope's own structure says it (never read from the body). */
  kind: MessageKind;
  /** The message body (for control kinds, their text: reason, idle text, notice). */
  text: string;
  /** The one-line preview, when the envelope carries one. */
  summary?: string;
  /** The sender's color, when the envelope carries one. */
  color?: string;
  /**
   * The approval an `approval_request` or `approval_decision` names, as the envelope's own
   * structure carries it (never read from the body).
   */
  approvalId?: string;
}

/** What {@link WireFormat.formatInitialPrompt} gets to describe a teammate's place in the team. */
export interface InitialPromptOptions {
  /** The teammate's own name. */
  agentName: string;
  /** The lead's name. */
  leadName: string;
  /** The teammate's role, as it was spawned with (may be empty). */
  description: string;
  /** The other live teammates' names, when the runner started. */
  teammates: readonly string[];
}

/**
 * The wire format of team mail: how one message is framed for the model and parsed back. Nothing
 * else: which message goes next and the texts of notices are the {@link TeamPolicy}'s. A new
 * format is these three functions; `@teamwire/protocol` ships three (XML envelope, plain JSON,
 * OpenAI tool-call shape) and a conformance suite for a fourth.
 *
 * Formats are pure and deterministic: the same message renders the same bytes (a redelivered
 * message must look as it did), which also keeps prompt caches warm.
 */
export interface WireFormat {
  /** The version of this port the format implements; checked when a team opens. */
  readonly specificationVersion: 'v1';
  /** Short format name, e.g. `xml`, `json`, `tool-call`. */
  readonly name: string;
  /**
   * Renders one team message as the conversation entries the target model sees (usually one user
   * message; the tool-call format returns an assistant tool call and its result). Bodies and
   * attributes are escaped so that no content can forge a sender or a kind. Each entry carries
   * the message's `source` (`{kind: 'team-message', messageId, senderId, senderName}`); the runner
   * stamps it again before writing, so de-duplication never depends on the format.
   */
  formatMessage(options: { message: QueuedMessage; sender: EnvelopeSender }): ChatMessage[];
  /**
   * Inverse of {@link formatMessage}: `undefined` when the entries are not exactly one of its
   * envelopes. Never throws, whatever the entries hold.
   */
  parseEnvelope(messages: readonly ChatMessage[]): ParsedEnvelope | undefined;
  /**
   * The team-context system text of a teammate: who it is, who leads, how mail looks in this
   * format and which parts of it to trust. Sent as a second system block after the agent's own
   * prompt; its spawn prompt arrives separately, as the first message from the lead.
   */
  formatInitialPrompt(options: InitialPromptOptions): string;
}
