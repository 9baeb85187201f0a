export type { FoldedTeam } from './fold.js';
export { foldTeam } from './fold.js';
export type { QueueMessageInput } from './mail-commands.js';
export { isBoundedKind } from './mailbox.js';
export { isLivePhase, isPhaseTransition, validateMemberName } from './roster.js';
export type { CreateLeadInput, SpawnMemberInput } from './roster-commands.js';
export type {
  SnapshotPartApart,
  StoredText,
  TeamStateSnapshot,
  TombstoneText,
} from './snapshot.js';
export {
  joinTeamStateSnapshot,
  parseTeamStateSnapshot,
  SNAPSHOT_PARTS_APART,
  splitTeamStateSnapshot,
  TEAM_STATE_SNAPSHOT_FORMAT,
  TEAM_STATE_SNAPSHOT_VERSION,
} from './snapshot.js';
export type { SnapshotDueInput, SnapshotPolicy } from './snapshot-policy.js';
export {
  DEFAULT_SNAPSHOT_POLICY,
  isSnapshotDue,
  resolveSnapshotPolicy,
} from './snapshot-policy.js';
export type { TaskAction, TaskActionType, TaskListFilter, TaskView } from './task-board.js';
export type { CreateTaskInput, UpdateTaskInput } from './task-commands.js';
export type { TeamLimits } from './team-limits.js';
export { DEFAULT_TEAM_LIMITS } from './team-limits.js';
export type {
  Approval,
  ApprovalFilter,
  ApprovalStatus,
  GateCount,
  RequestApprovalInput,
  TeamStateOptions,
} from './team-state.js';
export { TeamState } from './team-state.js';
export {
  anyWriteScopeOverlaps,
  normalizeWriteScope,
  normalizeWriteScopes,
  writeScopesOverlap,
} from './write-scopes.js';
