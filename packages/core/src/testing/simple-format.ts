import type { ChatMessage, MessageSource } from '../chat.js';
import { contentText } from '../content.js';
import { pickPriority, resumedNote } from '../policy/index.js';
import type { TeamPolicy } from '../ports/team-policy.js';
import type { WireFormat } from '../ports/wire-format.js';
import type { MessageKind, QueuedMessage } from '../records.js';

const LABELS: Readonly<Record<MessageKind, string>> = {
  message: 'message',
  idle_notification: 'idle notification',
  shutdown_request: 'shutdown request',
  task_assignment: 'task assignment',
  approval_request: 'approval request',
  approval_decision: 'approval decision',
  gate_feedback: 'gate feedback',
};

const KIND_BY_LABEL = new Map<string, MessageKind>(
  Object.entries(LABELS).map(([kind, label]) => [label, kind as MessageKind]),
);

const HEADER =
  /^\[(message|idle notification|shutdown request|task assignment|approval request|approval decision|gate feedback) from ([^\]\n]+)\]$/;

/**
 * A minimal, complete {@link WireFormat} for tests of core itself (core cannot depend on
 * `@teamwire/protocol`). A message renders as one user message whose first line is
 * `[message from NAME]` (or `[shutdown request from NAME]`, ...) followed by the body. Only the
 * first line is parsed, so a body cannot forge a sender or a kind.
 */
export function createSimpleFormat(): WireFormat {
  return {
    specificationVersion: 'v1',
    name: 'simple',
    formatMessage({ message, sender }): ChatMessage[] {
      const source: MessageSource = {
        kind: 'team-message',
        messageId: message.id,
        senderId: message.senderId,
        senderName: message.senderName,
      };
      return [
        {
          role: 'user',
          content: [{ type: 'text', text: simpleEnvelopeText(message, sender.name) }],
          source,
        },
      ];
    },
    parseEnvelope(messages) {
      const first = messages[0];
      if (messages.length !== 1 || first?.role !== 'user') return undefined;
      const text = contentText(first.content);
      const newline = text.indexOf('\n');
      const header = newline === -1 ? text : text.slice(0, newline);
      const match = HEADER.exec(header);
      if (!match) return undefined;
      const kind = KIND_BY_LABEL.get(match[1] ?? '');
      if (kind === undefined || match[2] === undefined) return undefined;
      return { from: match[2], kind, text: newline === -1 ? '' : text.slice(newline + 1) };
    },
    formatInitialPrompt({ agentName, leadName, description, teammates }) {
      const others = teammates.filter((name) => name !== agentName);
      return [
        `You are ${agentName}, a teammate in a team led by ${leadName}.`,
        `Your role: ${description}`,
        `Teammates: ${others.length > 0 ? others.join(', ') : '(none yet)'}.`,
        'Messages arrive as "[message from NAME]" followed by the body; reply with send_message.',
      ].join('\n');
    },
  };
}

/**
 * A {@link TeamPolicy} with one-line texts, so tests can assert whole transcripts: the default
 * pick (`pickPriority`), `NAME is idle.` as the idle fallback, `You claimed task-N: SUBJECT` with
 * the description and the other open tasks on one line, and `LEAD assigned you task-N: SUBJECT`.
 */
export function createSimplePolicy(): TeamPolicy {
  return {
    specificationVersion: 'v1',
    pickNext: pickPriority,
    formatIdleNotice({ from, text }) {
      return text !== undefined && text.trim() !== '' ? text : `${from} is idle.`;
    },
    formatTaskClaimPrompt({ task, openTasks, resumed }) {
      const others = openTasks.filter((t) => t.id !== task.id).map((t) => `${t.id} ${t.subject}`);
      return [
        `You claimed ${task.id}: ${task.subject}`,
        ...(resumed === true ? [resumedNote(task.id)] : []),
        task.description,
        ...(others.length > 0 ? [`Other open tasks: ${others.join('; ')}`] : []),
      ].join('\n');
    },
    formatAssignmentNotice({ task, assignedBy }) {
      return `${assignedBy} assigned you ${task.id}: ${task.subject}`;
    },
  };
}

/** Shorthand used by tests: the text `createSimpleFormat` renders for a message. */
export function simpleEnvelopeText(
  message: Pick<QueuedMessage, 'kind' | 'content'>,
  senderName: string,
): string {
  return `[${LABELS[message.kind]} from ${senderName}]\n${contentText(message.content)}`;
}
