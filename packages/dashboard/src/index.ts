export { OPERATOR_AGENT } from './actions.js';
export type { FollowedLog } from './follow.js';
export { followTeamLog } from './follow.js';
export type { DashboardRoutes, DashboardRoutesOptions } from './routes.js';
export { createDashboardRoutes } from './routes.js';
export { SNAPSHOT_BYTES_DEFAULT } from './snapshot.js';
export type { MessageBody, SnapshotCuts, SnapshotRecord } from './snapshot-record.js';
export { MAIL_TEXT_KEEP } from './snapshot-record.js';
export type { SseRouteOptions } from './sse.js';
export { createSseRoute } from './sse.js';
export type {
  DashboardSnapshot,
  DashboardState,
  DeadLetterView,
  MailDelivery,
  MailView,
  MemberView,
  TaskView,
  TokenRow,
} from './view-model.js';
export {
  applyHubItem,
  applyRecord,
  emptyState,
  fromSnapshot,
  MAIL_KEEP,
  mailDelivery,
  OUTPUT_KEEP,
  selectMail,
  tokenTotals,
} from './view-model.js';
