export { OPERATOR_AGENT } from './actions.js';
export type { FollowedLog } from './follow.js';
export { followTeamLog } from './follow.js';
export type { DashboardRoutes, DashboardRoutesOptions } from './routes.js';
export { createDashboardRoutes } from './routes.js';
export { SNAPSHOT_BYTES_DEFAULT } from './snapshot.js';
export type { MessageBody, SnapshotCuts, SnapshotRecord } from './snapshot-record.js';
export { APPROVAL_TEXT_KEEP, MAIL_TEXT_KEEP } from './snapshot-record.js';
export type { SseRouteOptions } from './sse.js';
export { createSseRoute } from './sse.js';
export type {
  ApprovalItem,
  DashboardSnapshot,
  DashboardState,
  DeadLetterView,
  GateRefusalView,
  MailDelivery,
  MailView,
  MemberView,
  TaskView,
  TokenRow,
} from './view-model.js';
export {
  APPROVALS_DECIDED_KEEP,
  applyHubItem,
  applyRecord,
  decidedApprovals,
  emptyState,
  fromSnapshot,
  GATE_REFUSALS_KEEP,
  MAIL_KEEP,
  mailDelivery,
  OUTPUT_KEEP,
  pendingApprovals,
  selectMail,
  tokenTotals,
} from './view-model.js';
