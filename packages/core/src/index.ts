export type { BackoffPolicy } from './backoff.js';
export { Backoff, backoffDelay, checkBackoffPolicy, EQUAL_JITTER } from './backoff.js';
export {
  AssistantMessage,
  ChatMessage,
  COMPACTION_DELIVERED_MAX,
  COMPACTION_RETAINED_MAX,
  CompactionReason,
  CompactionSource,
  INTERRUPTED_TOOL_RESULT,
  MessageSource,
  parseTranscriptEntry,
  StopReason,
  TERMINATED_TOOL_RESULT,
  ToolCall,
  ToolResultMessage,
  TranscriptEntry,
  Usage,
  UserMessage,
} from './chat.js';
export type { Clock, IdSource } from './clock.js';
export { systemClock, ulidIdSource } from './clock.js';
export {
  ContentBlock,
  contentText,
  RedactedThinkingBlock,
  TextBlock,
  ThinkingBlock,
  textContent,
  UnknownBlock,
} from './content.js';
export type { TeamErrorOptions } from './errors.js';
export { TeamError, TeamErrorCode } from './errors.js';
export * from './hub/index.js';
export {
  AGENT_TYPE_MAX,
  HANDOVER_WAIT_MS,
  isWithinTextLimit,
  LIVE_AGENT_NAME_MAX,
  LIVE_BATCH_BYTES_MAX,
  LIVE_BATCH_EVENTS_MAX,
  LIVE_BATCHES_PER_SECOND,
  LIVE_COALESCE_MS,
  LIVE_EVENT_BYTES_MAX,
  LIVE_QUEUE_MAX,
  LIVE_SEND_QUEUE_MAX,
  MEMBER_COLOR_MAX,
  MEMBER_DESCRIPTION_MAX,
  MEMBER_ERROR_MAX,
  MEMBER_PROVIDER_MAX,
  MESSAGE_SUMMARY_MAX,
  PLACEMENT_CAPABILITIES_MAX,
  PLACEMENT_CAPABILITY_MAX_BYTES,
  PLACEMENT_CAPABILITY_PATTERN,
  REBALANCE_HOLD_LOOKS,
  REBALANCE_MARGIN,
  REBALANCE_PERIOD_LOOKS,
  SEQUENCER_ANSWER_TIMEOUT_MS,
  SEQUENCER_BATCH_RECORDS_MAX,
  SEQUENCER_GATHER_MS,
  SEQUENCER_PROPOSAL_BYTES_MAX,
  SEQUENCER_QUEUE_MAX,
  TASK_BLOCKED_BY_MAX,
  TASK_DESCRIPTION_MAX,
  TASK_PAGE_MAX,
  TASK_SUBJECT_MAX,
  TASK_WRITE_SCOPES_MAX,
  textLength,
  WAIT_OPEN_TASKS_MAX,
  WAIT_TIMEOUT_MAX_MS,
  WAIT_TIMEOUT_MIN_MS,
  WRITE_SCOPE_MAX,
} from './limits.js';
export {
  canHost,
  checkCapabilities,
  checkCapability,
  missingCapabilities,
  type PlacementHost,
  unmetRequirements,
  willingToRun,
} from './placement/eligibility.js';
export type {
  RebalanceLoad,
  RebalanceLook,
  RebalanceMember,
  RebalanceMemory,
  RebalanceMove,
  RebalanceStep,
} from './placement/rebalance.js';
export { bestMove, REBALANCE_START, rebalanceStep } from './placement/rebalance.js';
export * from './policy/index.js';
export type { AgentEvent, EventSink, MemberStatus, WorkspaceEventAction } from './ports/events.js';
export { noopEventSink } from './ports/events.js';
export type {
  ModelAdapter,
  ModelRequest,
  ModelStreamEvent,
  SystemBlock,
  ToolDefinition,
} from './ports/model.js';
export type {
  MemberActivity,
  MemberPlacement,
  PlacedMember,
  PlacementCandidate,
  PlacementListener,
  PlacementView,
} from './ports/placement.js';
export type {
  AppendPart,
  IncomingProposal,
  LiveChannel,
  Proposal,
  ProposalAnswer,
  ProposalCommitted,
  ProposalNotCommitted,
  ProposalRefused,
  SharedTeamLog,
  StoredSnapshot,
  TeamLog,
  TeamLogAppendOptions,
  TeamLogSnapshots,
  TeamSequencer,
} from './ports/team-log.js';
export type { PickNextOptions, TeamPolicy } from './ports/team-policy.js';
export type { TraceContextSource } from './ports/trace-context.js';
export type { TranscriptStore } from './ports/transcript-store.js';
export type {
  EnvelopeSender,
  InitialPromptOptions,
  ParsedEnvelope,
  WireFormat,
} from './ports/wire-format.js';
export type { WorkspaceMember, WorkspaceProvider, WorkspaceRelease } from './ports/workspace.js';
export { recordDigest } from './record-digest.js';
export type { TeamRecordType } from './records.js';
export {
  APPROVAL_INPUT_BYTES_MAX,
  APPROVAL_REASON_MAX,
  ApprovalDecidedRecord,
  ApprovalDecision,
  ApprovalKind,
  ApprovalRequest,
  ApprovalRequestedRecord,
  ApprovalStartedRecord,
  checkSchemaVersion,
  DEAD_LETTER_DETAIL_MAX,
  DeadLetter,
  DeadLetterReason,
  GateName,
  GateRefusedRecord,
  LEAD_NAME,
  MEMBER_NAME_MAX,
  MEMBER_NAME_PATTERN,
  Member,
  MemberContext,
  MemberPhase,
  MemberRecord,
  MemberWorkspace,
  MessageDeadLetteredRecord,
  MessageDeliveredRecord,
  MessageDelivery,
  MessageKind,
  MessageQueuedRecord,
  MessageTrace,
  messageSchemaVersion,
  PLAN_MAX,
  parseAppendedRecord,
  parseTeamRecord,
  QueuedMessage,
  RECORD_SCHEMA_VERSIONS,
  readTeamRecord,
  SCHEMA_VERSION,
  TASK_ID_PATTERN,
  Task,
  TaskRecord,
  TaskStatus,
  TeamRecord,
  TRACEPARENT_PATTERN,
  TRACESTATE_MAX,
  TRANSCRIPT_SCHEMA_VERSION,
} from './records.js';
export { TASK_ACTION_TYPES, taskNumber } from './rules.js';
export * from './runtime/index.js';
export * from './state/index.js';
export { isTaskReady } from './task-readiness.js';
export type { CompactionMessage } from './transcript-context.js';
export {
  applyCompaction,
  isCompaction,
  messageBytes,
  transcriptContext,
} from './transcript-context.js';
export { repairTranscript } from './transcript-repair.js';
