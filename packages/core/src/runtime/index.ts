export type { AgentDefinition, AgentRegistry, AgentTool, ToolContext } from './agents.js';
export { createAgentRegistry, defineTool } from './agents.js';
export type { OpenTeamOptions } from './open-team.js';
export { openTeam } from './open-team.js';
export type {
  AgentRef,
  ListTasksInput,
  ListTasksResult,
  MemberInfo,
  Membership,
  MemberTeamService,
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
  InterruptTeammateToolInput,
  LEAD_TOOL_NAMES,
  ListMembersToolInput,
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
