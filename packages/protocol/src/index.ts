/*
 * The team policy is core's (`defaultTeamPolicy`, the priority pick and the texts), so every team
 * gets one without this package; it is re-exported here, where users of formats look for it.
 */
export type { PickPolicy } from '@teamwire/core';
export {
  CLAIM_PROMPT_MAX_LISTED_TASKS,
  defaultTeamPolicy,
  formatAssignmentNotice,
  formatIdleNotice,
  formatTaskClaimPrompt,
  idleFallbackLine,
  PriorityTier,
  pickPriority,
  priorityTier,
} from '@teamwire/core';
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
export type { JsonEnvelope, JsonEnvelopeBase } from './json-envelope.js';
export { decodeJsonEnvelope, encodeJsonEnvelope, toJsonEnvelope } from './json-envelope.js';
export { jsonFormat } from './json-format.js';
export type { ParsedTeamEnvelope } from './shared.js';
export { formatTeamContext } from './texts.js';
export {
  TEAMMATE_MESSAGE_TOOL_NAME,
  teammateMessageCallId,
  teammateMessageTool,
  toolCallFormat,
} from './tool-call-format.js';
export { xmlFormat } from './xml-format.js';
