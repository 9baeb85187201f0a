/**
 * OpenTelemetry for teamwire teams: spans after the GenAI semantic conventions for member turns,
 * model calls, tool calls and compactions, one trace across members and processes through the
 * trace context queued mail carries, and team metrics. Core has no OpenTelemetry dependency: this
 * package builds everything from its events and records.
 *
 * @packageDocumentation
 */
export { ATTR, METRIC } from './conventions.js';
export type { OtlpTelemetry, OtlpTelemetryOptions } from './otlp.js';
export { otlpEndpointFromEnv, startOtlpTelemetry } from './otlp.js';
export type { TeamTelemetry, TeamTelemetryOptions, TelemetryTeamView } from './telemetry.js';
export {
  CONTENT_MAX,
  createTeamTelemetry,
  INSTRUMENTATION_NAME,
  REMEMBERED_MESSAGES_MAX,
} from './telemetry.js';
export { fromMessageTrace, toMessageTrace } from './trace-context.js';
