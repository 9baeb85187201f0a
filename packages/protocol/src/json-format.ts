import { type ChatMessage, contentText, textContent, type WireFormat } from '@teamwire/core';
import {
  decodeJsonEnvelope,
  encodeJsonEnvelope,
  JSON_ENVELOPE_GUIDE,
  messageEnvelope,
} from './json-envelope.js';
import { teamMessageSource } from './shared.js';
import { formatTeamContext } from './texts.js';

const JSON_MAIL_FORMAT = [
  'Each message arrives as a user message holding one JSON object, for example:',
  ...JSON_ENVELOPE_GUIDE,
].join('\n');

/**
 * Plain JSON: each message is one user message holding one compact JSON object,
 * `{"type":KIND,"from":..,"color"?:..,"summary"?:..,"approvalId"?:..,"text"|"reason":..}`. Suits models and
 * tooling that read JSON more reliably than markup, and needs no escaping rules beyond JSON's.
 */
export const jsonFormat: WireFormat = Object.freeze<WireFormat>({
  specificationVersion: 'v1',
  name: 'json',
  formatMessage({ message, sender }) {
    const envelope = messageEnvelope(message, sender);
    const entry: ChatMessage = {
      role: 'user',
      content: textContent(encodeJsonEnvelope(envelope)),
      source: teamMessageSource(message),
    };
    return [entry];
  },
  parseEnvelope(messages) {
    const [entry] = messages;
    if (messages.length !== 1 || entry === undefined || entry.role !== 'user') return undefined;
    return decodeJsonEnvelope(contentText(entry.content));
  },
  formatInitialPrompt: (prompt) => formatTeamContext({ ...prompt, mailFormat: JSON_MAIL_FORMAT }),
});
