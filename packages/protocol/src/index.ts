export type {
  ControlKind,
  ParsedTeammateAttachment,
  TeammateAttachment,
} from './attachment.js';
export {
  formatTeammateAttachment,
  parseTeammateAttachment,
  TEAMMATE_MESSAGE_TAG,
} from './attachment.js';
export { promptCacheKey } from './cache-key.js';
export type { IdleNotification, ShutdownRequest } from './control-envelopes.js';
export {
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
export {
  escapeXmlAttribute,
  escapeXmlBody,
  unescapeXmlAttribute,
  unescapeXmlBody,
} from './escape.js';
export type { FramingCost } from './framing.js';
export { measureFraming } from './framing.js';
export type { JsonEnvelope } from './json-envelope.js';
export { decodeJsonEnvelope, encodeJsonEnvelope, toJsonEnvelope } from './json-envelope.js';
export { createJsonProtocol, jsonProtocol } from './json-protocol.js';
export type { PickPolicy } from './priority.js';
export { PriorityTier, pickPriority, priorityTier } from './priority.js';
export type { ProtocolOptions } from './protocol-options.js';
export {
  CLAIM_PROMPT_MAX_LISTED_TASKS,
  formatAssignmentNotice,
  formatIdleNotice,
  formatTaskClaimPrompt,
  formatTeamContext,
  idleFallbackLine,
} from './texts.js';
export {
  createToolCallProtocol,
  TEAMMATE_MESSAGE_TOOL_NAME,
  teammateMessageCallId,
  teammateMessageTool,
  toolCallProtocol,
} from './tool-call-protocol.js';
export { createXmlProtocol, xmlProtocol } from './xml-protocol.js';
