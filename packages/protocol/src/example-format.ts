import { contentText, type ProtocolHooks, textContent } from '@teamwire/core';
import {
  decodeJsonEnvelope,
  encodeJsonEnvelope,
  formatAssignmentNotice,
  formatIdleNotice,
  formatTaskClaimPrompt,
  formatTeamContext,
  pickPriority,
  toJsonEnvelope,
} from './index.js';

const PREFIX = 'Team mail: ';

/** A fourth format, as the README shows it: the JSON envelope behind a fixed prefix. */
export const prefixedJsonProtocol: ProtocolHooks = {
  specificationVersion: 'v1',
  name: 'prefixed-json',
  formatMessage({ message, sender }) {
    const envelope = toJsonEnvelope({
      kind: message.kind,
      from: sender.name,
      text: contentText(message.content),
      color: sender.color,
      summary: message.summary,
    });
    const source = {
      kind: 'team-message' as const,
      messageId: message.id,
      senderId: message.senderId,
      senderName: message.senderName,
    };
    return [{ role: 'user', content: textContent(PREFIX + encodeJsonEnvelope(envelope)), source }];
  },
  parseEnvelope(messages) {
    const [entry] = messages;
    if (messages.length !== 1 || entry?.role !== 'user') return undefined;
    const text = contentText(entry.content);
    return text.startsWith(PREFIX) ? decodeJsonEnvelope(text.slice(PREFIX.length)) : undefined;
  },
  formatInitialPrompt: (prompt) =>
    formatTeamContext({
      ...prompt,
      mailFormat: `Each message is a user message: ${PREFIX}{"type":..,"from":..,"text":..}`,
    }),
  pickNext: pickPriority,
  formatIdleNotice,
  formatTaskClaimPrompt,
  formatAssignmentNotice,
};
