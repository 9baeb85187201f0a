import type { ChatMessage } from '../chat.js';
import type { QueuedMessage, Task } from '../records.js';

/** Who sent a message, as the protocol shows it to the model. */
export interface EnvelopeSender {
  name: string;
  color?: string;
}

/** What `parseEnvelope` recovers from a formatted message. */
export interface ParsedEnvelope {
  from: string;
  kind: QueuedMessage['kind'];
  /** The message body (for control kinds, their text: reason, idle text, notice). */
  text: string;
  summary?: string;
  color?: string;
}

/**
 * Format and policy of team mail: how messages look to a model, and which pending message a
 * member handles next. `@teamwire/protocol` ships three formats (XML envelope, plain JSON, OpenAI
 * tool-call shape); the runner works with any implementation of this port.
 */
export interface ProtocolHooks {
  readonly specificationVersion: 'v1';
  /** Short format name, e.g. `xml`, `json`, `tool-call`. */
  readonly name: string;
  /**
   * Renders one team message as the conversation entries the target model sees (usually one user
   * message; the tool-call format returns an assistant tool call and its result). Bodies and
   * attributes are escaped so that no content can forge a sender or a kind.
   */
  formatMessage(options: { message: QueuedMessage; sender: EnvelopeSender }): ChatMessage[];
  /** Inverse of {@link formatMessage}: `undefined` when the entries are not one of its envelopes. */
  parseEnvelope(messages: readonly ChatMessage[]): ParsedEnvelope | undefined;
  /**
   * The team-context system text of a teammate: who it is, who leads, how mail looks and how to
   * answer. Its spawn prompt arrives separately, as the first message from the lead.
   */
  formatInitialPrompt(options: {
    agentName: string;
    leadName: string;
    description: string;
    teammates: readonly string[];
  }): string;
  /**
   * Picks the message to handle next from the whole pending set (in queue order). Default policy:
   * shutdown requests first, then the lead's messages, then peers', FIFO within a tier.
   */
  pickNext(options: {
    pending: readonly QueuedMessage[];
    leadId: string;
  }): QueuedMessage | undefined;
  /** The text the lead sees for an idle notification: the teammate's last text or a fallback line. */
  formatIdleNotice(options: { from: string; text?: string }): string;
  /** The text that starts a teammate's turn when it claims a ready task. */
  formatTaskClaimPrompt(options: { task: Task; openTasks: readonly Task[] }): string;
  /** The text of a task-assignment message sent to a task's new owner. */
  formatAssignmentNotice(options: { task: Task; assignedBy: string }): string;
}
