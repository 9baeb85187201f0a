import {
  type AssistantMessage,
  contentText,
  type ToolDefinition,
  type ToolResultMessage,
  textContent,
  type WireFormat,
} from '@teamwire/core';
import {
  decodeJsonEnvelope,
  encodeJsonEnvelope,
  JSON_ENVELOPE_GUIDE,
  messageEnvelope,
} from './json-envelope.js';
import { isRecord, teamMessageSource } from './shared.js';
import { formatTeamContext } from './texts.js';

/** The tool name under which the tool-call format presents mail. */
export const TEAMMATE_MESSAGE_TOOL_NAME = 'teammate_message';

/**
 * A definition of the `teammate_message` tool, for providers that refuse a history naming a tool
 * the request does not declare. Offering it is optional; the model is told never to call it.
 */
export const teammateMessageTool: ToolDefinition = {
  name: TEAMMATE_MESSAGE_TOOL_NAME,
  description:
    'Delivers team mail. The system calls it for you when a message arrives; never call it yourself.',
  inputSchema: { type: 'object', properties: {}, additionalProperties: false },
};

/**
 * The tool call id of a message's rendering: derived from the message id (so a redelivery renders
 * the same bytes), limited to `[A-Za-z0-9_-]` and 40 characters, which every major provider
 * accepts.
 */
export function teammateMessageCallId(messageId: string): string {
  return `tm_${messageId.replace(/[^A-Za-z0-9_-]/g, '_')}`.slice(0, 40);
}

const TOOL_CALL_MAIL_FORMAT = [
  `Each message arrives as the result of a ${TEAMMATE_MESSAGE_TOOL_NAME} tool call that the ` +
    'system makes on your behalf; never call that tool yourself. The result is one JSON object, ' +
    'for example:',
  ...JSON_ENVELOPE_GUIDE,
].join('\n');

/**
 * The OpenAI tool-call shape: each message becomes an assistant tool call of
 * `teammate_message` (no arguments) followed by its tool result, whose content is the JSON
 * envelope of `jsonFormat`. Models trained on tool use then read mail as tool output. Both
 * entries carry the message's source, so de-duplication works as for the other formats.
 */
export const toolCallFormat: WireFormat = Object.freeze<WireFormat>({
  specificationVersion: 'v1',
  name: 'tool-call',
  formatMessage({ message, sender }) {
    const envelope = messageEnvelope(message, sender);
    const id = teammateMessageCallId(message.id);
    const call: AssistantMessage = {
      role: 'assistant',
      content: [],
      toolCalls: [{ id, name: TEAMMATE_MESSAGE_TOOL_NAME, input: {} }],
      source: teamMessageSource(message),
    };
    const result: ToolResultMessage = {
      role: 'tool',
      toolCallId: id,
      toolName: TEAMMATE_MESSAGE_TOOL_NAME,
      content: textContent(encodeJsonEnvelope(envelope)),
      source: teamMessageSource(message),
    };
    return [call, result];
  },
  parseEnvelope(messages) {
    const [call, result] = messages;
    if (messages.length !== 2 || call?.role !== 'assistant' || result?.role !== 'tool') {
      return undefined;
    }
    const [toolCall] = call.toolCalls;
    if (
      call.toolCalls.length !== 1 ||
      toolCall === undefined ||
      toolCall.name !== TEAMMATE_MESSAGE_TOOL_NAME ||
      !isRecord(toolCall.input) ||
      contentText(call.content) !== '' ||
      result.toolCallId !== toolCall.id ||
      result.toolName !== TEAMMATE_MESSAGE_TOOL_NAME ||
      result.isError === true
    ) {
      return undefined;
    }
    return decodeJsonEnvelope(contentText(result.content));
  },
  formatInitialPrompt: (prompt) =>
    formatTeamContext({ ...prompt, mailFormat: TOOL_CALL_MAIL_FORMAT }),
});
