export type { FoldedTeam } from './fold.js';
export { foldTeam } from './fold.js';
export { isBoundedKind } from './mailbox.js';
export { isLivePhase, isPhaseTransition, validateMemberName } from './roster.js';
export type { TaskAction, TaskActionType, TaskListFilter, TaskView } from './task-board.js';
export type {
  CreateLeadInput,
  CreateTaskInput,
  QueueMessageInput,
  SpawnMemberInput,
  TeamLimits,
  TeamStateOptions,
  UpdateTaskInput,
} from './team-state.js';
export { DEFAULT_TEAM_LIMITS, TeamState } from './team-state.js';
export {
  anyWriteScopeOverlaps,
  normalizeWriteScope,
  normalizeWriteScopes,
  writeScopesOverlap,
} from './write-scopes.js';
