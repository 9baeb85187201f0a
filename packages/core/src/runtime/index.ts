export type {
  AgentDefinition,
  AgentPlacement,
  AgentRegistry,
  AgentTool,
  AnyAgentDefinition,
  ApprovalCall,
  ApprovalPolicy,
  ExternalAgentDefinition,
  ToolContext,
} from './agents.js';
export { createAgentRegistry, defineTool } from './agents.js';
export { GATE_REFUSALS_DEFAULT } from './approvals.js';
export type {
  CompactionInput,
  CompactionPolicy,
  ContextBudget,
  ResolvedContextBudget,
} from './context-budget.js';
export {
  CONTEXT_WINDOW_MAX,
  CONTEXT_WINDOW_MIN,
  DEFAULT_COMPACTION_PROMPT,
  deterministicSummary,
  KEEP_FIRST_MAX,
  modelSummary,
  resolveContextBudget,
  SUMMARY_CHARS_MAX,
} from './context-budget.js';
export type { ExternalPresenceOptions } from './external-members.js';
export {
  entriesText,
  INBOX_CURSOR_MAX,
  INBOX_PAGE_DEFAULT,
  INBOX_PAGE_MAX,
} from './external-members.js';
export type {
  LiveDropReason,
  LiveRelayOptions,
  LiveRelayStats,
  RemoteMember,
} from './live-relay.js';
export { isLiveEventType, LIVE_FORMAT_VERSION, LiveRelay } from './live-relay.js';
export type { OpenTeamOptions } from './open-team.js';
export { openTeam } from './open-team.js';
export { isRebasable, rebaseRecords } from './rebase.js';
export { DEFAULT_MAX_REPEATED_FAILURES } from './repeated-failures.js';
export type {
  AckInboxResult,
  AgentRef,
  ApprovalView,
  DecideInput,
  GateVerdict,
  InboxMessage,
  InboxPage,
  ListTasksInput,
  ListTasksResult,
  MemberInfo,
  Membership,
  MemberTeamService,
  ReadInboxInput,
  SendMessageInput,
  SendMessageResult,
  SpawnTeammateInput,
  SpawnTeammateResult,
  TeamGates,
  TeamService,
  TurnOutcome,
  TurnStopReason,
  WaitForChangeInput,
  WaitForChangeResult,
} from './service-types.js';
export type { LoadedState } from './snapshots.js';
export { loadTeamState } from './snapshots.js';
export type { ProgressInputs, TeamProgress } from './team-progress.js';
export { teamProgress } from './team-progress.js';
export {
  createLeadTools,
  createPlanTools,
  createTeamTools,
  DecideApprovalToolInput,
  describeTeamChange,
  InterruptTeammateToolInput,
  LEAD_TOOL_NAMES,
  ListMembersToolInput,
  memberStatusLines,
  PLAN_MODE_TEAM_TOOLS,
  SendMessageToolInput,
  ShutdownTeammateToolInput,
  SubmitPlanToolInput,
  spawnTeammateToolInput,
  TaskCreateToolInput,
  TaskGetToolInput,
  TaskListToolInput,
  TaskUpdateToolInput,
  TEAM_TOOL_NAMES,
  WaitForTeamToolInput,
} from './team-tools.js';
