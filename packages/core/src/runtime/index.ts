export type {
  AgentDefinition,
  AgentRegistry,
  AgentTool,
  AnyAgentDefinition,
  ExternalAgentDefinition,
  ToolContext,
} from './agents.js';
export { createAgentRegistry, defineTool } from './agents.js';
export type { ExternalPresenceOptions } from './external-members.js';
export { entriesText, INBOX_PAGE_MAX } from './external-members.js';
export type { OpenTeamOptions } from './open-team.js';
export { openTeam } from './open-team.js';
export type {
  AckInboxResult,
  AgentRef,
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
  TeamService,
  TurnOutcome,
  TurnStopReason,
  WaitForChangeInput,
  WaitForChangeResult,
} from './service-types.js';
export {
  createLeadTools,
  createTeamTools,
  describeTeamChange,
  InterruptTeammateToolInput,
  LEAD_TOOL_NAMES,
  ListMembersToolInput,
  memberStatusLines,
  SendMessageToolInput,
  ShutdownTeammateToolInput,
  spawnTeammateToolInput,
  TaskCreateToolInput,
  TaskGetToolInput,
  TaskListToolInput,
  TaskUpdateToolInput,
  TEAM_TOOL_NAMES,
  WaitForTeamToolInput,
} from './team-tools.js';
