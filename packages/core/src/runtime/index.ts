export type { TurnOutcome, TurnStopReason } from './agent-loop.js';
export type {
  AgentDefinition,
  AgentRef,
  AgentRegistry,
  AgentTool,
  ToolContext,
} from './agents.js';
export { createAgentRegistry, defineTool } from './agents.js';
export type { MemberTeamService } from './member-service.js';
export type {
  ListTasksInput,
  ListTasksResult,
  MemberInfo,
  Membership,
  OpenTeamOptions,
  SendMessageInput,
  SendMessageResult,
  SpawnTeammateInput,
  SpawnTeammateResult,
  TeamService,
  WaitForChangeInput,
  WaitForChangeResult,
} from './team-service.js';
export { openTeam } from './team-service.js';
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
